import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { LEASE_MS, poolSuite, query, repoAndRemote, startPoolWorker, unsandboxed, until, workersUp } from '../helpers/pool-workers';

/**
 * A pool worker's PASS is re-checked by the orchestrator (docs/scale.md "Trust"). The lying worker here is a machine
 * of the pool that has what every worker has — the database's URL and the git remote — and does what a compromised
 * or misconfigured one can: it claims the attempt, pushes a commit whose check fails, and settles the attempt PASS
 * with a check output of its own making.
 */
describe("pool: a worker's PASS is re-checked on the orchestrator (verdict run --pool)", function () {
  this.timeout(300_000);
  const { url: poolUrl, workers } = poolSuite();

  /** The task every test runs: its check passes only on a tree whose out.txt says `truth`. */
  const task = (spec: string) =>
    scriptTask('t', spec, 'grep -qx truth out.txt && echo "out.txt holds the truth" || { echo "out.txt says: $(cat out.txt 2>&1)"; exit 1; }', {
      max_attempts: 1,
      expect_files: ['out.txt'],
    });

  /**
   * Plays the lying worker `id` for the first attempt queued: claims it, pushes a commit whose out.txt says `lie` to the
   * attempt's ref and the task branch, and settles the attempt PASS with a made-up check output.
   */
  async function lie(
    url: string,
    remote: string,
    id: string,
    files: Record<string, string> = { 'out.txt': 'lie\n' },
  ): Promise<{ runId: string; commit: string }> {
    let attempt: { run_id: string; task_key: string; attempt: number } | undefined;
    await until('the attempt queued', async () => {
      attempt = (
        await query(url, 'SELECT run_id, task_key, attempt FROM verdict_pool_attempts WHERE record IS NULL AND worker_id IS NULL').catch(() => ({ rows: [] }))
      ).rows[0];
      return !!attempt;
    });
    const { run_id: runId, task_key: key, attempt: n } = attempt!;
    const clone = tempDir('verdict-liar-');
    git(clone, 'init', '-q');
    git(clone, 'fetch', '-q', remote, `refs/verdict/${runId}/base`);
    git(clone, 'checkout', '-q', 'FETCH_HEAD');
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(clone, name), text);
    git(clone, 'add', '-A');
    git(clone, 'commit', '-q', '-m', 'the work');
    const commit = git(clone, 'rev-parse', 'HEAD');
    git(clone, 'push', '-q', remote, `${commit}:refs/verdict/${runId}/${key}/${n}`, `+${commit}:refs/heads/verdict/${runId}/${key}`);
    await query(
      url,
      `INSERT INTO verdict_pool_workers (worker_id, host, pid, slots, engines) VALUES ($1, 'liar', 4242, 1, '{script}') ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = now()`,
      [id],
    );
    await query(
      url,
      `UPDATE verdict_pool_attempts SET worker_id = $4, host = 'liar', claimed_at = now() WHERE run_id = $1 AND task_key = $2 AND attempt = $3`,
      [runId, key, n, id],
    );
    const record = {
      verdict: 'PASS',
      reason: '',
      host: 'liar',
      workerId: id,
      harness: 'script',
      model: null,
      commit,
      sealed: commit,
      check: { output: 'ran 12 tests: all passed\n', exitCode: 0, receipt: { exitCode: 0, signal: null, timedOut: false, cancelled: false, durationMs: 5 } },
    };
    await query(
      url,
      `UPDATE verdict_pool_attempts SET record = $4, log_tail = 'did the work', finished_at = now() WHERE run_id = $1 AND task_key = $2 AND attempt = $3 AND record IS NULL`,
      [runId, key, n, JSON.stringify(record)],
    );
    return { runId, commit };
  }

  it("a lying worker's PASS for a commit whose check fails: FAIL with both outputs, and the worker is marked in pool status", async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const file = writeManifest(dir, { worktrees: true, repo, remote, tasks: [task('echo truth > out.txt')] });
    const home = path.join(dir, 'home');
    const run = cli(['run', file, '--home', home, '--pool', url, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    const { runId, commit } = await lie(url, remote, 'liar-1');
    const r = await run;
    assert.equal(r.exitCode, 1, r.all);
    const [row] = readRows(home);
    assert.equal(row?.verdict, 'FAIL', r.all);
    assert.equal(row?.commit, null);
    assert.match(String(row?.notes), new RegExp(`liar.*reported PASS for ${commit.slice(0, 10)}.*re-run here.*failed`));
    // Both outputs: the re-run's is the row's check output, the worker's is kept beside it.
    assert.match(String(row?.check_output), /out\.txt says: lie/);
    const pool = row?.pool as { worker: string; trust: string; recheck: { passed: boolean; exit_code: number }; worker_check_output: string };
    assert.deepEqual([pool.worker, pool.trust, pool.recheck.passed, pool.recheck.exit_code], ['liar-1', 'check', false, 1]);
    assert.match(pool.worker_check_output, /ran 12 tests: all passed/);
    const attemptDir = path.join(home, 'runs', runId, 'tasks', 't', 'attempt-1');
    assert.match(fs.readFileSync(path.join(attemptDir, 'check.log'), 'utf8'), /out\.txt says: lie/);
    assert.match(fs.readFileSync(path.join(attemptDir, 'worker-check.log'), 'utf8'), /ran 12 tests: all passed/);
    // The lie is not delivered: the task branch here does not hold it.
    assert.notEqual(git(repo, 'for-each-ref', '--format=%(objectname)', `refs/heads/verdict/${runId}/t`), commit);
    const status = await cli(['pool', 'status', '--db', url, '--json']);
    const liar = (JSON.parse(status.stdout) as { workers: { workerId: string; mismatches: number }[] }).workers.find((w) => w.workerId === 'liar-1');
    assert.equal(liar?.mismatches, 1, status.stdout);
    const text = await cli(['pool', 'status', '--db', url]);
    assert.match(text.stdout, /liar .*1 PASS that did not hold here/);
  });

  it("a lying worker's PASS for a commit whose check passes and whose suite fails: the re-check runs the suite too, FAIL", async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const suite = 'test ! -e broken.txt || { echo "broken.txt is here: the suite fails"; exit 1; }';
    const file = writeManifest(dir, { worktrees: true, repo, remote, suite, tasks: [task('echo truth > out.txt')] });
    const home = path.join(dir, 'home');
    const run = cli(['run', file, '--home', home, '--pool', url, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    const { commit } = await lie(url, remote, 'liar-3', { 'out.txt': 'truth\n', 'broken.txt': 'x\n' });
    const r = await run;
    assert.equal(r.exitCode, 1, r.all);
    const [row] = readRows(home);
    assert.equal(row?.verdict, 'FAIL', r.all);
    assert.equal(row?.commit, null);
    assert.match(String(row?.notes), new RegExp(`liar.*reported PASS for ${commit.slice(0, 10)}.*re-run here.*the suite .* exited 1: broken\\.txt is here`));
    assert.match(String(row?.check_output), /broken\.txt is here: the suite fails/);
    assert.deepEqual((row?.pool as { recheck: { passed: boolean } }).recheck.passed, false);
  });

  it("an honest worker's PASS is re-checked here and kept; its row says so", async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const w = startPoolWorker(url, 'honest', 'script');
    workers.push(w);
    await workersUp([w]);
    const file = writeManifest(dir, { worktrees: true, repo, remote, tasks: [task('echo truth > out.txt')] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--pool', url, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    assert.equal(r.exitCode, 0, r.all);
    const [row] = readRows(home);
    assert.equal(row?.verdict, 'PASS');
    assert.equal(git(repo, 'rev-parse', `refs/heads/${String(row?.branch)}`), row?.commit);
    const pool = row?.pool as { worker: string; trust: string; recheck: { passed: boolean; exit_code: number } };
    assert.match(pool.worker, /^honest-/);
    assert.deepEqual([pool.trust, pool.recheck.passed, pool.recheck.exit_code], ['check', true, 0]);
    assert.match(String(row?.check_output), /out\.txt holds the truth/);
    const status = JSON.parse((await cli(['pool', 'status', '--db', url, '--json'])).stdout) as { workers: { host: string; mismatches: number }[] };
    assert.equal(status.workers.find((x) => x.host === 'honest')?.mismatches, 0);
  });

  it('pool.trust "worker" in the config: the re-check is off, the worker\'s PASS stands, and every row records the trust', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({ pool: { trust: 'worker' } }));
    const file = writeManifest(dir, { worktrees: true, repo, remote, tasks: [task('echo truth > out.txt')] });
    const home = path.join(dir, 'home');
    const run = cli(['run', file, '--home', home, '--pool', url, '--config', config, '--no-dashboard', ...unsandboxed], {
      env: { VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    const { commit } = await lie(url, remote, 'liar-2');
    const r = await run;
    assert.equal(r.exitCode, 0, r.all);
    const [row] = readRows(home);
    assert.equal(row?.verdict, 'PASS');
    assert.equal(row?.commit, commit);
    assert.deepEqual(row?.pool, { worker: 'liar-2', trust: 'worker', recheck: null });
  });
});
