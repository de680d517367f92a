import fs from 'node:fs';
import path from 'node:path';
import { ControlReader, controlFile, isCommand, type BadControlLine, type ControlCommand } from '../live/control';
import { statusInfo } from '../../../schemas/status';
import { removeRunScratch, removeTaskScratch } from './containment';
import { releaseTrees } from './trees';
import { wakeTime } from './quota-wait';
import { takeOverTasks } from './resume';
import { Scheduler } from './scheduler';
import type { TaskRuntime } from './steps/context';
import { BestOfN } from './workflows/best-of-n';
import { TaskGraph } from './task-graph';
import { AttemptLoop } from './attempt-loop';
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

/** How often a live run reads its control file (runs/<id>/control.jsonl), ms. */
export const CONTROL_POLL_MS = 250;

/**
 * Runs a manifest end to end: preflight (nothing created when it fails), then the run's records under
 * `<home>/runs/<run_id>/`, then every task's attempts with exactly max_parallel busy, retries with the failure
 * injected, one eval row per attempt in `<home>/runs.jsonl`, and the orchestrator's commit of each PASS onto its
 * task branch in worktree mode. Lifecycle from DESIGN.md "One attempt".
 * @throws PreflightError before anything starts; other errors only for broken records (disk full, permissions)
 */
export async function runManifest(opts: RunOptions): Promise<RunSummary> {
  const run = await openRun(opts);
  const { manifest, home, runId, dir, state, stateFile, ctx, emit, tasks, frozenKeys, prior, cont, spend, waits, maxParallel, releaseRun, releaseWorkdir, startedAt } = run;
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
  // The control channel (docs/runs.md "Controlling a live run"): commands read by byte offset, each acknowledged
  // in state.json once its effect happened (or refused, saying why).
  /** Acknowledgments given when the run ends (a cancel is done once every attempt is recorded). */
  const atEnd: (() => void)[] = [];
  let ending = false;
  const ack = (c: ControlCommand | BadControlLine, result: 'done' | 'refused', reason: string) => {
    (state.control ??= []).push({ id: c.id, verb: c.verb, task: c.task ?? null, ...(c.engine !== undefined ? { engine: c.engine } : {}), by: c.by, host: c.host, at: c.at, ackAt: Date.now(), result, reason });
    emit({ type: 'run-note', note: `control: ${c.verb}${c.task ? ` ${c.task}` : ''}${c.engine ? ` ${c.engine}` : ''} from ${c.by}@${c.host}: ${result}${reason ? ` (${reason})` : ''}` });
    void stateFile.save();
  };
  const refuseStart = (): string | null => (run.cancelled ? 'the run is being cancelled' : state.draining ? 'the run is draining: nothing more starts' : null);
  const rerun = (c: ControlCommand, task: TaskRuntime) => {
    const why = refuseStart();
    if (why) return ack(c, 'refused', why);
    const reopened = graph.reopen(task);
    const { unblocked, restarted } = reopened;
    // Acknowledged first: queueing may start the attempt at once.
    ack(c, 'done', `${task.spec.key} is queued again: attempt ${task.state.attempts.length + 1} next, with ${task.spec.maxAttempts} attempt(s)${unblocked.length ? `; then ${unblocked.map((t) => t.spec.key).join(', ')}` : ''}${restarted.length ? `; ${restarted.map((t) => t.spec.key).join(', ')} (reading it) stopped, to run again after it` : ''}`);
    graph.requeue(task, reopened);
  };
  function handle(c: ControlCommand | BadControlLine): void {
    if (!isCommand(c)) return ack(c, 'refused', c.reason);
    if (ending) return ack(c, 'refused', 'the run had already ended');
    const task = c.task ? tasks.find((t) => t.spec.key === c.task) : undefined;
    if (c.task && !task) return ack(c, 'refused', `run ${runId} has no task ${c.task}`);
    switch (c.verb) {
      case 'cancel':
        atEnd.push(() => ack(c, 'done', 'the run was cancelled: running attempts stopped and recorded CANCELLED, queued tasks never started'));
        if (!run.cancelled) onAbort();
        return;
      case 'pause': {
        const why = refuseStart();
        if (why) return ack(c, 'refused', why);
        if (state.paused) return ack(c, 'done', 'already paused');
        state.paused = true;
        scheduler.pause();
        return ack(c, 'done', 'paused: no new attempt starts; running ones go on');
      }
      case 'resume':
        if (!state.paused) return ack(c, 'done', 'not paused');
        state.paused = false;
        ack(c, 'done', 'resumed: attempts start again');
        return scheduler.resume();
      case 'drain': {
        if (run.cancelled) return ack(c, 'refused', 'the run is being cancelled');
        if (state.draining) return ack(c, 'done', 'already draining');
        state.draining = true;
        state.paused = false;
        const queued = tasks.filter((t) => t.state.status === 'queued' || t.state.status === 'retry_queued').length - graph.cancelWaiting(true);
        scheduler.close();
        const running = tasks.filter((t) => !statusInfo(t.state.status).final).length;
        return ack(c, 'done', `draining: ${queued} waiting task(s) CANCELLED (drained); ${running} running go on, then the run ends`);
      }
      case 'stop': {
        const t = task as TaskRuntime;
        if (statusInfo(t.state.status).final) return ack(c, 'refused', `${t.spec.key} is already final (${t.state.status})`);
        graph.waitFinal(t, () => ack(c, 'done', `${t.spec.key} ended ${t.state.status}`));
        graph.stop(t, `stopped by ${c.by}`);
        // A best-of-N task: its candidates stop with it.
        if (t.spec.select) for (const k of t.spec.after) {
          const cand = byKey.get(k);
          if (cand && !statusInfo(cand.state.status).final) graph.stop(cand, `stopped by ${c.by}`);
        }
        return;
      }
      case 'rerun': {
        const t = task as TaskRuntime;
        const why = refuseStart();
        if (why) return ack(c, 'refused', why);
        // A planner whose tasks joined the run (state.json `generated`): running it again would add them twice.
        if (t.state.generated?.length) return ack(c, 'refused', `${t.spec.key} is a planner whose tasks already joined the run (${t.state.generated.join(', ')}); rerun those instead`);
        if (t.spec.select) return ack(c, 'refused', `${t.spec.key} is a best-of-N task and runs no worker itself: rerun one of its candidates (${t.spec.after.join(', ')})`);
        if (t.state.status === 'BLOCKED') {
          const gate = graph.gateOf(t);
          if (gate.kind === 'blocked') return ack(c, 'refused', `${t.spec.key} is BLOCKED by ${gate.by} (${gate.status}): rerun ${gate.by}, and ${t.spec.key} runs again once it passes`);
        }
        if (statusInfo(t.state.status).final) return rerun(c, t);
        graph.waitFinal(t, () => rerun(c, t));
        return;
      }
      case 'unwait': {
        const engine = c.engine as string;
        if (!opts.engines.has(engine)) return ack(c, 'refused', `run ${runId} has no engine ${engine} (engines: ${[...opts.engines.keys()].join(', ')})`);
        const cleared = waits.clear(engine);
        if (!cleared) return ack(c, 'done', `${engine} was not waiting`);
        // Every task on the engine that has not ended and runs no attempt was held by the wait, whether its job was
        // already parked on it or still queued behind it (a count of parked jobs alone depended on the timing).
        const woken = loop.heldBy(engine);
        // Acknowledged first: waking may start an attempt at once.
        ack(c, 'done', `${engine} no longer waits (it waited until ${wakeTime(cleared.until)}, set by ${cleared.task} attempt ${cleared.attempt}${cleared.source ? ` from ${cleared.source}` : ''}); ${woken} task(s) on it go on`);
        return loop.wake(engine);
      }
    }
  }
  const reader = new ControlReader(controlFile(dir));
  // A continued run reads the file from its start: what an earlier orchestrator acknowledged is not done again.
  const acknowledged = new Set((state.control ?? []).map((a) => a.id));
  const pollControl = () => {
    for (const c of reader.read()) if (!acknowledged.has(c.id)) handle(c);
  };
  const poller = setInterval(pollControl, CONTROL_POLL_MS);

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
  clearInterval(poller);
  ending = true;
  pollControl();
  for (const fn of atEnd) fn();
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
