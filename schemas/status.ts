// The one table of task and attempt statuses, read by the runner, reconcile, resume, the CLI, the runs view, the
// registry and the dashboard (through schemas/protocol.ts). Data and pure lookups only: no Node, no DOM, no vscode.
// Why one table: before it, six places held their own Sets and switches and disagreed (STALLED shown as "other" though
// retried like a FAIL; RATE_LIMITED final in one place and not in another).

/** The verdict of one attempt (docs/attempt.md; judged by run/decide.ts `judge`). */
export type Verdict = 'PASS' | 'FAIL' | 'TIMEOUT' | 'STALLED' | 'ERROR' | 'RATE_LIMITED' | 'CANCELLED' | 'INTERRUPTED';

/**
 * Where a task ended without (another) attempt: SKIPPED by --baseline, BUDGET_EXCEEDED by budget_usd, BLOCKED when a
 * task it comes `after` did not PASS (it never started; its reason names the prerequisite and that one's verdict).
 */
export type TaskOutcome = Verdict | 'SKIPPED' | 'BUDGET_EXCEEDED' | 'BLOCKED';

/** A task on its way: not yet decided. */
export type TaskPhase = 'queued' | 'preparing' | 'baseline' | 'running' | 'checking' | 'retry_queued';

/** Every status a task can show. */
export type TaskStatus = TaskPhase | TaskOutcome;

/** How the views count a status: the run's progress bar, the live list's counters, the colour of a verdict. */
export type StatusBucket = 'queued' | 'active' | 'passed' | 'failed' | 'other';

/** What one status means. */
export interface StatusInfo {
  /** The task will not run again in this run (its state is settled). */
  final: boolean;
  /** As an attempt's verdict: retried with the failure injected while attempts remain. */
  retryable: boolean;
  /** As an attempt's verdict: requeued after a backoff without using an attempt. */
  requeued: boolean;
  /** A check (or the time limit) judged the worker's work: counts in pass rates; the rest are kept out of them. */
  judged: boolean;
  /** `verdict resume` runs the task again (everything final that did not pass and was not skipped). */
  resumable: boolean;
  bucket: StatusBucket;
}

const phase = (bucket: StatusBucket): StatusInfo => ({ final: false, retryable: false, requeued: false, judged: false, resumable: true, bucket });

/** The table. Every status of TaskStatus has exactly one row (the compiler checks it). */
export const STATUS: Readonly<Record<TaskStatus, StatusInfo>> = {
  queued: phase('queued'),
  preparing: phase('active'),
  baseline: phase('active'),
  running: phase('active'),
  checking: phase('active'),
  retry_queued: phase('active'),
  PASS: { final: true, retryable: false, requeued: false, judged: true, resumable: false, bucket: 'passed' },
  FAIL: { final: true, retryable: true, requeued: false, judged: true, resumable: true, bucket: 'failed' },
  TIMEOUT: { final: true, retryable: true, requeued: false, judged: true, resumable: true, bucket: 'failed' },
  STALLED: { final: true, retryable: true, requeued: false, judged: true, resumable: true, bucket: 'failed' },
  ERROR: { final: true, retryable: false, requeued: false, judged: false, resumable: true, bucket: 'failed' },
  // A task's status is RATE_LIMITED only once its requeues are spent (until then it is retry_queued).
  RATE_LIMITED: { final: true, retryable: false, requeued: true, judged: false, resumable: true, bucket: 'failed' },
  INTERRUPTED: { final: true, retryable: false, requeued: false, judged: false, resumable: true, bucket: 'failed' },
  CANCELLED: { final: true, retryable: false, requeued: false, judged: false, resumable: true, bucket: 'other' },
  BUDGET_EXCEEDED: { final: true, retryable: false, requeued: false, judged: false, resumable: true, bucket: 'other' },
  // No worker ran and nothing was judged: the failure is counted once, at the prerequisite; resume runs it again
  // after that prerequisite (bucket `other` like CANCELLED and BUDGET_EXCEEDED, so pass rates and failure counts
  // do not count one failed prerequisite once per dependent).
  BLOCKED: { final: true, retryable: false, requeued: false, judged: false, resumable: true, bucket: 'other' },
  SKIPPED: { final: true, retryable: false, requeued: false, judged: false, resumable: false, bucket: 'other' },
};

/** The row of `status`; an unknown status (a newer or damaged record) reads as an unfinished, unjudged one. */
export function statusInfo(status: string): StatusInfo {
  return (STATUS as Record<string, StatusInfo>)[status] ?? phase('other');
}

/** Every verdict an attempt can have, in the table's order. */
export const VERDICTS: readonly Verdict[] = ['PASS', 'FAIL', 'TIMEOUT', 'STALLED', 'ERROR', 'RATE_LIMITED', 'CANCELLED', 'INTERRUPTED'];

/** The default steps of an attempt, in the order they run (docs/attempt.md "The steps"; run/steps/ holds one module each). */
export type DefaultStepName = 'prepare' | 'inputs' | 'work' | 'seal' | 'guard' | 'check' | 'suite' | 'review' | 'deliver';

/**
 * A step's name as state.json and an attempt's record show it: a default step's (DefaultStepName) or one a workflow
 * plugin adds (run/workflows/<name>/, through its entry in the workflow table: `red`, `generate`, `critique`). Not a
 * closed list: schemas/ imports nothing of extension/, so it cannot list the workflows' steps without naming them.
 */
export type StepName = DefaultStepName | (string & {});

/**
 * The phase a task and its attempt show while a step runs: the task dir and its inputs are made ready (`preparing`),
 * the worker runs and its work is sealed and guarded (`running`), then it is judged (`checking`: the check, suite,
 * reviews and delivery, and the workflows' steps after the check). Each step says its own (run/steps/context.ts
 * Step.phase); the attempt's loop (run/attempt.ts) sets the task's status and the attempt's phase from it as each step
 * starts; no step writes either itself.
 */
export type StepPhase = Extract<TaskPhase, 'preparing' | 'running' | 'checking'>;

/**
 * What a task came to, as every view shows it (the Testing view, the runs tree, the dashboard, `verdict runs`, the
 * hud): `passed` (its last attempt passed, whatever attempts failed before it), `failed`, `skipped` (it ended without
 * a judged failure of its own: CANCELLED, BLOCKED, BUDGET_EXCEEDED, SKIPPED), or still `queued` / `running`. The
 * names are the Test Explorer's result states, so one task reads the same there and everywhere else.
 */
export type TaskResult = 'queued' | 'running' | 'passed' | 'failed' | 'skipped';

/**
 * The result of a task whose status (TaskStatus, the task's, never one attempt's verdict) is `status`, from the
 * table: a final status by its bucket (`other` reads as skipped), an unfinished one as queued or running. An unknown
 * status reads as running (not final, as `statusInfo` reads it).
 */
export function taskResult(status: string): TaskResult {
  const info = statusInfo(status);
  if (!info.final) return info.bucket === 'queued' ? 'queued' : 'running';
  return info.bucket === 'passed' ? 'passed' : info.bucket === 'failed' ? 'failed' : 'skipped';
}

/**
 * A run's result from its tasks' statuses, ranked as the Test Explorer ranks a parent's children: `failed` when any
 * task failed, else `running` when any is unfinished, else `passed` when any passed (skipped tasks do not make a run
 * red), else `skipped` (nothing passed, nothing failed; also an empty run).
 */
export function runResult(statuses: readonly string[]): TaskResult {
  const results = new Set(statuses.map(taskResult));
  if (results.has('failed')) return 'failed';
  if (results.has('running') || results.has('queued')) return 'running';
  return results.has('passed') ? 'passed' : 'skipped';
}

/** How many of `statuses` have each result (`taskResult`): the counts behind every view's bar and counters. */
export function resultCounts(statuses: readonly string[]): Record<TaskResult, number> {
  const n: Record<TaskResult, number> = { queued: 0, running: 0, passed: 0, failed: 0, skipped: 0 };
  for (const s of statuses) n[taskResult(s)]++;
  return n;
}

/**
 * A run's counts as every view words them, from its tasks' statuses (`resultCounts`): `2/4 passed · 1 failed · 1
 * skipped` (the failed and skipped parts only when not 0).
 */
export function resultSummary(statuses: readonly string[]): string {
  const n = resultCounts(statuses);
  return [`${n.passed}/${statuses.length} passed`, n.failed ? `${n.failed} failed` : '', n.skipped ? `${n.skipped} skipped` : ''].filter(Boolean).join(' · ');
}

/**
 * The counts of one bar of the dashboard's rounds: `round` null for the run's one bar (each task by its status), or an
 * attempt number (each task's attempt of that number by its verdict; a task with no attempt is counted in round 1
 * by its status, queued until it ends without one (BLOCKED: skipped), and absent after). A task that passed on a
 * retry counts as failed in round 1 and passed in round 2 and on the run's bar; a CANCELLED or BLOCKED one is
 * skipped, never failed.
 */
export function roundCounts(
  tasks: readonly { status: string; attempts: readonly { verdict: string | null }[] }[],
  round: number | null,
): Record<TaskResult, number> {
  if (round === null) return resultCounts(tasks.map((t) => t.status));
  return resultCounts(
    tasks.flatMap((t) => {
      const a = t.attempts[round - 1];
      return a ? [a.verdict ?? 'running'] : round === 1 ? [statusInfo(t.status).final ? t.status : 'queued'] : [];
    }),
  );
}
