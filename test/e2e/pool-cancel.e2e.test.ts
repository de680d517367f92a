import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { LEASE_MS, poolSuite, query, startPoolWorker, unsandboxed, until, workersUp } from '../helpers/pool-workers';

/** Processes whose command line names `text` (read from /proc; nothing is signalled). */
function processesNaming(text: string): string[] {
  const out: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(text) && Number(pid) !== process.pid) out.push(`${pid}: ${cmd}`);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe('Ctrl-C of `verdict run --pool` while Postgres is down', function () {
  this.timeout(300_000);
  const { server: poolServer, workers } = poolSuite('all');

  it("stops cleanly: the attempt INTERRUPTED (resumable), the run ended, no process left; the worker's result is kept and `verdict resume` finishes the task", async () => {
    const pgServer = poolServer();
    const url = pgServer.url;
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# cancel\n' });
    const remote = path.join(dir, 'remote.git');
    git(dir, 'init', '-q', '--bare', remote);
    const w = startPoolWorker(url, 'steady', 'script', 'bash', 1);
    workers.push(w);
    await workersUp([w]);
    const home = path.join(dir, 'orchestrator-home');
    // The pool named by the settings (as VS Code's verdict.pool passes it), so `verdict resume` finds it too.
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({ pool: url }));
    const file = writeManifest(dir, {
      run_name: 'cancel-while-down',
      worktrees: true,
      repo,
      remote,
      tasks: [scriptTask('slow', 'sleep 6; echo done > out.txt', 'grep -qx done out.txt')],
    });
    const run = cli(['run', file, '--home', home, '--config', config, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    await until('the worker claims the attempt', () => /claimed .*slow\/1/.test(w.out()));

    pgServer.stop();
    run.kill('SIGINT');
    const r = await run;
    // Exit 1 (a task did not pass), as after any Ctrl-C; not a hang, not a crash.
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.all, /cancelling/);
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as {
      status: string;
      tasks: { key: string; status: string; attempts: { verdict: string; phase: string }[]; reason?: string }[];
    };
    assert.notEqual(state.status, 'running', 'the run ended');
    const task = state.tasks[0]!;
    assert.equal(task.status, 'INTERRUPTED');
    assert.deepEqual(
      task.attempts.map((a) => [a.phase, a.verdict]),
      [['done', 'INTERRUPTED']],
    );
    const rows = readRows(home);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.verdict, 'INTERRUPTED');
    assert.match(String(rows[0]?.notes ?? rows[0]?.reason ?? JSON.stringify(rows[0])), /unreachable|could not be reached/);
    assert.match(JSON.stringify(rows[0]), new RegExp(`refs/verdict/${runId}/slow/1`), 'the row says where a late result would be');
    // No process of the orchestrator is left (its git or node children included).
    assert.deepEqual(processesNaming(home), []);

    // Postgres back: the worker, which kept its attempt, settles it; its work is on the remote. Nothing lost.
    pgServer.start();
    await until('the worker settles its attempt', async () => {
      const q = await query(url, 'SELECT record FROM verdict_pool_attempts WHERE run_id = $1 AND task_key = $2 AND attempt = 1', [runId, 'slow']).catch(
        () => null,
      );
      return q?.rows[0]?.record != null;
    }).catch((e: Error) => {
      throw new Error(`${e.message}; the worker said:\n${w.out()}`);
    });
    const settled = (await query(url, 'SELECT record FROM verdict_pool_attempts WHERE run_id = $1 AND task_key = $2 AND attempt = 1', [runId, 'slow'])).rows[0]
      .record as { verdict: string; commit: string };
    assert.equal(settled.verdict, 'PASS');
    assert.equal(git(remote, 'rev-parse', `refs/verdict/${runId}/slow/1`), settled.commit);
    assert.equal(git(remote, 'show', `${settled.commit}:out.txt`), 'done');

    // Resumable: the same run takes the task again on the pool and finishes it.
    const resumed = await cli(['resume', runId, '--home', home, '--config', config, '--no-dashboard', ...unsandboxed], {
      env: { VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    assert.equal(resumed.exitCode, 0, resumed.all);
    const after = readRows(home);
    assert.deepEqual(
      after.map((row) => [row.attempt, row.verdict]),
      [
        [1, 'INTERRUPTED'],
        [2, 'PASS'],
      ],
    );
    assert.equal(after[1]?.host, 'steady');
  });
});
