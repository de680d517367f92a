import fs from 'node:fs';
import path from 'node:path';
import { withLock } from '../git/lock';
import type { EvalRow } from './eval-row';

/**
 * Appends one row to the eval log (runs.jsonl) as one line, under a cross-process lock so concurrent writers
 * never interleave or tear lines. Creates the file and its folder if needed. When the write fails part-way (a full
 * disk), the file is truncated back to its length before this row, so no torn line stays behind.
 * @throws Error naming the log, the row (run_id/task_key attempt n) and the cause, e.g. "no space left on device";
 *   the row is then not in the log — callers report it, never retry blindly
 */
export async function appendEvalRow(logFile: string, row: EvalRow): Promise<void> {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const line = Buffer.from(JSON.stringify(row) + '\n');
  await withLock(logFile, async () => {
    const fd = fs.openSync(logFile, 'a');
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
      const err = e as NodeJS.ErrnoException;
      const cause = err.code === 'ENOSPC' ? 'no space left on device' : err.message;
      throw new Error(`cannot append the eval row of ${row.run_id}/${row.task_key} attempt ${row.attempt} to ${logFile}: ${cause}; the row was not written`, { cause: e });
    } finally {
      fs.closeSync(fd);
    }
  });
}
