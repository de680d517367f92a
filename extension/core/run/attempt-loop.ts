/**
 * The scheduler's job for one task: its next attempt (run/attempt.ts), or its baseline, a budget refusal, a hold for
 * its engine's quota wait, or its cancellation; then what the attempt's end means for the run — the engine's wait and
 * concurrency, the budget, a retry or requeue, a reader waiting for its inputs again.
 */
import type { EngineSpec } from '../../../engines/types';
import { statusInfo } from '../../../schemas/status';
import { runAttempt } from './attempt';
import { baselinePasses } from './baseline';
import { nextChoice, reassign } from './reassign';
import { routeAttempt } from './route-choice';
import { routeLine } from '../scoreboard/route';
import { MachineSlots } from './slots';
import { endTask } from './end-task';
import { envelopeOf } from './spend';
import type { LiveRun } from './live-run';
import { wakeTime, type WaitChange } from './quota-wait';
import type { TaskRuntime } from './steps/context';
import type { TaskGraph } from './task-graph';

/**
 * How long a job held while its engine's probe runs waits before it asks again, ms; the probe's end wakes it at once,
 * so this only bounds a wake-up that never came.
 */
const PROBE_HOLD_MS = 60_000;
/** How long a task whose engine's machine-wide slots are all held waits before it looks again, ms. */
const SLOT_RETRY_MS = 300;

/** One run's attempts: started by its scheduler, one job per attempt. */
export class AttemptLoop {
  /**
   * Jobs put back in the scheduler's delay because of their engine's quota wait (waiting for it, or held while its
   * probe runs), by engine: `wake` starts them at once when the wait is cleared or its probe ended.
   */
  private readonly parkedOnWait = new Map<string, Set<TaskRuntime>>();
  /** Per-engine concurrency: halved for the rest of the run each time that engine is rate-limited. */
  private readonly engineLimits = new Map<string, number>();
  /** Tasks with an attempt running, and those stopped because the spend passed the budget (with the reason). */
  private readonly attemptsRunning = new Set<TaskRuntime>();
  private readonly stoppedForBudget = new Map<TaskRuntime, string>();
  /** Tasks held back by the budget until an attempt of their unpriced engine settles (spend.ts admit). */
  private readonly budgetHeld = new Set<TaskRuntime>();
  /** Machine-wide limits per engine and per login, across every run (run/slots.ts). */
  private readonly slots: MachineSlots;

  constructor(
    private readonly run: LiveRun,
    private readonly graph: TaskGraph,
  ) {
    this.slots = new MachineSlots(
      run.home,
      run.runId,
      (engine) => run.opts.engines.get(engine)?.maxParallel,
      run.manifest.logins,
      (note) => run.emit({ type: 'run-note', note }),
      run.opts.logins,
    );
    // The spend reported while attempts run passed the run's budget (task null) or a task's own: stop those attempts.
    run.spend.onOver = (key, reason) => this.stopSpenders(key, reason);
    // A step of an engine nothing prices ended (an attempt settled or its worker exited, a reader settled): the attempts
    // held back for it ask again at once.
    run.spend.onFreed = () => {
      for (const t of this.budgetHeld) if (this.graph.scheduler.withdraw(t)) this.graph.scheduler.push(t);
      this.budgetHeld.clear();
    };
  }

  /** An engine's default model (null for an engine the run does not know). */
  private readonly defaultModel = (name: string): string | null => this.run.opts.engines.get(name)?.defaultModel ?? null;

  /**
   * The engine and model of the task's next attempt (its own, a `fallback` entry, or where it was moved: run/reassign.ts
   * nextChoice); for `engine: "auto"`, where that attempt is routed (run/route-choice.ts), decided the first time it is
   * asked and kept for that attempt — while an attempt runs, its own.
   */
  choiceOf(task: TaskRuntime): { engine: string; model: string | null } {
    if (!task.spec.route) return nextChoice(task, this.defaultModel);
    const routed =
      task.routed && this.attemptsRunning.has(task)
        ? task.routed
        : routeAttempt(
            task,
            this.run.runId,
            this.run.routeEvidence,
            (engine, model) => this.excluded(task, engine, model),
            (model) => this.run.spend.priceOf(model),
          );
    const { engine, model } = routed.decision;
    return { engine, model: model ?? this.defaultModel(engine) };
  }

  /** Why a routed task's attempt cannot run on `engine`/`model` now: its quota wait, its limit, or the budget; or null. */
  private excluded(task: TaskRuntime, engine: string, model: string | null): string | null {
    const waiting = this.run.waits.holdReason(engine, Date.now(), task.spec.key);
    if (waiting) return waiting;
    const running = this.graph.scheduler.activeIn(engine);
    if (running >= this.limitOf(engine)) return `engine ${engine} is at its limit (${running} running)`;
    const spec = this.run.opts.engines.get(engine);
    return spec ? this.run.spend.refusalOf(spec, model ?? spec.defaultModel ?? null, task.spec) : `engine ${engine} is not known`;
  }

  /** How many attempts of `engine` may run at once now. */
  limitOf(engine: string): number {
    const { maxParallel } = this.run;
    return Math.min(this.engineLimits.get(engine) ?? maxParallel, this.slots.limitOf(engine) ?? maxParallel);
  }

  /** How many jobs wait for `engine`'s quota wait or probe (parked on it now). */
  parkedOn(engine: string): number {
    return this.parkedOnWait.get(engine)?.size ?? 0;
  }

  /**
   * How many tasks a wait on `engine` holds: every task whose next attempt runs on it that has not ended and runs no
   * attempt, whether its job is already parked on the wait or still queued behind it.
   */
  heldBy(engine: string): number {
    return this.run.tasks.filter((t) => this.choiceOf(t).engine === engine && !statusInfo(t.state.status).final && !this.attemptsRunning.has(t)).length;
  }

  /** Starts at once the jobs that wait for `engine` (its wait was cleared, or its probe ended). */
  wake(engine: string): void {
    const parked = this.parkedOnWait.get(engine);
    this.parkedOnWait.delete(engine);
    for (const t of parked ?? []) if (this.graph.scheduler.withdraw(t)) this.graph.scheduler.push(t);
  }

  /** One scheduler job, then its task settles: a bug or an unwritable record ends the task ERROR, saying why. */
  async job(task: TaskRuntime): Promise<void> {
    try {
      await this.runJob(task);
      this.graph.settled(task);
    } catch (e) {
      // A bug or an unwritable record must not leave the task looking CANCELLED: it ends ERROR, saying why.
      const err = e as NodeJS.ErrnoException;
      endTask(
        this.run.ctx,
        task,
        'ERROR',
        err.code === 'ENOSPC'
          ? `the task's records could not be written: no space left on the device of ${this.run.home} (free some, then: verdict resume ${this.run.runId})`
          : `internal error: ${err.message}`,
      );
      this.graph.settled(task);
    }
  }

  /** The next attempt of `task` (or its baseline, budget stop or cancellation). */
  private async runJob(task: TaskRuntime): Promise<void> {
    const { waits, emit } = this.run;
    if (task.abort.signal.aborted) return task.restart ? this.graph.waitForInputsAgain(task) : this.graph.markCancelled(task);
    // Its engine waits for a quota reset (run/quota-wait.ts): back in the queue until then, or until the engine's probe
    // ends; no attempt is spent.
    let waitEngine = this.choiceOf(task).engine;
    let gate = waits.gate(waitEngine, Date.now(), task.spec.key);
    // A task with `fallback` moves off a waiting engine at once (run/reassign.ts).
    const moveOff = () =>
      gate.kind === 'go'
        ? null
        : reassign(
            task,
            waitEngine,
            gate.kind === 'wait' ? `waits for its quota until ${wakeTime(Date.now() + gate.ms)}` : 'waits for the probe of its quota',
            this.defaultModel,
          );
    for (let moved = moveOff(); moved; moved = moveOff()) {
      emit({ type: 'task-note', key: task.spec.key, note: moved });
      waitEngine = this.choiceOf(task).engine;
      gate = waits.gate(waitEngine, Date.now(), task.spec.key);
    }
    // engine "auto" chose an engine that has begun to wait since: routed again, that engine excluded (unless all are).
    if (gate.kind !== 'go' && task.spec.route && task.routed && !task.routed.decision.allExcluded) {
      const from = waitEngine;
      task.routed = undefined;
      waitEngine = this.choiceOf(task).engine;
      if (waitEngine !== from)
        emit({
          type: 'task-note',
          key: task.spec.key,
          note: `engine ${from} waits for its quota: ${task.spec.key}'s attempt is routed again — ${task.routed!.decision.reason}`,
        });
      gate = waits.gate(waitEngine, Date.now(), task.spec.key);
    }
    if (gate.kind !== 'go') {
      const parked = this.parkedOnWait.get(waitEngine) ?? new Set<TaskRuntime>();
      this.parkedOnWait.set(waitEngine, parked.add(task));
      return this.graph.scheduler.push(task, gate.kind === 'wait' ? gate.ms : PROBE_HOLD_MS);
    }
    this.parkedOnWait.get(waitEngine)?.delete(task);
    // Machine-wide limits of its engine and logins (run/slots.ts): back in the queue while all their slots are held.
    const releaseSlots = await this.slots.take(waitEngine, task.spec.key);
    if (!releaseSlots) return this.graph.scheduler.push(task, SLOT_RETRY_MS);
    try {
      await this.runJobGated(task, waitEngine, gate.probe);
    } finally {
      await releaseSlots();
    }
  }

  /** runJob once its engine's quota gate and slots let it go: the attempt, or the engine's probe. */
  private async runJobGated(task: TaskRuntime, waitEngine: string, probe: boolean): Promise<void> {
    const { waits, emit, stateFile } = this.run;
    if (!probe) {
      await this.runJobAttempt(task);
      return;
    }
    emit({
      type: 'run-note',
      note: `engine ${waitEngine}: its wait was shortened to the cap, now over; ${task.spec.key} attempt ${task.state.attempts.length + 1} probes it (its other tasks wait for the probe)`,
    });
    void stateFile.save();
    let probed = false;
    try {
      probed = await this.runJobAttempt(task);
    } finally {
      // The probe ended without an attempt that says anything of the engine: the next job probes.
      if (!probed && waits.abandonProbe(waitEngine, task.spec.key)) {
        void stateFile.save();
        this.wake(waitEngine);
      }
    }
  }

  /** Points the task (its engine, and state.json's engine and model) at the engine of its next attempt. */
  private chooseEngine(task: TaskRuntime): void {
    const choice = this.choiceOf(task);
    task.engine = this.run.opts.engines.get(choice.engine) as EngineSpec;
    task.state.engine = choice.engine;
    task.state.model = choice.model;
  }

  /** The attempt part of runJob; true when an attempt ran to a verdict that says something of its engine. */
  private async runJobAttempt(task: TaskRuntime): Promise<boolean> {
    const { opts, ctx, spend, waits } = this.run;
    const scheduler = this.graph.scheduler;
    if (opts.baseline && !task.prepared && (await baselinePasses(ctx, task))) return false;
    this.chooseEngine(task);
    // Budget: reserve this attempt's worst case, or end the task BUDGET_EXCEEDED without starting it.
    const reservation = spend.admit(task.engine, task.state.model, task.spec);
    if (typeof reservation === 'string') {
      endTask(ctx, task, 'BUDGET_EXCEEDED', reservation);
      return false;
    }
    if ('waitFor' in reservation) {
      // Its cost is unbounded and another attempt of its engine runs unpriced: back in the queue until one settles.
      if (reservation.note) this.run.emit({ type: 'run-note', note: reservation.note });
      this.budgetHeld.add(task);
      return (scheduler.push(task, PROBE_HOLD_MS), false);
    }
    this.budgetHeld.delete(task);
    if (task.spec.route && task.routed)
      this.run.emit({
        type: 'task-note',
        key: task.spec.key,
        note: `attempt ${task.routed.attempt}: ${routeLine(task.routed.decision, task.spec.route.prefer)} — ${task.routed.decision.reason}`,
      });
    this.attemptsRunning.add(task);
    const outcome = await runAttempt(ctx, task, opts.attemptSteps).finally(() => this.attemptsRunning.delete(task));
    spend.settle(reservation, outcome.costMicroUsd, outcome.tokens);
    // Spent alone passed the budget: the attempts still running are stopped as by `stop`, their tasks end BUDGET_EXCEEDED.
    const over = spend.overBudget();
    if (over) this.stopSpenders(null, over);
    const budgetReason = this.stoppedForBudget.get(task);
    if (budgetReason !== undefined) {
      endTask(ctx, task, 'BUDGET_EXCEEDED', budgetReason);
      return false;
    }
    // A stopped or interrupted attempt says nothing of its engine: a probe's turn passes on (runJob).
    const informative = !task.restart && outcome.verdict !== 'CANCELLED' && outcome.verdict !== 'INTERRUPTED';
    this.afterWaitChange(
      task,
      task.state.engine,
      waits.settle(task.state.engine, task.spec.key, task.state.attempts.length, outcome.quota, Date.now(), informative),
    );
    if (task.restart) {
      this.graph.waitForInputsAgain(task);
      return informative;
    }
    if (outcome.rateLimited) this.halveLimit(task);
    // A rate-limited task with `fallback` runs its next attempt on the next engine at once (run/reassign.ts).
    const moved =
      outcome.rateLimited && outcome.requeueAfterMs !== null
        ? reassign(task, task.state.engine, outcome.quota ? 'reached its usage limit' : 'was rate-limited', this.defaultModel)
        : null;
    if (moved) {
      this.run.emit({ type: 'task-note', key: task.spec.key, note: moved });
      return (scheduler.push(task), informative);
    }
    if (outcome.requeueAfterMs !== null) {
      if (task.used > 0 && outcome.requeueAfterMs === 0) {
        const next = this.choiceOf(task);
        if (next.engine !== task.state.engine || next.model !== task.state.model)
          this.run.emit({
            type: 'task-note',
            key: task.spec.key,
            note: `attempt ${task.state.attempts.length + 1} falls back to ${next.engine}${next.model ? `/${next.model}` : ''}`,
          });
      }
      scheduler.push(task, outcome.requeueAfterMs);
    }
    return informative;
  }

  /**
   * The spend passed the run's budget (`key` null) or the envelope `key` (a task's own budget): stops what still spends
   * under it. An attempt
   * whose worker has exited and none of whose readers (reviewers) runs spends nothing more on its engine: its check
   * goes on (spend.ts spendingOver). A task with readers running outside any attempt (a best-of-N group's ranking
   * reviewers or inputs engine) is stopped as by `stop` and ends BUDGET_EXCEEDED (TaskRuntime.budgetStop).
   */
  private stopSpenders(key: string | null, reason: string): void {
    const { spend } = this.run;
    // `key` names an envelope, which may cover more tasks than the one of that key (spend.ts envelopeOf).
    const under = (t: TaskRuntime) => key === null || t.spec.key === key || envelopeOf(t.spec) === key;
    for (const t of this.attemptsRunning) if (under(t) && !spend.spendingOver(t.spec.key)) this.stopForBudget(t, reason);
    for (const t of this.run.tasks) {
      if (this.attemptsRunning.has(t) || (key !== null && t.spec.key !== key) || !spend.readersRunning(t.spec.key) || t.abort.signal.aborted) continue;
      t.budgetStop = reason;
      this.graph.stop(t, reason);
    }
  }

  /** Stops a running attempt because the run's spend passed its budget; its task then ends BUDGET_EXCEEDED. */
  private stopForBudget(t: TaskRuntime, reason: string): void {
    if (t.abort.signal.aborted) return;
    this.stoppedForBudget.set(t, reason);
    t.restart = null;
    t.state.reason = reason;
    t.abort.abort(reason);
  }

  /** The task's engine was rate-limited: at most half as many of its attempts run at once from now on. */
  private halveLimit(task: TaskRuntime): void {
    const before = this.limitOf(task.state.engine);
    const after = Math.max(1, Math.floor(before / 2));
    this.engineLimits.set(task.state.engine, after);
    if (after < before)
      this.run.emit({
        type: 'task-note',
        key: task.spec.key,
        note: `engine ${task.state.engine} was rate-limited: at most ${after} of its attempts run at once from now on`,
      });
  }

  /** What an attempt's end did to its engine's wait (run/quota-wait.ts settle): said, saved, and held jobs woken. */
  private afterWaitChange(task: TaskRuntime, engine: string, change: WaitChange): void {
    const { emit, runId, stateFile } = this.run;
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
      emit({
        type: 'run-note',
        note: `engine ${engine}: the probe (${task.spec.key} attempt ${n}) did not report the usage limit again, so the wait ${change.ended.task} attempt ${change.ended.attempt} set is over`,
      });
    }
    if (change.set || change.ended || change.probeSettled) void stateFile.save();
    if (change.probeSettled) this.wake(engine);
  }
}
