/**
 * One ranking reviewer's part of a ranked best-of-N decision (run/workflows/best-of-n/ranking.ts runs it) and its projection into
 * an eval row of its own: step `rank`, on the group's key, credited to the reviewing engine and model, `attempt` the
 * group's ranking round. Pure.
 */
import path from 'node:path';
import type { Containment } from '../../../process/sandbox';
import type { EvalRow } from '../../../store/eval-row';
import { rowBase } from '../../attempt-record';
import { readerColumns, readerName, type ReaderRun } from '../../reader-record';

/** One ranking reviewer's ranking. Times epoch ms; cost integer micro-USD, null when unknown. */
export interface RankRecord extends ReaderRun {
  /** 1-based position of the reviewer in the task's `rank.engines`. */
  reviewer: number;
  /** The valid ranking's scores by neutral name, or null (then `error` says why). */
  scores: Record<string, number> | null;
  reasons: Record<string, string>;
  error: string | null;
  /** The reviewer was stopped (the task or the run was): its row is CANCELLED. */
  cancelled: boolean;
}

/** The group's records of ranking round `round`: `<runs>/<run>/tasks/<group>/rank-<round>/`. */
export function rankDir(taskRecords: string, round: number): string {
  return path.join(taskRecords, `rank-${round}`);
}

/** A ranking reviewer's files in its round's folder: the prompt and its raw log. */
export function rankFiles(dir: string, reviewer: number): { prompt: string; log: string; receipt: string } {
  return { prompt: path.join(dir, `reviewer-${reviewer}.prompt.md`), log: path.join(dir, `reviewer-${reviewer}.log`), receipt: path.join(dir, 'receipt.json') };
}

/** `engine/model` (or the engine alone), how reasons and notes name a ranking reviewer. */
export const rankerName = readerName;

/** The facts of the run and the group a rank row repeats. */
export interface RankRowContext {
  runId: string;
  runName: string;
  identity: string;
  host: string;
  /** The group's key and spec, task type and branch. */
  taskKey: string;
  spec: string;
  taskType: string | null;
  branch: string | null;
  sandbox: Containment;
  /** The ranking round (1, then 2… when a resumed run ranks the group again). */
  round: number;
  /** The round's records folder (rankDir). */
  dir: string;
  /** Each neutral name shown and the candidate number it stood for. */
  names: Record<string, number>;
}

/**
 * The eval row of one ranking (schemas/eval-row.schema.json): verdict PASS for a valid ranking, CANCELLED when the
 * reviewer was stopped, ERROR otherwise; `rank` holds the names and scores; the check's columns are empty.
 */
export function rankRow(c: RankRowContext, r: RankRecord): EvalRow {
  const files = rankFiles(c.dir, r.reviewer);
  const scored = r.scores
    ? Object.keys(c.names)
        .map((n) => `${n} (candidate ${c.names[n]}) ${r.scores?.[n]}`)
        .join(', ')
    : '';
  return {
    ...readerColumns(r),
    // The group's own facts in place of an attempt's: its round as the attempt, no candidate, the group as its group.
    ...rowBase({ ...c, retry: false, attempt: c.round, accessPlan: null, group: c.taskKey, candidate: null }),
    verdict: r.scores ? 'PASS' : r.cancelled ? 'CANCELLED' : 'ERROR',
    notes: r.error ?? `scores: ${scored}`,
    prompt_path: files.prompt,
    worker_log: files.log,
    check_log: '',
    receipt_path: files.receipt,
    sealed: null,
    step: 'rank',
    rank: { reviewer: r.reviewer, names: c.names, scores: r.scores, ...(Object.keys(r.reasons).length ? { reasons: r.reasons } : {}) },
  };
}
