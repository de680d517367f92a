import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import PgBoss from 'pg-boss';
import { cli } from '../helpers/cli';
import { git, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import {
  drain,
  LEASE_MS,
  poolMachine as machine,
  poolSuite,
  query,
  repoAndRemote,
  startPoolWorker as startWorker,
  unsandboxed,
  until,
  workersUp,
} from '../helpers/pool-workers';

describe('worker pool on Postgres (verdict pool worker, verdict run --pool)', function () {
  this.timeout(300_000);
  const { url: poolUrl, server: poolServer, workers } = poolSuite();

  it('20 tasks split across two workers: one row each, with its host; every task branch on the remote; Ctrl-C drains', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const a = startWorker(url, 'w1', 'script');
    const b = startWorker(url, 'w2', 'script');
    workers.push(a, b);
    await workersUp([a, b]);
    const tasks = Array.from({ length: 20 }, (_, i) => scriptTask(`t${i}`, `sleep 0.5; echo "task ${i}" > out.txt`, `grep -qx "task ${i}" out.txt`));
    const file = writeManifest(dir, { worktrees: true, repo, remote, max_parallel: 20, tasks });
    const home = path.join(dir, 'home');
    // A key of the orchestrator's machine: it must reach no worker.
    const r = await cli(['run', file, '--home', home, '--pool', url, '--no-dashboard', ...unsandboxed], {
      env: { OPENAI_API_KEY: 'sk-orchestrator-secret-4242', VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.equal(rows.length, 20);
    assert.deepEqual(new Set(rows.map((row) => row.verdict)), new Set(['PASS']));
    assert.deepEqual(rows.map((row) => row.task_key).sort(), tasks.map((t) => t.key).sort());
    const hosts = new Set(rows.map((row) => row.host));
    assert.deepEqual([...hosts].sort(), ['w1', 'w2'], 'both workers ran attempts');
    for (const row of rows) {
      assert.equal(git(remote, 'rev-parse', `refs/heads/${String(row.branch)}`), row.commit, `${String(row.task_key)}'s branch on the remote holds its PASS`);
      assert.equal(git(remote, 'show', `${String(row.commit)}:out.txt`), `task ${String(row.task_key).slice(1)}`);
      // The orchestrator's repository has the branch too (merge works as after a local run).
      assert.equal(git(repo, 'rev-parse', `refs/heads/${String(row.branch)}`), row.commit);
    }
    // Postgres: one attempt row and one mirrored eval row per attempt.
    const runId = String(rows[0]?.run_id);
    assert.equal((await query(url, 'SELECT count(*)::int AS n FROM verdict_pool_attempts WHERE run_id = $1', [runId])).rows[0].n, 20);
    assert.equal((await query(url, "SELECT count(*)::int AS n FROM swarm_runs WHERE run_id = $1 AND verdict = 'PASS'", [runId])).rows[0].n, 20);
    // The state shows which host ran each task.
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as { tasks: { attempts: { host?: string }[] }[] };
    assert.ok(state.tasks.every((t) => t.attempts[0]?.host === 'w1' || t.attempts[0]?.host === 'w2'));
    // Nothing of the orchestrator's environment travelled through the queue.
    const leaked = await query(url, "SELECT count(*)::int AS n FROM pgboss.job WHERE data::text LIKE '%sk-orchestrator-secret%'");
    assert.equal(leaked.rows[0].n, 0);
    // Each worker kept the full logs of what it ran.
    const own = [...readRows(a.home), ...readRows(b.home)];
    assert.equal(own.length, 20);
    // Status names both workers; Ctrl-C drains them.
    const status = await cli(['pool', 'status', '--db', url, '--json']);
    const s = JSON.parse(status.stdout) as { workers: { host: string; state: string; engines: string[] }[] };
    assert.deepEqual(
      s.workers
        .filter((w) => w.state === 'live')
        .map((w) => w.host)
        .sort(),
      ['w1', 'w2'],
    );
    await Promise.all([drain(a), drain(b)]);
    assert.match(a.out(), /drained and stopped/);
    workers.splice(0);
  });

  it('an engine of a subscription login run on a pool worker: its row has billing "subscription" and no cost, whatever cost its engine reported there', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const w = startWorker(url, 'flat', 'paid', 'bash', 1);
    workers.push(w);
    await workersUp([w]);
    const spec = `echo done > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":5}}'`;
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      remote,
      logins: { flat: { engines: ['paid'], max_parallel: 1, billing: 'subscription' } },
      tasks: [{ key: 'sub', engine: 'paid', spec, check: 'test -s out.txt', max_attempts: 1 }],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--pool', url, '--config', machine(dir, 'bash').config, '--no-dashboard', ...unsandboxed], {
      env: { VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    const row = readRows(home)[0];
    console.log(
      `      row: ${String(row?.verdict)} on ${String(row?.host)}, cost ${String(row?.cost_microusd)}, billing ${String(row?.billing)}, ${String(row?.worker_tokens)} tokens`,
    );
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual([row?.host, row?.cost_microusd, row?.billing, row?.worker_tokens], ['flat', null, 'subscription', 15]);
    await drain(w);
    workers.splice(0);
  });

  it('kill -9 of a worker mid-attempt: INTERRUPTED on it, then the attempt runs on the other, without using a retry', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    // The first machine's agent never ends; the second's does the work.
    const a = startWorker(url, 'dies', 'agent', 'hang', 1);
    workers.push(a);
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      remote,
      tasks: [{ key: 'victim', engine: 'agent', spec: 'echo done > out.txt', check: 'test -s out.txt', max_attempts: 1 }],
    });
    const home = path.join(dir, 'home');
    const run = cli(['run', file, '--home', home, '--pool', url, '--config', machine(dir, 'bash').config, '--no-dashboard', ...unsandboxed], {
      env: { VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    await until('the first worker claims the attempt', () => /claimed .*victim\/1/.test(a.out()));
    await new Promise((r) => setTimeout(r, 500));
    a.proc.kill('SIGKILL');
    await a.proc;
    const b = startWorker(url, 'lives', 'agent', 'bash', 1);
    workers.push(b);
    const r = await run;
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.attempt, row.verdict, row.host, row.retry]),
      [
        [1, 'INTERRUPTED', 'dies', false],
        [2, 'PASS', 'lives', false],
      ],
    );
    assert.match(String(rows[0]?.notes), /stopped renewing its heartbeat/);
    assert.equal(git(remote, 'rev-parse', 'refs/heads/' + String(rows[1]?.branch)), rows[1]?.commit);
  });

  it('a two-task graph over the pool; a task for an engine only one worker has runs on that worker', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const a = startWorker(url, 'plain', 'script', 'bash', 2);
    const b = startWorker(url, 'rich', 'script,good', 'bash', 2);
    workers.push(a, b);
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      remote,
      tasks: [
        scriptTask('first', 'echo base > first.txt', 'test -s first.txt'),
        {
          key: 'second',
          engine: 'good',
          after: ['first'],
          spec: 'cat first.txt > second.txt; echo more >> second.txt',
          check: 'grep -qx base second.txt && grep -qx more second.txt',
        },
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--pool', url, '--config', machine(dir, 'bash').config, '--no-dashboard', ...unsandboxed], {
      env: { VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.task_key, row.verdict]),
      [
        ['first', 'PASS'],
        ['second', 'PASS'],
      ],
    );
    assert.equal(rows[1]?.host, 'rich', 'only the worker with engine good may run it');
    assert.doesNotMatch(a.out(), /claimed .*second/);
    // The dependent started from its prerequisite's commit, fetched from the remote.
    assert.equal(git(remote, 'show', `${String(rows[1]?.commit)}:first.txt`), 'base');
  });

  it('a task with a review step over the pool: rejected, the concerns reach the retry on the pool, approved', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const a = startWorker(url, 'reviewing', 'agent', 'bash', 1);
    workers.push(a);
    const spec =
      'echo work > work.txt; if [ -n "$VERDICT_FAILURE_FILE" ] && grep -q "tests.txt is missing" "$VERDICT_FAILURE_FILE"; then echo ok > tests.txt; fi';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      remote,
      tasks: [{ key: 'reviewed', engine: 'agent', spec, check: 'test -s work.txt', max_attempts: 2, review: { engines: ['strict'], require: 'all' } }],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--pool', url, '--config', machine(dir, 'bash').config, '--no-dashboard', ...unsandboxed], {
      env: { VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.step, row.attempt, row.worker_engine, row.verdict, row.host]),
      [
        ['work', 1, 'agent', 'FAIL', 'reviewing'],
        ['review', 1, 'strict', 'FAIL', 'reviewing'],
        ['work', 2, 'agent', 'PASS', 'reviewing'],
        ['review', 2, 'strict', 'PASS', 'reviewing'],
      ],
    );
    assert.equal(git(remote, 'show', `${String(rows[2]?.commit)}:tests.txt`), 'ok');
  });

  it('verdict stop of a task running on a pool worker: the worker stops it, CANCELLED, not retried', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const a = startWorker(url, 'stoppable', 'agent', 'hang', 1);
    workers.push(a);
    const file = writeManifest(dir, { worktrees: true, repo, remote, tasks: [{ key: 'long', engine: 'agent', spec: 'true', check: 'true', max_attempts: 3 }] });
    const home = path.join(dir, 'home');
    // --force: the check `true` is a lint error; the attempt is stopped before it.
    const run = cli(['run', file, '--home', home, '--pool', url, '--config', machine(dir, 'bash').config, '--no-dashboard', '--force', ...unsandboxed], {
      env: { VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    await until('the worker claims it', () => /claimed .*long\/1/.test(a.out()));
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    const stop = await cli(['stop', runId, 'long', '--home', home]);
    assert.equal(stop.exitCode, 0, stop.all);
    const r = await run;
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.attempt, row.verdict, row.host]),
      [[1, 'CANCELLED', 'stoppable']],
    );
    assert.match(a.out(), /long\/1: CANCELLED/);
  });

  it('Postgres restarted mid-run: work waits, nothing is lost, nothing is recorded twice', async () => {
    const pgs = poolServer();
    const url = pgs.url;
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const a = startWorker(url, 'r1', 'script', 'bash', 2);
    const b = startWorker(url, 'r2', 'script', 'bash', 2);
    workers.push(a, b);
    const tasks = Array.from({ length: 6 }, (_, i) => scriptTask(`p${i}`, `sleep 2; echo ${i} > out.txt`, `grep -qx ${i} out.txt`));
    const file = writeManifest(dir, { worktrees: true, repo, remote, max_parallel: 6, tasks });
    const home = path.join(dir, 'home');
    const run = cli(['run', file, '--home', home, '--pool', url, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    await until('attempts claimed', () => /claimed/.test(a.out() + b.out()));
    pgs.stop();
    await new Promise((r) => setTimeout(r, 6000));
    pgs.start();
    const r = await run;
    assert.equal(r.exitCode, 0, r.all);
    // The workers saw the outage and went on after it.
    assert.match(a.out() + b.out(), /the pool database does not answer/);
    assert.match(a.out() + b.out(), /the pool database answers again/);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => row.verdict),
      Array(6).fill('PASS'),
    );
    assert.deepEqual(rows.map((row) => row.task_key).sort(), tasks.map((t) => t.key).sort());
    const runId = String(rows[0]?.run_id);
    assert.equal((await query(url, 'SELECT count(*)::int AS n FROM verdict_pool_attempts WHERE run_id = $1', [runId])).rows[0].n, 6);
  });

  it("a task cannot leave its sandbox on a pool worker: the worker's home and the rest of the machine stay untouched", async function () {
    await requireSandbox(this);
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const a = startWorker(url, 'boxed', 'script', 'bash', 1);
    workers.push(a);
    const outside = path.join(dir, 'outside.txt');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      remote,
      tasks: [scriptTask('escape', `echo x > ${outside}; echo x > ${a.home}/pwned; ls ${a.home} > seen.txt 2>&1; echo done > out.txt`, 'test -s out.txt')],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--pool', url, '--no-dashboard'], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    assert.equal(r.exitCode, 0, r.all);
    const [row] = readRows(home);
    assert.equal(row?.sandbox, 'bwrap');
    assert.ok(!fs.existsSync(outside), 'the task wrote outside its task dir');
    assert.ok(!fs.existsSync(path.join(a.home, 'pwned')), "the task wrote into the worker's VERDICT_HOME");
    // The worker's home was hidden from the task (an empty folder with only what the step needs bound back): its
    // records and eval log were not there to read or change.
    const seen = git(remote, 'show', `${String(row?.commit)}:seen.txt`);
    assert.doesNotMatch(seen, /runs/);
    assert.ok(fs.existsSync(path.join(a.home, 'runs.jsonl')));
  });

  it('hostile payloads: a key that escapes, an unknown field (full access) are refused unrun', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const a = startWorker(url, 'guarded', 'script', 'bash', 1);
    workers.push(a);
    await workersUp([a]);
    const boss = new PgBoss({ connectionString: url, schedule: false, supervise: false });
    boss.on('error', () => undefined);
    await boss.start();
    const base = {
      v: 6,
      runId: '20260101-000000-abcd',
      runName: 'x',
      identity: 'x',
      attempt: 1,
      retry: false,
      engine: 'script',
      model: null,
      taskType: null,
      spec: `touch ${dir}/pwned`,
      failure: null,
      check: 'true',
      expectFiles: [],
      timeoutMs: 60000,
      checkTimeoutMs: 60000,
      watchdogMs: null,
      engineArgs: [],
      verified: null,
      network: true,
      protect: null,
      setup: null,
      remote: path.join(dir, 'none.git'),
      baseSha: 'a'.repeat(40),
      startFrom: [],
      group: null,
      candidate: null,
      review: null,
      guard: { secrets: true, stubs: true, deps: true, paths: true },
      allowDeps: true,
      allowPaths: null,
      inputs: null,
      workflows: {},
    };
    const escaping = await boss.send('verdict-attempt-script', { ...base, key: '../../escape', branch: 'verdict/20260101-000000-abcd/../../escape' });
    const fullAccess = await boss.send('verdict-attempt-script', { ...base, key: 'ok', branch: 'verdict/20260101-000000-abcd/ok', fullAccess: true });
    await until('both refused', () => (a.out().match(/refused job/g) ?? []).length === 2, 30_000).catch((e: Error) => {
      throw new Error(`${e.message}; the worker said:\n${a.out()}`);
    });
    assert.match(a.out(), new RegExp(`refused job ${escaping}: payload field key`));
    assert.match(a.out(), new RegExp(`refused job ${fullAccess}: the payload has field\\(s\\) a worker does not take: fullAccess`));
    assert.ok(!fs.existsSync(path.join(dir, 'pwned')), 'no refused payload ran');
    await boss.stop({ graceful: false });
  });
});
