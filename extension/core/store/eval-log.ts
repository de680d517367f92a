import fs from 'node:fs';
import path from 'node:path';
import { withLock } from '../fs/lock';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { validateEvalRow } from '../../../schemas/generated/validateEvalRow.js';
import { appendChainedAll, type ChainedAppend } from './chain';
import type { EvalRow } from './eval-row';

/** A row as a caller hands it to appendEvalRow: prev_hash is set there, under the lock (a value given is replaced). */
export type EvalRowInput = Omit<EvalRow, 'prev_hash'> & { prev_hash?: string | null };

/** The eval-row schema's validator, compiled at build time (schemas/validators.build.mjs, which defines date-time). */
const validateRow = (): ValidateFunction<EvalRow> => validateEvalRow as ValidateFunction<EvalRow>;

/**
 * Problems of `row` against schemas/eval-row.schema.json, one line each (`field: what is wrong`); empty when valid.
 * `date-time` is checked as ISO 8601 with a zone (what Date.toISOString writes).
 */
export function evalRowProblems(row: unknown): string[] {
  const validate = validateRow();
  if (validate(row)) return [];
  return (validate.errors ?? []).map(
    (e: ErrorObject) =>
      `${e.instancePath.slice(1) || (e.params as { missingProperty?: string; additionalProperty?: string }).missingProperty || (e.params as { additionalProperty?: string }).additionalProperty || '(row)'}: ${e.message ?? 'is invalid'}`,
  );
}

/**
 * Appends one row to the eval log (runs.jsonl) as one line, under a cross-process lock so concurrent writers
 * never interleave or tear lines. Creates the file and its folder if needed. When the write fails part-way (a full
 * disk), the file is truncated back to its length before this row, so no torn line stays behind.
 * The row is validated against schemas/eval-row.schema.json first: a row that does not match is never written.
 * Under the same lock its `prev_hash` is set to the hash of the last row of its host's chain (extension/core/store/
 * chain.ts), and the chain heads beside the log (`<home>/runs.chain.json`) are updated after the row is written.
 * Group commit: rows handed in while this process waits for the lock are written under that one lock, in the order
 * they came, with one update of the chain heads (attempts ending together took the lock and rewrote the heads once
 * each). Each call still resolves only once its own row is in the log, so a caller that goes on has its row on disk.
 * @returns the row as written, prev_hash included
 * @throws Error naming the log, the row (run_id/task_key attempt n) and the cause, e.g. "no space left on device" or
 *   the fields that do not match the schema; the row is then not in the log — callers report it, never retry blindly
 */
export async function appendEvalRow(logFile: string, input: EvalRowInput): Promise<EvalRow> {
  const row: EvalRow = { ...input, prev_hash: null };
  const problems = evalRowProblems(row);
  if (problems.length)
    throw new Error(
      `the eval row of ${row.run_id}/${row.task_key} attempt ${row.attempt} does not match schemas/eval-row.schema.json (${problems.join('; ')}); it was not written to ${logFile}`,
    );
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  return new Promise((resolve, reject) => {
    const waiting = batches.get(logFile);
    if (waiting) {
      waiting.push({ row, resolve, reject });
      return;
    }
    const batch: Pending[] = [{ row, resolve, reject }];
    batches.set(logFile, batch);
    withLock(logFile, async () => {
      // From here on, new rows wait for the next lock.
      batches.delete(logFile);
      writeBatch(logFile, batch);
    }).catch((e: unknown) => {
      if (batches.get(logFile) === batch) batches.delete(logFile);
      for (const p of batch) p.reject(e);
    });
  });
}

/** A row waiting for the lock, with its caller's promise. */
interface Pending {
  row: EvalRow;
  resolve: (row: EvalRow) => void;
  reject: (e: unknown) => void;
}

/** Per log: the rows waiting for this process's next turn at its lock. */
const batches = new Map<string, Pending[]>();

/** Writes `batch` (under the log's lock), settling each row's promise with its own outcome. */
function writeBatch(logFile: string, batch: readonly Pending[]): void {
  let fd: number;
  try {
    fd = fs.openSync(logFile, 'a+');
  } catch (e) {
    for (const p of batch) p.reject(appendError(logFile, p.row, e));
    return;
  }
  try {
    endTornLine(fd);
  } catch (e) {
    fs.closeSync(fd);
    for (const p of batch) p.reject(appendError(logFile, p.row, e));
    return;
  }
  let index = 0;
  let results: ChainedAppend<EvalRow>[];
  try {
    results = appendChainedAll(
      logFile,
      batch.map((p) => p.row),
      (line) => {
        const p = batch[index++] as Pending;
        let before: number | null = null;
        try {
          const stat = fs.fstatSync(fd);
          if (stat.isFile()) before = stat.size;
          let written = 0;
          while (written < line.length) written += fs.writeSync(fd, line, written);
        } catch (e) {
          if (before !== null) {
            try {
              fs.ftruncateSync(fd, before);
            } catch {
              // the message below still says the row was not written
            }
          }
          throw appendError(logFile, p.row, e);
        }
      },
    );
  } catch (e) {
    // reading the chain heads failed (the log unreadable): no row was written
    results = batch.map((p) => ({ error: appendError(logFile, p.row, e) }));
  } finally {
    fs.closeSync(fd);
  }
  batch.forEach((p, i) => {
    const r = results[i];
    if (r && 'row' in r) p.resolve(r.row);
    else p.reject(r?.error);
  });
}

/**
 * Ends with a newline a last line left without one (call under the log's lock, so no append is under way): what a
 * writer killed inside its write(2) leaves (the kernel stops a write to a file between pages on SIGKILL), or a crash
 * before the disk had the whole line. Appended to as it is, that fragment would swallow the next row into one corrupt
 * line; ended, it stays a corrupt line of its own (verify-log counts it) — or, cut just before its newline, a whole row.
 * @throws Error from the filesystem
 */
function endTornLine(fd: number): void {
  const stat = fs.fstatSync(fd);
  if (!stat.isFile() || stat.size === 0) return;
  const size = stat.size;
  const last = Buffer.alloc(1);
  if (fs.readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a) fs.writeSync(fd, '\n');
}

/** The error of a row that could not be appended. */
function appendError(logFile: string, row: EvalRow, e: unknown): Error {
  const err = e as NodeJS.ErrnoException;
  if (err instanceof Error && err.message.startsWith('cannot append the eval row')) return err;
  const cause = err?.code === 'ENOSPC' ? 'no space left on device' : err?.message;
  return new Error(`cannot append the eval row of ${row.run_id}/${row.task_key} attempt ${row.attempt} to ${logFile}: ${cause}; the row was not written`, {
    cause: e,
  });
}
