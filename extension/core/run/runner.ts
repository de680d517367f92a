/**
 * The run's coordinator: runManifest sets the run up (live-run.ts), wires its parts — the task graph (task-graph.ts),
 * the attempt loop (attempt-loop.ts), the workflow plugins' part of the run (workflows/index.ts RunWorkflows), the
 * control channel (control-handler.ts) — starts every task, waits until nothing runs, and ends the run (teardown.ts).
 */
import type { RunOptions } from './run-options';
import type { RunSummary } from './run-types';
import type { TaskRuntime } from './steps/context';
import { openRun } from './live-run';
import { Scheduler } from './scheduler';
import { TaskGraph } from './task-graph';
import { AttemptLoop } from './attempt-loop';
import { ControlHandler } from './control-handler';
import { RunWorkflows, WORKFLOW_SECTIONS, workflowReaderEngines, workflowRerunRules, workRow } from './workflows';
import { takeOverTasks } from './take-over';
import { finishRun } from './teardown';
import { statusInfo } from '../../../schemas/status';

export { FINAL_EVENT_GRACE_MS } from './steps/work';
export { CONTROL_POLL_MS } from './control-handler';
export { newRunId } from './live-run';
export { RunControl, type RunOptions } from './run-options';
export type { PriorTask, RunEvent, RunSettings, RunSummary, TaskSummary } from './run-types';

/**
 * Runs a manifest end to end: preflight (nothing created when it fails), then the run's records under
 * `<home>/runs/<run_id>/`, then every task's attempts with exactly max_parallel busy, retries with the failure
 * injected, one eval row per attempt in `<home>/runs.jsonl`, and the orchestrator's commit of each PASS onto its
 * task branch in worktree mode (docs/attempt.md).
 * @throws PreflightError before anything starts; other errors only for broken records (disk full, permissions)
 */
export async function runManifest(opts: RunOptions): Promise<RunSummary> {
  const run = await openRun(opts, workflowReaderEngines, workflowRerunRules, WORKFLOW_SECTIONS);
  // The scheduler's job and drop reach the loop and the graph, built right after it (called only once tasks are pushed).
  const scheduler: Scheduler<TaskRuntime> = new Scheduler<TaskRuntime>(
    run.maxParallel,
    (task) => loop.job(task),
    (task) => graph.cancel(task),
    {
      groupOf: (task) => loop.choiceOf(task).engine,
      limitOf: (engine) => loop.limitOf(engine),
    },
  );
  const graph = new TaskGraph(run, scheduler);
  const loop = new AttemptLoop(run, graph);
  // Workflow plugins (workflows/index.ts): they see each task that became final before its dependents are released,
  // and release the waiting tasks that are theirs (a best-of-N group).
  const workflows = new RunWorkflows({ run, graph, workRow });
  graph.workflows = workflows;
  const control = new ControlHandler(run, graph, loop, workflows);
  control.start();

  if (run.cont) {
    const again = run.cont.again;
    await takeOverTasks(
      run.ctx,
      run.tasks.filter((t) => again.has(t.spec.key)),
    );
    await run.stateFile.save();
  }
  for (const t of run.tasks) opts.control?.bind(t.spec.key, () => t.abort.abort());
  const onAbort = () => graph.cancelRun();
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort);
  for (const t of run.tasks) {
    // A task BLOCKED by an earlier one in this loop is already final.
    if (!statusInfo(t.state.status).final) graph.enqueue(t);
  }
  // What a workflow does once the scheduler went idle (a ranking) may start tasks again: waited for too.
  await workflows.quiet();
  opts.signal?.removeEventListener('abort', onAbort);
  return finishRun(run, graph, control, workflows);
}
