import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { RunState, StateFile } from '../../extension/core/live/state';
import type { ControlHandler } from '../../extension/core/run/control-handler';
import type { LiveRun } from '../../extension/core/run/live-run';
import type { RunEvent } from '../../extension/core/run/run-types';
import type { Scheduler } from '../../extension/core/run/scheduler';
import type { TaskRuntime } from '../../extension/core/run/steps/context';
import { TaskGraph } from '../../extension/core/run/task-graph';
import { finishRun } from '../../extension/core/run/teardown';
import { RunWorkflows, workRow } from '../../extension/core/run/workflows';
import { tempDir } from '../helpers/fixtures';

function task(key: string, verdict: string, over: Record<string, unknown> = {}): TaskRuntime {
  return {
    spec: { key, after: [], ...over },
    abort: new AbortController(),
    state: { key, status: verdict, commit: null, attempts: [] },
    summary: { key, verdict, attempts: 1, durationMs: 0, tokens: 0, verified: null, branch: null, commit: null, reason: '', checkOutput: '' },
    records: [],
  } as unknown as TaskRuntime;
}

function runOf(tasks: TaskRuntime[], cancelled = false) {
  const home = tempDir();
  const dir = path.join(home, 'runs', 'r1');
  fs.mkdirSync(path.join(dir, 'engine-state', 'codex'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'engine-state', 'codex', 'auth.json'), '{"key": "secret"}');
  fs.mkdirSync(path.join(home, 'scratch', 'r1', 'a'), { recursive: true });
  const order: string[] = [];
  const events: RunEvent[] = [];
  const state = { status: 'running', endedAt: null, draining: false } as unknown as RunState;
  const stateFile = {
    file: path.join(dir, 'state.json'),
    save: async () => undefined,
    close: async () => void order.push(`close ${state.status}`),
  } as unknown as StateFile;
  const emit = (e: RunEvent) => events.push(e);
  const run = {
    home,
    dir,
    runId: 'r1',
    state,
    stateFile,
    emit,
    tasks,
    byKey: new Map(tasks.map((t) => [t.spec.key, t])),
    prior: new Map(),
    cancelled,
    startedAt: Date.now() - 1000,
    manifest: { runName: 'demo' },
    ctx: { emit, stateFile, recordErrors: ['x: a row could not be written'], opts: { manifest: {} }, runId: 'r1' },
    spend: { finish: async () => ({ spentMicroUsd: 0 }) },
    releaseRun: async () => void order.push('release run'),
    releaseWorkdir: async () => void order.push('release workdir'),
  } as unknown as LiveRun;
  const scheduler = { close: () => undefined } as unknown as Scheduler<TaskRuntime>;
  const graph = new TaskGraph(run, scheduler);
  const workflows = new RunWorkflows({ run, graph, workRow });
  graph.workflows = workflows;
  const control = { end: () => void order.push('control end') } as unknown as ControlHandler;
  return { run, graph, control, workflows, order, events, home, dir };
}

describe('finishRun: the end of a live run', () => {
  it('a task still waiting is CANCELLED saying its prerequisites never ended; state closed finished, then the locks released', async () => {
    const [a, b] = [task('a', 'PASS'), task('b', 'queued', { after: ['never'] })];
    const r = runOf([a, b]);
    r.graph.parked.add(b);
    const summary = await finishRun(r.run, r.graph, r.control, r.workflows);
    assert.deepEqual([b.state.status, b.state.reason], ['CANCELLED', 'its prerequisites never ended']);
    assert.deepEqual(r.order, ['control end', 'close finished', 'release workdir', 'release run']);
    assert.equal(summary.allPassed, false);
    assert.equal(summary.cancelled, false);
    assert.deepEqual(summary.recordErrors, ['x: a row could not be written']);
    assert.deepEqual(r.events.at(-1), { type: 'run-finished', summary });
  });

  it('no engine settings copy (they may hold keys) and no scratch folder outlives the run', async () => {
    const r = runOf([task('a', 'PASS')]);
    await finishRun(r.run, r.graph, r.control, r.workflows);
    assert.equal(fs.existsSync(path.join(r.dir, 'engine-state')), false);
    assert.equal(fs.existsSync(path.join(r.home, 'scratch', 'r1')), false);
  });

  it('a cancelled run closes cancelled; a best-of-N candidate that failed does not fail the run its group passed', async () => {
    const r = runOf([task('c1', 'FAIL', { candidate: 1 }), task('c2', 'PASS', { candidate: 2 }), task('grp', 'PASS')], true);
    const summary = await finishRun(r.run, r.graph, r.control, r.workflows);
    assert.equal(r.run.state.status, 'cancelled');
    assert.equal(summary.cancelled, true);
    assert.equal(summary.allPassed, true);
    assert.deepEqual(
      summary.tasks.map((t) => t.key),
      ['c1', 'c2', 'grp'],
    );
  });
});
