import assert from 'node:assert/strict';
import type { StateFile } from '../../extension/core/live/state';
import type { LiveRun } from '../../extension/core/run/live-run';
import type { RunEvent } from '../../extension/core/run/run-types';
import type { Scheduler } from '../../extension/core/run/scheduler';
import type { TaskRuntime } from '../../extension/core/run/steps/context';
import { TaskGraph } from '../../extension/core/run/task-graph';

/** A task of the fake run: `after` its prerequisites; `reads` those it reads as inputs. */
function task(key: string, after: string[] = [], reads: string[] = []): TaskRuntime {
  return {
    spec: { key, after, inputs: reads.length ? { from: reads.map((k) => ({ key: k })) } : undefined, maxAttempts: 2 },
    abort: new AbortController(),
    state: { key, status: 'queued', commit: null, attempts: [] },
    summary: { key, verdict: 'CANCELLED', attempts: 0, durationMs: 0, tokens: 0, verified: null, branch: null, commit: null, reason: '', checkOutput: '' },
    records: [],
    used: 1,
    rateLimited: 0,
    failure: 'old failure',
    startFrom: [],
  } as unknown as TaskRuntime;
}

/** A graph over fake tasks and a scheduler that records what it was given. */
function graphOf(tasks: TaskRuntime[]) {
  const pushed: string[] = [];
  const dropped: string[] = [];
  const withdrawable = new Set<TaskRuntime>();
  let closed = false;
  const events: RunEvent[] = [];
  const scheduler = {
    push: (t: TaskRuntime) => void pushed.push(t.spec.key),
    withdraw: (t: TaskRuntime) => withdrawable.delete(t),
    drop: (t: TaskRuntime) => void dropped.push(t.spec.key),
    close: () => void (closed = true),
  } as unknown as Scheduler<TaskRuntime>;
  const stateFile = { save: async () => undefined } as unknown as StateFile;
  const run = {
    tasks,
    byKey: new Map(tasks.map((t) => [t.spec.key, t])),
    prior: new Map(),
    state: { draining: false },
    stateFile,
    cancelled: false,
    emit: (e: RunEvent) => events.push(e),
    ctx: { emit: (e: RunEvent) => events.push(e), stateFile, recordErrors: [] },
  } as unknown as LiveRun;
  const graph = new TaskGraph(run, scheduler);
  const end = (t: TaskRuntime, status: 'PASS' | 'FAIL', commit: string | null = null) => {
    Object.assign(t.state, { status, commit });
    graph.settled(t);
  };
  return { graph, run, pushed, dropped, withdrawable, events, end, closed: () => closed };
}

describe('TaskGraph: gate, release, block, rerun cascade', () => {
  it('a task without prerequisites starts at once; one with them waits until they are final, then starts from their commits', () => {
    const [a, b, c] = [task('a'), task('b'), task('c', ['a', 'b'])];
    const g = graphOf([a, b, c]);
    for (const t of [a, b, c]) g.graph.enqueue(t);
    assert.deepEqual(g.pushed, ['a', 'b']);
    assert.ok(g.graph.parked.has(c));
    g.end(a, 'PASS', 'a'.repeat(40));
    assert.deepEqual(g.pushed, ['a', 'b'], 'b is not final yet: c still waits');
    g.end(b, 'PASS', 'b'.repeat(40));
    assert.deepEqual(g.pushed, ['a', 'b', 'c']);
    assert.deepEqual(c.startFrom, [
      { key: 'a', commit: 'a'.repeat(40) },
      { key: 'b', commit: 'b'.repeat(40) },
    ]);
  });

  it('a prerequisite that did not pass blocks its dependents, and theirs, naming it; nothing of them starts', () => {
    const [a, b, c] = [task('a'), task('b', ['a']), task('c', ['b'])];
    const g = graphOf([a, b, c]);
    for (const t of [a, b, c]) g.graph.enqueue(t);
    g.end(a, 'FAIL');
    assert.deepEqual([b.state.status, c.state.status, b.summary.verdict], ['BLOCKED', 'BLOCKED', 'BLOCKED']);
    assert.match(b.state.reason ?? '', /prerequisite a ended FAIL/);
    assert.match(c.state.reason ?? '', /prerequisite b ended BLOCKED/);
    assert.deepEqual(g.pushed, ['a']);
    assert.deepEqual(
      g.events.filter((e) => e.type === 'task-blocked').map((e) => (e as { key: string }).key),
      ['b', 'c'],
    );
  });

  it('a prerequisite neither in the run nor in the run it continues blocks at once', () => {
    const b = task('b', ['gone']);
    const g = graphOf([b]);
    g.graph.enqueue(b);
    assert.equal(b.state.status, 'BLOCKED');
    assert.match(b.state.reason ?? '', /prerequisite gone is not part of this run/);
  });

  it('rerun: the task is fresh and its BLOCKED dependents wait for it again, and start only once it passes', () => {
    const [a, b, c] = [task('a'), task('b', ['a']), task('c', ['b'])];
    const g = graphOf([a, b, c]);
    for (const t of [a, b, c]) g.graph.enqueue(t);
    g.end(a, 'FAIL');
    const reopened = g.graph.reopen(a);
    assert.deepEqual(
      reopened.unblocked.map((t) => t.spec.key),
      ['b', 'c'],
    );
    assert.deepEqual([a.state.status, b.state.status, c.state.status], ['queued', 'queued', 'queued']);
    assert.deepEqual([a.used, a.failure, b.state.reason], [0, null, undefined]);
    g.graph.requeue(a, reopened);
    assert.deepEqual(g.pushed, ['a', 'a']);
    g.end(a, 'PASS', 'c'.repeat(40));
    assert.deepEqual(g.pushed, ['a', 'a', 'b'], 'b runs after a passed; c waits for b');
  });

  it('rerun: a reader of it still on its way is stopped to run again after it (not counted); a final reader is queued fresh', () => {
    const [a, running, done] = [task('a'), task('r', ['a'], ['a']), task('v', ['a'], ['a'])];
    const g = graphOf([a, running, done]);
    a.state.status = 'PASS';
    running.state.status = 'running';
    Object.assign(done.state, { status: 'FAIL', inputs: { entries: [{ key: 'a' }] } });
    const reopened = g.graph.reopen(a);
    assert.deepEqual(
      reopened.restarted.map((t) => t.spec.key),
      ['r'],
    );
    assert.ok(running.abort.signal.aborted);
    assert.match(running.restart ?? '', /its input a is being rerun/);
    assert.deepEqual(
      reopened.unblocked.map((t) => t.spec.key),
      ['v'],
    );
    assert.deepEqual([done.state.status, done.used], ['queued', 0]);
  });

  it('a queued reader of a rerun input is taken back from the scheduler and waits for its inputs again', () => {
    const [a, r] = [task('a'), task('r', ['a'], ['a'])];
    const g = graphOf([a, r]);
    a.state.status = 'PASS';
    g.withdrawable.add(r);
    g.graph.reopen(a);
    assert.equal(r.restart, null);
    assert.equal(r.abort.signal.aborted, false, 'a fresh abort controller');
    assert.ok(g.graph.parked.has(r));
  });

  it('stop of a waiting task cancels it and blocks its dependents; stop of a queued one drops it from the scheduler', () => {
    const [a, b, c, d] = [task('a'), task('b', ['a']), task('c', ['b']), task('d')];
    const g = graphOf([a, b, c, d]);
    for (const t of [a, b, c, d]) g.graph.enqueue(t);
    let acked = '';
    g.graph.waitFinal(b, () => (acked = b.state.status));
    g.graph.stop(b, 'stopped by me');
    assert.deepEqual([b.state.status, b.state.reason, c.state.status], ['CANCELLED', 'stopped by me', 'BLOCKED']);
    assert.equal(acked, 'CANCELLED', 'its waiter was called once it was final');
    g.graph.stop(d, 'stopped by me');
    assert.deepEqual(g.dropped, ['d']);
    assert.ok(d.abort.signal.aborted);
  });

  it('cancelRun: every waiting task ends CANCELLED (not BLOCKED), nothing more starts, every attempt is stopped', () => {
    const [a, b] = [task('a'), task('b', ['a'])];
    const g = graphOf([a, b]);
    for (const t of [a, b]) g.graph.enqueue(t);
    g.graph.cancelRun();
    assert.equal(g.run.cancelled, true);
    assert.equal(b.state.status, 'CANCELLED');
    assert.ok(g.closed());
    assert.ok(a.abort.signal.aborted);
  });

  it('a workflow releases its own waiting task: kept waiting, or taken out of waiting and acted on instead of pushed; it sees each final task first', () => {
    const [a, grp, c] = [task('a'), task('grp', ['a']), task('c', ['grp'])];
    const g = graphOf([a, grp, c]);
    const seen: string[] = [];
    let answer: 'wait' | 'act' = 'wait';
    g.graph.workflows = {
      settled: (t) => void seen.push(`final ${t.spec.key}`),
      release: (t) => (t !== grp ? undefined : answer === 'wait' ? 'wait' : () => void seen.push(`acted ${t.spec.key} parked=${g.graph.parked.has(t)}`)),
      keepWaiting: () => false,
      waitsAgainFor: () => false,
    };
    for (const t of [a, grp, c]) g.graph.enqueue(t);
    assert.deepEqual(g.pushed, ['a']);
    assert.ok(g.graph.parked.has(grp), 'the workflow keeps it waiting');
    answer = 'act';
    g.end(a, 'FAIL');
    assert.deepEqual(seen, ['final a', 'acted grp parked=false'], 'not BLOCKED by the graph: the workflow acted on it, out of waiting');
    assert.deepEqual(g.pushed, ['a']);
    assert.equal(grp.state.status, 'queued');
    assert.ok(g.graph.parked.has(c), "the graph still gates the tasks that are not the workflow's");
  });

  it('drain keeps the waiting tasks a workflow keeps; a rerun stops a task a workflow is deciding from it, as it stops a reader', () => {
    const [a, b, grp, other] = [task('a'), task('b'), task('grp', ['a', 'b']), task('o', ['b'])];
    const g = graphOf([a, b, grp, other]);
    g.graph.workflows = {
      settled: () => undefined,
      release: (t) => (t === grp ? 'wait' : undefined),
      keepWaiting: (t) => t === grp,
      waitsAgainFor: (t, k) => t === grp && k === 'a',
    };
    for (const t of [a, b, grp, other]) g.graph.enqueue(t);
    assert.equal(g.graph.cancelWaiting(true), 1);
    assert.deepEqual([grp.state.status, other.state.status], ['queued', 'CANCELLED']);
    // grp now deciding (out of waiting, not final) when a is rerun: stopped to wait for it again.
    g.graph.parked.delete(grp);
    grp.state.status = 'checking';
    a.state.status = 'PASS';
    const reopened = g.graph.reopen(a);
    assert.deepEqual(
      reopened.restarted.map((t) => t.spec.key),
      ['grp'],
    );
    assert.ok(grp.abort.signal.aborted);
    assert.match(grp.restart ?? '', /its input a is being rerun/);
  });
});
