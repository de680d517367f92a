/**
 * The end of a live run, once nothing runs and nothing is queued: what still waits is cancelled, the control channel
 * closed, scratch folders, overlay trees and the engines' settings copies removed, state.json closed with the run's
 * status, the locks released, and the run's summary built and said.
 */
import fs from 'node:fs';
import path from 'node:path';
import { removeRunScratch, removeTaskScratch } from './containment';
import type { ControlHandler } from './control-handler';
import type { LiveRun } from './live-run';
import type { RunSummary } from './run-types';
import type { TaskGraph } from './task-graph';
import { releaseTrees } from './trees';
import type { RunWorkflows } from './workflows';

/**
 * Ends the run (see the module's comment) and returns its summary, also emitted as `run-finished`.
 * @throws only for broken records (disk full, permissions)
 */
export async function finishRun(run: LiveRun, graph: TaskGraph, control: ControlHandler, workflows: RunWorkflows): Promise<RunSummary> {
  const { ctx, dir, emit, home, runId, state, stateFile, tasks } = run;
  // Nothing runs and nothing is queued: a task still waiting can never start (not expected; said, not hung on).
  for (const t of [...graph.parked]) t.state.reason = 'its prerequisites never ended';
  graph.cancelWaiting();
  control.end();
  for (const t of tasks) removeTaskScratch(home, runId, t.spec.key);
  removeRunScratch(home, runId);
  // Overlay trees are unmounted and removed with the run (their branches stay): run/trees.ts.
  for (const note of await releaseTrees(ctx, tasks)) emit({ type: 'run-note', note: `overlay trees: ${note}` });
  // The engines' settings copies (run/state-guard.ts) may hold keys: they do not outlive the run.
  fs.rmSync(path.join(dir, 'engine-state'), { recursive: true, force: true });

  state.status = run.cancelled ? 'cancelled' : 'finished';
  state.endedAt = Date.now();
  await stateFile.close();
  await run.releaseWorkdir?.();
  await run.releaseRun();
  const summaries = tasks.map((t) => t.summary);
  const summary: RunSummary = {
    runId,
    runName: run.manifest.runName,
    stateFile: stateFile.file,
    cancelled: run.cancelled,
    durationMs: state.endedAt - run.startedAt,
    tasks: summaries,
    // A task another stands for (a best-of-N candidate: its group) need not pass (WorkflowRun.passNotNeeded).
    allPassed: tasks.every((t) => t.summary.verdict === 'PASS' || workflows.passNotNeeded(t)),
    recordErrors: ctx.recordErrors,
    spend: await run.spend.finish(),
    state,
  };
  emit({ type: 'run-finished', summary });
  return summary;
}
