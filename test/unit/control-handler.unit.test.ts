import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { ControlCommand } from '../../extension/core/live/control';
import { appendControl } from '../../extension/core/live/control';
import type { RunState, StateFile } from '../../extension/core/live/state';
import type { AttemptLoop } from '../../extension/core/run/attempt-loop';
import { ControlHandler } from '../../extension/core/run/control-handler';
import type { LiveRun } from '../../extension/core/run/live-run';
import type { Scheduler } from '../../extension/core/run/scheduler';
import type { TaskRuntime } from '../../extension/core/run/steps/context';
import { TaskGraph } from '../../extension/core/run/task-graph';
import { RunWorkflows, workRow } from '../../extension/core/run/workflows';
import { tempDir } from '../helpers/fixtures';

function task(key: string, status: string, over: Record<string, unknown> = {}): TaskRuntime {
  return {
    spec: { key, after: [], maxAttempts: 2, ...over },
    abort: new AbortController(),
    // As the live run writes a task's state entry (run/live-run.ts): its `after` and workflow fields mirrored.
    state: { key, status, commit: null, attempts: [], ...over },
    summary: { key, verdict: 'CANCELLED', attempts: 0, durationMs: 0, tokens: 0, verified: null, branch: null, commit: null, reason: '', checkOutput: '' },
    records: [],
    used: 1,
    rateLimited: 0,
    failure: null,
    startFrom: [],
  } as unknown as TaskRuntime;
}

/** A handler over a real TaskGraph, a fake scheduler and a fake attempt loop; `acks` reads what state.json acknowledged. */
function handlerOf(tasks: TaskRuntime[], control: RunState['control'] = []) {
  const dir = tempDir();
  const calls: string[] = [];
  const scheduler = {
    push: (t: TaskRuntime) => void calls.push(`push ${t.spec.key}`),
    pause: () => void calls.push('pause'),
    resume: () => void calls.push('resume'),
    close: () => void calls.push('close'),
    drop: (t: TaskRuntime) => void calls.push(`drop ${t.spec.key}`),
    withdraw: () => false,
  } as unknown as Scheduler<TaskRuntime>;
  const state = { paused: false, draining: false, control } as unknown as RunState;
  const stateFile = { save: async () => undefined } as unknown as StateFile;
  const emit = () => undefined;
  const run = {
    dir,
    runId: 'r1',
    tasks,
    byKey: new Map(tasks.map((t) => [t.spec.key, t])),
    prior: new Map(),
    state,
    stateFile,
    emit,
    cancelled: false,
    ctx: { emit, stateFile, recordErrors: [] },
    opts: { engines: new Map([['codex', {}]]) },
    waits: { clear: (e: string) => (e === 'codex' ? { until: Date.now() + 60_000, task: 'a', attempt: 1, source: 'its error event' } : null) },
  } as unknown as LiveRun;
  const graph = new TaskGraph(run, scheduler);
  const loop = { heldBy: () => 2, wake: (e: string) => void calls.push(`wake ${e}`) } as unknown as AttemptLoop;
  const workflows = new RunWorkflows({ run, graph, workRow });
  graph.workflows = workflows;
  const handler = new ControlHandler(run, graph, loop, workflows);
  let n = 0;
  const send = (verb: ControlCommand['verb'], extra: Partial<ControlCommand> = {}) =>
    handler.handle({ id: `c${++n}`, verb, by: 'me', host: 'h', pid: 1, at: 0, ...extra });
  const acks = () => (state.control ?? []).map((a) => `${a.verb}${a.task ? ` ${a.task}` : ''}: ${a.result} (${a.reason})`);
  return { handler, graph, run, state, calls, send, acks, dir };
}

describe('ControlHandler: one function per verb', () => {
  it('pause, pause again, resume, resume again: each acknowledged, the scheduler told once each way', () => {
    const h = handlerOf([]);
    h.send('pause');
    h.send('pause');
    h.send('resume');
    h.send('resume');
    assert.deepEqual(h.calls, ['pause', 'resume']);
    assert.deepEqual(h.acks(), [
      'pause: done (paused: no new attempt starts; running ones go on)',
      'pause: done (already paused)',
      'resume: done (resumed: attempts start again)',
      'resume: done (not paused)',
    ]);
  });

  it('drain: waiting tasks end CANCELLED (drained), nothing more starts, and a later pause or rerun is refused', () => {
    const [a, b] = [task('a', 'running'), task('b', 'queued', { after: ['a'] })];
    const h = handlerOf([a, b]);
    h.graph.enqueue(b);
    h.send('drain');
    assert.deepEqual([b.state.status, b.state.reason], ['CANCELLED', 'drained']);
    assert.ok(h.calls.includes('close'));
    h.send('pause');
    h.send('rerun', { task: 'a' });
    assert.deepEqual(h.acks().slice(1), [
      'pause: refused (the run is draining: nothing more starts)',
      'rerun a: refused (the run is draining: nothing more starts)',
    ]);
  });

  it('stop: acknowledged only once the task is final; a final task is refused; an unknown task is refused', () => {
    const [a, b] = [task('a', 'running'), task('b', 'PASS')];
    const h = handlerOf([a, b]);
    h.send('stop', { task: 'a' });
    assert.ok(a.abort.signal.aborted);
    assert.equal(a.abort.signal.reason, 'stopped by me');
    assert.deepEqual(h.acks(), [], 'not acknowledged while its attempt still runs');
    a.state.status = 'CANCELLED';
    h.graph.settled(a);
    h.send('stop', { task: 'b' });
    h.send('stop', { task: 'zz' });
    assert.deepEqual(h.acks(), ['stop a: done (a ended CANCELLED)', 'stop b: refused (b is already final (PASS))', 'stop zz: refused (run r1 has no task zz)']);
  });

  it('rerun: refused for a planner whose tasks joined, a best-of-N task, and a task BLOCKED by another; else queued again', () => {
    const planner = task('p', 'PASS');
    planner.state.generated = ['g1'];
    const group = task('grp', 'BLOCKED', { select: 'first-pass', after: ['c1'] });
    const [a, b] = [task('a', 'FAIL'), task('b', 'BLOCKED', { after: ['a'] })];
    const h = handlerOf([planner, group, task('c1', 'FAIL'), a, b]);
    h.send('rerun', { task: 'p' });
    h.send('rerun', { task: 'grp' });
    h.send('rerun', { task: 'b' });
    h.send('rerun', { task: 'a' });
    const acks = h.acks();
    assert.match(acks[0] as string, /rerun p: refused \(p is a planner whose tasks already joined the run \(g1\)/);
    assert.match(acks[1] as string, /rerun grp: refused \(grp is a best-of-N task and runs no worker itself/);
    assert.match(acks[2] as string, /rerun b: refused \(b is BLOCKED by a \(FAIL\): rerun a/);
    assert.equal(acks[3], 'rerun a: done (a is queued again: attempt 1 next, with 2 attempt(s); then b)');
    assert.deepEqual(h.calls, ['push a']);
    assert.equal(b.state.status, 'queued');
  });

  it('cancel: the run is cancelled at once, acknowledged only when the run ends; a command after the end is refused', () => {
    const h = handlerOf([task('a', 'running')]);
    h.send('cancel');
    assert.equal(h.run.cancelled, true);
    assert.deepEqual(h.acks(), []);
    h.handler.end();
    h.send('pause');
    assert.deepEqual(h.acks(), [
      'cancel: done (the run was cancelled: running attempts stopped and recorded CANCELLED, queued tasks never started)',
      'pause: refused (the run had already ended)',
    ]);
  });

  it("unwait: an unknown engine is refused naming the run's; a waiting one is cleared and its tasks woken", () => {
    const h = handlerOf([]);
    h.send('unwait', { engine: 'nope' });
    h.send('unwait', { engine: 'codex' });
    assert.match(h.acks()[0] as string, /refused \(run r1 has no engine nope \(engines: codex\)\)/);
    assert.match(h.acks()[1] as string, /done \(codex no longer waits .* set by a attempt 1 from its error event\); 2 task\(s\) on it go on\)/);
    assert.deepEqual(h.calls, ['wake codex']);
  });

  it('reads the control file: a command an earlier orchestrator acknowledged is not done again, a bad line is refused', async () => {
    const h = handlerOf([], [{ id: 'old', verb: 'pause', task: null, by: 'me', host: 'h', at: 0, ackAt: 0, result: 'done', reason: 'paused' }]);
    await appendControl(h.dir, { id: 'old', verb: 'pause', by: 'me', host: 'h' });
    await appendControl(h.dir, { id: 'new', verb: 'resume', by: 'me', host: 'h' });
    fs.appendFileSync(path.join(h.dir, 'control.jsonl'), '{"not": "a command"}\n');
    h.handler.start();
    for (let i = 0; i < 100 && h.acks().length < 3; i++) await new Promise((r) => setTimeout(r, 50));
    await appendControl(h.dir, { id: 'late', verb: 'pause', by: 'me', host: 'h' });
    h.handler.end();
    const acks = h.acks();
    assert.equal(acks.length, 4);
    assert.equal(acks[1], 'resume: done (not paused)');
    assert.match(acks[2] as string, /: refused \(/);
    assert.equal(acks[3], 'pause: refused (the run had already ended)', 'read at the end, after the run ended: refused, not lost');
    assert.deepEqual(h.calls, [], 'the old pause was not done again');
  });
});
