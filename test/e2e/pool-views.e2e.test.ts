import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import type { HostToPage, PoolView, RunView } from '../../schemas/protocol';
import { cli } from '../helpers/cli';
import { makeRepo, git, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { CHROMIUM, CHROMIUM_ARGS, findChromium, startHudProcess, type HudProcess } from '../helpers/hud';
import { drain, LEASE_MS, poolSuite, startPoolWorker, unsandboxed, until, workersUp } from '../helpers/pool-workers';

/** The hud's data endpoint as a page sees it: server-sent events after `ready`, every message kept. */
async function openEvents(hud: HudProcess): Promise<{ messages: HostToPage[]; close: () => void }> {
  const controller = new AbortController();
  const res = await fetch(`${hud.url}events`, { signal: controller.signal });
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const messages: HostToPage[] = [];
  let buffer = '';
  let client = '';
  const decoder = new TextDecoder();
  const pump = async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        if (!data) continue;
        if (/^event: hello/m.test(event)) client = (JSON.parse(data) as { client: string }).client;
        else messages.push(JSON.parse(data) as HostToPage);
      }
    }
  };
  void pump();
  await until('the hello event', () => client !== '', 20_000);
  const post = await fetch(`${hud.url}message?client=${client}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: `http://127.0.0.1:${hud.port}` },
    body: '{"type":"ready"}',
  });
  assert.equal(post.status, 204);
  return { messages, close: () => controller.abort() };
}

/** Every pool view the page was sent, oldest first. */
const poolViews = (messages: HostToPage[]): PoolView[] =>
  messages.flatMap((m) => (m.type === 'snapshot' && m.pool ? [m.pool] : m.type === 'did-change-pool' && m.pool ? [m.pool] : []));

describe('the worker pool in the dashboard (verdict hud --pool) from a real Postgres with two workers', function () {
  this.timeout(300_000);
  let hud: HudProcess | undefined;
  after(async () => hud?.stop());
  const { url: poolUrl, workers } = poolSuite('all');

  it('shows both workers (host, slots, engines, heartbeat) and what each runs of a run on the pool of the settings; the run shows which host ran which task; `verdict pool status` prints the same model', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const a = startPoolWorker(url, 'w1', 'script', 'bash', 2);
    const b = startPoolWorker(url, 'w2', 'script,agent', 'bash', 1);
    workers.push(a, b);
    await workersUp([a, b]);
    const home = path.join(dir, 'home');
    hud = await startHudProcess(home, { VERDICT_POOL_URL: url, VERDICT_POOL_LEASE_MS: LEASE_MS });
    const events = await openEvents(hud);
    try {
      await until(
        'a pool view with both workers live',
        () => poolViews(events.messages).some((v) => v.workers.filter((w) => w.state === 'live').length === 2),
        60_000,
      );
      const first = poolViews(events.messages).find((v) => v.workers.filter((w) => w.state === 'live').length === 2) as PoolView;
      assert.equal(first.error, null);
      assert.equal(first.url, url);
      const byHost = new Map(first.workers.map((w) => [w.host, w]));
      assert.deepEqual([...byHost.keys()].sort(), ['w1', 'w2']);
      assert.equal(byHost.get('w1')?.slots, 2);
      assert.equal(byHost.get('w2')?.slots, 1);
      assert.deepEqual(byHost.get('w1')?.engines, ['script']);
      assert.deepEqual(byHost.get('w2')?.engines, ['script', 'agent']);
      assert.ok(
        first.workers.every((w) => Number.isFinite(w.heartbeatAt) && w.heartbeatAt >= w.startedAt),
        'each worker has a heartbeat',
      );
      assert.deepEqual(first.totals, { workers: 2, live: 2, slots: 3, busy: 0, waiting: 0 });

      // A pool run of three attempts that each take a while: the views show who holds which.
      const { repo, remote } = (() => {
        const r = makeRepo(path.join(dir, 'repo'), { 'README.md': '# views\n' });
        const bare = path.join(dir, 'remote.git');
        git(dir, 'init', '-q', '--bare', bare);
        return { repo: r, remote: bare };
      })();
      const tasks = ['p', 'q', 'r'].map((k) => scriptTask(k, `sleep 6; echo ${k} > out.txt`, `grep -qx ${k} out.txt`));
      const file = writeManifest(dir, { run_name: 'pool-views', worktrees: true, repo, remote, max_parallel: 3, tasks });
      // The pool named by the settings, as the extension's Run passes them (configForRun: `verdict.pool` → "pool").
      const config = path.join(dir, 'settings.json');
      fs.writeFileSync(config, JSON.stringify({ pool: url }));
      // Without a remote the run is refused before it starts, naming where the pool came from.
      const noRemote = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('x', 'true', 'true')] }, 'no-remote.swarm.json');
      // --force: the filler check `true` is a lint error, which would refuse the run before the pool does.
      const refused = await cli(['run', noRemote, '--home', home, '--config', config, '--no-dashboard', '--force', ...unsandboxed]);
      assert.equal(refused.exitCode, 2, refused.all);
      assert.match(refused.stderr, /on the pool \(named by the settings \("pool" in the config file, or verdict\.pool in VS Code\)\)/);
      assert.match(refused.stderr, /needs a git remote/);
      const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
      assert.equal(r.exitCode, 0, r.all);
      const rows = readRows(home);
      assert.equal(rows.length, 3);
      const hostOf = new Map(rows.map((row) => [String(row.task_key), String(row.host)]));

      // Every attempt was seen running in the pool view, on the worker whose host its eval row names.
      const seen = new Map<string, string>();
      for (const v of poolViews(events.messages))
        for (const w of v.workers) for (const ref of w.running) if (ref.runId === rows[0]?.run_id) seen.set(ref.taskKey, w.host);
      assert.deepEqual(new Map([...seen].sort()), new Map([...hostOf].sort()), 'each attempt shown on the worker that ran it');
      assert.ok(
        poolViews(events.messages).some((v) => v.totals.busy > 0),
        'busy slots were counted',
      );

      // The run as the page has it: each attempt names its host.
      await until(
        'the finished run on the page',
        () => events.messages.some((m) => m.type === 'did-change-run' && m.run.runName === 'pool-views' && m.run.liveness === 'finished'),
        30_000,
      );
      const run = events.messages
        .filter((m): m is { type: 'did-change-run'; run: RunView } => m.type === 'did-change-run' && m.run.runName === 'pool-views')
        .at(-1)!.run;
      for (const t of run.tasks) assert.equal(t.attempts[0]?.host, hostOf.get(t.key), `${t.key}'s attempt names its host`);

      // `verdict pool status` prints the same model: each worker's line but the heartbeat age.
      // (Once the dashboard too has read the pool at rest: a read during the run's last settle may still hold an attempt.)
      await until('the pool at rest on the page', () => poolViews(events.messages).at(-1)?.totals.busy === 0, 30_000);
      const status = await cli(['pool', 'status', '--db', url]);
      assert.equal(status.exitCode, 0, status.all);
      const last = poolViews(events.messages).at(-1) as PoolView;
      assert.match(status.stdout, /^2 workers \(2 live\), 0\/3 slots busy, 0 waiting$/m);
      for (const w of last.workers) assert.ok(status.stdout.includes(`  ${w.line.replace(/heartbeat .*$/, '')}`), `status prints ${w.line}:\n${status.stdout}`);

      // And the page renders it (where a Chromium is installed).
      if (findChromium()) {
        const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
        try {
          const page = await browser.newPage();
          await page.goto(hud.url);
          await page.locator('[data-testid="pool-worker"][data-state="live"]').nth(1).waitFor({ timeout: 30_000 });
          assert.deepEqual((await page.locator('[data-testid="pool-worker"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-host')))).sort(), [
            'w1',
            'w2',
          ]);
          assert.match(await page.getByTestId('pool-summary').innerText(), /2 workers \(2 live\)/);
          await page.locator('.run-row', { hasText: 'pool-views' }).locator('.run-open').click();
          const lines = await page.locator('.attempt-line').allInnerTexts();
          for (const [key, host] of hostOf)
            assert.ok(
              lines.some((l) => l.includes(`on ${host}`)),
              `an attempt line of ${key} says "on ${host}": ${lines.join(' | ')}`,
            );
        } finally {
          await browser.close();
        }
      } else console.log('    (no Chromium: the page itself was not checked)');
    } finally {
      events.close();
    }
    await Promise.all([drain(a), drain(b)]);
    workers.splice(0);
  });
});
