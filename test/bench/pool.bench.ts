/**
 * Benchmark (not a test): the worker pool's queue on a local PostgreSQL (test/helpers/postgres.ts).
 *
 *   npm run build && node --import=tsx test/bench/pool.bench.ts      (env: BENCH_JOBS=1000 BENCH_FETCHERS=8 BENCH_TASKS=40)
 *
 * 1. Claims per second: BENCH_JOBS attempts enqueued on one engine's queue, then BENCH_FETCHERS loops each doing what
 *    a worker slot does per attempt besides running it — pg-boss fetch, the conditional claim of the attempt's row,
 *    settling the row, pg-boss complete — until the queue is empty.
 * 2. Enqueue to start: a real `verdict run --pool` of BENCH_TASKS instant script tasks on two `verdict pool worker`
 *    processes of 4 slots each; per attempt, claimed_at − enqueued_at (both by the database's clock), median and
 *    worst, and the run's wall time against the same manifest run locally (the ratio is the pool's overhead).
 */
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import PgBoss from 'pg-boss';
import { ensurePoolSchema, poolDb } from '../../extension/core/pool/schema';
import { CLI } from '../helpers/cli';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { postgresBinDir, TestPostgres } from '../helpers/postgres';

const JOBS = Number(process.env.BENCH_JOBS ?? 1000);
const FETCHERS = Number(process.env.BENCH_FETCHERS ?? 8);
const TASKS = Number(process.env.BENCH_TASKS ?? 40);

async function claimsPerSecond(url: string): Promise<number> {
  const db = poolDb(url);
  await ensurePoolSchema(db);
  const boss = new PgBoss({ connectionString: url, schedule: false, max: FETCHERS + 2 });
  boss.on('error', () => undefined);
  await boss.start();
  const queue = 'verdict-attempt-bench';
  await boss.createQueue(queue);
  const runId = 'bench';
  for (let i = 0; i < JOBS; i++) {
    await db.query('INSERT INTO verdict_pool_attempts (run_id, task_key, attempt, engine, queue) VALUES ($1, $2, 1, $3, $4)', [runId, `t${i}`, 'bench', queue]);
  }
  await boss.insert(Array.from({ length: JOBS }, (_, i) => ({ name: queue, data: { key: `t${i}` } })));
  const started = performance.now();
  let claimed = 0;
  await Promise.all(
    Array.from({ length: FETCHERS }, async (_, f) => {
      for (;;) {
        const [job] = await boss.fetch<{ key: string }>(queue, { batchSize: 1 });
        if (!job) return;
        const key = job.data.key;
        const c = await db.query(
          'UPDATE verdict_pool_attempts SET worker_id = $2, host = $3, claimed_at = now() WHERE run_id = $1 AND task_key = $4 AND attempt = 1 AND record IS NULL AND worker_id IS NULL RETURNING attempt',
          [runId, `f${f}`, 'bench', key],
        );
        if (c.rowCount) claimed++;
        await db.query(
          `UPDATE verdict_pool_attempts SET record = '{"verdict":"PASS"}', finished_at = now() WHERE run_id = $1 AND task_key = $2 AND attempt = 1`,
          [runId, key],
        );
        await boss.complete(queue, job.id);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await boss.stop({ graceful: false });
  await db.end();
  if (claimed !== JOBS) throw new Error(`claimed ${claimed} of ${JOBS}`);
  return JOBS / seconds;
}

async function endToEnd(url: string): Promise<{ medianMs: number; worstMs: number; poolS: number; localS: number }> {
  const dir = tempDir();
  const repo = makeRepo(path.join(dir, 'repo'));
  const remote = path.join(dir, 'remote.git');
  git(dir, 'init', '-q', '--bare', remote);
  const tasks = Array.from({ length: TASKS }, (_, i) =>
    scriptTask(`t${i}`, `echo ok > ok${i}.txt`, `test -s ok${i}.txt || { echo 'ok${i}.txt missing'; exit 1; }`),
  );
  const file = writeManifest(dir, { worktrees: true, repo, remote, max_parallel: 8, tasks });
  const workers = ['b1', 'b2'].map((name) =>
    execa('node', [CLI, 'pool', 'worker', '--db', url, '--home', path.join(dir, name), '--host', name, '--slots', '4', '--engines', 'script'], {
      reject: false,
      stdin: 'ignore',
    }),
  );
  await new Promise((r) => setTimeout(r, 3000));
  let t = performance.now();
  const pool = await execa('node', [CLI, 'run', file, '--home', path.join(dir, 'orch'), '--pool', url, '--no-dashboard'], { reject: false });
  const poolS = (performance.now() - t) / 1000;
  if (pool.exitCode !== 0) throw new Error(`the pool run failed:\n${pool.stdout.split('\n').slice(-30).join('\n')}`);
  for (const w of workers) w.kill('SIGINT');
  await Promise.all(workers);
  t = performance.now();
  const local = await execa('node', [CLI, 'run', file, '--home', path.join(dir, 'local'), '--no-dashboard'], { reject: false });
  const localS = (performance.now() - t) / 1000;
  if (local.exitCode !== 0) throw new Error(`the local run failed:\n${local.stdout.split('\n').slice(-30).join('\n')}`);
  const db = poolDb(url);
  const r = await db.query(`SELECT extract(epoch from (claimed_at - enqueued_at)) * 1000 AS ms FROM verdict_pool_attempts WHERE run_id <> 'bench' ORDER BY ms`);
  await db.end();
  const ms = r.rows.map((row) => Number(row.ms));
  return { medianMs: ms[Math.floor(ms.length / 2)] ?? NaN, worstMs: ms[ms.length - 1] ?? NaN, poolS, localS };
}

async function main(): Promise<void> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL binaries (/usr/lib/postgresql/*/bin)');
  if (!fs.existsSync(CLI)) throw new Error(`build first: ${CLI} is missing`);
  const server = await TestPostgres.create(bin);
  try {
    const rate = await claimsPerSecond(server.url);
    console.log(`claims: ${JOBS} attempts, ${FETCHERS} fetchers: ${rate.toFixed(0)} claims/s`);
    const e2e = await endToEnd(server.url);
    console.log(`enqueue to start (${TASKS} tasks, 2 workers × 4 slots): median ${e2e.medianMs.toFixed(0)} ms, worst ${e2e.worstMs.toFixed(0)} ms`);
    console.log(`wall time: pool ${e2e.poolS.toFixed(1)} s, local ${e2e.localS.toFixed(1)} s (ratio ${(e2e.poolS / e2e.localS).toFixed(2)}×)`);
  } finally {
    server.stop();
  }
}

void main().catch((e: Error) => {
  console.error(e.message);
  process.exitCode = 1;
});
