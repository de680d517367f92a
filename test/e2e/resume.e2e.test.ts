import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import type { RunState } from '../../extension/core/live/state';

const env = { VERDICT_IDENTITY: 'tester' };

/**
 * A config with engine `lim`: bash runs the spec and claude's reader reads its output, so a task can end the way Claude
 * Code does when its usage limit is reached (only an engine's own structured event starts a quota wait).
 */
function quotaEngineConfig(dir: string): string {
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(
    file,
    JSON.stringify({ engines: { lim: { binary: 'bash', argv: ['-c', '{spec}'], install: 'a test fixture', output: 'claude', retry_context: 'file' } } }),
  );
  return file;
}

/** Shell that prints Claude Code's error result for a used-up usage limit resetting `inS` seconds from now. */
function quotaResult(inS: number): string {
  return `echo '{"type":"result","is_error":true,"result":"Claude AI usage limit reached|'$(( $(date +%s) + ${inS} ))'"}'`;
}

/** The one run under `home`: its id and state now (a resume never makes a second run). */
function onlyRun(home: string): { runId: string; state: RunState } {
  const ids = fs.readdirSync(path.join(home, 'runs'));
  assert.equal(ids.length, 1, `one run under ${home}, found ${ids.join(', ')}`);
  return { runId: ids[0] as string, state: JSON.parse(fs.readFileSync(path.join(home, 'runs', ids[0] as string, 'state.json'), 'utf8')) as RunState };
}

const taskOf = (s: RunState, key: string) => s.tasks.find((t) => t.key === key);

describe('resume and rerun continue the same run (same id, attempts numbered on)', function () {
  this.timeout(180000);

  /**
   * a passes; b fails twice (its worker appends its attempt number to notes.txt in its worktree, and makes b.txt only
   * once `marker` exists); c comes after b (BLOCKED); d fails on its own.
   */
  async function failedRun(): Promise<{ dir: string; home: string; repo: string; marker: string; runId: string; first: RunState }> {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const marker = path.join(dir, 'b-may-pass');
    const manifest = writeManifest(repo, {
      run_name: 'resumable',
      worktrees: true,
      max_parallel: 3,
      tasks: [
        scriptTask('a', 'echo a > a.txt', 'test -s a.txt'),
        scriptTask(
          'b',
          `echo "attempt $VERDICT_ATTEMPT" >> notes.txt; if [ -f ${marker} ]; then echo b > b.txt; fi`,
          'test -s b.txt || { echo "b.txt missing"; exit 1; }',
          { max_attempts: 2 },
        ),
        scriptTask('c', 'echo c > c.txt', 'test -s b.txt && test -s c.txt', { after: ['b'] }),
        scriptTask('d', 'true', 'echo "d never passes"; exit 1', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', manifest, '--home', home, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 1, r.all);
    const { runId, state } = onlyRun(home);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status, t.attempts.length]),
      [
        ['a', 'PASS', 1],
        ['b', 'FAIL', 2],
        ['c', 'BLOCKED', 0],
        ['d', 'FAIL', 1],
      ],
    );
    return { dir, home, repo, marker, runId, first: state };
  }

  it('resume of a finished run: same id and state file, attempt 3 after 2 in the failed worktree, BLOCKED after it, passed work untouched', async function () {
    await requireSandbox(this);
    const { home, repo, marker, runId, first } = await failedRun();
    const aBranch = `verdict/${runId}/a`;
    const aHead = git(repo, 'rev-parse', aBranch);
    const bWorktree = taskOf(first, 'b')?.dir as string;
    fs.writeFileSync(marker, '');

    const r = await cli(['resume', runId.slice(0, 17), '--home', home, '--no-dashboard'], { env: { VERDICT_IDENTITY: 'resumer' } });
    assert.equal(r.exitCode, 1, r.all); // d fails again
    assert.match(r.stdout, new RegExp(`resuming 3 task\\(s\\) of run ${runId} \\(same run\\): b, c, d`));
    const { state } = onlyRun(home);
    assert.equal(state.runId, runId);
    assert.equal(state.status, 'finished');
    assert.equal(state.startedAt, first.startedAt, 'the run keeps its start');
    assert.deepEqual(
      state.resumes?.map((x) => [x.verb, x.by, x.from, x.tasks]),
      [['resume', 'resumer', 'finished', ['b', 'c', 'd']]],
    );
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status, t.attempts.map((a) => [a.attempt, a.verdict])]),
      [
        ['a', 'PASS', [[1, 'PASS']]],
        [
          'b',
          'PASS',
          [
            [1, 'FAIL'],
            [2, 'FAIL'],
            [3, 'PASS'],
          ],
        ],
        ['c', 'PASS', [[1, 'PASS']]],
        [
          'd',
          'FAIL',
          [
            [1, 'FAIL'],
            [2, 'FAIL'],
          ],
        ],
      ],
    );
    // a: not run again, its branch and commit as they were.
    assert.deepEqual(taskOf(state, 'a'), taskOf(first, 'a'));
    assert.equal(git(repo, 'rev-parse', aBranch), aHead);
    // b went on in its worktree as attempt 2 left it: attempt 3's notes follow 1 and 2's, and are in its commit.
    const bCommit = taskOf(state, 'b')?.commit as string;
    assert.equal(taskOf(state, 'b')?.dir, bWorktree);
    assert.equal(git(repo, 'show', `${bCommit}:notes.txt`), 'attempt 1\nattempt 2\nattempt 3');
    assert.equal(git(repo, 'rev-parse', `verdict/${runId}/b`), bCommit);
    // c started from b's commit.
    assert.equal(git(repo, 'rev-parse', `${taskOf(state, 'c')?.commit}~1`), bCommit);
    // Every row carries the run id; attempts numbered on; the resumed attempts after judged ones are retries.
    const rows = readRows(home);
    assert.ok(rows.every((x) => x.run_id === runId));
    assert.deepEqual(rows.map((x) => [x.task_key, x.attempt, x.verdict, x.retry, x.identity]).sort(), [
      ['a', 1, 'PASS', false, 'tester'],
      ['b', 1, 'FAIL', false, 'tester'],
      ['b', 2, 'FAIL', true, 'tester'],
      ['b', 3, 'PASS', true, 'resumer'],
      ['c', 1, 'PASS', false, 'resumer'],
      ['d', 1, 'FAIL', false, 'tester'],
      ['d', 2, 'FAIL', true, 'resumer'],
    ]);
    // The records of attempt 3 sit beside attempts 1 and 2.
    assert.ok(fs.existsSync(path.join(home, 'runs', runId, 'tasks', 'b', 'attempt-3', 'receipt.json')));
  });

  it('rerun RUN TASK of a finished run: that task and its BLOCKED dependent run again, nothing else; a BLOCKED task alone is refused', async function () {
    await requireSandbox(this);
    const { home, marker, runId } = await failedRun();
    const blocked = await cli(['rerun', runId, 'c', '--home', home, '--no-dashboard'], { env });
    assert.equal(blocked.exitCode, 2, blocked.all);
    assert.match(blocked.stderr, /c is BLOCKED by b \(FAIL\): rerun b, and c runs again once it passes/);
    const unknown = await cli(['rerun', runId, 'zz', '--home', home, '--no-dashboard'], { env });
    assert.equal(unknown.exitCode, 2, unknown.all);
    assert.match(unknown.stderr, new RegExp(`run ${runId} has no task zz`));

    fs.writeFileSync(marker, '');
    const r = await cli(['rerun', runId, 'b', '--home', home, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 1, r.all); // d is still FAIL: not every task of the run passed
    assert.match(r.stdout, new RegExp(`running again 2 task\\(s\\) of run ${runId} \\(same run\\): b, c`));
    const { state } = onlyRun(home);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status, t.attempts.length]),
      [
        ['a', 'PASS', 1],
        ['b', 'PASS', 3],
        ['c', 'PASS', 1],
        ['d', 'FAIL', 1],
      ],
    );
    assert.deepEqual(
      state.resumes?.map((x) => [x.verb, x.tasks]),
      [['rerun', ['b', 'c']]],
    );
    assert.deepEqual(readRows(home).filter((x) => x.task_key === 'd').length, 1, 'd did not run again');
  });

  it('two `verdict resume RUN` at once: one orchestrator runs the run, the other is refused (exit 2) naming it', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const marker = path.join(dir, 'may-pass');
    const manifest = writeManifest(repo, {
      worktrees: true,
      tasks: [scriptTask('slow', `if [ -f ${marker} ]; then sleep 3; echo ok > ok.txt; fi`, 'test -s ok.txt', { max_attempts: 1 })],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', manifest, '--home', home, '--no-dashboard', '--no-sandbox'], { env });
    assert.equal(r.exitCode, 1, r.all);
    const { runId } = onlyRun(home);
    fs.writeFileSync(marker, '');
    const start = () =>
      execa('node', [CLI, 'resume', runId, '--home', home, '--no-dashboard', '--no-sandbox'], { env, reject: false, all: true, stdin: 'ignore' });
    const one = start();
    const two = start();
    const [x, y] = await Promise.all([one, two]);
    const ran = x.exitCode === 0 ? x : y;
    const refused = ran === x ? y : x;
    assert.equal(ran.exitCode, 0, `${x.all}\n----\n${y.all}`);
    assert.equal(refused.exitCode, 2, `${x.all}\n----\n${y.all}`);
    const ranPid = (ran === x ? one : two).pid as number;
    // Refused either at the run's lock or, once the winner's state says it runs, as a live run: both name its pid.
    assert.match(refused.stderr, new RegExp(`(is being orchestrated by pid ${ranPid} |its orchestrator is pid ${ranPid} )`));
    const { state } = onlyRun(home);
    assert.deepEqual(
      state.tasks[0]?.attempts.map((a) => [a.attempt, a.verdict]),
      [
        [1, 'FAIL'],
        [2, 'PASS'],
      ],
      'the task ran once more, not twice',
    );
    assert.equal(state.resumes?.length, 1);
    assert.equal(readRows(home).length, 2);
  });

  it('a quota wait survives kill -9 and resume: no attempt is spent while the engine waits, and none starts before its wake-up', async () => {
    const dir = tempDir();
    // An engine whose output claude's reader reads: q's first attempt ends with its result event saying the usage limit
    // is reached, with a reset 8 s ahead (claude's form, epoch seconds).
    const config = quotaEngineConfig(dir);
    const quota = `if [ "$VERDICT_ATTEMPT" = 1 ]; then ${quotaResult(8)}; exit 1; fi; echo ok > out.txt`;
    const manifest = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 1,
      tasks: [
        scriptTask('q', quota, 'test -s out.txt || { echo "out.txt missing"; exit 1; }', { engine: 'lim', max_attempts: 1 }),
        scriptTask('r', 'echo ok > out.txt', 'test -s out.txt', { engine: 'lim' }),
      ],
    });
    const home = path.join(dir, 'home');
    const child = execa('node', [CLI, 'run', manifest, '--home', home, '--config', config, '--no-dashboard', '--no-sandbox'], {
      env,
      reject: false,
      all: true,
      stdin: 'ignore',
    });
    let waiting: RunState | null = null;
    for (let i = 0; i < 600 && !waiting; i++) {
      await new Promise((r) => setTimeout(r, 50));
      try {
        const { state } = onlyRun(home);
        if (state.waits?.lim) waiting = state;
      } catch {
        // not started yet, or the state file is being replaced
      }
    }
    assert.ok(waiting, 'the engine went into a quota wait');
    const wait = waiting.waits?.lim;
    // While it waits: q's rate-limited attempt is its only one, r (same engine) has not started.
    assert.deepEqual(
      waiting.tasks.map((t) => [t.key, t.attempts.map((a) => a.verdict)]),
      [
        ['q', ['RATE_LIMITED']],
        ['r', []],
      ],
    );
    assert.deepEqual([wait?.task, wait?.attempt], ['q', 1]);
    assert.match(wait?.reason ?? '', /^Claude AI usage limit reached\|\d{10}$/);
    const listed = JSON.parse((await cli(['runs', '--json', '--home', home], { env })).stdout) as {
      waits: Record<string, { until: string; task: string; source: string }>;
      waiting: string;
    }[];
    assert.equal(listed[0]?.waits.lim?.until, new Date(wait?.until as number).toISOString());
    assert.deepEqual([listed[0]?.waits.lim?.task, listed[0]?.waits.lim?.source], ['q', 'its result event (is_error)']);
    assert.match(listed[0]?.waiting ?? '', /^waiting for lim until \d\d:\d\d$/);

    child.kill('SIGKILL');
    await child;
    const killed = onlyRun(home).state;
    assert.deepEqual(
      killed.tasks.map((t) => [t.key, t.attempts.length]),
      [
        ['q', 1],
        ['r', 0],
      ],
      'killed during the wait: nothing else ran',
    );
    assert.deepEqual(killed.waits?.lim, wait, 'the wait is in state.json');

    const r = await cli(['resume', killed.runId, '--home', home, '--config', config, '--no-dashboard', '--no-sandbox'], { env });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(
      r.stdout,
      /engine lim waits for its quota until \d\d:\d\d \(q attempt 1: "Claude AI usage limit reached\|\d+"\); no attempt on it starts before then/,
    );
    const { state } = onlyRun(home);
    assert.equal(state.runId, killed.runId);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status, t.attempts.map((a) => [a.attempt, a.verdict])]),
      [
        [
          'q',
          'PASS',
          [
            [1, 'RATE_LIMITED'],
            [2, 'PASS'],
          ],
        ],
        ['r', 'PASS', [[1, 'PASS']]],
      ],
    );
    // One row per attempt: the wait spent none, and the interrupted wait left no INTERRUPTED row (no attempt was running).
    const rows = readRows(home);
    // q and r run at once after the wait, so their rows land in either order.
    const byTask = (a: unknown[], b: unknown[]) => `${a[0]}/${a[1]}`.localeCompare(`${b[0]}/${b[1]}`);
    assert.deepEqual(rows.map((x) => [x.task_key, x.attempt, x.verdict, x.retry]).sort(byTask), [
      ['q', 1, 'RATE_LIMITED', false],
      ['q', 2, 'PASS', false],
      ['r', 1, 'PASS', false],
    ]);
    assert.deepEqual(rows[0] && [rows[0].task_key, rows[0].attempt], ['q', 1], 'the rate-limited attempt is the first row');
    // The resumed orchestrator honoured the wake-up: no attempt on the engine started before it.
    for (const row of rows.slice(1))
      assert.ok(
        Date.parse(row.started_at as string) >= (wait?.until as number),
        `${row.task_key} attempt ${row.attempt} started at ${row.started_at}, before the wake-up ${new Date(wait?.until as number).toISOString()}`,
      );
  });

  it('hostile: a check script a failed attempt rewrote to `exit 0` is put back after resume (the protected inputs come from their snapshot, not the worktree)', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# r\n', 'run-tests.sh': 'test -s out.txt || { echo "out.txt missing"; exit 1; }\n' });
    // Attempt 1 rewrites the check's script (unsandboxed, nothing stops the write; the guard sees it); later attempts do nothing.
    const manifest = writeManifest(repo, {
      worktrees: true,
      tasks: [scriptTask('t', 'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo "exit 0" > run-tests.sh; fi', 'bash run-tests.sh', { max_attempts: 1 })],
    });
    const home = path.join(dir, 'home');
    const first = await cli(['run', manifest, '--home', home, '--no-dashboard', '--no-sandbox'], { env });
    assert.equal(first.exitCode, 1, first.all);
    const { runId, state: s1 } = onlyRun(home);
    assert.match(s1.tasks[0]?.attempts[0]?.notes ?? '', /run-tests\.sh/);
    assert.equal(
      fs.readFileSync(path.join(s1.tasks[0]?.dir as string, 'run-tests.sh'), 'utf8'),
      'exit 0\n',
      'the failed worktree is left as the attempt left it',
    );

    const r = await cli(['resume', runId, '--home', home, '--no-dashboard', '--no-sandbox'], { env });
    assert.equal(r.exitCode, 1, r.all);
    const { state } = onlyRun(home);
    assert.deepEqual(
      state.tasks[0]?.attempts.map((a) => [a.attempt, a.verdict]),
      [
        [1, 'FAIL'],
        [2, 'FAIL'],
      ],
    );
    assert.match(state.tasks[0]?.attempts[1]?.notes ?? '', /out\.txt missing|exit/);
    assert.equal(fs.readFileSync(path.join(state.tasks[0]?.dir as string, 'run-tests.sh'), 'utf8'), 'test -s out.txt || { echo "out.txt missing"; exit 1; }\n');
    assert.ok(readRows(home).every((x) => x.verdict !== 'PASS'));
  });

  it('a task whose worktree was removed since (verdict clean) gets a new one on its own branch', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const marker = path.join(dir, 'may-pass');
    const manifest = writeManifest(repo, {
      worktrees: true,
      tasks: [
        scriptTask('t', `echo "attempt $VERDICT_ATTEMPT" >> notes.txt; if [ -f ${marker} ]; then echo ok > ok.txt; fi`, 'test -s ok.txt', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    assert.equal((await cli(['run', manifest, '--home', home, '--no-dashboard', '--no-sandbox'], { env })).exitCode, 1);
    const { runId, state: s1 } = onlyRun(home);
    const wt = s1.tasks[0]?.dir as string;
    const start = git(repo, 'rev-parse', `verdict/${runId}/t`);
    git(repo, 'worktree', 'remove', '--force', wt);
    fs.writeFileSync(marker, '');
    const r = await cli(['resume', runId, '--home', home, '--no-dashboard', '--no-sandbox'], { env });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stdout, new RegExp(`its worktree was removed: a new one on its branch verdict/${runId}/t \\(${start.slice(0, 10)}\\)`));
    const { state } = onlyRun(home);
    const commit = state.tasks[0]?.commit as string;
    assert.deepEqual(
      state.tasks[0]?.attempts.map((a) => [a.attempt, a.verdict]),
      [
        [1, 'FAIL'],
        [2, 'PASS'],
      ],
    );
    // Made afresh from the branch (its start point): attempt 1's uncommitted notes went with the removed worktree.
    assert.equal(git(repo, 'show', `${commit}:notes.txt`), 'attempt 2');
    assert.equal(git(repo, 'rev-parse', `${commit}~1`), start);
  });

  it('a quota wait in a live run: the waiting engine starts nothing until its wake-up, another engine goes on meanwhile', async () => {
    const dir = tempDir();
    const config = quotaEngineConfig(dir);
    // The engine's result event names the usage limit with its reset 8 s ahead (claude's form: epoch seconds).
    const quota = `if [ "$VERDICT_ATTEMPT" = 1 ]; then ${quotaResult(8)}; exit 1; fi; echo ok > out.txt`;
    const manifest = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 1,
      tasks: [
        scriptTask('q', quota, 'test -s out.txt || { echo "out.txt missing"; exit 1; }', { engine: 'lim', max_attempts: 1 }),
        scriptTask('s', 'echo ok > out.txt', 'test -s out.txt'),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', manifest, '--home', home, '--config', config, '--no-dashboard', '--no-sandbox'], { env });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stdout, /engine lim reached its usage limit \(q attempt 1, its result event \(is_error\)\): no attempt on it starts before \d\d:\d\d/);
    const { state } = onlyRun(home);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((x) => [x.task_key, x.worker_engine, x.attempt, x.verdict]),
      [
        ['q', 'lim', 1, 'RATE_LIMITED'],
        ['s', 'script', 1, 'PASS'],
        ['q', 'lim', 2, 'PASS'],
      ],
    );
    // s (another engine) started during the wait, q's attempt 2 only once the engine's reset time had come.
    const resetAt =
      Number(/limit reached\|(\d+)/.exec(fs.readFileSync(path.join(home, 'runs', state.runId, 'tasks', 'q', 'attempt-1', 'worker.log'), 'utf8'))?.[1]) * 1000;
    assert.ok(resetAt > Date.parse(String(rows[0]?.started_at)), "the reset time is in attempt 1's log");
    assert.ok(Date.parse(String(rows[1]?.started_at)) < resetAt, 's did not wait for lim');
    assert.ok(Date.parse(String(rows[2]?.started_at)) >= resetAt, 'q attempt 2 started before the reset');
  });
});
