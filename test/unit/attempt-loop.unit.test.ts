import assert from 'node:assert/strict';
import type { StateFile } from '../../extension/core/live/state';
import { AttemptLoop } from '../../extension/core/run/attempt-loop';
import type { LiveRun } from '../../extension/core/run/live-run';
import type { RunEvent } from '../../extension/core/run/run-types';
import type { TaskRuntime } from '../../extension/core/run/steps/context';
import type { TaskGraph } from '../../extension/core/run/task-graph';

function task(key: string, over: Record<string, unknown> = {}): TaskRuntime {
  return {
    spec: { key, engine: 'e1', model: null, fallback: [{ engine: 'e2', model: 'm2' }], after: [], taskType: 't', maxAttempts: 3 },
    abort: new AbortController(),
    state: { key, status: 'queued', engine: 'e1', model: null, attempts: [] },
    summary: { key, verdict: 'CANCELLED', attempts: 0, durationMs: 0, tokens: 0, verified: null, branch: null, commit: null, reason: '', checkOutput: '' },
    records: [],
    used: 0,
    rateLimited: 0,
    failure: null,
    prepared: false,
    ...over,
  } as unknown as TaskRuntime;
}

/** A loop over a fake run: `gate` answers the engine's quota wait, `admit` the budget. */
function loopOf(gate: () => unknown, admit: () => unknown = () => 'over budget') {
  const calls: string[] = [];
  const events: RunEvent[] = [];
  const stateFile = { save: async () => undefined } as unknown as StateFile;
  const pushed: [string, number][] = [];
  const withdrawable = new Set<TaskRuntime>();
  const graph = {
    scheduler: { push: (t: TaskRuntime, ms = 0) => void pushed.push([t.spec.key, ms]), withdraw: (t: TaskRuntime) => withdrawable.delete(t) },
    settled: (t: TaskRuntime) => void calls.push(`settled ${t.spec.key} ${t.state.status}`),
    markCancelled: (t: TaskRuntime) => void calls.push(`cancelled ${t.spec.key}`),
    waitForInputsAgain: (t: TaskRuntime) => void calls.push(`again ${t.spec.key}`),
  } as unknown as TaskGraph;
  const engines = new Map([
    ['e1', { defaultModel: 'd1' }],
    ['e2', { defaultModel: 'd2' }],
  ]);
  const run = {
    opts: { engines },
    manifest: {},
    maxParallel: 4,
    home: '/home/x',
    runId: 'r1',
    stateFile,
    emit: (e: RunEvent) => events.push(e),
    ctx: { emit: (e: RunEvent) => events.push(e), stateFile, recordErrors: [] },
    waits: { gate, abandonProbe: () => false },
    spend: { admit },
  } as unknown as LiveRun;
  return { loop: new AttemptLoop(run, graph), calls, events, pushed, withdrawable };
}

describe('AttemptLoop: one scheduler job per attempt', () => {
  it("the next attempt runs on the task's engine, then on its fallback (with that entry's model)", () => {
    const { loop } = loopOf(() => ({ kind: 'go', probe: false }));
    assert.deepEqual(loop.choiceOf(task('a')), { engine: 'e1', model: 'd1' });
    assert.deepEqual(loop.choiceOf(task('a', { used: 1 })), { engine: 'e2', model: 'm2' });
    assert.equal(loop.limitOf('e1'), 4, 'max_parallel until the engine is rate-limited');
  });

  it('a stopped task ends CANCELLED without an attempt; one stopped to run again waits for its inputs; either way it settles', async () => {
    const { loop, calls } = loopOf(() => assert.fail('no attempt may be gated'));
    const stopped = task('s');
    stopped.abort.abort('stopped by me');
    await loop.job(stopped);
    const again = task('r', { restart: 'its input a is being rerun' });
    again.abort.abort();
    await loop.job(again);
    assert.deepEqual(calls, ['cancelled s', 'settled s queued', 'again r', 'settled r queued']);
  });

  it('an engine waiting for its quota: the job goes back in the queue for the wait, no attempt spent, and `unwait` wakes it at once', async () => {
    const { loop, pushed, withdrawable } = loopOf(() => ({ kind: 'wait', ms: 5000 }));
    const t = task('a');
    // No fallback to move to (a task with one moves off the waiting engine: run/reassign.ts).
    (t.spec as { fallback: unknown[] }).fallback = [];
    await loop.job(t);
    assert.deepEqual(pushed, [['a', 5000]]);
    assert.equal(loop.parkedOn('e1'), 1);
    assert.equal(t.state.attempts.length, 0);
    withdrawable.add(t);
    loop.wake('e1');
    assert.deepEqual(pushed, [
      ['a', 5000],
      ['a', 0],
    ]);
    assert.equal(loop.parkedOn('e1'), 0);
  });

  it("a budget that cannot hold the attempt's worst case ends the task BUDGET_EXCEEDED before any worker starts", async () => {
    const { loop, calls, events } = loopOf(
      () => ({ kind: 'go', probe: false }),
      () => 'budget: $0.01 of $0.01 spent',
    );
    const t = task('a');
    await loop.job(t);
    assert.deepEqual([t.state.status, t.summary.verdict, t.summary.reason], ['BUDGET_EXCEEDED', 'BUDGET_EXCEEDED', 'budget: $0.01 of $0.01 spent']);
    assert.deepEqual(calls, ['settled a BUDGET_EXCEEDED']);
    assert.deepEqual(
      events.map((e) => e.type),
      ['task-skipped'],
    );
  });

  it('a job that throws (a full disk) ends its task ERROR saying what to do, never CANCELLED, and it settles', async () => {
    const { loop, calls } = loopOf(() => {
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    });
    const t = task('a');
    await loop.job(t);
    assert.equal(t.state.status, 'ERROR');
    assert.match(t.summary.reason, /no space left on the device of \/home\/x \(free some, then: verdict resume r1\)/);
    assert.deepEqual(calls, ['settled a ERROR']);
  });
});
