import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { graphOrder, afterLabel, runActionsFor, type HostToPage } from '../../schemas/protocol';
import type { DashboardActions, DashboardRunActions } from '../../extension/core/dashboard/actions';
import { localActions, localRunActions } from '../../extension/core/dashboard/actions';
import { taskDiff } from '../../extension/core/dashboard/diff';
import { runView } from '../../extension/core/dashboard/run-view';
import { DashboardSession } from '../../extension/core/dashboard/session';
import { DashboardSource } from '../../extension/core/dashboard/source';
import { parsePageMessage } from '../../extension/core/dashboard/validate';
import { describeRun } from '../../extension/core/live/registry';
import type { RunState, TaskState } from '../../extension/core/live/state';
import { git, makeRepo, tempDir } from '../helpers/fixtures';

const quiet = () => {
  const lines: string[] = [];
  return { lines, info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
};

const task = (key: string, over: Partial<TaskState> = {}): TaskState => ({
  key,
  engine: 'script',
  model: null,
  taskType: null,
  verified: null,
  status: 'queued',
  dir: '/tmp',
  branch: null,
  commit: null,
  port: null,
  attempts: [],
  ...over,
});

function state(runId: string, tasks: TaskState[], over: Partial<RunState> = {}): RunState {
  return {
    version: 1,
    runId,
    runName: `run ${runId}`,
    manifestFile: '/x.swarm.json',
    identity: 'me',
    host: 'h',
    pid: process.pid,
    status: 'running',
    startedAt: Date.now(),
    heartbeatAt: Date.now(),
    endedAt: null,
    maxParallel: 1,
    worktrees: false,
    repo: null,
    baseRef: null,
    baseSha: null,
    tasks,
    ...over,
  };
}

function writeState(home: string, s: RunState): string {
  const file = path.join(home, 'runs', s.runId, 'state.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(s));
  return file;
}

describe('dashboard protocol: task-action', () => {
  it('accepts stop, rerun, merge, open-diff and open-log of a task, and only those', () => {
    for (const action of ['stop', 'rerun', 'merge', 'open-diff', 'open-log']) {
      const m = { type: 'task-action', seq: 4, runId: 'r-1', key: 'k.2', action };
      assert.deepEqual(parsePageMessage(m), { ok: true, message: m });
    }
    const bad: [unknown, RegExp][] = [
      [{ type: 'task-action', seq: 1, runId: 'r', key: 'k', action: 'discard' }, /action/],
      [{ type: 'task-action', seq: 1, runId: 'r', key: 'k', action: 'cancel' }, /action/],
      [{ type: 'task-action', seq: 1, runId: 'r', action: 'stop' }, /key/],
      [{ type: 'task-action', seq: 1, runId: '../r', key: 'k', action: 'stop' }, /runId/],
      [{ type: 'task-action', seq: 1, runId: 'r', key: '..', action: 'merge' }, /key/],
      [{ type: 'task-action', seq: -1, runId: 'r', key: 'k', action: 'stop' }, /seq/],
      [{ type: 'task-action', seq: 1, runId: 'r', key: 'k', action: 'stop', verb: 'cancel' }, /additional/],
    ];
    for (const [m, why] of bad) {
      const r = parsePageMessage(m);
      assert.equal(r.ok, false, JSON.stringify(m));
      if (!r.ok) assert.match(r.reason, why);
    }
  });

  it('a session hands a valid task-action to its host and replies did-act; an unknown task or a host without actions is refused', async () => {
    const home = tempDir();
    writeState(home, state('r1', [task('a', { status: 'running' })]));
    const log = quiet();
    const source = new DashboardSource(home, log);
    const posted: HostToPage[] = [];
    const calls: string[] = [];
    const actions: DashboardActions = async (action, info, key) => {
      calls.push(`${action} ${info.state.runId}/${key}`);
      return { result: 'done', message: `${action} ${key}: done` };
    };
    const session = new DashboardSession(
      source,
      { post: (m) => posted.push(m) },
      { host: 'browser', log, scoreboard: async () => ({ rows: [], source: 'none' }), actions },
    );
    const bare = new DashboardSession(
      source,
      { post: (m) => posted.push(m) },
      { host: 'browser', log, scoreboard: async () => ({ rows: [], source: 'none' }) },
    );
    try {
      assert.equal(session.receive({ type: 'task-action', seq: 1, runId: 'r1', key: 'a', action: 'stop' }), false, 'nothing before ready');
      session.receive({ type: 'ready' });
      session.receive({ type: 'task-action', seq: 2, runId: 'r1', key: 'a', action: 'stop' });
      session.receive({ type: 'task-action', seq: 3, runId: 'r1', key: 'nope', action: 'stop' });
      session.receive({ type: 'task-action', seq: 4, runId: 'zz', key: 'a', action: 'merge' });
      bare.receive({ type: 'ready' });
      bare.receive({ type: 'task-action', seq: 5, runId: 'r1', key: 'a', action: 'rerun' });
      await new Promise((r) => setImmediate(r));
      const acts = posted.filter((m) => m.type === 'did-act');
      assert.deepEqual(calls, ['stop r1/a'], 'only the valid one reaches the host');
      assert.deepEqual(acts, [
        { type: 'did-act', replyTo: 3, runId: 'r1', key: 'nope', action: 'stop', result: 'refused', message: 'no task nope in run r1' },
        { type: 'did-act', replyTo: 4, runId: 'zz', key: 'a', action: 'merge', result: 'refused', message: 'no task a in run zz' },
        { type: 'did-act', replyTo: 5, runId: 'r1', key: 'a', action: 'rerun', result: 'refused', message: 'this dashboard host does not act on tasks' },
        { type: 'did-act', replyTo: 2, runId: 'r1', key: 'a', action: 'stop', result: 'done', message: 'stop a: done' },
      ]);
    } finally {
      session.dispose();
      bare.dispose();
      source.close();
    }
  });

  it('a host action that throws is refused with its message, never unanswered', async () => {
    const home = tempDir();
    writeState(home, state('r1', [task('a')]));
    const log = quiet();
    const source = new DashboardSource(home, log);
    const posted: HostToPage[] = [];
    const session = new DashboardSession(
      source,
      { post: (m) => posted.push(m) },
      {
        host: 'browser',
        log,
        scoreboard: async () => ({ rows: [], source: 'none' }),
        actions: async () => {
          throw new Error('the repository is gone\nstack');
        },
      },
    );
    try {
      session.receive({ type: 'ready' });
      session.receive({ type: 'task-action', seq: 9, runId: 'r1', key: 'a', action: 'merge' });
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(posted.at(-1), {
        type: 'did-act',
        replyTo: 9,
        runId: 'r1',
        key: 'a',
        action: 'merge',
        result: 'refused',
        message: 'the repository is gone',
      });
    } finally {
      session.dispose();
      source.close();
    }
  });

  it("the hud's actions: stop of a run that is not live, rerun of a finished run (no CLI given) and merge of a task that did not pass are refused; nothing is written", async () => {
    const home = tempDir();
    const repo = makeRepo(path.join(tempDir(), 'repo'));
    const s = state('r2', [task('a', { status: 'FAIL', branch: 'verdict/r2/a' })], { status: 'finished', endedAt: Date.now(), worktrees: true, repo });
    const file = writeState(home, s);
    const info = describeRun(s, file);
    const act = localActions(home, 'tester', { ackWaitMs: 500 });
    assert.deepEqual(await act('stop', info, 'a'), { result: 'refused', message: 'run r2 is not live (finished); stop acts on a running run' });
    assert.deepEqual(
      await act('rerun', info, 'a'),
      { result: 'refused', message: 'run r2 is not live (finished); rerun acts on a running run' },
      'without a CLI to start, a finished run is not rerun',
    );
    await assert.rejects(act('merge', info, 'a'), /frozen manifest|ENOENT|manifest/, 'no frozen manifest: the merge cannot re-check, so it does not merge');
    assert.equal(fs.existsSync(path.join(home, 'runs', 'r2', 'control.jsonl')), false, 'no control command was sent');
    assert.equal((await act('open-diff', info, 'a')).result, 'refused');
    assert.deepEqual(await act('open-log', info, 'a'), {
      result: 'refused',
      message: "this page shows each worker's output live under it; this host opens no editor",
    });
  });
});

describe('dashboard protocol: run-action (pause, resume, drain)', () => {
  it('accepts pause, resume and drain of a run, and only those', () => {
    for (const action of ['pause', 'resume', 'drain']) {
      const m = { type: 'run-action', seq: 4, runId: 'r-1', action };
      assert.deepEqual(parsePageMessage(m), { ok: true, message: m });
    }
    const bad: [unknown, RegExp][] = [
      [{ type: 'run-action', seq: 1, runId: 'r', action: 'cancel' }, /action/],
      [{ type: 'run-action', seq: 1, runId: 'r', action: 'stop' }, /action/],
      [{ type: 'run-action', seq: 1, runId: 'r', action: 'pause', key: 'a' }, /additional/],
      [{ type: 'run-action', seq: 1, runId: '../r', action: 'pause' }, /runId/],
      [{ type: 'run-action', seq: 1, action: 'drain' }, /runId/],
      [{ type: 'run-action', runId: 'r', action: 'drain' }, /seq/],
    ];
    for (const [m, why] of bad) {
      const r = parsePageMessage(m);
      assert.equal(r.ok, false, JSON.stringify(m));
      if (!r.ok) assert.match(r.reason, why);
    }
  });

  it('offers only the buttons that apply: pause and drain on a live run, resume and drain on a paused one, none while draining, resume on an ended run with work left', () => {
    const live = { liveness: 'running' as const, paused: false, draining: false, tasks: [{ key: 'a', status: 'running' as const }] };
    assert.deepEqual(runActionsFor(live), ['pause', 'drain']);
    assert.deepEqual(runActionsFor({ ...live, paused: true }), ['resume', 'drain']);
    assert.deepEqual(runActionsFor({ ...live, draining: true }), []);
    const ended = { liveness: 'finished' as const, paused: false, draining: true };
    assert.deepEqual(runActionsFor({ ...ended, tasks: [{ key: 'a', status: 'PASS' }] }), [], 'every task passed: nothing to resume');
    assert.deepEqual(
      runActionsFor({
        ...ended,
        tasks: [
          { key: 'a', status: 'PASS' },
          { key: 'b', status: 'CANCELLED' },
        ],
      }),
      ['resume'],
    );
    // A paused flag left in the state of a run that ended offers no pause or drain.
    assert.deepEqual(runActionsFor({ ...ended, paused: true, liveness: 'cancelled', tasks: [{ key: 'a', status: 'FAIL' }] }), ['resume']);
    assert.deepEqual(runActionsFor({ ...ended, liveness: 'orchestrator-died', tasks: [{ key: 'a', status: 'running' }] }), ['resume']);
    // A best-of-N task that passed: its losing candidates are not run again, so there is nothing to resume.
    const group = [
      { key: 'g', status: 'PASS' as const, select: 'first-pass' },
      { key: 'g--c1', status: 'PASS' as const, group: 'g', candidate: 1 },
      { key: 'g--c2', status: 'CANCELLED' as const, group: 'g', candidate: 2 },
    ];
    assert.deepEqual(runActionsFor({ ...ended, tasks: group }), []);
  });

  it('a session hands a valid run-action to its host and replies did-run-act; an unknown run, a host without run actions and a throwing one are refused', async () => {
    const home = tempDir();
    writeState(home, state('r1', [task('a', { status: 'running' })]));
    const log = quiet();
    const source = new DashboardSource(home, log);
    const posted: HostToPage[] = [];
    const calls: string[] = [];
    const runActions: DashboardRunActions = async (action, info) => {
      calls.push(`${action} ${info.state.runId}`);
      if (action === 'drain') throw new Error('the state file is gone\nstack');
      return { result: 'done', message: `${action}: done` };
    };
    const opts = { host: 'browser' as const, log, scoreboard: async () => ({ rows: [], source: 'none' }) };
    const session = new DashboardSession(source, { post: (m) => posted.push(m) }, { ...opts, runActions });
    const bare = new DashboardSession(source, { post: (m) => posted.push(m) }, opts);
    try {
      assert.equal(session.receive({ type: 'run-action', seq: 1, runId: 'r1', action: 'pause' }), false, 'nothing before ready');
      session.receive({ type: 'ready' });
      session.receive({ type: 'run-action', seq: 2, runId: 'r1', action: 'pause' });
      session.receive({ type: 'run-action', seq: 3, runId: 'zz', action: 'resume' });
      session.receive({ type: 'run-action', seq: 4, runId: 'r1', action: 'drain' });
      bare.receive({ type: 'ready' });
      bare.receive({ type: 'run-action', seq: 5, runId: 'r1', action: 'pause' });
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(calls, ['pause r1', 'drain r1'], 'only the valid ones reach the host');
      const sorted = posted.filter((m) => m.type === 'did-run-act').sort((x, y) => x.replyTo - y.replyTo);
      assert.deepEqual(sorted, [
        { type: 'did-run-act', replyTo: 2, runId: 'r1', action: 'pause', result: 'done', message: 'pause: done' },
        { type: 'did-run-act', replyTo: 3, runId: 'zz', action: 'resume', result: 'refused', message: 'no run zz' },
        { type: 'did-run-act', replyTo: 4, runId: 'r1', action: 'drain', result: 'refused', message: 'the state file is gone' },
        { type: 'did-run-act', replyTo: 5, runId: 'r1', action: 'pause', result: 'refused', message: 'this dashboard host does not act on runs' },
      ]);
    } finally {
      session.dispose();
      bare.dispose();
      source.close();
    }
  });

  it("the hud's run actions: pause and drain of a run that is not live, and resume of it without a CLI to start, are refused; nothing is written", async () => {
    const home = tempDir();
    const s = state('r3', [task('a', { status: 'FAIL' })], { status: 'finished', endedAt: Date.now() });
    const info = describeRun(s, writeState(home, s));
    const act = localRunActions(home, 'tester', { ackWaitMs: 500 });
    for (const action of ['pause', 'drain', 'resume'] as const)
      assert.deepEqual(await act(action, info), { result: 'refused', message: `run r3 is not live (finished); ${action} acts on a running run` });
    assert.equal(fs.existsSync(path.join(home, 'runs', 'r3', 'control.jsonl')), false, 'no control command was sent');
    assert.equal(fs.existsSync(path.join(home, 'launches')), false, 'no orchestrator was started');
  });
});

describe("dashboard: a task's diff for the browser host", () => {
  it('is git diff of the task commit against the run base, capped; a task without a commit has none', async () => {
    const repo = makeRepo(path.join(tempDir(), 'repo'), { 'a.txt': 'one\n' });
    const base = git(repo, 'rev-parse', 'HEAD');
    git(repo, 'checkout', '-qb', 'verdict/r/a');
    fs.writeFileSync(path.join(repo, 'a.txt'), 'one\ntwo\n');
    fs.writeFileSync(path.join(repo, 'big.txt'), 'x'.repeat(100000) + '\n');
    // A hostile repository's diff driver and textconv never run: the diff is git's own.
    fs.writeFileSync(path.join(repo, '.gitattributes'), '*.txt diff=evil\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'work');
    const head = git(repo, 'rev-parse', 'HEAD');
    git(repo, 'checkout', '-q', 'main');
    const marker = path.join(tempDir(), 'ran');
    git(repo, 'config', 'diff.evil.command', `touch ${marker}`);
    git(repo, 'config', 'diff.evil.textconv', `touch ${marker}; cat`);
    const s = state('r', [task('a', { status: 'PASS', commit: head, branch: 'verdict/r/a' }), task('b', { status: 'FAIL' })], {
      worktrees: true,
      repo,
      baseSha: base,
    });
    const info = describeRun(s, '/nowhere/state.json');
    const d = await taskDiff(info, 'a');
    assert.ok(d.ok);
    assert.match(d.text, /^diff --git a\/a\.txt b\/a\.txt/m);
    assert.match(d.text, /^\+two$/m);
    assert.equal(d.truncated, false);
    assert.equal(fs.existsSync(marker), false, "the repository's diff programs did not run");
    const cut = await taskDiff(info, 'a', 1000);
    assert.ok(cut.ok && cut.truncated && Buffer.byteLength(cut.text) <= 1000);
    assert.deepEqual(await taskDiff(info, 'b'), {
      ok: false,
      status: 409,
      reason: 'b has no committed work to show (only a task of a worktree-mode run that passed has a commit)',
    });
    assert.equal(((await taskDiff(info, 'zz')) as { status: number }).status, 404);
    const forged = describeRun({ ...s, baseSha: '--output=/tmp/x' }, '/nowhere/state.json');
    assert.equal(((await taskDiff(forged, 'a')) as { status: number }).status, 500);
  });
});

describe("views: the task graph's order", () => {
  it('lists a task after its prerequisites, ties in manifest order, and labels them', () => {
    const tasks = [{ key: 'c', after: ['b'] }, { key: 'a' }, { key: 'b', after: ['a'] }, { key: 'd' }, { key: 'e', after: ['a', 'zz'] }];
    assert.deepEqual(
      graphOrder(tasks).map((t) => t.key),
      ['a', 'b', 'c', 'd', 'e'],
    );
    assert.deepEqual(
      graphOrder([
        { key: 'x', after: ['y'] },
        { key: 'y', after: ['x'] },
      ]).map((t) => t.key),
      ['x', 'y'],
      'a cycle (damaged state) keeps manifest order',
    );
    assert.equal(afterLabel(tasks[4] as { key: string; after: string[] }), 'after a, zz');
    assert.equal(afterLabel({ key: 'a' }), '');
  });

  it("the page sees a task's prerequisites, its BLOCKED reason and the attempt's step, never its folder", () => {
    const s = state(
      'r',
      [
        task('a', {
          status: 'FAIL',
          attempts: [
            {
              attempt: 1,
              phase: 'done',
              verdict: 'FAIL',
              startedAt: 1,
              endedAt: 2,
              workerPid: null,
              tokensIn: null,
              tokensOut: null,
              costMicroUsd: null,
              checkExitCode: 1,
              dir: '/secret/a',
              notes: 'check failed',
              step: 'check',
            },
          ],
        }),
        task('b', { status: 'BLOCKED', after: ['a'], reason: 'a did not pass (FAIL)' }),
      ],
      { paused: true },
    );
    const v = runView(describeRun(s, '/x/state.json'));
    assert.equal(v.paused, true);
    assert.equal(v.draining, false);
    assert.deepEqual(v.tasks[1]?.after, ['a']);
    assert.equal(v.tasks[1]?.reason, 'a did not pass (FAIL)');
    assert.equal(v.tasks[0]?.attempts[0]?.step, 'check');
    assert.equal('after' in (v.tasks[0] ?? {}), false);
    assert.equal(JSON.stringify(v).includes('/secret'), false);
  });
});
