/**
 * A short command whose stdout is not wanted (it prints nothing when it succeeds: `git branch`, `git worktree add
 * --quiet`, `git read-tree`, `mount`), started by the spawn helper (process/spawner.ts) instead of forked from the
 * orchestrator. libuv forks the calling process for every child, and a fork's CPU, the parent's and the child's,
 * grows with the parent's resident memory (~0.1 ms per MB per spawn measured on the development machine: 4.4 ms at
 * 120 MB, 45 ms at 514 MB); the helper forks from a few MB. A tree's creation is three such commands per task
 * (docs/architecture.md "Trees").
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCaptured, type Captured } from './run-captured';
import { spawnViaHelper } from './spawner';

/** Options of {@link runQuiet}. */
export interface RunQuietOptions {
  cwd?: string;
  /** The whole environment (nothing of process.env is added); entries without a value are left out. */
  env?: NodeJS.ProcessEnv;
  /** Kill its process group (SIGKILL) after this long, ms. */
  timeoutMs?: number;
  /** Most bytes of output read back (past it: `error`, the output cut there). Default 1 MiB. */
  maxBuffer?: number;
}

/**
 * This process's folder for the commands' output files (mode 0700): made when a command starts and none is there,
 * removed when the last running one has ended (and at exit), so a process killed between commands leaves nothing.
 */
let outputDir: string | null = null;
let running = 0;
let serial = 0;
let exitHook = false;

function outputFile(): string {
  if (!outputDir || !fs.existsSync(outputDir)) {
    outputDir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-quiet-'));
    if (!exitHook) process.once('exit', () => outputDir && fs.rmSync(outputDir, { recursive: true, force: true }));
    exitHook = true;
  }
  return path.join(outputDir, `${++serial}.log`);
}

/** One command has ended and its file is removed: the folder goes with the last one. */
function ended(): void {
  if (--running > 0 || !outputDir) return;
  fs.rmSync(outputDir, { recursive: true, force: true });
  outputDir = null;
}

/**
 * Runs `file args` to its end through the spawn helper and says how it ended; never throws. Its stdout and stderr go
 * to one file (the helper's log), read back as `stderr` once it has ended; `stdout` is always empty. The command runs
 * in its own session and process group, stdin /dev/null; a `file` without a slash is looked up on `env.PATH`. Where no
 * output file can be made in os.tmpdir() it is run by {@link runCaptured} instead (its output joined the same way).
 * @returns Captured as {@link runCaptured}'s: `error` when it could not start (`spawn FILE ENOENT`), when the helper died
 *   while it ran, or when it printed more than maxBuffer bytes
 */
export async function runQuiet(file: string, args: readonly string[], opts: RunQuietOptions = {}): Promise<Captured> {
  let log: string;
  try {
    log = outputFile();
    running++;
  } catch {
    // No temporary folder to write to (a read-only /tmp): forked from this process as before.
    const r = await runCaptured(file, args, { cwd: opts.cwd, env: opts.env, timeoutMs: opts.timeoutMs, maxBuffer: opts.maxBuffer });
    return { ...r, stdout: '', stderr: r.stdout + r.stderr };
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
  const none = { exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false };
  let spawned;
  try {
    spawned = await spawnViaHelper({ file, args: [...args], cwd: opts.cwd ?? process.cwd(), env, log });
  } catch (e) {
    fs.rmSync(log, { force: true });
    ended();
    return { ...none, error: e as Error };
  }
  let timedOut = false;
  const timer = opts.timeoutMs
    ? setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-spawned.pid, 'SIGKILL');
        } catch {
          // It has ended meanwhile.
        }
      }, opts.timeoutMs)
    : null;
  const exit = await spawned.exited;
  if (timer) clearTimeout(timer);
  const maxBuffer = opts.maxBuffer ?? 1024 * 1024;
  let output = '';
  let error: Error | null = exit.lost ? new Error(exit.lost) : null;
  try {
    const fd = fs.openSync(log, 'r');
    try {
      const buf = Buffer.alloc(Math.min(fs.fstatSync(fd).size, maxBuffer));
      const n = fs.readSync(fd, buf, 0, buf.length, 0);
      output = buf.subarray(0, n).toString('utf8');
      if (fs.fstatSync(fd).size > maxBuffer) error ??= new Error(`${file} printed more than ${maxBuffer} bytes`);
    } finally {
      fs.closeSync(fd);
    }
  } catch (e) {
    error ??= e as Error;
  }
  fs.rmSync(log, { force: true });
  ended();
  return { exitCode: exit.code, signal: (exit.signal as NodeJS.Signals | null) ?? null, stdout: '', stderr: output, timedOut, error };
}
