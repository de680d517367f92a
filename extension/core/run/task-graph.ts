/**
 * The task graph of a live run (`after`): a task with prerequisites waits outside the scheduler ("parked") until they
 * are final; then it is pushed (all passed) or ends BLOCKED (one did not), which in turn settles its own dependents.
 * Here too: stopping and cancelling single tasks, a reader waiting for its inputs again, and the rerun cascade (a
 * rerun task's BLOCKED dependents, and those that read it, wait for it again).
 */
import { statusInfo } from '../../../schemas/status';
import { graphGate, type GraphGate } from './decide';
import { endTask } from './end-task';
import { readsAsInput } from './inputs';
import type { LiveRun } from './live-run';
import type { Scheduler } from './scheduler';
import type { TaskRuntime } from './steps/context';

/**
 * What the graph asks of the run's workflow plugins (run/workflows/index.ts RunWorkflows, whose hooks each workflow
 * documents in run/workflows/workflow.ts): declared here so that the graph imports no workflow.
 */
export interface GraphWorkflows {
  /** `task` became final: called first, before its waiting dependents are released. */
  settled(task: TaskRuntime): void;
  /** A waiting task: undefined when no workflow takes it; `'wait'` keeps it waiting; a function acts on it instead. */
  release(task: TaskRuntime): 'wait' | (() => void) | undefined;
  /** Drain: true to keep this waiting task waiting. */
  keepWaiting(task: TaskRuntime): boolean;
  /** A rerun of `key`: true to stop `task` (not final, not waiting) and have it wait for its prerequisites again. */
  waitsAgainFor(task: TaskRuntime, key: string): boolean;
}

/** What a rerun put back in the queue besides the task itself. */
export interface Reopened {
  /** Dependents that ended BLOCKED, or ended having read it as an input: they wait for it again. */
  unblocked: TaskRuntime[];
  /** Readers of it still on their way, stopped to run again once it has settled. */
  restarted: TaskRuntime[];
}

/** One run's task graph over its scheduler. */
export class TaskGraph {
  /** Tasks waiting for their prerequisites, outside the scheduler. */
  readonly parked = new Set<TaskRuntime>();
  /** Callbacks waiting for a task to be final (a stop's acknowledgment, a rerun of a task still running). */
  private readonly whenFinal = new Map<TaskRuntime, (() => void)[]>();
  /** The run's workflow plugins (run/workflows/index.ts RunWorkflows); set once, after construction. */
  workflows: GraphWorkflows | null = null;

  constructor(
    private readonly run: LiveRun,
    readonly scheduler: Scheduler<TaskRuntime>,
  ) {}

  /** Where `task` stands against its prerequisites (in this run, or the runs it continues). */
  gateOf(task: TaskRuntime): GraphGate {
    const { byKey, prior } = this.run;
    const missing = task.spec.after.find((k) => !byKey.has(k) && !prior.has(k));
    if (missing)
      return {
        kind: 'blocked',
        by: missing,
        status: 'absent',
        reason: `prerequisite ${missing} is not part of this run and did not pass in the run it continues; this task did not start`,
      };
    return graphGate(
      task.spec.after.map((k) => {
        const t = byKey.get(k);
        if (t) return { key: k, status: t.state.status };
        const p = prior.get(k) as NonNullable<ReturnType<typeof prior.get>>;
        return { key: k, status: p.status, where: `in run ${p.runId}` };
      }),
    );
  }

  /** Starts the task now, or parks it until its prerequisites are final (then release() decides). */
  enqueue(task: TaskRuntime): void {
    if (!task.spec.after.length) return this.scheduler.push(task);
    this.parked.add(task);
    this.release(task);
  }

  /** A waiting task whose prerequisites are all final: pushed when they passed, BLOCKED when one did not. */
  release(task: TaskRuntime): void {
    if (!this.parked.has(task)) return;
    // A workflow's own task (a best-of-N group) is released by its workflow instead.
    const taken = this.workflows?.release(task);
    if (taken === 'wait') return;
    if (taken) {
      this.parked.delete(task);
      return taken();
    }
    const gate = this.gateOf(task);
    if (gate.kind === 'wait') return;
    this.parked.delete(task);
    if (gate.kind === 'ready') {
      const { byKey, prior } = this.run;
      // A prerequisite the task reads as an input (its `inputs`) is not merged into its tree: it is copied beside it.
      task.startFrom = task.spec.after
        .filter((k) => !readsAsInput(task.spec, k))
        .map((k) => ({ key: k, commit: byKey.get(k)?.state.commit ?? prior.get(k)?.commit ?? null }))
        .filter((p): p is { key: string; commit: string } => p.commit !== null);
      return this.scheduler.push(task);
    }
    this.block(task, gate.reason);
  }

  /** Ends a task that will not start BLOCKED, saying why, and settles its dependents. */
  block(task: TaskRuntime, reason: string): void {
    endTask(this.run.ctx, task, 'BLOCKED', reason);
    this.settled(task);
  }

  /**
   * A task that ends without (another) attempt because it or the run was stopped: CANCELLED, its reason kept; stopped
   * because the spend passed a budget while its readers ran (TaskRuntime.budgetStop), BUDGET_EXCEEDED with that reason.
   */
  markCancelled(task: TaskRuntime): void {
    if (task.budgetStop) return endTask(this.run.ctx, task, 'BUDGET_EXCEEDED', task.budgetStop);
    endTask(this.run.ctx, task, 'CANCELLED', task.state.reason ?? (this.run.state.draining ? 'drained' : 'stopped before this task finished'));
  }

  /** markCancelled, then its dependents settle. */
  cancel(task: TaskRuntime): void {
    this.markCancelled(task);
    this.settled(task);
  }

  /** A task may have become final: the workflows see it (onFinal), its waiting dependents are released, its waiters called. */
  settled(task: TaskRuntime): void {
    if (!statusInfo(task.state.status).final) return;
    this.workflows?.settled(task);
    for (const t of this.parked) if (t.spec.after.includes(task.spec.key)) this.release(t);
    const waiting = this.whenFinal.get(task);
    this.whenFinal.delete(task);
    for (const fn of waiting ?? []) fn();
  }

  /** Calls `fn` once `task` is final (after its dependents were released). */
  waitFinal(task: TaskRuntime, fn: () => void): void {
    this.whenFinal.set(task, [...(this.whenFinal.get(task) ?? []), fn]);
  }

  /**
   * Stops one task, as the `stop` verb does: its running attempt ends CANCELLED with `reason` (in its state, summary
   * and eval row) and is not retried; a queued or waiting task never starts.
   */
  stop(t: TaskRuntime, reason: string): void {
    // A stop wins over a restart for a rerun input: the task ends CANCELLED.
    t.restart = null;
    t.state.reason = reason;
    t.abort.abort(reason);
    if (this.parked.delete(t)) return this.cancel(t);
    this.scheduler.drop(t);
  }

  /**
   * Cancels every waiting task (the run is cancelled or drained: nothing more starts). `keepDecidable` (drain): a
   * waiting task a workflow keeps (WorkflowRun.keepWaiting: a best-of-N group with a candidate still running) keeps
   * waiting, so what still runs can decide it.
   * @returns how many waiting tasks were kept
   */
  cancelWaiting(keepDecidable = false): number {
    const kept = keepDecidable ? [...this.parked].filter((t) => this.workflows?.keepWaiting(t) ?? false) : [];
    const parked = [...this.parked].filter((t) => !kept.includes(t));
    for (const t of parked) this.parked.delete(t);
    for (const t of parked) this.cancel(t);
    return kept.length;
  }

  /** Cancels the run: nothing more starts, every waiting task ends CANCELLED, every running attempt is stopped. */
  cancelRun(): void {
    this.run.cancelled = true;
    this.cancelWaiting();
    this.scheduler.close();
    for (const t of this.run.tasks) {
      t.restart = null;
      t.abort.abort();
    }
  }

  /**
   * A reader (a task with `inputs`) not yet final when one of its inputs is rerun: it would judge work that no longer
   * stands. Queued, it is taken back; running, its attempt is stopped with the reason (TaskRuntime.restart: recorded
   * CANCELLED, not counted). Either way it then waits for its inputs again (waitForInputsAgain).
   */
  restartReader(t: TaskRuntime, input: string): void {
    const reason = `its input ${input} is being rerun: stopped before judging work that no longer stands (not counted); it runs again once ${input} has settled`;
    t.restart = reason;
    t.state.reason = reason;
    this.run.emit({ type: 'task-note', key: t.spec.key, note: reason });
    if (this.scheduler.withdraw(t)) return this.waitForInputsAgain(t);
    t.abort.abort(reason);
  }

  /** A reader stopped by restartReader: fresh (nothing spent), waiting for its inputs as a new task does. */
  waitForInputsAgain(t: TaskRuntime): void {
    t.restart = null;
    Object.assign(t, { abort: new AbortController(), used: 0, rateLimited: 0, failure: null });
    t.state.status = 'queued';
    // Why it stopped stays with the stopped attempt (its record, row and receipt), not with the task that goes on.
    delete t.state.reason;
    void this.run.stateFile.save();
    this.parked.add(t);
    this.release(t);
  }

  /**
   * Queues a final task again (the `rerun` verb), fresh (max_attempts anew, its earlier attempts kept), and reopens
   * what depends on it: its dependents that ended BLOCKED wait for it again (and theirs for them); so do those that
   * ended having read it as an input (a validator, a council's reviews and chair) — their verdict judged the work
   * about to be replaced — and a reader still on its way is stopped to run again after it. Nothing starts before
   * {@link requeue}.
   */
  reopen(task: TaskRuntime): Reopened {
    task.abort = new AbortController();
    task.used = 0;
    task.rateLimited = 0;
    task.failure = null;
    task.state.status = 'queued';
    delete task.state.reason;
    // New work to come: what was done with the old (merged, discarded) no longer describes the task.
    delete task.state.merged;
    delete task.state.discarded;
    const unblocked: TaskRuntime[] = [];
    const restarted: TaskRuntime[] = [];
    const unblock = (key: string) => {
      for (const t of this.run.tasks) {
        if (t === task || !t.spec.after.includes(key) || unblocked.includes(t) || restarted.includes(t)) continue;
        // A reader of it that is running or waiting for a slot is stopped and waits for it again (one still waiting for
        // its prerequisites, parked, waits anyway); so is a task a workflow is deciding from it (WorkflowRun.waitsAgainFor).
        if (!statusInfo(t.state.status).final && (readsAsInput(t.spec, key) || (this.workflows?.waitsAgainFor(t, key) ?? false)) && !this.parked.has(t)) {
          restarted.push(t);
          this.restartReader(t, key);
          unblock(t.spec.key);
          continue;
        }
        const readIt = statusInfo(t.state.status).final && (t.state.inputs?.entries.some((e) => e.key === key) ?? false);
        if (t.state.status !== 'BLOCKED' && !readIt) continue;
        if (readIt) Object.assign(t, { abort: new AbortController(), used: 0, rateLimited: 0, failure: null });
        t.state.status = 'queued';
        delete t.state.reason;
        unblocked.push(t);
        unblock(t.spec.key);
      }
    };
    unblock(task.spec.key);
    return { unblocked, restarted };
  }

  /** After {@link reopen}: its dependents wait for it, and the task itself is queued (it may start at once). */
  requeue(task: TaskRuntime, reopened: Reopened): void {
    for (const t of reopened.unblocked) this.parked.add(t);
    this.enqueue(task);
  }
}
