import fs from 'node:fs';
import path from 'node:path';
import { supervise, type Receipt } from '../process/supervisor';
import type { BwrapPlan } from '../process/sandbox';

/** The marker appended when a failing check printed nothing, so a retry prompt never shows an empty output. */
export const SILENT_CHECK_MARKER = '[verdict] the check failed and printed nothing; its exit code is the only evidence';

/** The outcome of the check and of expect_files. */
export interface CheckResult {
  receipt: Receipt;
  /** Verbatim output (tail, bounded), plus the silent marker or the timeout note when they apply. */
  output: string;
  passed: boolean;
  /** Expected files that are missing or empty after the check. */
  missingFiles: string[];
  /** One line for notes and retry prompts when not passed. */
  reason: string;
}

/**
 * Runs `check` with `bash -c` in the task dir, in its own sandbox (`sandbox`; unsandboxed: its own process group)
 * with its own timeout, output appended to
 * `logFile`, then judges expect_files (after the check, so a check may export deliverables): each must exist and
 * be non-empty, and may not point outside the task dir. PASS needs exit 0 and every file.
 */
export async function runCheck(opts: { check: string; taskDir: string; logFile: string; timeoutMs: number; env: Record<string, string>; expectFiles: string[]; signal?: AbortSignal; sandbox?: BwrapPlan | null }): Promise<CheckResult> {
  const { receipt, tail } = await supervise({
    file: 'bash',
    args: ['-c', opts.check],
    cwd: opts.taskDir,
    env: opts.env,
    logFile: opts.logFile,
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
    tailBytes: 256 * 1024,
    sandbox: opts.sandbox,
  });
  let output = tail;
  const notes: string[] = [];
  if (receipt.timedOut) notes.push(`[verdict] the check timed out after ${Math.round(opts.timeoutMs / 1000)} s and was killed`);
  else if (receipt.exitCode !== 0 && !tail.trim()) notes.push(SILENT_CHECK_MARKER);
  if (notes.length) {
    fs.appendFileSync(opts.logFile, notes.join('\n') + '\n');
    output += (output && !output.endsWith('\n') ? '\n' : '') + notes.join('\n') + '\n';
  }
  const missingFiles = opts.expectFiles.filter((f) => !nonEmptyFileInside(opts.taskDir, f));
  const exitOk = receipt.exitCode === 0 && !receipt.timedOut;
  const passed = exitOk && missingFiles.length === 0;
  let reason = '';
  if (receipt.spawnError) reason = `the check could not start: ${receipt.spawnError}`;
  else if (receipt.timedOut) reason = `the check timed out after ${Math.round(opts.timeoutMs / 1000)} s`;
  else if (!exitOk) reason = `the check exited ${receipt.exitCode ?? receipt.signal}${lastLine(tail) ? `: ${lastLine(tail)}` : ''}`;
  else if (missingFiles.length) reason = `expected files missing or empty: ${missingFiles.join(', ')}`;
  return { receipt, output, passed, missingFiles, reason };
}

function nonEmptyFileInside(dir: string, rel: string): boolean {
  const abs = path.resolve(dir, rel);
  if (abs !== dir && !abs.startsWith(dir + path.sep)) return false;
  try {
    const st = fs.statSync(abs);
    return st.isFile() && st.size > 0;
  } catch {
    return false;
  }
}

/** The last non-empty line of the output, at most 160 characters, for one-line reasons. */
function lastLine(output: string): string {
  const line = output.trimEnd().split('\n').pop()?.trim() ?? '';
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}
