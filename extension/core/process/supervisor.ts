import crypto from 'node:crypto';
import fs from 'node:fs';
import { execa } from 'execa';
import { RingBuffer } from './ring-buffer';
import { bwrapCommand, restoreDevNodes, SESSION_ENV, type BwrapPlan } from './sandbox';

/** Time between SIGTERM to a process group and SIGKILL, ms. */
export const KILL_GRACE_MS = 5000;

/** What to run and how to watch it. */
export interface SuperviseOptions {
  /** Executable (looked up on PATH) and its argv; never passed through a shell. */
  file: string;
  args: string[];
  cwd: string;
  /** Added to the inherited environment. */
  env?: Record<string, string>;
  /** Raw log: stdout+stderr interleaved, appended (created if missing). Must lie outside the task dir. */
  logFile: string;
  /** Wall-clock limit, ms; then SIGTERM to the group, KILL_GRACE_MS grace, SIGKILL. */
  timeoutMs: number;
  /** Aborting stops the group the same way as a timeout, recorded as cancelled. */
  signal?: AbortSignal;
  /** Size of the in-memory tail, bytes (default 64 KiB). */
  tailBytes?: number;
  /** Called with every output chunk as it arrives (live view). */
  onOutput?: (chunk: Buffer) => void;
  /** Grace after SIGTERM, ms (default KILL_GRACE_MS). */
  killGraceMs?: number;
  /** Called once the process exists, with its pid (= its process group id). */
  onSpawn?: (pid: number) => void;
  /** No-output watchdog: stop the group when nothing was printed for this long, ms; the receipt says `stalled`. */
  idleTimeoutMs?: number;
  /**
   * Stuck-engine guard: `seen()` says whether the engine printed its final event; when it has and the process is
   * still running `graceMs` later, the group is stopped and the receipt says `stoppedAfterFinal` (judged normally).
   */
  finalEvent?: { seen: () => boolean; graceMs: number };
  /**
   * Run inside this bubblewrap sandbox (see sandbox.ts): when the step ends, so does everything it started. Absent or
   * null: unsandboxed; descendants are then found by {@link STEP_COOKIE_VAR} and killed when the leader exits or the
   * step is stopped.
   */
  sandbox?: BwrapPlan | null;
  /** Output pipes are closed this long after the leader exits, ms (default PIPE_GRACE_MS). */
  pipeGraceMs?: number;
}

/**
 * How long the output pipes may stay open after the step's leader is gone and its descendants were killed, ms; then
 * they are closed on our side, so a process that escaped everything still cannot keep the run waiting.
 */
export const PIPE_GRACE_MS = 2000;

/**
 * The environment variable that marks every process of an unsandboxed step (inherited by all its descendants, whatever
 * process group or session they move to), so they can be found in /proc and ended. The technique is Jenkins'
 * ProcessTreeKiller (BUILD_ID cookie); a process that scrubs its own environment escapes it, which is why bubblewrap
 * is the default.
 */
export const STEP_COOKIE_VAR = 'VERDICT_STEP_COOKIE';

/** How often the watchdog and the final-event guard look, ms. */
const GUARD_TICK_MS = 250;

/** What happened to one supervised process. Times are epoch ms. */
export interface Receipt {
  pid: number | null;
  /** Exit code, or null when killed by a signal or never started. */
  exitCode: number | null;
  /** Terminating signal name, e.g. "SIGKILL", or null. */
  signal: string | null;
  startedAt: number;
  endedAt: number;
  durationMs: number;
  timedOut: boolean;
  cancelled: boolean;
  /** Stopped by the no-output watchdog. */
  stalled: boolean;
  /** Stopped because it kept running after printing its final event. */
  stoppedAfterFinal: boolean;
  /** The process's start time as the kernel counts it (/proc/<pid>/stat field 22), to recognise it later. */
  startTime: string | null;
  /** Set when the process could not be started (missing binary, bad cwd): the OS error message. */
  spawnError: string | null;
  /** Bytes of output the process printed (all of it reached the log unless logError says otherwise). */
  outputBytes: number;
  /** Why the log stopped being written (a full disk), or null when it holds everything. */
  logError?: string | null;
}

/** A receipt plus the retained tail of the output. */
export interface SupervisedResult {
  receipt: Receipt;
  /** Last `tailBytes` of stdout+stderr as text. */
  tail: string;
}

/**
 * Runs one process in its own process group with stdin = /dev/null, stdout+stderr appended to `logFile` and kept in a
 * bounded tail. On timeout or abort the whole group gets SIGTERM, then SIGKILL after the grace period. When the
 * leader exits, whatever it left running in its group is killed too, so no grandchild outlives its attempt.
 * Never throws for process failures: they are in the receipt. Throws only when the log file cannot be opened.
 */
export async function supervise(opts: SuperviseOptions): Promise<SupervisedResult> {
  const log = fs.openSync(opts.logFile, 'a');
  const tail = new RingBuffer(opts.tailBytes ?? 64 * 1024);
  const grace = opts.killGraceMs ?? KILL_GRACE_MS;
  const startedAt = Date.now();
  let timedOut = false;
  let cancelled = false;
  let stalled = false;
  let stoppedAfterFinal = false;
  let lastOutputAt = startedAt;
  let finalSeenAt: number | null = null;
  let outputBytes = 0;
  let killTimer: NodeJS.Timeout | undefined;

  // In a sandbox a missing command is bwrap's exit 1, not a spawn error: say it the way an unsandboxed spawn would.
  const missing = opts.sandbox ? missingCommand(opts.file, { ...process.env, ...opts.env }) : null;
  if (missing) {
    try {
    fs.closeSync(log);
  } catch {
    // a full disk can fail the close too; logError already says what was lost
  }
    const now = Date.now();
    return { receipt: { pid: null, exitCode: null, signal: null, startedAt: now, endedAt: now, durationMs: 0, timedOut: false, cancelled: false, stalled: false, stoppedAfterFinal: false, startTime: null, spawnError: missing, outputBytes: 0 }, tail: '' };
  }
  const cookie = crypto.randomBytes(12).toString('hex');
  const fds: number[] = [];
  const command = opts.sandbox ? bwrapCommand(opts.sandbox, opts.cwd, opts.file, opts.args, fds) : { file: opts.file, args: opts.args };
  const child = execa(command.file, command.args, {
    cwd: opts.cwd,
    // Some CLIs (opencode) take their project folder from $PWD, which would otherwise be the orchestrator's.
    env: opts.sandbox ? sandboxEnv({ ...process.env, ...opts.env, PWD: opts.cwd }) : { ...opts.env, PWD: opts.cwd, [STEP_COOKIE_VAR]: cookie },
    extendEnv: !opts.sandbox,
    stdio: ['ignore', 'pipe', 'pipe', ...fds] as unknown as ['ignore', 'pipe', 'pipe'],
    detached: true,
    reject: false,
    buffer: false,
    cleanup: false,
    windowsHide: true,
  });
  for (const fd of fds) fs.closeSync(fd);
  const pid = child.pid ?? null;
  const startTime = pid === null ? null : processStartTime(pid);
  if (pid !== null) opts.onSpawn?.(pid);

  // A log that cannot be written (a full disk) must not crash the orchestrator: the step goes on, its output is kept
  // in the in-memory tail, and the receipt says what was lost.
  let logError: string | null = null;
  const onData = (chunk: Buffer) => {
    lastOutputAt = Date.now();
    outputBytes += chunk.length;
    if (logError === null) {
      try {
        fs.writeSync(log, chunk);
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        logError = `${opts.logFile}: ${err.code === 'ENOSPC' ? 'no space left on device' : err.message}; output after ${outputBytes - chunk.length} bytes was not logged`;
      }
    }
    tail.push(chunk);
    opts.onOutput?.(chunk);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);

  /** Unsandboxed: every process carrying this step's cookie, wherever it moved. */
  const killDescendants = (sig: NodeJS.Signals) => {
    if (!opts.sandbox) killByCookie(cookie, sig);
  };
  const stopGroup = () => {
    if (pid === null || killTimer) return;
    signalGroup(pid, 'SIGTERM');
    killDescendants('SIGTERM');
    killTimer = setTimeout(() => {
      signalGroup(pid, 'SIGKILL');
      killDescendants('SIGKILL');
    }, grace);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    stopGroup();
  }, opts.timeoutMs);
  const onAbort = () => {
    cancelled = true;
    stopGroup();
  };
  const guard = opts.idleTimeoutMs || opts.finalEvent
    ? setInterval(() => {
        const now = Date.now();
        if (opts.idleTimeoutMs && now - lastOutputAt > opts.idleTimeoutMs && !killTimer) {
          stalled = true;
          stopGroup();
        }
        if (opts.finalEvent && finalSeenAt === null && opts.finalEvent.seen()) finalSeenAt = now;
        if (opts.finalEvent && finalSeenAt !== null && now - finalSeenAt > opts.finalEvent.graceMs && !killTimer) {
          stoppedAfterFinal = true;
          stopGroup();
        }
      }, GUARD_TICK_MS)
    : undefined;
  if (opts.signal?.aborted) onAbort();
  opts.signal?.addEventListener('abort', onAbort);
  // The leader is gone: end what it left behind (its group; unsandboxed, everything with its cookie), or the pipes
  // they hold would keep us waiting. Whatever still holds a pipe after the grace is cut off on our side.
  let pipeTimer: NodeJS.Timeout | undefined;
  child.on('exit', () => {
    if (pid !== null) signalGroup(pid, 'SIGKILL');
    killDescendants('SIGKILL');
    pipeTimer = setTimeout(() => {
      killDescendants('SIGKILL');
      child.stdout?.destroy();
      child.stderr?.destroy();
    }, opts.pipeGraceMs ?? PIPE_GRACE_MS);
  });

  const result = await child;
  // A root step can chmod the host's device nodes bound into its sandbox: put them back (see restoreDevNodes).
  if (opts.sandbox && process.getuid?.() === 0) restoreDevNodes();
  clearTimeout(pipeTimer);
  clearTimeout(timer);
  clearInterval(guard);
  if (killTimer) clearTimeout(killTimer);
  opts.signal?.removeEventListener('abort', onAbort);
  try {
    fs.closeSync(log);
  } catch {
    // a full disk can fail the close too; logError already says what was lost
  }

  const endedAt = Date.now();
  const spawnError = result.failed && result.exitCode === undefined && !result.signal ? shortError(result) : null;
  return {
    receipt: {
      pid,
      exitCode: result.exitCode ?? null,
      signal: result.signal ?? null,
      startedAt,
      endedAt,
      durationMs: endedAt - startedAt,
      timedOut,
      cancelled,
      stalled,
      stoppedAfterFinal,
      startTime,
      spawnError,
      outputBytes,
      logError,
    },
    tail: tail.text(),
  };
}

/**
 * A process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or null when it is gone or /proc is
 * absent. With the pid it identifies a process across pid reuse: proc(5).
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at ") "; field 3 is the first of them.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Sends `sig` to every process of this user whose environment holds `STEP_COOKIE_VAR=cookie` (Linux /proc; elsewhere
 * nothing is found). Returns how many were signalled. Never throws.
 */
export function killByCookie(cookie: string, sig: NodeJS.Signals = 'SIGKILL'): number {
  const needle = Buffer.from(`${STEP_COOKIE_VAR}=${cookie}\0`);
  let hits = 0;
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return 0;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let environ: Buffer;
    try {
      environ = fs.readFileSync(`/proc/${entry}/environ`);
    } catch {
      continue;
    }
    if (environ.indexOf(needle) === -1) continue;
    try {
      process.kill(Number(entry), sig);
      hits++;
    } catch {
      // already gone
    }
  }
  return hits;
}

/** Sends `sig` to process group `pgid`; a group that is already gone is not an error. */
export function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}

/** `spawn <file> ENOENT` (as Node says it) when `file` is not an executable file here or on PATH, else null. */
function missingCommand(file: string, env: NodeJS.ProcessEnv): string | null {
  const candidates = file.includes('/') ? [file] : (env.PATH ?? '').split(':').filter(Boolean).map((dir) => `${dir}/${file}`);
  for (const candidate of candidates) {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return null;
    } catch {
      // not here
    }
  }
  return `spawn ${file} ENOENT`;
}

/** A sandboxed step's whole environment: ours and the step's, without what reaches the user's own sessions. */
function sandboxEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !SESSION_ENV.includes(k)) out[k] = v;
  return out;
}

function shortError(result: { originalMessage?: string; message?: string; shortMessage?: string }): string {
  return result.originalMessage || result.shortMessage || result.message || 'the process could not be started';
}
