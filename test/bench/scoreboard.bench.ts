/**
 * Benchmark, not a test: `verdict models` on 1,000,000 generated eval rows (`node esbuild.mjs && node --import=tsx
 * test/bench/scoreboard.bench.ts`). Targets: cold ≤ 1.5 s, warm ≤ 50 ms, each compared with the sqlite3
 * command line running the same aggregation on the same data (needs Debian's sqlite3).
 * - build: the first `verdict models`, which indexes the whole log (no target; once per log).
 * - cold: a new `node dist/cli.js models --json` process with the index current (reads the aggregates cached
 *   beside verdict.sqlite after checking the log's size and head).
 * - warm: in a process that keeps the index open (the dashboard): staleness check + aggregates + tiers.
 * - live: the whole aggregation in sql.js (what --engine / --since ran before the columns cache), against sqlite3
 *   running the same SQL.
 * - filtered (goal ≤ 1 s over 1M rows): new `verdict models --engine / --since / both` processes
 *   with the columns cache current (scoreboard/columns.ts: the first filtered query writes it), in paired rounds with
 *   `node --version`'s process and the unfiltered cold one, so a busy machine slows every side alike. Medians exact:
 *   test/unit/scoreboard-filters.unit.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { groupStatsSql } from '../../extension/core/scoreboard/group-stats';
import { indexGroupStats, openScoreboardIndex } from '../../extension/core/scoreboard/load';
import { scoreboardView } from '../../extension/core/scoreboard/view';
import { median, timeNode, type ProcessTimes } from './cpu-time';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-bench-'));
const log = path.join(home, 'runs.jsonl');
const cli = path.resolve('dist/cli.js');

function generate(): void {
  const models = Array.from({ length: 40 }, (_, i) => `lab${i % 7}/model-${i}`);
  const types = ['parser', 'ui', 'cli', 'docs', 'refactor', 'tests', 'infra', 'api'];
  const verdicts = ['PASS', 'PASS', 'PASS', 'FAIL', 'FAIL', 'TIMEOUT', 'ERROR', 'RATE_LIMITED'];
  const fd = fs.openSync(log, 'w');
  let buf: string[] = [];
  let seed = 42;
  const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < ROWS; i++) {
    const task = Math.floor(i / 2);
    const attempt = (i % 2) + 1;
    const model = models[task % models.length] as string;
    const tokensIn = Math.floor(rnd() * 50000);
    const tokensOut = Math.floor(rnd() * 5000);
    buf.push(
      JSON.stringify({
        run_id: `run-${Math.floor(task / 50)}`,
        task_key: `t${task % 50}`,
        spec: 'generated',
        worker_engine: i % 3 ? 'codex' : 'opencode',
        verdict: verdicts[Math.floor(rnd() * verdicts.length)],
        duration_ms: Math.floor(rnd() * 600000),
        worker_tokens: tokensIn + tokensOut,
        model,
        task_type: types[task % types.length],
        retry: attempt > 1,
        identity: 'bench',
        notes: '',
        attempt,
        harness: 'codex-cli',
        lab: model.split('/')[0],
        reported_model: null,
        tokens_in: tokensIn,
        tokens_out: tokensOut,
        cost_microusd: Math.floor(rnd() * 100000),
        ended_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
      }),
    );
    if (buf.length === 10000) {
      fs.writeSync(fd, buf.join('\n') + '\n');
      buf = [];
    }
  }
  if (buf.length) fs.writeSync(fd, buf.join('\n') + '\n');
  fs.closeSync(fd);
}

function timeCmd(file: string, args: string[], input?: string): number {
  const t = performance.now();
  execFileSync(file, args, { stdio: ['pipe', 'ignore', 'inherit'], input, maxBuffer: 1 << 28 });
  return performance.now() - t;
}

const ms = (x: number) => `${x.toFixed(1)} ms`;

async function main(): Promise<void> {
  let t = performance.now();
  generate();
  console.log(`generated ${ROWS} rows (${(fs.statSync(log).size / 1e6).toFixed(0)} MB) in ${ms(performance.now() - t)}`);
  const build = timeCmd('node', [cli, 'models', '--home', home, '--json']);
  console.log(
    `build (first verdict models: index the whole log): ${ms(build)}; verdict.sqlite ${(fs.statSync(path.join(home, 'verdict.sqlite')).size / 1e6).toFixed(0)} MB`,
  );

  const cold = median([1, 2, 3].map(() => timeCmd('node', [cli, 'models', '--home', home, '--json'])));
  const columnsBuild = timeCmd('node', [cli, 'models', '--home', home, '--json', '--engine', 'codex']);
  const filters: Record<string, string[]> = {
    '--engine codex': ['--engine', 'codex'],
    '--since 2026-01-06': ['--since', '2026-01-06'],
    '--engine opencode --since 2026-01-03T12:00:00Z': ['--engine', 'opencode', '--since', '2026-01-03T12:00:00Z'],
  };
  const filtered: Record<string, ProcessTimes[]> = { 'node -e 0': [], unfiltered: [] };
  for (let round = 0; round < 5; round++) {
    filtered['node -e 0']!.push(timeNode(['-e', '0']));
    filtered.unfiltered!.push(timeNode([cli, 'models', '--home', home, '--json']));
    for (const [name, args] of Object.entries(filters)) (filtered[name] ??= []).push(timeNode([cli, 'models', '--home', home, '--json', ...args]));
  }
  const nodeStart = median([1, 2, 3].map(() => timeCmd('node', [cli, '--version'])));

  const index = await openScoreboardIndex(home);
  const warmRuns: number[] = [];
  for (let i = 0; i < 20; i++) {
    t = performance.now();
    if (index.stale()) throw new Error('the index should be current');
    scoreboardView(indexGroupStats(index), null, {});
    warmRuns.push(performance.now() - t);
  }
  const warm = median(warmRuns);
  t = performance.now();
  const live = indexGroupStats(index, { engine: 'codex' });
  const liveMs = performance.now() - t;
  index.close();

  const db = path.join(home, 'verdict.sqlite');
  const sqliteFull = timeCmd('sqlite3', [db], groupStatsSql("engine = 'codex'") + ';\n');
  const sqliteTable = median([1, 2, 3].map(() => timeCmd('sqlite3', [db, 'SELECT * FROM group_stats;'])));

  console.log(`cold  verdict models (new process, index current): ${ms(cold)}  target ≤ 1500 ms  (node start + bundle alone: ${ms(nodeStart)})`);
  console.log(`warm  (index open: staleness check + aggregates + tiers): ${ms(warm)}  target ≤ 50 ms`);
  console.log(`live  whole aggregation in sql.js (--engine codex, ${live.length} groups): ${ms(liveMs)}`);
  console.log(`sqlite3 CLI, same aggregation (--engine codex) on the same file: ${ms(sqliteFull)}`);
  console.log(`sqlite3 CLI, reading the materialized aggregates: ${ms(sqliteTable)}`);
  console.log(`filtered: the first filtered query (writes the columns cache from the index): ${ms(columnsBuild)}`);
  const nodeFloor = median((filtered['node -e 0'] ?? []).map((x) => x.wallMs));
  console.log(
    `filtered rounds at a load average of ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} on ${os.cpus().length} cores`,
  );
  for (const [name, runs] of Object.entries(filtered)) {
    const wall = median(runs.map((x) => x.wallMs));
    const cpu = median(runs.map((x) => x.cpuMs));
    console.log(
      `filtered, 5 paired rounds: ${name.padEnd(46)} median ${ms(wall)} wall = ${(wall / nodeFloor).toFixed(1)}× node -e 0, ${ms(cpu)} CPU${name.startsWith('--') ? `; ${(wall / sqliteFull).toFixed(3)}× sqlite3's aggregation; goal ≤ 1000 ms` : ''}`,
    );
  }
  console.log(
    `ratios: cold / sqlite3 aggregation ${(cold / sqliteFull).toFixed(2)}; cold / sqlite3 table read ${(cold / sqliteTable).toFixed(2)}; warm / sqlite3 table read ${(warm / sqliteTable).toFixed(2)}; sql.js live / sqlite3 aggregation ${(liveMs / sqliteFull).toFixed(2)}`,
  );
  fs.rmSync(home, { recursive: true, force: true });
}

await main();
