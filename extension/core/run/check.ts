import fs from 'node:fs';
import path from 'node:path';
import { supervise, type Receipt } from '../process/supervisor';
import type { BwrapPlan } from '../process/sandbox';
import { failureLine } from './failure-line';

/** The marker appended when a failing check printed nothing, so a retry prompt never shows an empty output. */
export const SILENT_CHECK_MARKER = '[verdict] the check failed and printed nothing; its exit code is the only evidence';

/** The outcome of the check and of expect_files. */
export interface CheckResult {
  receipt: Receipt;
  /** Verbatim output (tail, bounded), plus the silent marker or the timeout note when they apply. */
  output: string;
  passed: boolean;
  /** Expected files that are missing, empty, or not real files inside the task dir after the check. */
  missingFiles: string[];
  /** One line for notes and retry prompts when not passed. */
  reason: string;
}

/**
 * Runs `check` with `bash -o pipefail -c` in the task dir (so `tests | tee log` fails when the tests do), in its own
 * sandbox (`sandbox`; unsandboxed: its own process group) with its own timeout, output appended to `logFile`, then
 * judges expect_files (after the check, so a check may export deliverables): each must be a real, non-empty file
 * inside the task dir — not a symlink out of it, not reached through a symlinked folder. PASS needs exit 0 and every
 * file. `judgeDir` (default `taskDir`): where expect_files are looked for, when the sandbox shows another folder at
 * `taskDir` (a check tree, run/check-tree.ts).
 */
export async function runCheck(opts: {
  check: string;
  taskDir: string;
  judgeDir?: string;
  logFile: string;
  timeoutMs: number;
  env: Record<string, string>;
  inherit?: Readonly<NodeJS.ProcessEnv>;
  expectFiles: string[];
  signal?: AbortSignal;
  sandbox?: BwrapPlan | null;
  memoryMb?: number;
  logMaxBytes?: number;
}): Promise<CheckResult> {
  const { receipt, tail } = await supervise({
    file: 'bash',
    args: ['-o', 'pipefail', '-c', opts.check],
    cwd: opts.taskDir,
    env: opts.env,
    inherit: opts.inherit,
    logFile: opts.logFile,
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
    tailBytes: 256 * 1024,
    sandbox: opts.sandbox,
    memoryMb: opts.memoryMb ?? null,
    logMaxBytes: opts.logMaxBytes ?? null,
  });
  let output = tail;
  const notes: string[] = [];
  const oom = receipt.memory?.outOfMemory === true;
  if (oom) notes.push(`[verdict] the check ran out of memory at ${receipt.memory?.limitMb} MB (the task's memory_mb) and was killed`);
  else if (receipt.timedOut) notes.push(`[verdict] the check timed out after ${Math.round(opts.timeoutMs / 1000)} s and was killed`);
  else if (receipt.exitCode !== 0 && !tail.trim()) notes.push(SILENT_CHECK_MARKER);
  if (notes.length) {
    fs.appendFileSync(opts.logFile, notes.join('\n') + '\n');
    output += (output && !output.endsWith('\n') ? '\n' : '') + notes.join('\n') + '\n';
  }
  const problems = opts.expectFiles.map((f) => ({ file: f, problem: expectedFileProblem(opts.judgeDir ?? opts.taskDir, f) })).filter((p) => p.problem !== null);
  const missingFiles = problems.map((p) => p.file);
  // A check over its memory cap fails whatever it exits: a process killed at the cap proves nothing (`! grep …` passes).
  const exitOk = receipt.exitCode === 0 && !receipt.timedOut && !oom;
  const passed = exitOk && missingFiles.length === 0;
  let reason = '';
  if (receipt.spawnError) reason = `the check could not start: ${receipt.spawnError}`;
  else if (oom) reason = `the check ran out of memory at ${receipt.memory?.limitMb} MB (the task's memory_mb) and was killed`;
  else if (receipt.timedOut) reason = `the check timed out after ${Math.round(opts.timeoutMs / 1000)} s`;
  else if (!exitOk) reason = `the check exited ${receipt.exitCode ?? receipt.signal}${failureLine(tail) ? `: ${failureLine(tail)}` : ''}`;
  else if (problems.length) reason = `expected files missing or not real files in the task dir: ${problems.map((p) => `${p.file} (${p.problem})`).join(', ')}`;
  return { receipt, output, passed, missingFiles, reason };
}

/**
 * Why `rel` is not a deliverable of the task dir `dir`, or null when it is: a regular, non-empty file whose real path
 * (symlinks resolved) is inside the task dir and that is reached through no symlink (a link to a file elsewhere, or a
 * linked folder, would let a worker "deliver" /etc/passwd).
 */
export function expectedFileProblem(dir: string, rel: string): string | null {
  const abs = path.resolve(dir, rel);
  if (abs !== dir && !abs.startsWith(dir + path.sep)) return 'outside the task dir';
  // Walk from the task dir down: no component may be a symlink.
  let at = dir;
  for (const part of path.relative(dir, abs).split(path.sep)) {
    at = path.join(at, part);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(at);
    } catch {
      return 'missing';
    }
    if (st.isSymbolicLink()) {
      let target: string;
      try {
        target = fs.realpathSync(at);
      } catch {
        target = fs.readlinkSync(at);
      }
      return `${at === abs ? 'a symlink' : `reached through the symlinked folder ${path.relative(dir, at)}`} to ${target}${isInside(dir, target) ? '' : ', outside the task dir'}`;
    }
  }
  const st = fs.statSync(abs);
  if (!st.isFile()) return 'not a regular file';
  return st.size > 0 ? null : 'empty';
}

function isInside(dir: string, target: string): boolean {
  let real = dir;
  try {
    real = fs.realpathSync(dir);
  } catch {
    // keep dir
  }
  return target === real || target.startsWith(real + path.sep);
}
