/**
 * One reviewer's part of an attempt (run/steps/review.ts appends one per reviewer to the attempt's record) and its
 * projection into an eval row of its own: step `review`, credited to the reviewing engine and model, with the
 * reviewed attempt's number. The work attempt's row (attempt-record.ts evalRow) stays the worker's.
 */
import path from 'node:path';
import type { UsageReport } from '../../../engines/types';
import type { Receipt } from '../process/supervisor';
import { labOf, type EvalRow, type ReviewColumn } from '../store/eval-row';
import { recordFiles, type AttemptRecord } from './attempt-record';
import type { ReviewVerdict } from './review-verdict';

/** One reviewer's review of one attempt. Times epoch ms; cost integer micro-USD, null when unknown. */
export interface ReviewRecord {
  /** 1-based position of the reviewer in the task's `review.engines`. */
  reviewer: number;
  engine: string;
  harness: string;
  /** The model asked for (the entry's, else the engine's default); null when the engine chose. */
  model: string | null;
  startedAt: number;
  endedAt: number;
  receipt: Receipt | null;
  usage: UsageReport | null;
  costMicroUsd: number | null;
  /** The reviewer's valid answer, or null when it gave none (then `error` says why). */
  verdict: ReviewVerdict | null;
  concerns: string[];
  error: string | null;
}

/** A review's files in the attempt's records folder: the prompt and the reviewer's raw log. */
export function reviewFiles(rec: Pick<AttemptRecord, 'dir'>, reviewer: number): { prompt: string; log: string } {
  return { prompt: path.join(rec.dir, `review-${reviewer}.prompt.md`), log: path.join(rec.dir, `review-${reviewer}.log`) };
}

/** `engine/model` (or the engine alone), how reasons and notes name a reviewer. */
export function reviewerName(r: Pick<ReviewRecord, 'engine' | 'model'>): string {
  return r.model ? `${r.engine}/${r.model}` : r.engine;
}

/**
 * The eval row of one review (schemas/eval-row.schema.json): verdict PASS for approve, FAIL for changes and reject,
 * ERROR when the reviewer gave no valid answer; `review` holds the answer; the check's columns are empty (the work
 * row has them) except `sealed`, the commit or tree hash that was reviewed.
 * @throws Error when the attempt is not settled
 */
export function reviewRow(rec: AttemptRecord, r: ReviewRecord): EvalRow {
  if (rec.verdict === null || rec.endedAt === null) throw new Error(`attempt ${rec.attempt} of ${rec.taskKey} is not settled: no review rows yet`);
  const u = r.usage;
  const files = reviewFiles(rec, r.reviewer);
  const review: ReviewColumn = { reviewer: r.reviewer, verdict: r.verdict, concerns: r.concerns };
  return {
    run_id: rec.runId,
    task_key: rec.taskKey,
    spec: rec.spec,
    worker_engine: r.engine,
    verdict: r.verdict === 'approve' ? 'PASS' : r.verdict === null ? 'ERROR' : 'FAIL',
    duration_ms: Math.max(0, r.endedAt - r.startedAt),
    worker_tokens: u && u.tokensIn !== null && u.tokensOut !== null ? u.tokensIn + u.tokensOut : null,
    model: r.model,
    task_type: rec.taskType,
    retry: rec.retry,
    identity: rec.identity,
    notes: r.error ?? (r.concerns.length ? `${r.verdict}: ${r.concerns.join('; ')}` : (r.verdict ?? '')),
    attempt: rec.attempt,
    harness: r.harness,
    lab: labOf(r.model),
    reported_model: u?.reportedModel ?? null,
    access_plan: rec.accessPlan,
    reasoning_effort: null,
    sandbox: rec.sandbox,
    tokens_in: u?.tokensIn ?? null,
    tokens_out: u?.tokensOut ?? null,
    tokens_cached: u?.tokensCached ?? null,
    tokens_reasoning: u?.tokensReasoning ?? null,
    cost_microusd: r.costMicroUsd,
    check_exit_code: null,
    check_output: '',
    worker_exit_code: r.receipt?.exitCode ?? null,
    run_name: rec.runName,
    host: rec.host,
    started_at: new Date(r.startedAt).toISOString(),
    ended_at: new Date(r.endedAt).toISOString(),
    branch: rec.branch,
    commit: null,
    prompt_path: files.prompt,
    worker_log: files.log,
    check_log: recordFiles(rec).check,
    receipt_path: recordFiles(rec).receipt,
    prev_hash: null, // set by appendEvalRow under the log's lock
    sealed: rec.sealed,
    step: 'review',
    group: rec.group,
    candidate: rec.candidate,
    review,
  };
}

/** The reviews that asked for changes or rejected, for the retry's failure text (run/prompt.ts failureText). */
export function reviewConcerns(rec: Pick<AttemptRecord, 'reviews'>): { who: string; verdict: 'changes' | 'reject'; concerns: string[] }[] {
  return (rec.reviews ?? []).flatMap((r) => (r.verdict === 'changes' || r.verdict === 'reject' ? [{ who: reviewerName(r), verdict: r.verdict, concerns: r.concerns }] : []));
}
