/**
 * The attempt's decisions as pure functions (no I/O, no clock, no randomness of their own): what the verdict is,
 * and what happens to the task next. The runner and the tests call the same functions; the status table they lean on
 * is schemas/status.ts.
 */
import { STATUS, type Verdict } from '../../../schemas/status';
import type { EngineErrorClass } from '../../../engines/types';
import { readerEnd } from './reader-end';

/** What judge() needs of the worker's receipt (core/process/supervisor.ts Receipt). */
export interface WorkerOutcome {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  stalled: boolean;
  stoppedAfterFinal: boolean;
  spawnError: string | null;
  /** Its memory cap (core/process/memory-cap.ts MemoryCapRecord): `outOfMemory` when it was killed at its limit. */
  memory?: { limitMb: number; outOfMemory?: boolean };
}

/**
 * Whether the worker's engine ended on its own with a failure: an exit code from 1 to 127, no signal, and not stopped
 * by Verdict (timeout, watchdog, final-event grace, cancel). Only then is its log's final error event the engine's last
 * word (a worker can write a forged event into its engine's output and kill it; the engine then dies by a signal, which
 * bubblewrap and a shell report as exit code 128 + the signal's number).
 */
export function endedOnItsOwn(worker: WorkerOutcome): boolean {
  return (
    worker.exitCode !== null &&
    worker.exitCode > 0 &&
    worker.exitCode < 128 &&
    worker.signal === null &&
    !worker.timedOut &&
    !worker.stalled &&
    !worker.cancelled &&
    !worker.stoppedAfterFinal &&
    worker.spawnError === null
  );
}

/** What judge() needs of the check (core/run/check.ts CheckResult), or null when no check ran. */
export interface CheckOutcome {
  passed: boolean;
  cancelled: boolean;
  /** One line: why it did not pass (empty on a pass). */
  reason: string;
}

/** The limits judge() names in its reasons, ms. */
export interface JudgeLimits {
  timeoutMs: number;
  watchdogMs: number | null;
  finalGraceMs: number;
}

/** A verdict and the one line that says why (empty for a plain PASS). */
export interface Judgement {
  verdict: Verdict;
  reason: string;
}

const seconds = (ms: number): number => Math.round(ms / 1000);

/**
 * The verdict of the work step alone, or null when the check must decide: a worker that was cancelled, could not
 * start, ran out of memory (FAIL: retried with that as its failure), stalled or ran out of time is judged without a
 * check (its tree is not sealed or checked).
 */
export function judgeWork(worker: WorkerOutcome, limits: JudgeLimits): Judgement | null {
  if (worker.cancelled) return { verdict: 'CANCELLED', reason: 'the run was cancelled' };
  if (worker.spawnError) return { verdict: 'ERROR', reason: `the worker could not start: ${worker.spawnError}` };
  if (worker.memory?.outOfMemory)
    return { verdict: 'FAIL', reason: `the worker ran out of memory at ${worker.memory.limitMb} MB (the task's memory_mb) and was killed` };
  if (worker.stalled) return { verdict: 'STALLED', reason: `the worker printed nothing for ${seconds(limits.watchdogMs ?? 0)} s and was stopped` };
  if (worker.timedOut) return { verdict: 'TIMEOUT', reason: `the worker ran out of time after ${seconds(limits.timeoutMs)} s and was stopped` };
  return null;
}

/**
 * The attempt's verdict. Only the check decides PASS: the worker's exit code never does (one that exits 1 having done
 * the work passes; one that exits 0 having done nothing fails). A failed check after the engine said it was
 * rate-limited is RATE_LIMITED (requeued, not a retry). `errorClass` is the engine's reading of a non-zero exit, or of
 * an exit 0 after the engine's own final report said it failed (engines/*: classifyError); null when it exited 0
 * reporting no failure, was stopped after its final event, or said nothing recognisable.
 * `reader`: the task reads other tasks' work (`inputs`: council reviewers and chair, validators) and runs their code;
 * a passed check on what it wrote counts only when it ended on its own (run/reader-end.ts), else ERROR — that code
 * could have written the file and killed the engine.
 */
export function judge(worker: WorkerOutcome, check: CheckOutcome | null, errorClass: EngineErrorClass | null, limits: JudgeLimits, reader = false): Judgement {
  const early = judgeWork(worker, limits);
  if (early) return early;
  if (!check) return { verdict: 'ERROR', reason: 'no check ran' };
  if (check.cancelled) return { verdict: 'CANCELLED', reason: 'the run was cancelled' };
  const readerProblem = reader && check.passed ? readerEnd(worker, "the worker (it reads other tasks' work: inputs)", limits, errorClass) : null;
  if (readerProblem) return { verdict: 'ERROR', reason: `${readerProblem}; the check passed on what it left` };
  const exitNote = worker.stoppedAfterFinal
    ? `the engine printed its final event but kept running; it was stopped after ${seconds(limits.finalGraceMs)} s`
    : worker.exitCode !== 0
      ? `the worker exited ${worker.exitCode ?? worker.signal}`
      : '';
  if (check.passed) return { verdict: 'PASS', reason: exitNote ? `${exitNote}, but the check passed` : '' };
  if (errorClass === 'rate_limit') return { verdict: 'RATE_LIMITED', reason: `the engine was rate-limited (${check.reason})` };
  const engineNote = exitNote || (errorClass ? 'the engine reported an error' : '');
  return { verdict: 'FAIL', reason: check.reason + (engineNote ? `; ${engineNote}${errorClass ? ` (${errorClass})` : ''}` : '') };
}

/** What a task has been through before the attempt just judged. */
export interface TaskHistory {
  /** The verdict of the attempt just judged. */
  verdict: Verdict;
  /** Earlier attempts that counted against max_attempts (rate limits that were requeued do not). */
  used: number;
  /** Earlier requeues after a rate limit. */
  rateLimited: number;
  /** The task or the run was stopped. */
  stopped: boolean;
  /**
   * The attempt just judged was INTERRUPTED because the pool worker running it was lost (core/pool: its heartbeat
   * expired); `lostRequeues` counts the earlier such requeues of the task. Absent on a local run.
   */
  lostWorker?: { lostRequeues: number };
}

/** The rules nextStep() applies. */
export interface RetryPolicy {
  maxAttempts: number;
  /** Requeues after rate limits allowed per task. */
  maxRateLimitRequeues: number;
  /** First rate-limit backoff, ms; doubles per rate limit of the task. */
  rateLimitBaseMs: number;
  /** A Retry-After the engine printed, seconds (RFC 9110 §10.2.3), or null. */
  retryAfterS: number | null;
  /** A number in [0, 1) for the jitter (Math.random in the runner; fixed in tests). */
  random: number;
  /** Requeues allowed per task after a lost pool worker (default MAX_LOST_WORKER_REQUEUES). */
  maxLostWorkerRequeues?: number;
}

/** A task whose pool worker was lost is run again at most this many times without using an attempt. */
export const MAX_LOST_WORKER_REQUEUES = 3;

/**
 * What happens to the task next. `requeue` does not use an attempt (the caller counts a rate limit instead); `retry`
 * and `done` do.
 */
export type NextStep = { kind: 'retry' } | { kind: 'requeue'; afterMs: number; lostWorker?: true } | { kind: 'done' };

/**
 * After an attempt: nothing more once the task is stopped; requeue a rate-limited task while requeues remain, after
 * an exponential backoff (×2 per rate limit of this task) with full jitter that never undercuts a Retry-After (of at
 * most MAX_RETRY_AFTER_S); retry a retryable verdict (FAIL, TIMEOUT, STALLED: schemas/status.ts) while attempts
 * remain; else done.
 */
export function nextStep(history: TaskHistory, policy: RetryPolicy): NextStep {
  if (history.stopped) return { kind: 'done' };
  // A lost pool worker says nothing of the work: the attempt runs again elsewhere, a bounded number of times (a task
  // that kills every worker it lands on must end).
  if (history.verdict === 'INTERRUPTED' && history.lostWorker && history.lostWorker.lostRequeues < (policy.maxLostWorkerRequeues ?? MAX_LOST_WORKER_REQUEUES)) {
    return { kind: 'requeue', afterMs: 0, lostWorker: true };
  }
  const info = STATUS[history.verdict];
  if (info.requeued && history.rateLimited < policy.maxRateLimitRequeues) {
    const exp = policy.rateLimitBaseMs * 2 ** history.rateLimited;
    const backoff = exp + Math.floor(policy.random * exp);
    return {
      kind: 'requeue',
      afterMs: policy.retryAfterS === null ? backoff : Math.max(backoff, Math.ceil(Math.min(policy.retryAfterS, MAX_RETRY_AFTER_S) * 1000)),
    };
  }
  if (info.retryable && history.used + 1 < policy.maxAttempts) return { kind: 'retry' };
  return { kind: 'done' };
}

/**
 * The longest Retry-After a requeue waits for, s. The hint is read from anywhere in the log's tail, where a worker can
 * print one of its own (`retry-after: 2000000` would hold the task, and the run, for 23 days); a usage limit that
 * really lasts longer is a quota wait, read from the engine's own error texts (run/quota-wait.ts).
 */
export const MAX_RETRY_AFTER_S = 3600;

/** The last Retry-After an engine printed (`retry-after: 7`, `"retry_after": 2.5`), seconds, or null. */
export function retryAfterSeconds(logTail: string): number | null {
  const hinted = [...logTail.matchAll(/retry[-_ ]after["'\s:=]+(\d+(?:\.\d+)?)/gi)].pop()?.[1];
  return hinted === undefined ? null : Number(hinted);
}

/**
 * The engine and model of attempt `n` (1-based, counting the attempts that count against max_attempts) of a task:
 * attempt 1 runs on the task's own engine and model, attempt 2 on the first `fallback` entry, attempt 3 on the
 * second, and so on; past the end of the list the last entry goes on (the chain escalates, so its last engine is the
 * one to keep trying). A fallback entry without a model runs on that engine's default (`defaultModel` of it).
 */
export function attemptEngine(
  n: number,
  primary: { engine: string; model: string | null },
  fallback: readonly { engine: string; model: string | null }[],
  defaultModel: (engine: string) => string | null,
): { engine: string; model: string | null } {
  const choice = n <= 1 || !fallback.length ? primary : fallback[Math.min(n - 2, fallback.length - 1)]!;
  return { engine: choice.engine, model: choice.model ?? defaultModel(choice.engine) };
}

/** How a task's prerequisites stand: `wait` while one is not final, `blocked` by the first that did not PASS, else `ready`. */
export type GraphGate = { kind: 'ready' } | { kind: 'wait' } | { kind: 'blocked'; by: string; status: string; reason: string };

/**
 * Whether a task may start, from its prerequisites' statuses in `after` order (pure; the status table decides what
 * is final). A prerequisite that ended in anything but PASS blocks it, named with its verdict in the reason.
 */
export function graphGate(prerequisites: readonly { key: string; status: string; where?: string }[]): GraphGate {
  for (const p of prerequisites) {
    if (p.status === 'PASS') continue;
    if (!STATUS_FINAL(p.status)) continue;
    return {
      kind: 'blocked',
      by: p.key,
      status: p.status,
      reason: `prerequisite ${p.key}${p.where ? ` (${p.where})` : ''} ended ${p.status}, not PASS; this task did not start`,
    };
  }
  return prerequisites.every((p) => p.status === 'PASS') ? { kind: 'ready' } : { kind: 'wait' };
}

const STATUS_FINAL = (status: string): boolean => (STATUS as Record<string, { final: boolean }>)[status]?.final ?? false;
