import fs from 'node:fs';
import path from 'node:path';
import { withLock } from '../git/lock';
import type { EvalRow } from './eval-row';

/**
 * Appends one row to the eval log (runs.jsonl) as one line, under a cross-process lock so concurrent writers
 * never interleave or tear lines. Creates the file and its folder if needed.
 * @throws Error from the filesystem (e.g. ENOSPC) after the lock is released; the line is then not written whole
 *   or not at all only as far as the OS guarantees for one write(2) — callers report it, never retry blindly
 */
export async function appendEvalRow(logFile: string, row: EvalRow): Promise<void> {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const line = JSON.stringify(row) + '\n';
  await withLock(logFile, async () => {
    fs.appendFileSync(logFile, line);
  });
}
