import fs from 'node:fs';
import path from 'node:path';
import { ControlReader, controlFile, isCommand, type BadControlLine, type ControlCommand } from '../live/control';
import { statusInfo } from '../../../schemas/status';
import { removeRunScratch, removeTaskScratch } from './containment';
import { releaseTrees } from './trees';
import { wakeTime, type WaitChange } from './quota-wait';
import { takeOverTasks } from './resume';
import { Scheduler } from './scheduler';
import { nextChoice, reassign } from './reassign';
import { MachineSlots } from './slots';

/** How long a task whose engine's machine-wide slots are all held waits before it looks again, ms. */
const SLOT_RETRY_MS = 300;
import { runAttempt } from './attempt';
import type { AttemptContext, TaskRuntime } from './steps/context';
import { BestOfN } from './workflows/best-of-n';
import { TaskGraph } from './task-graph';
import { freezeGenerated } from './workflows/generate';
import { baselinePasses } from './baseline';
import { endTask } from './end-task';

export { FINAL_EVENT_GRACE_MS } from './steps/work';
import type { RunSummary } from './run-types';
import type { EngineSpec } from '../../../engines/types';
import type { TaskSpec } from '../manifest/types';

export type { PriorTask, RunEvent, RunSettings, RunSummary, TaskSummary } from './run-types';
export { newRunId } from './live-run';
import { openRun } from './live-run';
import type { RunOptions } from './run-options';
export { RunControl, type RunOptions } from './run-options';

/** How often a live run reads its control file (runs/<id>/control.jsonl), ms. */
export const CONTROL_POLL_MS = 250;
/**
 * How long a job held while its engine's probe runs waits before it asks again, ms; the probe's end wakes it at once,
 * so this only bounds a wake-up that never came.
 */
const PROBE_HOLD_MS = 60_000;

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
  /** The engine and model of the task's next attempt (its own, or a `fallback` entry: decide.ts attemptEngine). */
  const defaultModel = (name: string) => opts.engines.get(name)?.defaultModel ?? null;
  const choiceOf = (task: TaskRuntime) => nextChoice(task, defaultModel);
  /** Points the task (its engine, and state.json's engine and model) at the engine of its next attempt. */
  const chooseEngine = (task: TaskRuntime) => {
    const choice = choiceOf(task);
    task.engine = opts.engines.get(choice.engine) as EngineSpec;
    task.state.engine = choice.engine;
    task.state.model = choice.model;
  };
  /**
   * Jobs put back in the scheduler's delay because of their engine's quota wait (waiting for it, or held while its
   * probe runs), by engine: `wake` starts them at once when the wait is cleared or its probe ended.
   */
  const parkedOnWait = new Map<string, Set<TaskRuntime>>();
  const wake = (engine: string) => {
    const parked = parkedOnWait.get(engine);
    parkedOnWait.delete(engine);
    for (const t of parked ?? []) if (scheduler.withdraw(t)) scheduler.push(t);
  };
  /** What an attempt's end did to its engine's wait (run/quota-wait.ts settle): said, saved, and held jobs woken. */
  const afterWaitChange = (task: TaskRuntime, engine: string, change: WaitChange) => {
    const n = task.state.attempts.length;
    if (change.set) {
      const w = change.set;
      const note = w.capped
        ? `engine ${engine} reached its usage limit (${task.spec.key} attempt ${n}, ${w.source}): it named ${wakeTime(w.reset ?? w.until)}, past the cap; no attempt on it starts before ${wakeTime(w.until)}, then one probes it — "${w.reason}"`
        : w.confirmed
          ? `engine ${engine} reported its usage limit again to the probe (${task.spec.key} attempt ${n}, ${w.source}): confirmed, no attempt on it starts before ${wakeTime(w.until)} — "${w.reason}"`
          : `engine ${engine} reached its usage limit (${task.spec.key} attempt ${n}, ${w.source}): no attempt on it starts before ${wakeTime(w.until)} — "${w.reason}"`;
      emit({ type: 'run-note', note: `${note} (verdict unwait ${runId} ${engine} clears it)` });
    } else if (change.ended) {
      emit({ type: 'run-note', note: `engine ${engine}: the probe (${task.spec.key} attempt ${n}) did not report the usage limit again, so the wait ${change.ended.task} attempt ${change.ended.attempt} set is over` });
    }
    if (change.set || change.ended || change.probeSettled) void stateFile.save();
    if (change.probeSettled) wake(engine);
  };
  const slots = new MachineSlots(home, runId, (engine) => opts.engines.get(engine)?.maxParallel, manifest.logins, (note) => emit({ type: 'run-note', note }));
  /** Per-engine concurrency: halved for the rest of the run each time that engine is rate-limited. */
  const engineLimits = new Map<string, number>();
  const scheduler = new Scheduler<TaskRuntime>(
    maxParallel,
    async (task) => {
      try {
        await runJob(task);
        graph.settled(task);
      } catch (e) {
        // A bug or an unwritable record must not leave the task looking CANCELLED: it ends ERROR, saying why.
        const err = e as NodeJS.ErrnoException;
        endTask(ctx, task, 'ERROR', err.code === 'ENOSPC'
          ? `the task's records could not be written: no space left on the device of ${home} (free some, then: verdict resume ${runId})`
          : `internal error: ${err.message}`);
        graph.settled(task);
      }
    },
    (task) => graph.cancel(task),
    { groupOf: (task) => choiceOf(task).engine, limitOf: (engine) => Math.min(engineLimits.get(engine) ?? maxParallel, slots.limitOf(engine) ?? maxParallel) },
  );
  /** Tasks with an attempt running, and those stopped because the spend passed the budget (with the reason). */
  const attemptsRunning = new Set<TaskRuntime>();
  const stoppedForBudget = new Map<TaskRuntime, string>();
  const stopForBudget = (t: TaskRuntime, reason: string) => {
    if (t.abort.signal.aborted) return;
    stoppedForBudget.set(t, reason);
    t.restart = null;
    t.state.reason = reason;
    t.abort.abort(reason);
  };
  // The spend reported while attempts run passed the run's budget (task null) or a task's own: stop those attempts.
  spend.onOver = (key, reason) => {
    for (const t of attemptsRunning) if (key === null || t.spec.key === key) stopForBudget(t, reason);
  };
  /** Tasks held back by the budget until an attempt of their unpriced engine settles (spend.ts admit). */
  const budgetHeld = new Set<TaskRuntime>();
  /** One scheduler job: the next attempt of `task` (or its baseline, budget stop or cancellation). */
  async function runJob(task: TaskRuntime): Promise<void> {
    if (task.abort.signal.aborted) return task.restart ? graph.waitForInputsAgain(task) : graph.markCancelled(task);
    // Its engine waits for a quota reset (run/quota-wait.ts): back in the queue until then, or until the engine's probe
    // ends; no attempt is spent.
    let waitEngine = choiceOf(task).engine;
    let gate = waits.gate(waitEngine, Date.now(), task.spec.key);
    // A task with `fallback` moves off a waiting engine at once (run/reassign.ts).
    const moveOff = () => (gate.kind === 'go' ? null : reassign(task, waitEngine, gate.kind === 'wait' ? `waits for its quota until ${wakeTime(Date.now() + gate.ms)}` : 'waits for the probe of its quota', defaultModel));
    for (let moved = moveOff(); moved; moved = moveOff()) {
      emit({ type: 'task-note', key: task.spec.key, note: moved });
      waitEngine = choiceOf(task).engine;
      gate = waits.gate(waitEngine, Date.now(), task.spec.key);
    }
    if (gate.kind !== 'go') {
      const parked = parkedOnWait.get(waitEngine) ?? new Set<TaskRuntime>();
      parkedOnWait.set(waitEngine, parked.add(task));
      return scheduler.push(task, gate.kind === 'wait' ? gate.ms : PROBE_HOLD_MS);
    }
    parkedOnWait.get(waitEngine)?.delete(task);
    // Machine-wide limits of its engine and logins (run/slots.ts): back in the queue while all their slots are held.
    const releaseSlots = await slots.take(waitEngine, task.spec.key);
    if (!releaseSlots) return scheduler.push(task, SLOT_RETRY_MS);
    try {
      await runJobGated(task, waitEngine, gate.probe);
    } finally {
      await releaseSlots();
    }
  }
  /** runJob once its engine's quota gate and slots let it go: the attempt, or the engine's probe. */
  async function runJobGated(task: TaskRuntime, waitEngine: string, probe: boolean): Promise<void> {
    if (!probe) {
      await runJobAttempt(task);
      return;
    }
    emit({ type: 'run-note', note: `engine ${waitEngine}: its wait was shortened to the cap, now over; ${task.spec.key} attempt ${task.state.attempts.length + 1} probes it (its other tasks wait for the probe)` });
    void stateFile.save();
    let probed = false;
    try {
      probed = await runJobAttempt(task);
    } finally {
      // The probe ended without an attempt that says anything of the engine: the next job probes.
      if (!probed && waits.abandonProbe(waitEngine, task.spec.key)) {
        void stateFile.save();
        wake(waitEngine);
      }
    }
  }
  /** The attempt part of runJob; true when an attempt ran to a verdict that says something of its engine. */
  async function runJobAttempt(task: TaskRuntime): Promise<boolean> {
    if (opts.baseline && !task.prepared && (await baselinePasses(ctx, task))) return false;
    chooseEngine(task);
    // Budget (issue 6): reserve this attempt's worst case, or end the task BUDGET_EXCEEDED without starting it.
    const reservation = spend.admit(task.engine, task.state.model, task.spec);
    if (typeof reservation === 'string') {
      budgetExceeded(ctx, task, reservation);
      return false;
    }
    if ('waitFor' in reservation) {
      // Its cost is unbounded and another attempt of its engine runs unpriced: back in the queue until one settles.
      if (reservation.note) emit({ type: 'run-note', note: reservation.note });
      budgetHeld.add(task);
      return scheduler.push(task, PROBE_HOLD_MS), false;
    }
    budgetHeld.delete(task);
    attemptsRunning.add(task);
    const outcome = await runAttempt(ctx, task, opts.attemptSteps).finally(() => attemptsRunning.delete(task));
    spend.settle(reservation, outcome.costMicroUsd);
    for (const t of budgetHeld) if (scheduler.withdraw(t)) scheduler.push(t);
    budgetHeld.clear();
    // Spent alone passed the budget: the attempts still running are stopped as by `stop`, their tasks end BUDGET_EXCEEDED.
    const over = spend.overBudget();
    if (over) for (const t of attemptsRunning) stopForBudget(t, over);
    const budgetReason = stoppedForBudget.get(task);
    if (budgetReason !== undefined) {
      budgetExceeded(ctx, task, budgetReason);
      return false;
    }
    // A stopped or interrupted attempt says nothing of its engine: a probe's turn passes on (runJob).
    const informative = !task.restart && outcome.verdict !== 'CANCELLED' && outcome.verdict !== 'INTERRUPTED';
    afterWaitChange(task, task.state.engine, waits.settle(task.state.engine, task.spec.key, task.state.attempts.length, outcome.quota, Date.now(), informative));
    if (task.restart) {
      graph.waitForInputsAgain(task);
      return informative;
    }
    if (outcome.rateLimited) {
      const before = engineLimits.get(task.state.engine) ?? maxParallel;
      const after = Math.max(1, Math.floor(before / 2));
      engineLimits.set(task.state.engine, after);
      if (after < before) emit({ type: 'task-note', key: task.spec.key, note: `engine ${task.state.engine} was rate-limited: at most ${after} of its attempts run at once from now on` });
    }
    // A rate-limited task with `fallback` runs its next attempt on the next engine at once (run/reassign.ts).
    const moved = outcome.rateLimited && outcome.requeueAfterMs !== null ? reassign(task, task.state.engine, outcome.quota ? 'reached its usage limit' : 'was rate-limited', defaultModel) : null;
    if (moved) {
      emit({ type: 'task-note', key: task.spec.key, note: moved });
      return scheduler.push(task), informative;
    }
    if (outcome.requeueAfterMs !== null) {
      if (task.used > 0 && outcome.requeueAfterMs === 0) {
        const next = choiceOf(task);
        if (next.engine !== task.state.engine || next.model !== task.state.model) emit({ type: 'task-note', key: task.spec.key, note: `attempt ${task.state.attempts.length + 1} falls back to ${next.engine}${next.model ? `/${next.model}` : ''}` });
      }
      scheduler.push(task, outcome.requeueAfterMs);
    }
    return informative;
  }

  // The task graph (`after`, task-graph.ts): tasks waiting for their prerequisites, released, blocked or cancelled.
  const { byKey } = run;
  const graph = new TaskGraph(run, scheduler);
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
        const woken = [...byKey.values()].filter((t) => choiceOf(t).engine === engine && !statusInfo(t.state.status).final && !attemptsRunning.has(t)).length;
        // Acknowledged first: waking may start an attempt at once.
        ack(c, 'done', `${engine} no longer waits (it waited until ${wakeTime(cleared.until)}, set by ${cleared.task} attempt ${cleared.attempt}${cleared.source ? ` from ${cleared.source}` : ''}); ${woken} task(s) on it go on`);
        return wake(engine);
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


/** Ends a task BUDGET_EXCEEDED: its next attempt was not started (no eval row: no worker ran). */
function budgetExceeded(ctx: AttemptContext, task: TaskRuntime, reason: string): void {
  endTask(ctx, task, 'BUDGET_EXCEEDED', reason);
}
