/**
 * What the critique workflow keeps on an attempt (CritiqueAttempt, the record's `workflows.critique`): one critic's
 * part of it (run/workflows/critique/step.ts appends one per critic), the loop's report and the revision it asks; and
 * a critic's projection into an eval row of its own: step `critique`, credited to the critic's engine and model, with
 * the criticised attempt's number. The work attempt's row (attempt-record.ts evalRow) stays the worker's.
 */
import path from 'node:path';
import type { CritiqueColumn, EvalRow } from '../../../store/eval-row';
import { recordFiles, rowBase, type AttemptRecord } from '../../attempt-record';
import { readerColumns, readerName, type ReaderRun } from '../../reader-record';
import type { CheckedCriticism } from './criticism';

/** One critic's criticism of one proposal. Times epoch ms; cost integer micro-USD, null when unknown. */
export interface CritiqueRecord extends ReaderRun {
  /** 1-based position of the critic in the task's `critique.critics`. */
  critic: number;
  /** The loop's round (1-based). */
  round: number;
  /** Its criticisms, each checked (verified or dropped, with the evidence or why). */
  criticisms: CheckedCriticism[];
  /** Why the critic gave no valid answer; null when it gave one. */
  error: string | null;
  /** True when it was stopped while it ran (a stop, the spend past a budget): its row is CANCELLED; absent: it was not. */
  cancelled?: boolean;
}

/**
 * What the critique workflow keeps on an attempt (attempt-record.ts `workflows.critique`, declared here so the core
 * record names no workflow). Its fields keep the names they had on the record, so the record a pool worker sends
 * (attempt-record.ts flatRecord) is as it was.
 */
export interface CritiqueAttempt {
  /** The critics' criticisms of this attempt (step `critique`, step.ts), one per critic that ran; absent: none. */
  critiques?: CritiqueRecord[];
  /** The critique loop's report once a round ran on this attempt (named in its rows); absent otherwise. */
  critiqueReport?: string;
  /**
   * Set by step `critique` when the loop asks a revision: the text the next attempt is handed. The attempt stays PASS
   * (its check passed); settle queues the revision without spending the retry budget.
   */
  revision?: string;
}

declare module '../../attempt-record' {
  interface WorkflowRecords {
    /** The critique workflow's (run/workflows/critique/record.ts). */
    critique?: CritiqueAttempt;
  }
}

/** The critique workflow's entry of `rec`, to read (empty when it has none). */
export function critiqueOf(rec: Pick<AttemptRecord, 'workflows'>): Readonly<CritiqueAttempt> {
  return rec.workflows?.critique ?? {};
}

/** The critique workflow's entry of `rec`, to write (made when it has none). */
export function keptCritique(rec: AttemptRecord): CritiqueAttempt {
  const workflows = (rec.workflows ??= {});
  return (workflows.critique ??= {});
}

/**
 * A critic's files in the attempt's records folder: the prompt, its raw log, the log of criticism `i`'s command on the
 * proposal and, when it ran there, on the empty control tree (run/workflows/critique/command.ts).
 */
export function critiqueFiles(
  rec: Pick<AttemptRecord, 'dir'>,
  critic: number,
): { prompt: string; log: string; command: (i: number) => string; control: (i: number) => string } {
  return {
    prompt: path.join(rec.dir, `critique-${critic}.prompt.md`),
    log: path.join(rec.dir, `critique-${critic}.log`),
    command: (i) => path.join(rec.dir, `critique-${critic}.command-${i}.log`),
    control: (i) => path.join(rec.dir, `critique-${critic}.command-${i}.control.log`),
  };
}

/** `engine/model` (or the engine alone), how reasons and notes name a critic. */
export const criticName = readerName;

/**
 * The eval row of one critic's answer (schemas/eval-row.schema.json): verdict CANCELLED when it was stopped while it ran
 * (with what it spent until then), ERROR when it gave no valid answer, FAIL when at least one of its criticisms pointed
 * at nothing checkable (dropped), PASS otherwise (every criticism verified, or none made); `critique` holds them; the check's columns are empty except `sealed`, what was criticised.
 * @throws Error when the attempt is not settled
 */
export function critiqueRow(rec: AttemptRecord, r: CritiqueRecord): EvalRow {
  if (rec.verdict === null || rec.endedAt === null) throw new Error(`attempt ${rec.attempt} of ${rec.taskKey} is not settled: no critique rows yet`);
  const files = critiqueFiles(rec, r.critic);
  const verified = r.criticisms.filter((c) => c.verified).length;
  const dropped = r.criticisms.length - verified;
  const critique: CritiqueColumn = {
    critic: r.critic,
    round: r.round,
    verified,
    dropped,
    criticisms: r.criticisms.map((c) => ({
      ...('command' in c ? { command: c.command } : { file: c.file, line: c.line }),
      claim: c.claim,
      verified: c.verified,
      evidence: c.evidence,
    })),
  };
  return {
    ...readerColumns(r),
    ...rowBase(rec),
    verdict: r.cancelled ? 'CANCELLED' : r.error !== null ? 'ERROR' : dropped > 0 ? 'FAIL' : 'PASS',
    notes: r.error ?? `round ${r.round}: ${verified} verified, ${dropped} dropped (pointed at nothing checkable)`,
    prompt_path: files.prompt,
    worker_log: files.log,
    check_log: recordFiles(rec).check,
    receipt_path: recordFiles(rec).receipt,
    sealed: rec.sealed,
    step: 'critique',
    critique,
    ...reportColumn(rec),
  };
}

/** The work and critique rows' `critique_report`: the loop's report, once a round ran on the attempt; none otherwise. */
export function reportColumn(rec: Pick<AttemptRecord, 'workflows'>): Pick<EvalRow, 'critique_report'> {
  const report = critiqueOf(rec).critiqueReport;
  return report ? { critique_report: report } : {};
}
