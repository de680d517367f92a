/**
 * What every read-only engine run records — a reviewer (review-record.ts), a critic (workflows/critique/record.ts) and a ranking
 * reviewer (workflows/best-of-n/rank-record.ts) — and the eval-row columns those rows fill the same way: the engine, model and
 * harness credited, times, tokens, cost and the engine's exit code; the check's columns are empty (the work row has
 * them). Pure.
 */
import type { UsageReport } from '../../../engines/types';
import type { Receipt } from '../process/supervisor';
import { labOf, type EvalRow } from '../store/eval-row';
import type { ReviewVerdict } from './review-verdict';

/** One read-only engine run. Times epoch ms; cost integer micro-USD, null when unknown. */
export interface ReaderRun {
  engine: string;
  harness: string;
  /** The model asked for (the entry's, else the engine's default); null when the engine chose. */
  model: string | null;
  startedAt: number;
  endedAt: number;
  receipt: Receipt | null;
  usage: UsageReport | null;
  costMicroUsd: number | null;
  /** `subscription`: its engine is of a subscription login (cost null, counted in tokens); absent: billed per token. */
  billing?: 'subscription';
}

/** One reviewer's review of one attempt. Times epoch ms; cost integer micro-USD, null when unknown. */
export interface ReviewRecord extends ReaderRun {
  /** 1-based position of the reviewer in the task's `review.engines`. */
  reviewer: number;
  /** The reviewer's valid answer, or null when it gave none (then `error` says why). */
  verdict: ReviewVerdict | null;
  concerns: string[];
  error: string | null;
  /** True when it was stopped while it ran (a stop, the spend past a budget): its row is CANCELLED; absent: it was not. */
  cancelled?: boolean;
}

/** `engine/model` (or the engine alone), how reasons and notes name a reviewer, critic or ranking reviewer. */
export function readerName(r: Pick<ReaderRun, 'engine' | 'model'>): string {
  return r.model ? `${r.engine}/${r.model}` : r.engine;
}

/** The eval-row columns a reader's row fills from its run (schemas/eval-row.schema.json); `prev_hash` is null until appendEvalRow sets it under the log's lock. */
export type ReaderColumns = Pick<
  EvalRow,
  | 'worker_engine'
  | 'duration_ms'
  | 'worker_tokens'
  | 'model'
  | 'harness'
  | 'lab'
  | 'reported_model'
  | 'reasoning_effort'
  | 'tokens_in'
  | 'tokens_out'
  | 'tokens_cached'
  | 'tokens_reasoning'
  | 'cost_microusd'
  | 'check_exit_code'
  | 'check_output'
  | 'worker_exit_code'
  | 'started_at'
  | 'ended_at'
  | 'commit'
  | 'prev_hash'
  | 'tokens_cache_write'
  | 'billing'
>;

/** {@link ReaderColumns} of one reader's run: credited to its engine and model; duration ms; tokens in + out when both are known. */
export function readerColumns(r: ReaderRun): ReaderColumns {
  const u = r.usage;
  return {
    worker_engine: r.engine,
    duration_ms: Math.max(0, r.endedAt - r.startedAt),
    worker_tokens: u && u.tokensIn !== null && u.tokensOut !== null ? u.tokensIn + u.tokensOut : null,
    model: r.model,
    harness: r.harness,
    lab: labOf(r.model),
    reported_model: u?.reportedModel ?? null,
    reasoning_effort: null,
    tokens_in: u?.tokensIn ?? null,
    tokens_out: u?.tokensOut ?? null,
    tokens_cached: u?.tokensCached ?? null,
    tokens_reasoning: u?.tokensReasoning ?? null,
    ...(u && u.tokensCacheWrite !== null ? { tokens_cache_write: u.tokensCacheWrite } : {}),
    ...(r.billing ? { billing: r.billing } : {}),
    cost_microusd: r.costMicroUsd,
    check_exit_code: null,
    check_output: '',
    worker_exit_code: r.receipt?.exitCode ?? null,
    started_at: new Date(r.startedAt).toISOString(),
    ended_at: new Date(r.endedAt).toISOString(),
    commit: null,
    prev_hash: null,
  };
}
