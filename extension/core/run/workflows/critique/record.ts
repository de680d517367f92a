/**
 * One critic's part of an attempt (run/workflows/critique/step.ts appends one per critic to the attempt's record) and its
 * projection into an eval row of its own: step `critique`, credited to the critic's engine and model, with the
 * criticised attempt's number. The work attempt's row (attempt-record.ts evalRow) stays the worker's.
 */
import path from 'node:path';
import type { CritiqueColumn, EvalRow } from '../../../store/eval-row';
import { recordFiles, rowBase, type AttemptRecord } from '../../attempt-record';
import { readerColumns, readerName, type CritiqueRecord } from '../../reader-record';

export type { CritiqueRecord } from '../../reader-record';

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
    ...(rec.critiqueReport ? { critique_report: rec.critiqueReport } : {}),
  };
}
