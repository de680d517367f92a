/**
 * One attempt of one task: a record, the steps run over it in order by one small loop, then the record settled —
 * verdict, what happens next (decide.ts nextStep), receipt, eval row, summary and state, all projections of the one
 * record (attempt-record.ts).
 */
import { stepNetwork } from '../process/sandbox';
import fs from 'node:fs';
import path from 'node:path';
import { attemptDir, evalLogPath } from '../config/home';
import { shortHost } from '../host/hostname';
import { appendEvalRow } from '../store/eval-log';
import type { EvalRow } from '../store/eval-row';
import { accessPlanOf, reasoningEffortOf } from '../store/model-identity';
import { attemptView, recordFiles, summarize, type AttemptRecord } from './attempt-record';
import { routeColumn } from './route-choice';
import { endedOnItsOwn, nextStep, retryAfterSeconds } from './decide';
import { failureText, retryPrompt } from './prompt';
import { reviewConcerns, reviewRow } from './review-record';
import type { ReviewRecord } from './reader-record';
import { steeringOf } from './steering';
import { Cancelled, type AttemptContext, type AttemptIo, type Step, type TaskRuntime } from './steps/context';
import {
  ATTEMPT_STEPS,
  checkOnCopy,
  statusPending,
  workflowFailedCheck,
  workflowFailureNotes,
  workflowPrompt,
  workflowReceipt,
  workflowRows,
  workflowsAttemptEnd,
  workRow,
} from './workflows';
import { removeStepScratch } from './containment';
import type { QuotaEvent } from '../../../engines/quota-reset';
import { statusInfo, type Verdict } from '../../../schemas/status';
import type { RunSpendState } from '../../../schemas/spend';
import { readLog } from './steps/work';
import { endTask } from './end-task';
import { usageTokens } from './spend';

/** Rate-limited attempts are requeued at most this many times per task, with exponential backoff. */
export const MAX_RATE_LIMIT_REQUEUES = 5;
/** First rate-limit backoff, ms; doubles per rate limit of a task. */
export const RATE_LIMIT_BASE_MS = 2000;

/** When the task runs again (ms from now), or null when it is done; the attempt's cost for the budget. */
export interface AttemptOutcome {
  requeueAfterMs: number | null;
  costMicroUsd: number | null;
  /** The attempt's tokens (in + out) for budget_tokens; null when unknown. */
  tokens: number | null;
  rateLimited: boolean;
  /** The attempt's verdict. */
  verdict: Verdict;
  /**
   * A RATE_LIMITED attempt whose engine exited on its own (a non-zero exit, no signal, not stopped by Verdict) and
   * whose own structured error event named when its quota resets (the engine's quotaReset over the whole log); else null.
   */
  quota: QuotaEvent | null;
}

/**
 * Runs the next attempt of `task` through `steps` and records it: state.json as it goes, then receipt.json, one eval
 * row in runs.jsonl (an unwritable row is reported in recordErrors, never thrown) and the task's summary.
 * Never throws for what a step does: a step's error ends the attempt ERROR with its message, a stop ends it CANCELLED.
 */
export async function runAttempt(ctx: AttemptContext, task: TaskRuntime, steps: readonly Step[] = ATTEMPT_STEPS): Promise<AttemptOutcome> {
  const { opts, runId } = ctx;
  const { spec, engine } = task;
  // Every attempt begun so far has its view in the state (a task rerun through the control channel keeps its earlier ones).
  const n = task.state.attempts.length + 1;
  const dir = attemptDir(opts.home, runId, spec.key, n);
  fs.mkdirSync(dir, { recursive: true });
  const rec = newRecord(ctx, task, n, dir);
  task.reassignedFrom = null;
  const slot = task.state.attempts.push(attemptView(rec)) - 1;
  const sync = () => {
    task.state.attempts[slot] = attemptView(rec);
    void ctx.stateFile.saveTask(task.state);
  };
  task.state.status = 'preparing';
  ctx.emit({ type: 'attempt-started', key: spec.key, attempt: n, engine: task.state.engine, model: task.state.model });
  sync();

  const files = recordFiles(rec);
  // The model's worker steering rules (steering.ts; fail-open) go in front of the first prompt and every retry alike
  // (not the script engine's: its spec is a program, and it runs no model).
  const prompt = steeringOf(ctx, opts.home, (note) => ctx.emit({ type: 'task-note', key: spec.key, note })).prompt(
    rec,
    engine.harness === 'script' ? null : task.state.model,
    task.failure && engine.retryContext === 'prompt' ? (workflowPrompt(task, task.failure) ?? retryPrompt(spec.spec, task.failure)) : spec.spec,
  );
  fs.writeFileSync(files.prompt, prompt);
  const io: AttemptIo = {
    prompt,
    boxed: task.containment === 'bwrap',
    checkOnCopy: checkOnCopy(task),
    workerTail: '',
    sync,
    taskEnv: () => ({
      PORT: String(task.state.port),
      VERDICT_RUN_ID: runId,
      VERDICT_TASK_KEY: spec.key,
      VERDICT_TASK_DIR: task.state.dir,
      VERDICT_ATTEMPT: String(n),
      ...(spec.candidate ? { VERDICT_CANDIDATE: String(spec.candidate) } : {}),
      ...(task.inputsDir ? { VERDICT_INPUTS: task.inputsDir } : {}),
    }),
  };

  for (const step of steps) {
    if (!step.when(rec, task)) continue;
    const startedAt = Date.now();
    let note = '';
    rec.currentStep = step.name;
    // Where the task is: its status and the attempt's phase follow the step (Step.phase, each step's own).
    rec.phase = step.phase;
    task.state.status = rec.phase;
    sync();
    try {
      if (task.abort.signal.aborted) throw new Cancelled();
      const judged = await step.run(ctx, task, rec, io);
      if (judged) {
        rec.verdict = judged.verdict;
        rec.reason = judged.reason;
        note = judged.verdict;
      }
    } catch (e) {
      const stopped = e instanceof Cancelled || task.abort.signal.aborted;
      rec.verdict = stopped ? 'CANCELLED' : 'ERROR';
      rec.reason = stopped ? 'the run was cancelled' : (e as Error).message;
      note = rec.reason;
    }
    rec.steps.push({ step: step.name, startedAt, endedAt: Date.now(), note });
    delete rec.currentStep;
    if (rec.verdict !== null && rec.verdict !== 'PASS') break;
  }
  return settle(ctx, task, rec, io);
}

/**
 * Writes a settled attempt's records: receipt.json (its rows and the status the task takes in it too: an orchestrator
 * killed before they reach the log leaves them for reconcile), its scratch and seal index removed, then the rows
 * appended to the eval log; an unwritable row is said and counted in recordErrors, never thrown.
 */
async function writeRecords(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, rows: EvalRow[], taskStatus: string): Promise<void> {
  const { opts, runId } = ctx;
  const { spec } = task;
  const verdict = rec.verdict;
  const files = recordFiles(rec);
  // The rows go in the receipt too: an orchestrator killed before they reach the log leaves them for reconcile to
  // append; so does the status the task takes (null while a workflow holds it open: a planner whose tasks have still to
  // join the run).
  fs.writeFileSync(
    files.receipt,
    JSON.stringify(
      {
        startedAt: rec.startedAt,
        taskStatus: statusPending(task) ? null : taskStatus,
        worker: rec.worker,
        check: rec.check?.receipt ?? null,
        verdict,
        reason: rec.reason,
        usage: rec.usage,
        sandbox: rec.sandbox,
        seal: rec.seal,
        ...(rec.undelivered ? { undelivered: rec.undelivered } : {}),
        steps: rec.steps,
        ...(rec.reviews ? { reviews: rec.reviews } : {}),
        ...workflowReceipt(rec),
        rows,
      },
      null,
      2,
    ),
  );
  for (const step of ['worker', 'check'] as const) removeStepScratch(opts.home, runId, spec.key, rec.attempt, step);
  // Worktree mode's seal index (kept for deliver); plain mode makes none.
  if (task.links) fs.rmSync(path.join(rec.dir, 'seal.index'), { force: true });

  for (const r of rows) {
    try {
      await appendEvalRow(evalLogPath(opts.home), r);
      ctx.spend.rowWritten();
    } catch (e) {
      // The attempt happened and its receipt is on disk; only the eval row is missing. Say so, loudly, and go on.
      const message = `the ${r.step === 'work' ? 'eval row' : `${r.step} row of ${r.worker_engine}`} of ${spec.key} attempt ${rec.attempt} (${r.verdict}) could not be written: ${(e as Error).message}`;
      ctx.recordErrors.push(message);
      ctx.emit({ type: 'task-note', key: spec.key, note: message });
    }
  }
}

/** A fresh record for attempt `n` of `task` (its records folder `dir`): who, what, where, nothing run yet. */
function newRecord(ctx: AttemptContext, task: TaskRuntime, n: number, dir: string): AttemptRecord {
  const { opts, runId } = ctx;
  const { spec, engine } = task;
  return {
    runId,
    runName: opts.manifest.runName,
    identity: opts.identity,
    host: shortHost(),
    taskKey: spec.key,
    spec: spec.spec,
    // The engine of this attempt (a fallback retry runs on another than the task's first; the runner chose it).
    engine: task.state.engine,
    harness: engine.harness,
    model: task.state.model,
    taskType: spec.taskType,
    reasoningEffort: task.state.engine === spec.engine ? reasoningEffortOf(spec.engineArgs) : null,
    accessPlan: accessPlanOf(ctx.env),
    sandbox: task.containment,
    network: stepNetwork(task.containment === 'bwrap' && ctx.bwrap ? { network: spec.network, ...(ctx.netstack ? { netstack: ctx.netstack } : {}) } : null),
    attempt: n,
    // After a judged attempt, also one before a rerun or resume (which give the task a fresh max_attempts).
    retry: task.used > 0 || task.state.attempts.some((a) => a.verdict !== null && statusInfo(a.verdict).judged),
    branch: task.state.branch,
    dir,
    startedAt: Date.now(),
    phase: 'preparing',
    steps: [],
    workerPid: null,
    workerStartTime: null,
    worker: null,
    usage: null,
    seal: null,
    check: null,
    verdict: null,
    reason: '',
    endedAt: null,
    costMicroUsd: null,
    commit: null,
    sealed: null,
    rowStep: 'work',
    group: task.state.group ?? null,
    candidate: task.state.candidate ?? null,
    ...(opts.forced ? { forced: true as const } : {}),
    ...(task.reassignedFrom ? { reassignedFrom: task.reassignedFrom } : {}),
    ...(task.spec.route && task.routed?.attempt === n ? { route: routeColumn(task.routed, task.spec.route) } : {}),
  };
}

/** Ends the attempt: decides what is next, writes the receipt and the eval row, updates summary and state. */
async function settle(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, io: AttemptIo): Promise<AttemptOutcome> {
  const { opts } = ctx;
  const { spec } = task;
  // A record the steps left without a verdict (no step judged it) is a bug, not a PASS.
  if (rec.verdict === null) {
    rec.verdict = 'ERROR';
    rec.reason = 'internal error: no step judged this attempt';
  }
  // A task stopped on its own (a stop command, a best-of-N candidate beaten by another) says why, in every record.
  if (rec.verdict === 'CANCELLED' && typeof task.abort.signal.reason === 'string') rec.reason = task.abort.signal.reason;
  const verdict = rec.verdict;
  rec.endedAt = Date.now();
  rec.phase = 'done';
  // Stopped because an input it reads is rerun (TaskRuntime.restart): not counted, no retry; the runner queues it again.
  const restart = task.restart ?? null;
  // A workflow may ask one more attempt after a PASS without spending the retry budget (Workflow.onAttemptEnd); a
  // stopped or draining run, or a restart, asks none.
  const stopped = task.abort.signal.aborted;
  const again = workflowsAttemptEnd(ctx, task, rec, { goOn: restart === null && !stopped && !ctx.stateFile.state.draining, stopped });
  const revise = again !== null;
  const next = revise ? ({ kind: 'retry' } as const) : nextOf(ctx, task, rec, io, verdict);
  if (restart !== null) {
    // nothing spent: the attempt judged inputs that were replaced under it
  } else if (next.kind === 'requeue') {
    if (!next.lostWorker) task.rateLimited++;
  } else if (!revise) task.used++;
  if (again !== null) {
    task.failure = again;
  } else if (statusInfo(verdict).retryable) {
    task.failure = failureOf(task, rec, io, verdict);
  }
  const row = workRow(rec);
  // The work row, then one row per review of this attempt (step review, credited to it), then the workflows' rows.
  const rows = [row, ...(rec.reviews ?? []).map((review) => reviewRow(rec, review)), ...workflowRows(rec)];
  const willRetry = restart !== null || next.kind !== 'done';
  const taskStatus = restart !== null ? 'queued' : willRetry ? 'retry_queued' : verdict;
  await writeRecords(ctx, task, rec, rows, taskStatus);

  steeringOf(ctx, opts.home, (note) => ctx.emit({ type: 'task-note', key: spec.key, note })).observe(rec, steeringSample(row));
  task.records.push(rec);
  // The task's last attempt: it ends with its verdict; else it waits for the next (or for its inputs again).
  if (statusInfo(taskStatus).final) endTask(ctx, task, verdict, '', { by: 'attempt', save: false });
  else {
    Object.assign(task.summary, summarize(task.records));
    task.state.status = taskStatus;
  }
  ctx.emit({
    type: 'attempt-finished',
    key: spec.key,
    attempt: rec.attempt,
    verdict,
    reason: rec.reason,
    durationMs: row.duration_ms,
    tokens: row.worker_tokens,
    willRetry,
    costMicroUsd: rec.costMicroUsd,
    ...budgeted(ctx.spend.snapshot()),
  });
  io.sync();
  // The readers' costs (reviewers, a workflow's critics) were settled against the budget as each ended (steps/reader.ts
  // runReader), but for the reviewers of a pool attempt, which ran on its worker: theirs settle with the attempt's.
  const quota = quotaOf(task, rec);
  const outcome = { ...settledSpend(rec), rateLimited: verdict === 'RATE_LIMITED', verdict, quota };
  if (restart !== null) return { ...outcome, requeueAfterMs: null };
  if (next.kind === 'requeue') return { ...outcome, requeueAfterMs: next.afterMs };
  if (next.kind === 'retry') return { ...outcome, requeueAfterMs: 0 };
  return { ...outcome, requeueAfterMs: null };
}

/**
 * What an attempt settles against the budgets (run/spend.ts settle): its cost (micro-USD) and tokens (in + out), each
 * null when unknown (then it is charged the larger of its reservation and what it reported while running). A pool
 * attempt's reviewers ran on its worker, outside this run's readers: their known costs and tokens are added to a
 * known figure of the attempt's (an unknown one stays unknown: what they streamed is in what it reported).
 */
function settledSpend(rec: AttemptRecord): { costMicroUsd: number | null; tokens: number | null } {
  const cost = rec.costMicroUsd;
  const tokens = usageTokens(rec.usage);
  if (!rec.pool || !rec.reviews?.length) return { costMicroUsd: cost, tokens };
  const sum = (of: (r: ReviewRecord) => number | null) => rec.reviews!.reduce((n, r) => n + (of(r) ?? 0), 0);
  return {
    costMicroUsd: cost === null ? null : cost + sum((r) => r.costMicroUsd),
    tokens: tokens === null ? null : tokens + sum((r) => usageTokens(r.usage)),
  };
}

/**
 * The failure text the next attempt's prompt gets after a retryable verdict: the check's output, or a workflow's own
 * run of the check when that is what failed (Workflow.failedCheck), or the suite's when it failed after the check
 * passed (run/steps/suite.ts); with the worker's tail, the reason, the review's concerns and the workflows' notes.
 */
function failureOf(task: TaskRuntime, rec: AttemptRecord, io: AttemptIo, verdict: AttemptRecord['verdict'] & string): string {
  // A workflow's own run of the check may be what failed the attempt (Workflow.failedCheck): its output is then the
  // one to show. So is a suite that failed after the check passed (run/steps/suite.ts).
  const other = verdict === 'FAIL' ? workflowFailedCheck(rec) : null;
  const suiteFailed = verdict === 'FAIL' && rec.suite !== undefined && !rec.suite.passed;
  const shown = other ?? (suiteFailed ? rec.suite : rec.check);
  return (
    failureText({
      attempt: rec.attempt,
      verdict,
      check: task.spec.check,
      checkExitCode: shown?.exitCode ?? null,
      checkOutput: shown?.output ?? '',
      workerTail: io.workerTail,
      reason: rec.reason,
      review: reviewConcerns(rec),
      ...(other ? { redFiles: other.files } : {}),
      ...(suiteFailed && rec.suite ? { suite: rec.suite.command } : {}),
    }) + workflowFailureNotes(task)
  );
}

/** What the steering sees of an attempt: its eval row's identity, engine, verdict, duration, tokens and check excerpt. */
function steeringSample(row: EvalRow): Parameters<ReturnType<typeof steeringOf>['observe']>[1] {
  return {
    run_id: row.run_id,
    run_name: row.run_name,
    task_key: row.task_key,
    task_type: row.task_type,
    engine: row.worker_engine,
    model: row.model,
    attempt: row.attempt,
    retry: row.retry,
    verdict: row.verdict,
    duration_ms: row.duration_ms,
    worker_tokens: row.worker_tokens,
    check_excerpt: row.check_output.slice(0, 500),
  };
}

/**
 * When the engine's quota resets, for a RATE_LIMITED attempt: read only from the engine's own event in a log an engine
 * that ended on its own wrote (one killed by a signal says nothing: the worker can kill its own engine right after
 * writing a forged event into its output); else null.
 */
function quotaOf(task: TaskRuntime, rec: AttemptRecord): ReturnType<NonNullable<TaskRuntime['engine']['quotaReset']>> | null {
  return rec.verdict === 'RATE_LIMITED' && rec.worker !== null && endedOnItsOwn(rec.worker)
    ? (task.engine.quotaReset?.(readLog(recordFiles(rec).worker), Date.now()) ?? null)
    : null;
}

/**
 * What follows the attempt by the retry table (run/decide.ts nextStep): its verdict, the retries and rate-limit
 * requeues used, whether the task was stopped or its worker lost, the engine's retry-after and one random draw.
 */
function nextOf(
  ctx: AttemptContext,
  task: TaskRuntime,
  rec: AttemptRecord,
  io: AttemptIo,
  verdict: Parameters<typeof nextStep>[0]['verdict'],
): ReturnType<typeof nextStep> {
  return nextStep(
    {
      verdict,
      used: task.used,
      rateLimited: task.rateLimited,
      stopped: task.abort.signal.aborted,
      ...(rec.lostWorker ? { lostWorker: { lostRequeues: task.records.filter((r) => r.lostWorker).length } } : {}),
    },
    {
      maxAttempts: task.spec.maxAttempts,
      maxRateLimitRequeues: MAX_RATE_LIMIT_REQUEUES,
      rateLimitBaseMs: ctx.opts.rateLimitBaseMs ?? RATE_LIMIT_BASE_MS,
      retryAfterS: retryAfterSeconds(io.workerTail),
      random: Math.random(),
    },
  );
}

/** `{spend}` when the run has a budget (budget_usd or budget_tokens), for the attempt-finished event; else nothing. */
function budgeted(spend: RunSpendState): { spend?: RunSpendState } {
  return spend.budgetMicroUsd !== null || (spend.tokens?.budget ?? null) !== null ? { spend } : {};
}
