import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import type { RunState, TaskState } from '../../extension/core/live/state';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const env = { VERDICT_IDENTITY: 'tester' };

/** A run started as its own process (`verdict run`), its home and id, and its state as read now. */
interface LiveRun {
  child: ResultPromise<{ reject: false; all: true; stdin: 'ignore' }>;
  home: string;
  repo: string;
  runId: string;
  state: () => RunState;
  task: (key: string) => TaskState;
}

async function startRun(tasks: Record<string, unknown>[], maxParallel: number, flags: string[] = []): Promise<LiveRun> {
  const dir = tempDir();
  const home = path.join(dir, 'home');
  const repo = makeRepo(path.join(dir, 'repo'));
  const manifest = writeManifest(repo, { run_name: 'controlled', worktrees: true, max_parallel: maxParallel, tasks });
  const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard', ...flags], { reject: false, all: true, stdin: 'ignore' });
  let runId = '';
  for (let i = 0; i < 400 && !runId; i++) {
    await sleep(50);
    runId = fs.existsSync(path.join(home, 'runs')) ? (fs.readdirSync(path.join(home, 'runs'))[0] ?? '') : '';
    if (runId && !fs.existsSync(path.join(home, 'runs', runId, 'state.json'))) runId = '';
  }
  assert.ok(runId, 'the run started');
  const state = () => JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;
  return { child, home, repo, runId, state, task: (key) => state().tasks.find((t) => t.key === key) as TaskState };
}

async function until(what: string, ok: () => boolean, ms = 60000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
    try {
      if (ok()) return;
    } catch {
      // the state file is being replaced: read it again
    }
  }
  assert.fail(`timed out waiting until ${what}`);
}

const running = (t: TaskState) => t.attempts.some((a) => a.phase === 'running');

describe('controlling a live run from another process (runs/<id>/control.jsonl)', function () {
  this.timeout(120000);

  it('pause: no attempt starts while paused (running ones finish); resume: attempts start again; both acknowledged', async () => {
    const run = await startRun(
      ['a', 'b', 'c'].map((k) => scriptTask(k, 'sleep 2; echo ok > out.txt', 'test -s out.txt')),
      1,
    );
    await until('a starts', () => run.task('a').attempts.length > 0);
    // A live run that is not paused: nothing to resume; refused (exit 2) naming its orchestrator.
    const early = await cli(['resume', run.runId, '--home', run.home], { env });
    assert.equal(early.exitCode, 2, early.all);
    assert.match(
      early.all,
      new RegExp(`run ${run.runId} is live \\(its orchestrator is pid ${run.child.pid} on \\S+, identity \\S+\\) and not paused: nothing to resume`),
    );
    const pause = await cli(['pause', run.runId.slice(0, 17), '--home', run.home], { env });
    assert.equal(pause.exitCode, 0, pause.all);
    assert.match(pause.stdout, /^pause: done — paused: no new attempt starts; running ones go on/);
    assert.equal(run.state().paused, true);
    await until('a passes', () => run.task('a').status === 'PASS');
    await sleep(1500);
    assert.equal(run.task('b').attempts.length, 0, 'nothing started while paused');
    const resume = await cli(['resume', run.runId, '--home', run.home], { env });
    assert.equal(resume.exitCode, 0, resume.all);
    assert.match(resume.stdout, /^resume: done — resumed/);
    const r = await run.child;
    assert.equal(r.exitCode, 0, r.all);
    const s = run.state();
    assert.equal(s.paused, false);
    assert.deepEqual(
      s.tasks.map((t) => t.status),
      ['PASS', 'PASS', 'PASS'],
    );
    const [p, q] = s.control ?? [];
    assert.deepEqual([p?.verb, p?.result, p?.by, q?.verb, q?.result, q?.by], ['pause', 'done', 'tester', 'resume', 'done', 'tester']);
    assert.ok(p && q && p.ackAt >= p.at && q.ackAt >= q.at);
    const aEnded = s.tasks[0]?.attempts[0]?.endedAt as number;
    const bStarted = s.tasks[1]?.attempts[0]?.startedAt as number;
    assert.ok(bStarted >= q.ackAt, `b started (${bStarted}) only after the resume was acknowledged (${q.ackAt})`);
    assert.ok(bStarted - aEnded >= 1400, `b started ${bStarted - aEnded} ms after a ended: not while paused`);
    assert.match(r.all ?? '', /control: pause from tester@\S+: done/);
    // The same run throughout: one run under the home, its id, one orchestrator (no takeover), rows with its id.
    assert.deepEqual(fs.readdirSync(path.join(run.home, 'runs')), [run.runId]);
    assert.equal(s.runId, run.runId);
    assert.equal(s.resumes, undefined);
    assert.ok(
      fs
        .readFileSync(path.join(run.home, 'runs.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .every((l) => (JSON.parse(l) as { run_id: string }).run_id === run.runId),
    );
  });

  it('drain: the running task finishes, queued ones end CANCELLED "drained", the run ends', async () => {
    const run = await startRun(
      ['a', 'b', 'c'].map((k) => scriptTask(k, 'sleep 2; echo ok > out.txt', 'test -s out.txt')),
      1,
    );
    await until('a runs', () => running(run.task('a')));
    const drain = await cli(['drain', run.runId, '--home', run.home], { env });
    assert.equal(drain.exitCode, 0, drain.all);
    assert.match(drain.stdout, /drain: done — draining: 2 waiting task\(s\) CANCELLED \(drained\); 1 running go on/);
    const r = await run.child;
    assert.equal(r.exitCode, 1, r.all);
    const s = run.state();
    assert.equal(s.status, 'finished');
    assert.equal(s.draining, true);
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status, t.reason ?? null, t.attempts.length]),
      [
        ['a', 'PASS', null, 1],
        ['b', 'CANCELLED', 'drained', 0],
        ['c', 'CANCELLED', 'drained', 0],
      ],
    );
    assert.deepEqual(
      s.control?.map((c) => [c.verb, c.result, c.by]),
      [['drain', 'done', 'tester']],
    );
  });

  it('stop one task (running, then a queued one), rerun it on the live run; a stop of a final task is refused', async () => {
    const tasks = [
      scriptTask('a', 'if [ "$VERDICT_ATTEMPT" = 1 ]; then sleep 300; fi; echo ok > a.txt', 'test -s a.txt'),
      scriptTask('b', 'sleep 10; echo ok > b.txt', 'test -s b.txt'),
      scriptTask('c', 'echo ok > c.txt', 'test -s c.txt'),
    ];
    const run = await startRun(tasks, 2);
    await until('a and b run', () => running(run.task('a')) && running(run.task('b')));
    const stopC = await cli(['stop', run.runId, 'c', '--home', run.home], { env });
    assert.equal(stopC.exitCode, 0, stopC.all);
    assert.match(stopC.stdout, /^stop c: done — c ended CANCELLED/);
    assert.equal(run.task('c').attempts.length, 0, 'a queued task stopped never starts');
    const stopA = await cli(['stop', run.runId, 'a', '--home', run.home], { env });
    assert.equal(stopA.exitCode, 0, stopA.all);
    assert.match(stopA.stdout, /^stop a: done — a ended CANCELLED/);
    const a = run.task('a');
    assert.deepEqual([a.status, a.reason, a.attempts.map((x) => x.verdict)], ['CANCELLED', 'stopped by tester', ['CANCELLED']]);
    const rerun = await cli(['rerun', run.runId, 'a', '--home', run.home], { env });
    assert.equal(rerun.exitCode, 0, rerun.all);
    assert.match(rerun.stdout, /^rerun a: done — a is queued again: attempt 2 next/);
    await until('a passes', () => run.task('a').status === 'PASS');
    const again = await cli(['stop', run.runId, 'a', '--home', run.home], { env });
    assert.equal(again.exitCode, 1, again.all);
    assert.match(again.stdout, /^stop a: refused — a is already final \(PASS\)/);
    const r = await run.child;
    assert.equal(r.exitCode, 1, r.all);
    const s = run.state();
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status, t.attempts.map((x) => x.verdict)]),
      [
        ['a', 'PASS', ['CANCELLED', 'PASS']],
        ['b', 'PASS', ['PASS']],
        ['c', 'CANCELLED', []],
      ],
    );
    assert.deepEqual(
      s.control?.map((c) => [c.verb, c.task, c.result, c.by]),
      [
        ['stop', 'c', 'done', 'tester'],
        ['stop', 'a', 'done', 'tester'],
        ['rerun', 'a', 'done', 'tester'],
        ['stop', 'a', 'refused', 'tester'],
      ],
    );
  });

  it('cancel from another process (verdict stop RUN): acknowledged once the run ended; an unknown verb is refused with a reason', async () => {
    // --force: the check `true` is a lint error; the workers are cancelled before it.
    const run = await startRun(
      ['a', 'b', 'c'].map((k) => scriptTask(k, 'sleep 300', 'true')),
      2,
      ['--force'],
    );
    await until('a and b run', () => running(run.task('a')) && running(run.task('b')));
    fs.appendFileSync(
      path.join(run.home, 'runs', run.runId, 'control.jsonl'),
      JSON.stringify({ id: 'bogus', verb: 'explode', by: 'mallory', host: 'h', pid: 1, at: Date.now() }) + '\n',
    );
    await until('the unknown verb is refused', () => (run.state().control ?? []).some((c) => c.id === 'bogus'));
    const stop = await cli(['stop', run.runId, '--home', run.home], { env });
    assert.equal(stop.exitCode, 0, stop.all);
    assert.match(stop.stdout, /^cancel: done — the run was cancelled/);
    const r = await run.child;
    assert.equal(r.exitCode, 1, r.all);
    const s = run.state();
    assert.equal(s.status, 'cancelled');
    assert.deepEqual(
      s.tasks.map((t) => t.status),
      ['CANCELLED', 'CANCELLED', 'CANCELLED'],
    );
    const [bogus, cancel] = s.control ?? [];
    assert.deepEqual([bogus?.result, bogus?.by], ['refused', 'mallory']);
    assert.match(bogus?.reason ?? '', /^unknown verb "explode"/);
    assert.deepEqual([cancel?.verb, cancel?.result, cancel?.by], ['cancel', 'done', 'tester']);
    assert.ok(
      (cancel?.ackAt ?? 0) >= Math.max(...s.tasks.flatMap((t) => t.attempts.map((x) => x.endedAt ?? 0))),
      'acknowledged after every attempt was recorded',
    );
    const late = await cli(['pause', run.runId, '--home', run.home], { env });
    assert.equal(late.exitCode, 2);
    assert.match(late.stderr, /is not live \(cancelled\); pause acts on a running run/);
  });
});

describe('merge and discard while the run is live: recorded by its orchestrator (control verb record)', function () {
  this.timeout(120000);

  it('a passed task merged while others run shows MERGED at once, and merging again changes nothing; a failed one discarded shows DISCARDED', async () => {
    const tasks = [
      scriptTask('a', 'echo a > a.txt', 'test -s a.txt'),
      scriptTask('c', 'true', 'echo no; exit 1', { max_attempts: 1 }),
      scriptTask('w', 'sleep 60; echo w > w.txt', 'test -s w.txt'),
    ];
    const run = await startRun(tasks, 3);
    try {
      await until('a passed and c failed while w works', () => run.task('a').status === 'PASS' && run.task('c').status === 'FAIL' && running(run.task('w')));
      const merge = await cli(['merge', run.runId, 'a', '--home', run.home], { env });
      assert.equal(merge.exitCode, 0, merge.all);
      assert.match(merge.stdout, /^a: MERGED \(now [0-9a-f]{10}\)$/m);
      assert.equal(merge.stderr, '', 'recorded, not "not recorded"');
      const head = git(run.repo, 'rev-parse', 'HEAD');
      const into = git(run.repo, 'symbolic-ref', '--short', 'HEAD');
      // The orchestrator put it on the task and acknowledged it before the merge command returned.
      assert.deepEqual([run.task('a').status, run.task('a').merged?.commit, run.task('a').merged?.into], ['PASS', head, into]);
      assert.deepEqual(
        run
          .state()
          .control?.filter((c) => c.verb === 'record')
          .map((c) => [c.task, c.result]),
        [['a', 'done']],
      );
      const again = await cli(['merge', run.runId, 'a', '--home', run.home], { env });
      assert.equal(again.exitCode, 0, again.all);
      assert.equal(again.stdout.trim(), `a: already merged into ${into} at ${head.slice(0, 10)}; nothing was changed`);
      assert.equal(git(run.repo, 'rev-parse', 'HEAD'), head);
      const shown = await cli(['runs', run.runId, '--home', run.home], { env });
      assert.match(shown.stdout, /: running, /);
      assert.match(shown.stdout, new RegExp(`^a +MERGED ${head.slice(0, 10)} `, 'm'));

      const discard = await cli(['discard', run.runId, 'c', '--home', run.home], { env });
      assert.equal(discard.exitCode, 0, discard.all);
      const held = /it held ([0-9a-f]{40})/.exec(discard.stdout)?.[1];
      assert.ok(held, discard.stdout);
      assert.equal(run.task('c').discarded?.commit, held);
      assert.match((await cli(['runs', run.runId, '--home', run.home], { env })).stdout, new RegExp(`^c +DISCARDED ${held.slice(0, 10)} `, 'm'));
    } finally {
      await cli(['stop', run.runId, '--home', run.home], { env });
      await run.child;
    }
    // The record outlives the orchestrator: the state it wrote at its end keeps it.
    assert.equal(run.task('a').merged?.into, git(run.repo, 'symbolic-ref', '--short', 'HEAD'));
    assert.ok(run.task('c').discarded);
  });

  it('a hand-written record line with no valid landed is refused, and changes nothing', async () => {
    const run = await startRun([scriptTask('w', 'sleep 60; echo w > w.txt', 'test -s w.txt')], 1);
    try {
      await until('w works', () => running(run.task('w')));
      fs.appendFileSync(
        path.join(run.home, 'runs', run.runId, 'control.jsonl'),
        JSON.stringify({
          id: 'forged',
          verb: 'record',
          task: 'w',
          landed: { merged: { commit: 'not-a-sha', into: 'main', at: 1 } },
          by: 'mallory',
          host: 'h',
          at: 1,
        }) + '\n',
      );
      await until('the forged record is acknowledged', () => (run.state().control ?? []).some((c) => c.id === 'forged'));
      const ack = run.state().control?.find((c) => c.id === 'forged');
      assert.deepEqual([ack?.result, ack?.reason], ['refused', 'record needs landed: { merged: { commit, into, at } } or { discarded: { commit, at } }']);
      assert.equal(run.task('w').merged, undefined);
    } finally {
      await cli(['stop', run.runId, '--home', run.home], { env });
      await run.child;
    }
  });
});

describe('verdict merge, discard, runs and rerun on a finished worktree-mode run', function () {
  this.timeout(120000);

  it('runs lists it; merge a task (exit 0), then again (already merged, nothing changes); discard another (worktree and branch gone, DISCARDED with its commit); merge of a failed task: exit 1', async () => {
    const tasks = [
      scriptTask('a', 'echo a > a.txt', 'test -s a.txt'),
      scriptTask('b', 'echo b > b.txt', 'test -s b.txt'),
      scriptTask('c', 'true', 'echo no; exit 1', { max_attempts: 1 }),
    ];
    const run = await startRun(tasks, 3);
    const done = await run.child;
    assert.equal(done.exitCode, 1, done.all);
    const { home, repo, runId } = run;

    const listed = await cli(['runs', '--json', '--home', home], { env });
    assert.equal(listed.exitCode, 0, listed.all);
    const rows = JSON.parse(listed.stdout) as Record<string, unknown>[];
    assert.deepEqual(
      rows.map((x) => [x.runId, x.runName, x.state, x.passed, x.total, x.paused]),
      [[runId, 'controlled', 'finished', 2, 3, false]],
    );
    const text = await cli(['runs', '--home', home], { env });
    assert.match(text.stdout, /^RUN +NAME +IDENTITY +STARTED +STATE +PASSED$/m);
    assert.match(text.stdout, new RegExp(`^${runId}  controlled  \\S+@\\S+ +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d  finished  2/3$`, 'm'));

    const merge = await cli(['merge', runId.slice(0, 17), 'a', '--home', home], { env });
    assert.equal(merge.exitCode, 0, merge.all);
    assert.match(merge.stdout, /^a: MERGED \(now [0-9a-f]{10}\)$/m);
    assert.equal(git(repo, 'show', 'HEAD:a.txt'), 'a');

    // Merged is a recorded state: the status stays PASS (the verdict), `merged` says where the work went.
    const head = git(repo, 'rev-parse', 'HEAD');
    const into = git(repo, 'symbolic-ref', '--short', 'HEAD');
    const merged = run.state().tasks.find((t) => t.key === 'a');
    assert.equal(merged?.status, 'PASS');
    assert.deepEqual([merged?.merged?.commit, merged?.merged?.into, typeof merged?.merged?.at], [head, into, 'number']);
    // Merging again (by name, or every passed task) says so and changes nothing: no new commit, the record kept.
    const stateBefore = fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8');
    const again = await cli(['merge', runId, 'a', '--home', home], { env });
    assert.equal(again.exitCode, 0, again.all);
    assert.equal(again.stdout.trim(), `a: already merged into ${into} at ${head.slice(0, 10)}; nothing was changed`);
    assert.doesNotMatch(again.stdout, /MERGED \(now/);
    assert.equal(git(repo, 'rev-parse', 'HEAD'), head);
    assert.equal(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8'), stateBefore, 'state.json untouched by the second merge');
    const shown = await cli(['runs', runId, '--home', home], { env });
    assert.match(shown.stdout, new RegExp(`^a +MERGED ${head.slice(0, 10)} `, 'm'));
    const shownJson = JSON.parse((await cli(['runs', runId, '--json', '--home', home], { env })).stdout) as {
      tasks: { key: string; status: string; merged?: { commit: string } }[];
    };
    assert.deepEqual(
      shownJson.tasks.filter((t) => t.key === 'a').map((t) => [t.status, t.merged?.commit]),
      [['PASS', head]],
    );

    const wt = path.join(home, 'worktrees', runId, 'b');
    assert.ok(fs.existsSync(wt));
    const discard = await cli(['discard', runId, 'b', '--home', home], { env });
    assert.equal(discard.exitCode, 0, discard.all);
    assert.match(discard.stdout, new RegExp(`^discarded b: worktree ${wt} removed; branch verdict/${runId}/b deleted \\(it held [0-9a-f]{40}`));
    assert.equal(fs.existsSync(wt), false);
    assert.equal(git(repo, 'branch', '--list', `verdict/${runId}/b`), '');
    // Discarded is a recorded state too, with the commit that recovers the branch.
    const bHeld = /it held ([0-9a-f]{40})/.exec(discard.stdout)?.[1];
    assert.deepEqual(run.state().tasks.find((t) => t.key === 'b')?.discarded?.commit, bHeld);
    const afterDiscard = await cli(['runs', runId, '--home', home], { env });
    assert.match(afterDiscard.stdout, new RegExp(`^b +DISCARDED ${bHeld?.slice(0, 10)} `, 'm'));
    // Merge every passed task: a is already merged, b discarded (how to recover it said); nothing merged again.
    const all = await cli(['merge', runId, '--home', home], { env });
    assert.equal(all.exitCode, 1, all.all);
    assert.match(all.stdout, new RegExp(`^a: already merged into ${into} at ${head.slice(0, 10)}`, 'm'));
    assert.match(all.stdout, new RegExp(`^b: discarded \\(recover it with: git branch verdict/${runId}/b ${bHeld}\\)`, 'm'));
    assert.doesNotMatch(all.stdout, /MERGED \(now/);
    assert.equal(git(repo, 'rev-parse', 'HEAD'), head);

    const gone = await cli(['merge', runId, 'b', '--home', home], { env });
    assert.equal(gone.exitCode, 0, gone.all);
    assert.match(gone.stdout, /^b: discarded \(recover it with: git branch /m);
    const failed = await cli(['merge', runId, 'c', '--home', home], { env });
    assert.equal(failed.exitCode, 1, failed.all);
    assert.match(failed.stdout, /^c: NOT MERGED — it is FAIL/m);

    // rerun of a finished run: the same run runs c again (attempt 2, same run id); it fails again, so exit 1.
    const rerun = await cli(['rerun', runId, 'c', '--home', home, '--no-dashboard'], { env });
    assert.equal(rerun.exitCode, 1, rerun.all);
    assert.match(rerun.stdout, new RegExp(`running again 1 task\\(s\\) of run ${runId} \\(same run\\): c`));
    assert.deepEqual(
      run
        .state()
        .tasks.find((t) => t.key === 'c')
        ?.attempts.map((x) => [x.attempt, x.verdict]),
      [
        [1, 'FAIL'],
        [2, 'FAIL'],
      ],
    );
    assert.equal(fs.readdirSync(path.join(home, 'runs')).length, 1, 'no new run');
    const unknown = await cli(['discard', 'nope', 'a', '--home', home], { env });
    assert.equal(unknown.exitCode, 2);
    assert.match(unknown.stderr, /no run nope under/);
  });
});
