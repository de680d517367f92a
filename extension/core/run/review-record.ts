/**
 * One reviewer's part of an attempt (run/steps/review.ts appends one per reviewer to the attempt's record) and its
 * projection into an eval row of its own: step `review`, credited to the reviewing engine and model, with the
 * reviewed attempt's number. The work attempt's row (attempt-record.ts evalRow) stays the worker's.
 */
import path from 'node:path';
import type { EvalRow, ReviewColumn } from '../store/eval-row';
import { recordFiles, rowBase, type AttemptRecord } from './attempt-record';
import { readerColumns, readerName, type ReviewRecord } from './reader-record';

export type { ReviewRecord } from './reader-record';

/** A review's files in the attempt's records folder: the prompt and the reviewer's raw log. */
export function reviewFiles(rec: Pick<AttemptRecord, 'dir'>, reviewer: number): { prompt: string; log: string } {
  return { prompt: path.join(rec.dir, `review-${reviewer}.prompt.md`), log: path.join(rec.dir, `review-${reviewer}.log`) };
}

/** `engine/model` (or the engine alone), how reasons and notes name a reviewer. */
export const reviewerName = readerName;

/**
 * The eval row of one review (schemas/eval-row.schema.json): verdict PASS for approve, FAIL for changes and reject,
 * ERROR when the reviewer gave no valid answer, CANCELLED when it was stopped while it ran; `review` holds the answer; the check's columns are empty (the work
 * row has them) except `sealed`, the commit or tree hash that was reviewed.
 * @throws Error when the attempt is not settled
 */
export function reviewRow(rec: AttemptRecord, r: ReviewRecord): EvalRow {
  if (rec.verdict === null || rec.endedAt === null) throw new Error(`attempt ${rec.attempt} of ${rec.taskKey} is not settled: no review rows yet`);
  const files = reviewFiles(rec, r.reviewer);
  const review: ReviewColumn = { reviewer: r.reviewer, verdict: r.verdict, concerns: r.concerns };
  return {
    ...readerColumns(r),
    ...rowBase(rec),
    verdict: r.cancelled ? 'CANCELLED' : r.verdict === 'approve' ? 'PASS' : r.verdict === null ? 'ERROR' : 'FAIL',
    notes: r.error ?? (r.concerns.length ? `${r.verdict}: ${r.concerns.join('; ')}` : (r.verdict ?? '')),
    prompt_path: files.prompt,
    worker_log: files.log,
    check_log: recordFiles(rec).check,
    receipt_path: recordFiles(rec).receipt,
    sealed: rec.sealed,
    step: 'review',
    review,
  };
}

/** The reviews that asked for changes or rejected, for the retry's failure text (run/prompt.ts failureText). */
export function reviewConcerns(rec: Pick<AttemptRecord, 'reviews'>): { who: string; verdict: 'changes' | 'reject'; concerns: string[] }[] {
  return (rec.reviews ?? []).flatMap((r) =>
    r.verdict === 'changes' || r.verdict === 'reject' ? [{ who: reviewerName(r), verdict: r.verdict, concerns: r.concerns }] : [],
  );
}
