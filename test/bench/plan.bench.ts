/**
 * Benchmark (not a test): `verdict plan` on the demo manifest and on every template, as whole processes, against
 * `node -e 0` measured in the same rounds.
 *
 *   node esbuild.mjs && npm run bench:plan
 *   env: BENCH_ROUNDS=5  BENCH_ROWS=100000 (eval rows of history)
 *
 * Two homes: an empty one (every task "no history") and one whose eval log holds BENCH_ROWS generated rows on the
 * very models and task types the manifests name (so every forecast rests on history). The first plan on the second
 * home builds the scoreboard's index and columns cache (reported apart, once); each round then runs, one after the
 * other, `node -e 0` and `verdict plan` of every manifest on both homes, so a busy machine slows every side alike.
 * Goal: every plan under 1 s of wall time (median), process start included.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median, timeNode, type ProcessTimes } from './cpu-time';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const cli = path.resolve('dist/cli.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-plan-bench-'));
const empty = path.join(dir, 'empty-home');
const full = path.join(dir, 'history-home');
fs.mkdirSync(empty);
fs.mkdirSync(full);
const run = (args: string[]) => execFileSync(process.execPath, [cli, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });

// The manifests: the demo and every template (as `verdict init` writes it).
const manifests: Record<string, string> = { demo: path.resolve('examples/demo/demo.swarm.json') };
for (const name of run(['init', '--list'])
  .split('\n')
  .map((l) => l.split(/\s+/)[0])
  .filter((n): n is string => !!n)) {
  const into = path.join(dir, 'templates', name);
  run(['init', '--template', name, '--dir', into]);
  const file = fs.readdirSync(into).find((f) => /\.swarm\.jsonc?$/.test(f));
  if (file) manifests[name] = path.join(into, file);
}

// History on the models and task types they name (from their plan on the empty home).
const named = new Map<string, { engine: string; model: string; taskType: string }>();
for (const file of Object.values(manifests)) {
  const f = JSON.parse(run(['plan', file, '--home', empty, '--json'])) as { tasks: { engine: string; model: string | null; taskType: string | null }[] };
  for (const t of f.tasks)
    named.set(`${t.engine}\0${t.model}\0${t.taskType}`, { engine: t.engine, model: t.model ?? `${t.engine}-default`, taskType: t.taskType ?? 'general' });
}
const groups = [...named.values()];
const lines: string[] = [];
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
for (let i = 0; i < ROWS; i++) {
  const g = groups[i % groups.length] as { engine: string; model: string; taskType: string };
  const task = Math.floor(i / 2);
  lines.push(
    JSON.stringify({
      run_id: `run-${Math.floor(task / 40)}`,
      task_key: `t${task % 40}`,
      spec: 'generated',
      worker_engine: g.engine,
      verdict: rnd() < 0.7 ? 'PASS' : 'FAIL',
      duration_ms: Math.floor(rnd() * 600000),
      worker_tokens: 1000,
      model: g.model,
      task_type: g.taskType,
      retry: i % 2 === 1,
      identity: 'bench',
      notes: '',
      attempt: (i % 2) + 1,
      harness: g.engine,
      lab: null,
      reported_model: null,
      tokens_in: 900,
      tokens_out: 100,
      cost_microusd: Math.floor(rnd() * 100000),
      ended_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    }),
  );
}
fs.writeFileSync(path.join(full, 'runs.jsonl'), lines.join('\n') + '\n');
let t = performance.now();
run(['plan', manifests.demo as string, '--home', full]);
console.log(
  `history: ${ROWS} rows on ${groups.length} (engine, model, task type) groups; the first plan built the index and columns cache in ${(performance.now() - t).toFixed(0)} ms (once per log)`,
);

const times: Record<string, ProcessTimes[]> = { 'node -e 0': [] };
const loadBefore = os.loadavg()[0] as number;
for (let round = 0; round < ROUNDS; round++) {
  times['node -e 0']!.push(timeNode(['-e', '0']));
  for (const [name, file] of Object.entries(manifests)) {
    (times[`${name}, no history`] ??= []).push(timeNode([cli, 'plan', file, '--home', empty]));
    (times[`${name}, ${ROWS} rows`] ??= []).push(timeNode([cli, 'plan', file, '--home', full]));
  }
}
t = performance.now();
fs.rmSync(dir, { recursive: true, force: true });

const floor = median(times['node -e 0']!.map((x) => x.wallMs));
console.log(
  `${ROUNDS} rounds on ${os.cpus().length} cores, load average ${loadBefore.toFixed(1)} before, ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} after`,
);
let worst = 0;
for (const [name, runs] of Object.entries(times)) {
  const wall = median(runs.map((x) => x.wallMs));
  const cpu = median(runs.map((x) => x.cpuMs));
  if (name !== 'node -e 0') worst = Math.max(worst, wall);
  console.log(
    `${name.padEnd(34)} wall ${wall.toFixed(0).padStart(5)} ms (${(wall / floor).toFixed(2)}× node -e 0)  cpu ${cpu.toFixed(0).padStart(5)} ms${name === 'node -e 0' ? '' : wall < 1000 ? '  under 1 s' : '  OVER 1 s'}`,
  );
}
console.log(`slowest plan: ${worst.toFixed(0)} ms wall (goal < 1000 ms)`);
