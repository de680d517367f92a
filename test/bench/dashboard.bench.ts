// Benchmark (not a test): 50 workers each writing 100 lines/s for 30 s, watched in `verdict hud` by Debian chromium.
// Measures event-to-screen latency (a line's write time → the next animation frame after it is in the DOM) and
// the page's JS heap (CDP Runtime.getHeapUsage, sampled every second). Budget: p95 ≤ 150 ms, heap bounded.
// Run after a build: `node esbuild.mjs && node --import=tsx test/bench/dashboard.bench.ts` (BENCH_WORKERS, BENCH_RATE, BENCH_SECONDS override).
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { RunState, TaskState } from '../../extension/core/live/state';
import { tempDir } from '../helpers/fixtures';
import { CHROMIUM, CHROMIUM_ARGS, startHudProcess } from '../helpers/hud';

const WORKERS = Number(process.env.BENCH_WORKERS ?? 50);
const RATE = Number(process.env.BENCH_RATE ?? 100);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);

const home = path.join(tempDir('verdict-bench-'), 'home');
const runId = 'bench-run';
const runDir = path.join(home, 'runs', runId);
const now = Date.now();
const tasks: TaskState[] = Array.from({ length: WORKERS }, (_, i) => {
  const dir = path.join(runDir, 'tasks', `w${i}`, 'attempt-1');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'worker.log'), '');
  return {
    key: `w${i}`,
    engine: 'script',
    model: null,
    taskType: 'bench',
    verified: null,
    status: 'running',
    dir,
    branch: null,
    commit: null,
    port: null,
    attempts: [
      {
        attempt: 1,
        phase: 'running',
        verdict: null,
        startedAt: now,
        endedAt: null,
        workerPid: null,
        tokensIn: null,
        tokensOut: null,
        costMicroUsd: null,
        checkExitCode: null,
        dir,
        notes: '',
      },
    ],
  };
});
const state: RunState = {
  version: 1,
  runId,
  runName: 'bench: 50 noisy workers',
  manifestFile: '/bench.swarm.json',
  identity: 'bench',
  host: 'bench',
  pid: process.pid,
  status: 'running',
  startedAt: now,
  heartbeatAt: now,
  endedAt: null,
  maxParallel: WORKERS,
  worktrees: false,
  repo: null,
  baseRef: null,
  baseSha: null,
  tasks,
};
const writeState = () => {
  state.heartbeatAt = Date.now();
  fs.writeFileSync(path.join(runDir, 'state.json.tmp'), JSON.stringify(state));
  fs.renameSync(path.join(runDir, 'state.json.tmp'), path.join(runDir, 'state.json'));
};
writeState();

const hud = await startHudProcess(home);
const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
// Arrival latency too (a line's write time → its SSE message reaching the page), to tell transport from rendering.
await page.addInitScript(`(() => {
  window.__arrival = [];
  const ES = window.EventSource;
  window.EventSource = class extends ES {
    set onmessage(fn) {
      super.onmessage = (e) => {
        const t = Date.now();
        const all = [...e.data.matchAll(/ (\\d{13})\\\\n/g)];
        const last = all.at(-1);
        if (last) window.__arrival.push(t - Number(last[1]));
        fn(e);
      };
    }
  };
})()`);
await page.goto(hud.url);
await page.locator('.run-open').first().click();
await page
  .locator('pre[data-testid="output-tail"]')
  .nth(WORKERS - 1)
  .waitFor();
// In the page (a string: no bundler helpers there): every mutation of an output tail → at the next frame, the age of
// the newest line each changed tail shows. Lines end with their write time in epoch ms.
await page.evaluate(`(() => {
  window.__lat = [];
  const grid = document.querySelector('.worker-grid');
  new MutationObserver((records) => {
    const stamps = new Set();
    for (const r of records) {
      const pre = (r.target.nodeType === 3 ? r.target.parentElement : r.target).closest('pre');
      if (!pre) continue;
      const text = pre.textContent;
      const m = / (\\d{13})\\n?$/.exec(text);
      if (m) stamps.add(Number(m[1]));
    }
    if (stamps.size) requestAnimationFrame(() => { const t = Date.now(); for (const s of stamps) window.__lat.push(t - s); });
  }).observe(grid, { childList: true, characterData: true, subtree: true });
})()`);

const cdp = await page.context().newCDPSession(page);
const heap: number[] = [];
const fds = tasks.map((t) => fs.openSync(path.join(t.attempts[0]!.dir, 'worker.log'), 'a'));
let seq = 0;
let lines = 0;
const t0 = Date.now();
const writer = setInterval(() => {
  // Catch up to RATE lines per second per worker even when a tick comes late.
  const due = Math.floor(((Date.now() - t0) / 1000) * RATE);
  while (seq < due) {
    seq++;
    for (let i = 0; i < WORKERS; i++) fs.writeSync(fds[i]!, `worker ${i} line ${seq} ${'·'.repeat(20)} ${Date.now()}\n`);
    lines += WORKERS;
  }
}, 10);
const beat = setInterval(writeState, 1000);
const sampler = setInterval(() => {
  void cdp.send('Runtime.getHeapUsage').then((h) => heap.push(h.usedSize));
}, 1000);
await new Promise((r) => setTimeout(r, SECONDS * 1000));
clearInterval(writer);
clearInterval(beat);
clearInterval(sampler);
await new Promise((r) => setTimeout(r, 500));
const arrival = ((await page.evaluate('window.__arrival')) as number[]).sort((a, b) => a - b);
const lat = ((await page.evaluate('window.__lat')) as number[]).sort((a, b) => a - b);
const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? NaN;
const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
const bytes = fds.reduce((n, fd) => n + fs.fstatSync(fd).size, 0);
for (const fd of fds) fs.closeSync(fd);
await browser.close();
await hud.stop();

const p95 = pct(95);
const firstHalf = heap.slice(0, Math.ceil(heap.length / 2));
const secondHalf = heap.slice(Math.ceil(heap.length / 2));
console.log(`dashboard bench: ${WORKERS} workers × ${RATE} lines/s × ${SECONDS} s = ${lines} lines, ${mib(bytes)} of worker logs`);
console.log(
  `event-to-screen: ${lat.length} samples, p50 ${pct(50)} ms, p95 ${p95} ms, p99 ${pct(99)} ms, max ${lat.at(-1)} ms (budget p95 ≤ 150 ms: ${p95 <= 150 ? 'OK' : 'OVER'})`,
);
const at = (v: number[], p: number) => v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))] ?? NaN;
console.log(`SSE arrival (transport only): ${arrival.length} messages, p50 ${at(arrival, 50)} ms, p95 ${at(arrival, 95)} ms`);
console.log(
  `page JS heap: peak ${mib(Math.max(...heap))}, peak of first half ${mib(Math.max(...firstHalf))}, peak of second half ${mib(Math.max(...secondHalf))}, last ${mib(heap.at(-1) ?? 0)}`,
);
fs.rmSync(path.dirname(home), { recursive: true, force: true });
