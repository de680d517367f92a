/**
 * The one writer of a task's final status. Every way a task ends — its last attempt's verdict, a block by a
 * prerequisite, a stop, a budget refusal, a baseline that already passes, a best-of-N decision, an internal error —
 * goes through {@link endTask}, which writes the status into state.json's view of the task and its summary together,
 * so the two can never disagree.
 */
import { statusInfo, type TaskOutcome } from '../../../schemas/status';
import type { AttemptContext, TaskRuntime } from './steps/context';
import { summarize } from './attempt-record';

/** What ending a task needs of the run: its events, its state file and its record errors. */
export type TaskEnd = Pick<AttemptContext, 'emit' | 'stateFile' | 'recordErrors'>;

/** How a task ended besides its outcome and reason. */
export interface EndFacts {
  /**
   * `attempt`: its last attempt decided it; the summary is the projection of the task's records (run/attempt-record.ts
   * summarize) and the reason stays with the attempt's own view (state.reason is left as it is). Absent: it ended
   * without (another) attempt, and `reason` goes into state.reason too.
   */
  by?: 'attempt';
  /** The commit its work ends at (a best-of-N group: its winner's), in state and summary alike. */
  commit?: string | null;
  /** Also one of the run's record errors (reported in the run's summary), as `<key>: <reason>`. */
  recordError?: boolean;
  /** Save the state file (default true; false when the caller saves once after a batch). */
  save?: boolean;
}

/**
 * Ends `task` with `outcome` (a final status of schemas/status.ts) and `reason`: `state.status` and `summary.verdict`
 * are both `outcome`; the summary's reason and `state.reason` are `reason` — except for an attempt's ending
 * (`by: 'attempt'`), whose summary is its records' projection (`reason` unused: the records say it). Says so once — `task-cancelled` (CANCELLED), `task-blocked` (BLOCKED), `task-skipped`
 * (SKIPPED, BUDGET_EXCEEDED), else a `task-note` with the reason when there is one; an attempt's ending says nothing
 * more (its `attempt-finished` did) — and saves the state file.
 * @throws Error when `outcome` is not final (a bug: a task on its way is not ended)
 */
export function endTask(run: TaskEnd, task: TaskRuntime, outcome: TaskOutcome, reason: string, facts: EndFacts = {}): void {
  if (!statusInfo(outcome).final) throw new Error(`endTask: ${outcome} is not a final status (${task.spec.key})`);
  const key = task.spec.key;
  if (facts.by === 'attempt') {
    Object.assign(task.summary, summarize(task.records));
  } else {
    task.state.reason = reason;
    task.summary.reason = reason;
  }
  task.state.status = outcome;
  task.summary.verdict = outcome;
  if (facts.commit !== undefined) {
    task.state.commit = facts.commit;
    task.summary.commit = facts.commit;
  }
  if (facts.recordError) run.recordErrors.push(`${key}: ${reason}`);
  if (facts.by !== 'attempt') {
    if (outcome === 'CANCELLED') run.emit({ type: 'task-cancelled', key });
    else if (outcome === 'BLOCKED') run.emit({ type: 'task-blocked', key, reason });
    else if (outcome === 'SKIPPED' || outcome === 'BUDGET_EXCEEDED') run.emit({ type: 'task-skipped', key, reason });
    else if (reason) run.emit({ type: 'task-note', key, note: reason });
  }
  if (facts.save !== false) void run.stateFile.save();
}
