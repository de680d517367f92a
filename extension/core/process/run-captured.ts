/**
 * Short commands (git plumbing, mount), started by the spawn helper (process/spawner.ts) instead of forked from the
 * orchestrator. libuv forks the calling process for every child, synchronously on the event loop, and a fork's CPU,
 * the parent's and the child's, grows with the parent's resident memory (~0.1 ms per MB per spawn measured on the
 * development machine: 4.4 ms at 120 MB, 45 ms at 514 MB); the helper forks from a few MB. An attempt in worktree
 * mode runs about a dozen such git commands (docs/spawning.md).
 *
 * The helper writes a command's stdout and stderr to files in a private temporary folder of this process (mode
 * 0700, `verdict-run-<pid>-*` in os.tmpdir()), and gives it its `input` from a file there; they are read back and
 * removed once it has ended, the folder a second after the last command. Where no such folder can be made (a
 * read-only /tmp) the command is forked from this process instead (process/run-forked.ts), with the same result.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { timerDelay } from '../fs/timer';
import { resolveCommand } from './resolve-command';
import { runForked, type CapturedBytes, type RunCapturedOptions } from './run-forked';
import { spawnViaHelper, type SpawnExit } from './spawner';

export type { CapturedBytes, RunCapturedOptions } from './run-forked';

/** How a command ended, its output decoded as UTF-8. */
export interface Captured extends Omit<CapturedBytes, 'stdout' | 'stderr'> {
  stdout: string;
  stderr: string;
}

/**
 * Runs `file args` to its end through the spawn helper and says how it ended, its output as bytes; never throws. The
 * command runs in its own session and process group (a time limit kills the group), stdin its `input` or /dev/null;
 * a `file` without a slash is looked up on `env.PATH` (once per name and PATH: resolveCommand).
 * @returns CapturedBytes: `error` when it could not start (`spawn FILE ENOENT`, worded as Node words it), when the
 *   helper died while it ran, or when stdout or stderr passed `maxBuffer` (default 1 GiB; its process group is then
 *   killed, within 250 ms, and what was kept is cut at maxBuffer)
 */
export async function runCapturedBytes(file: string, args: readonly string[], opts: RunCapturedOptions = {}): Promise<CapturedBytes> {
  const maxBuffer = opts.maxBuffer ?? 1024 * 1024 * 1024;
  const files = outputFiles(opts.input !== undefined);
  if (!files) return runForked(file, args, opts);
  try {
    if (opts.input !== undefined) fs.writeFileSync(files.input as string, opts.input, { mode: 0o600 });
    const ended = await runInHelper(file, args, opts, maxBuffer, { log: files.out, errLog: files.err, stdin: files.input });
    const out = readBack(files.out, maxBuffer, file);
    const err = readBack(files.err, maxBuffer, file);
    return { ...ended, stdout: out.bytes, stderr: err.bytes, error: ended.error ?? out.error ?? err.error };
  } catch (e) {
    // The input file could not be written (a full disk): nothing was started.
    return { exitCode: null, signal: null, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), timedOut: false, error: e as Error };
  } finally {
    release(files);
  }
}

/** {@link runCapturedBytes} with stdout and stderr decoded as UTF-8. Never throws. */
export async function runCaptured(file: string, args: readonly string[], opts: RunCapturedOptions = {}): Promise<Captured> {
  const r = await runCapturedBytes(file, args, opts);
  return { ...r, stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8') };
}

/**
 * A command whose stdout is not wanted (it prints nothing when it succeeds: `git branch`, `git worktree add --quiet`,
 * `git read-tree`, `mount`), run as {@link runCaptured} runs one, with stdout and stderr joined in one file (so
 * their order is kept) and read back as `stderr`; `stdout` is always empty. `maxBuffer` defaults to 1 MiB here, and
 * output past it is only cut where it is read back (`error` says so): the command is not stopped for it. Never throws.
 */
export async function runQuiet(file: string, args: readonly string[], opts: Omit<RunCapturedOptions, 'input'> = {}): Promise<Captured> {
  const maxBuffer = opts.maxBuffer ?? 1024 * 1024;
  const files = outputFiles(false);
  if (!files) {
    // Forked: as through the helper, long output is cut, not a reason to stop the command.
    const r = await runForked(file, args, { ...opts, maxBuffer: undefined });
    const joined = Buffer.concat([r.stdout, r.stderr]);
    const cut = joined.length > maxBuffer ? new Error(`${file} printed more than ${maxBuffer} bytes`) : null;
    return { ...r, stdout: '', stderr: joined.subarray(0, maxBuffer).toString('utf8'), error: r.error ?? cut };
  }
  try {
    // Not stopped for its output's size (a checkout's warnings can be long): only what is read back is cut.
    const ended = await runInHelper(file, args, opts, null, { log: files.out });
    const out = readBack(files.out, maxBuffer, file);
    return { ...ended, stdout: '', stderr: out.bytes.toString('utf8'), error: ended.error ?? out.error };
  } finally {
    release(files);
  }
}

/** How a command started by {@link runInHelper} ended (its output still in its files). */
type Ended = Omit<CapturedBytes, 'stdout' | 'stderr'>;

/** Starts the command through the helper and waits for its end; with `maxBuffer`, output past it kills its group. */
async function runInHelper(
  file: string,
  args: readonly string[],
  opts: RunCapturedOptions,
  maxBuffer: number | null,
  io: { log: string; errLog?: string; stdin?: string },
): Promise<Ended> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
  let spawned;
  try {
    spawned = await spawnViaHelper({ file: resolveCommand(file, env.PATH ?? '') ?? file, args: [...args], cwd: opts.cwd ?? process.cwd(), env, ...io });
  } catch (e) {
    return { exitCode: null, signal: null, timedOut: false, error: e as Error };
  }
  const kill = () => {
    try {
      process.kill(-spawned.pid, 'SIGKILL');
    } catch {
      // It has ended meanwhile.
    }
  };
  let timedOut = false;
  let error: Error | null = null;
  const timer = opts.timeoutMs
    ? setTimeout(() => {
        timedOut = true;
        kill();
      }, timerDelay(opts.timeoutMs))
    : null;
  // Output past maxBuffer stops the command, as a pipe's reader would, so a runaway cannot fill the temporary folder.
  const outputs = [io.log, io.errLog].filter((f): f is string => f !== undefined);
  const watch =
    maxBuffer === null
      ? null
      : setInterval(() => {
          if (error || !outputs.some((f) => (fs.statSync(f, { throwIfNoEntry: false })?.size ?? 0) > maxBuffer)) return;
          error = new Error(`${file} printed more than ${maxBuffer} bytes`);
          kill();
        }, OUTPUT_WATCH_MS);
  const exit: SpawnExit = await spawned.exited;
  if (timer) clearTimeout(timer);
  if (watch) clearInterval(watch);
  return { exitCode: exit.code, signal: (exit.signal as NodeJS.Signals | null) ?? null, timedOut, error: exit.lost ? new Error(exit.lost) : error };
}

/** How often a running command's output files are measured against maxBuffer, ms. */
const OUTPUT_WATCH_MS = 250;

/** At most `maxBuffer` bytes of `file` (missing: none), and an error when it holds more. */
function readBack(file: string, maxBuffer: number, command: string): { bytes: Buffer; error: Error | null } {
  let fd;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? { bytes: Buffer.alloc(0), error: null } : { bytes: Buffer.alloc(0), error: e as Error };
  }
  try {
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.allocUnsafe(Math.min(size, maxBuffer));
    let n = 0;
    while (n < buf.length) {
      const got = fs.readSync(fd, buf, n, buf.length - n, n);
      if (!got) break;
      n += got;
    }
    return { bytes: buf.subarray(0, n), error: size > maxBuffer ? new Error(`${command} printed more than ${maxBuffer} bytes`) : null };
  } catch (e) {
    return { bytes: Buffer.alloc(0), error: e as Error };
  } finally {
    fs.closeSync(fd);
  }
}

/** One command's files in this process's output folder. */
interface OutputFiles {
  out: string;
  err: string;
  input?: string;
}

/**
 * This process's folder for the commands' files (mode 0700): made when a command starts and none is there, removed
 * once no command has run for KEEP_IDLE_MS (and at exit), so a process killed while idle leaves nothing (one killed
 * while it held one leaves it to the next process's removeOrphanedFolders). It is kept between the commands of a
 * burst: a folder's mkdir and rmdir cost ~0.8 ms on ext4 here, its files' ~0.09 ms.
 */
const FOLDER_PREFIX = 'verdict-run-';
let outputDir: string | null = null;
let running = 0;
let serial = 0;
let exitHook = false;
let idleTimer: NodeJS.Timeout | null = null;
/** How long the output folder outlives the last command, ms. */
const KEEP_IDLE_MS = 1000;

/** Names the next command's files (and counts it running), or null when no folder can be made in os.tmpdir(). */
function outputFiles(withInput: boolean): OutputFiles | null {
  try {
    if (!outputDir || !fs.existsSync(outputDir)) {
      if (!exitHook) removeOrphanedFolders(os.tmpdir());
      outputDir = fs.mkdtempSync(path.join(os.tmpdir(), `${FOLDER_PREFIX}${process.pid}-`));
      if (!exitHook) process.once('exit', () => outputDir && removeQuietly(outputDir));
      exitHook = true;
    }
  } catch {
    return null;
  }
  running++;
  const base = path.join(outputDir, String(++serial));
  return { out: `${base}.out`, err: `${base}.err`, ...(withInput ? { input: `${base}.in` } : {}) };
}

/**
 * Removes the output folders (`verdict-run-<pid>-*`) that processes of this user killed while they held one left in
 * `tmp`: the pid is gone and the folder has not changed for a minute (a pid of another PID namespace sharing /tmp is
 * not seen here: its live folder changes with every command). Once per process, before its first folder. Never throws.
 */
function removeOrphanedFolders(tmp: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(tmp);
  } catch {
    return;
  }
  for (const name of names) {
    const m = name.startsWith(FOLDER_PREFIX) ? /^(\d+)-/.exec(name.slice(FOLDER_PREFIX.length)) : null;
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      const st = fs.lstatSync(path.join(tmp, name));
      if (!st.isDirectory() || st.uid !== process.getuid?.() || Date.now() - st.mtimeMs < 60_000) continue;
      process.kill(Number(m[1]), 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ESRCH') removeQuietly(path.join(tmp, name));
    }
  }
}

/** One command has ended: its files are removed, and the folder once no command has run for KEEP_IDLE_MS. */
function release(files: OutputFiles): void {
  for (const f of [files.out, files.err, files.input]) if (f) removeQuietly(f);
  if (--running > 0 || !outputDir || idleTimer) return;
  idleTimer = setTimeout(removeWhenIdle, KEEP_IDLE_MS);
  idleTimer.unref();
}

function removeWhenIdle(): void {
  idleTimer = null;
  if (running > 0 || !outputDir) return; // a command runs: the next release schedules this again
  removeQuietly(outputDir);
  outputDir = null;
}

/** Removes a file or folder; a failure (gone already, no permission) is left for a later pass, never thrown. */
function removeQuietly(target: string): void {
  try {
    fs.rmSync(target, { recursive: true, force: true });
  } catch {
    // a folder left behind is removed by a later process's removeOrphanedFolders
  }
}
