import fs from 'node:fs';
import path from 'node:path';
import { statusInfo } from '../../../schemas/status';
import { removeRunScratch, removeTaskScratch } from './containment';
import { releaseTrees } from './trees';
import { takeOverTasks } from './resume';
import { Scheduler } from './scheduler';
import type { TaskRuntime } from './steps/context';
import { BestOfN } from './workflows/best-of-n';
import { TaskGraph } from './task-graph';
import { AttemptLoop } from './attempt-loop';
import { ControlHandler } from './control-handler';
import { freezeGenerated } from './workflows/generate';
import { endTask } from './end-task';

export { FINAL_EVENT_GRACE_MS } from './steps/work';
import type { RunSummary } from './run-types';
import type { TaskSpec } from '../manifest/types';

export type { PriorTask, RunEvent, RunSettings, RunSummary, TaskSummary } from './run-types';
export { newRunId } from './live-run';
import { openRun } from './live-run';
import type { RunOptions } from './run-options';
export { RunControl, type RunOptions } from './run-options';

export { CONTROL_POLL_MS } from './control-handler';

/**
 * Runs a manifest end to end: preflight (nothing created when it fails), then the run's records under
 * `<home>/runs/<run_id>/`, then every task's attempts with exactly max_parallel busy, retries with the failure
 * injected, one eval row per attempt in `<home>/runs.jsonl`, and the orchestrator's commit of each PASS onto its
 * task branch in worktree mode. Lifecycle from DESIGN.md "One attempt".
 * @throws PreflightError before anything starts; other errors only for broken records (disk full, permissions)
 */
export async function runManifest(opts: RunOptions): Promise<RunSummary> {
  const run = await openRun(opts);
  const { manifest, home, runId, dir, state, stateFile, ctx, emit, tasks, frozenKeys, prior, cont, spend, maxParallel, releaseRun, releaseWorkdir, startedAt } = run;
  // The scheduler's job and drop reach the loop and the graph, built right after it (called only once tasks are pushed).
  const scheduler: Scheduler<TaskRuntime> = new Scheduler<TaskRuntime>(maxParallel, (task) => loop.job(task), (task) => graph.cancel(task), {
    groupOf: (task) => loop.choiceOf(task).engine,
    limitOf: (engine) => loop.limitOf(engine),
  });
  // The task graph (`after`, task-graph.ts): tasks waiting for their prerequisites, released, blocked or cancelled.
  const { byKey } = run;
  const graph = new TaskGraph(run, scheduler);
  // The attempts (attempt-loop.ts): one scheduler job each, with the engine's waits, concurrency and the budget.
  const loop = new AttemptLoop(run, graph);
  // Best-of-N (docs/workflows.md): a group's own entry waits for its candidates and is decided by
  // workflows/best-of-n.ts (ranked: after its ranking reviewers).
  const groups = new BestOfN({
    ctx,
    task: (key) => byKey.get(key),
    prior: (key) => prior.get(key),
    block: (t, reason) => graph.block(t, reason),
    stop: (t, reason) => graph.stop(t, reason),
    cancel: (t) => graph.cancel(t),
    settled: (t) => graph.settled(t),
    again: (t) => graph.waitForInputsAgain(t),
  });
  graph.groups = groups;
  graph.onPlanned = addGenerated;
  // Generated (docs/workflows.md): a planner that passed brings the tasks its step `generate` validated. They join the
  // frozen manifest (a new version) and the state, and wait for the planner like any `after` dependent.
  function addGenerated(planner: TaskRuntime): void {
    const raw = planner.generated as Record<string, unknown>[];
    planner.generated = null;
    let specs: TaskSpec[];
    try {
      specs = freezeGenerated(home, state, planner.spec.key, planner.spec.generate?.file ?? '', raw, new Set(opts.engines.keys()));
    } catch (e) {
      endTask(ctx, planner, 'ERROR', `its generated tasks could not join the run: ${(e as Error).message}`, { recordError: true });
      return;
    }
    const added = specs.map((spec) => run.runtimeOf(spec));
    for (const t of added) {
      tasks.push(t);
      state.tasks.push(t.state);
      byKey.set(t.spec.key, t);
      frozenKeys.add(t.spec.key);
      opts.control?.bind(t.spec.key, () => t.abort.abort());
    }
    planner.state.generated = added.map((t) => t.spec.key);
    emit({ type: 'task-note', key: planner.spec.key, note: `${added.length} generated task(s) joined the run: ${added.map((t) => t.spec.key).join(', ')}` });
    void stateFile.save();
    for (const t of added) if (!statusInfo(t.state.status).final) graph.enqueue(t);
  }
  const onAbort = () => graph.cancelRun();
  // The control channel (control-handler.ts): commands from runs/<id>/control.jsonl, each acknowledged in state.json.
  const control = new ControlHandler(run, graph, loop);
  control.start();

  if (cont) {
    await takeOverTasks(ctx, tasks.filter((t) => cont.again.has(t.spec.key)));
    await stateFile.save();
  }
  for (const t of tasks) opts.control?.bind(t.spec.key, () => t.abort.abort());
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort);
  for (const t of tasks) {
    // A task BLOCKED by an earlier one in this loop is already final.
    if (!statusInfo(t.state.status).final) graph.enqueue(t);
  }
  await scheduler.idle();
  // A ranking decides its group after the scheduler went idle; the group's dependents then run.
  while (groups.busy()) {
    await groups.idle();
    await scheduler.idle();
  }
  // Nothing runs and nothing is queued: a task still waiting can never start (not expected; said, not hung on).
  for (const t of [...graph.parked]) t.state.reason = 'its prerequisites never ended';
  graph.cancelWaiting();
  opts.signal?.removeEventListener('abort', onAbort);
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
  await releaseWorkdir?.();
  await releaseRun();
  const summaries = tasks.map((t) => t.summary);
  const summary: RunSummary = {
    runId,
    runName: manifest.runName,
    stateFile: stateFile.file,
    cancelled: run.cancelled,
    durationMs: state.endedAt - startedAt,
    tasks: summaries,
    // A best-of-N task stands for its candidates: the run passed when the task did, whatever its other candidates did.
    allPassed: summaries.every((s) => s.verdict === 'PASS' || byKey.get(s.key)?.spec.candidate !== undefined),
    recordErrors: ctx.recordErrors,
    spend: await spend.finish(),
  };
  emit({ type: 'run-finished', summary });
  return summary;
}
