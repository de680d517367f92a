import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { timerDelay } from '../fs/timer';
import { RingBuffer } from './ring-buffer';
import { resolveCommand } from './resolve-command';
import { bindSource, bwrapCommand, HOST_LOOPBACK_ADDRESS, restoreDevNodes, SESSION_ENV, stepNetwork, type BwrapPlan } from './sandbox';
import { clearSetIdBits, type SetIdCleared } from './set-id';
import { LogCap } from './log-cap';
import { bytesToMb, createStepCgroup, memoryCapMechanism, type MemoryCapRecord, type StepCgroup } from './memory-cap';
import { looksLikeCredential } from './secrets';
import { spawnViaHelper, type Spawned } from './spawner';

/** Time between SIGTERM to a process group and SIGKILL, ms. */
export const KILL_GRACE_MS = 5000;

/** What to run and how to watch it. */
export interface SuperviseOptions {
  /** Executable (a bare name is looked up on PATH once per run: resolveCommand) and its argv; never passed through a shell. */
  file: string;
  args: string[];
  cwd: string;
  /** Added to the inherited environment. */
  env?: Record<string, string>;
  /**
   * The environment the step inherits (before `unsetEnv` and `env`); default: process.env as it is at the call. Copying
   * process.env goes through a getter per variable (~0.1-0.3 ms for 35 variables), so a run passes the copy it took at
   * its start (AttemptContext.inheritedEnv) instead of paying that at every spawn.
   */
  inherit?: Readonly<NodeJS.ProcessEnv>;
  /** Names removed from the inherited environment (before `env` is added), e.g. VERDICT_HOME for a ranking reviewer. */
  unsetEnv?: readonly string[];
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
  /** Called once the process exists, with its pid (= its process group id) and its start time (Receipt.startTime). */
  onSpawn?: (pid: number, startTime: string | null) => void;
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
  /** Unsandboxed: the cookie sweep after the leader's exit is repeated this long later, ms (default PIPE_GRACE_MS). */
  pipeGraceMs?: number;
  /**
   * stdout and stderr reach `logFile` through a unix socket the spawn helper relays (SpawnRequest.relay), never as the
   * file itself: no process of the step can open the log again through `/proc/<pid>/fd/1` (ENXIO for a socket), and
   * nothing it writes after the exit report lands there. Set for readers (reviewers, critics, ranking reviewers), whose
   * answer is read from this output while they run code the worker wrote (docs/containment.md "Readers"), and for
   * workers, whose engine's usage is read from it while the engine runs tools (docs/containment.md "Output").
   */
  relayOutput?: boolean;
  /**
   * The step's memory cap, MB: it runs in a cgroup of its own with this limit (memory-cap.ts), and is ended and marked
   * `memory.outOfMemory` in the receipt when the kernel killed a process of it there. Absent or null: no cap (Verdict's
   * own git and helper commands). Where no cgroup can be had the receipt says `memory.kind` "none".
   */
  memoryMb?: number | null;
  /**
   * The most the step's part of `logFile` keeps, bytes (log-cap.ts): past it, its head, a line saying how much was cut,
   * and its tail. Absent or null: no cap.
   */
  logMaxBytes?: number | null;
  /**
   * Called around each compaction of the log (log-cap.ts) while the step runs and once after it ended: `before` with
   * the whole log still there (every byte relayed into it so far), `after` once its middle was cut, with where:
   * `seen`, the log's size when the compaction last looked (the bytes below it were kept or cut), and `end`, its size
   * once truncated (what the step wrote after that lies beyond `end`); null when nothing was cut. The last `seen - x`
   * bytes below `end` are what the log held from byte `x` to `seen` before the cut. A reader of the log that must not
   * lose what is cut (the usage meter: spend reported in the cut part) reads it in `before`. Must not throw.
   */
  onCompact?: { before(): void; after(done: { seen: number; end: number } | null): void };
}

/**
 * Unsandboxed steps: how long after the leader's exit the search for processes carrying the step's cookie is made a
 * second time (a descendant forked while the first search ran), ms. Nothing waits for it: output goes to the log file
 * directly, so no pipe can keep a run waiting.
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
  /** The step's memory cap and what became of it (SuperviseOptions.memoryMb); absent when it had none. */
  memory?: MemoryCapRecord;
  /** Bytes of output cut from the middle of the log to keep it within its cap (log-cap.ts); absent when none were. */
  logCutBytes?: number;
  /**
   * A sandboxed step left set-uid or set-gid files in its writable folders: their bits were cleared after it
   * (set-id.ts); absent when it left none.
   */
  setIdCleared?: SetIdCleared;
}

/** A receipt plus the retained tail of the output. */
export interface SupervisedResult {
  receipt: Receipt;
  /** Last `tailBytes` of stdout+stderr as text. */
  tail: string;
}

/** How often the output of a watched step (live view, watchdog, final event) is read from its log, ms. */
export const TAIL_POLL_MS = 100;

/** Log bytes read per read call, bytes. */
const READ_CHUNK_BYTES = 64 * 1024;

/**
 * Verdict's own credentials, never inherited by a step (setup, worker, check, reviewer…): the eval mirror's and the
 * worker pool's Postgres URLs carry a password, and a worker holding them could write eval rows or settle pool jobs
 * itself, faking a verdict in the shared scoreboard. A task that needs a database gets its own through the manifest.
 */
export const CREDENTIAL_ENV: readonly string[] = ['VERDICT_PG_URL', 'VERDICT_POOL_URL'];

/**
 * Runs one process in its own process group and session with stdin = /dev/null and stdout+stderr appended to
 * `logFile` (the file itself, opened by the spawn helper, or a socket (`relayOutput`) or pipe (a capped log) the helper
 * relays into it: see spawner.ts; no output passes through this process), and keeps a bounded tail of what it wrote
 * there, read from the log in order (every TAIL_POLL_MS while the step is watched: `onOutput`, `idleTimeoutMs`,
 * `finalEvent`; else once at the end). On timeout or abort the whole group gets
 * SIGTERM, then SIGKILL after the grace period. When the leader exits, whatever it left running in its group
 * (unsandboxed: anything with its cookie) is killed too, so no grandchild outlives its attempt.
 * Never throws for process failures: they are in the receipt. Throws only when the log file cannot be opened.
 */
export async function supervise(opts: SuperviseOptions): Promise<SupervisedResult> {
  // The command never ran when bubblewrap stopped while making its mounts: again, over a fresh look at the host (three
  // times at most: a program that binds and closes sockets without pause can win the race again).
  for (let tries = 0; ; tries++) {
    const seen: { bwrapArgs?: string[] } = {};
    const result = await superviseOnce(opts, seen);
    if (tries === 3 || !seen.bwrapArgs || !vanishedCover(result, seen.bwrapArgs)) return result;
  }
}

/**
 * True when bubblewrap failed before the step's command ran because a host socket it was to cover (`--ro-bind
 * /dev/null SOCKET`, sandbox-view.ts) went away between the look at the host and the mount ("bwrap: Can't create file
 * at …: Read-only file system", seen when another program closed its socket at that moment). Only a path that the
 * arguments covered and that is gone on the host, or was made again since the step started, counts: a step printing
 * that line about a socket that stayed gains nothing, and no step can make a socket where sockets are covered.
 */
export function vanishedCover(result: SupervisedResult, bwrapArgs: readonly string[]): boolean {
  const m =
    /^bwrap: (?:(?:Can't create file at|Can't mkdir parents for|Can't create directory at) (\/[^\n]*?)|Can't bind mount \/oldroot\/dev\/null on \/newroot(\/[^\n]*?)): /.exec(
      result.tail,
    );
  if (!m) return false;
  const target = (m[1] ?? m[2]) as string;
  const covered = bwrapArgs.some((a, i) => a === '--ro-bind' && bwrapArgs[i + 1] === '/dev/null' && bwrapArgs[i + 2] === target);
  if (!covered) return false;
  try {
    return fs.lstatSync(target).ctimeMs >= result.receipt.startedAt - 1000;
  } catch {
    return true;
  }
}

/** One run of {@link supervise}; `seen.bwrapArgs` gets bubblewrap's arguments when the step is sandboxed. */
async function superviseOnce(opts: SuperviseOptions, seen: { bwrapArgs?: string[] }): Promise<SupervisedResult> {
  const log = fs.openSync(opts.logFile, (opts.logMaxBytes ? fs.constants.O_RDWR : fs.constants.O_RDONLY) | fs.constants.O_CREAT, 0o644);
  const startedAt = Date.now();
  const closeLog = () => closeQuietly(log);
  const notStarted = (spawnError: string): SupervisedResult => {
    closeLog();
    return notStartedResult(spawnError);
  };
  const startOffset = fs.fstatSync(log).size;

  // 122 random bits, from a buffer of entropy Node refills in bulk (randomBytes per spawn cost ~30 µs).
  const cookie = crypto.randomUUID().replaceAll('-', '');
  const step = stepCommand(opts, cookie);
  if ('spawnError' in step) return notStarted(step.spawnError);
  if (opts.sandbox) seen.bwrapArgs = step.plain.args;
  const { cgroup, memory } = stepMemory(opts);
  let spawned: Spawned;
  try {
    spawned = await spawnViaHelper({ ...spawnRequest(opts, step.plain, step, cookie), ...(cgroup ? { cgroupProcs: cgroup.procsFile } : {}) });
  } catch (e) {
    await cgroup?.remove();
    return notStarted((e as Error).message);
  }
  const { pid, startTime } = spawned;
  opts.onSpawn?.(pid, startTime);

  const watched = Boolean(opts.onOutput || opts.idleTimeoutMs || opts.finalEvent);
  const output = new LogFollower(log, startOffset, opts, watched, startedAt, spawned);
  const stopper = new StepStopper(opts, pid, cookie, startedAt, output, cgroup);

  // The helper reports the exit after it killed what the leader left in its group (unsandboxed: under its cookie).
  const exit = await spawned.exited;
  stopper.ended(Boolean(exit.lost));
  // A root step can chmod the host's device nodes bound into its sandbox: put them back (see restoreDevNodes).
  if (opts.sandbox && process.getuid?.() === 0) restoreDevNodes();
  stopper.dispose();
  const outputBytes = output.finish();
  closeLog();
  if (cgroup && memory) await settleMemory(cgroup, memory, stopper.outOfMemory);

  const endedAt = Date.now();
  // Nothing of a sandboxed step is alive now: no set-uid or set-gid file it made in its writable folders stays so.
  const setId = opts.sandbox
    ? await clearSetIdBits([...opts.sandbox.writable.map((d) => bindSource(opts.sandbox?.substitute ?? [], d)), ...(opts.sandbox.sharedPaths ?? [])])
    : null;
  return {
    receipt: {
      pid,
      exitCode: exit.code,
      signal: exit.lost ? 'SIGKILL' : exit.signal,
      startedAt,
      endedAt,
      durationMs: endedAt - startedAt,
      timedOut: stopper.timedOut,
      cancelled: stopper.cancelled,
      stalled: stopper.stalled,
      stoppedAfterFinal: stopper.stoppedAfterFinal,
      startTime,
      spawnError: null,
      outputBytes,
      logError: output.capError ?? logProblem(opts.logFile, exit.lost),
      ...(memory ? { memory } : {}),
      ...(output.cap?.cutBytes ? { logCutBytes: output.cap.cutBytes } : {}),
      ...(setId && (setId.files.length || setId.error) ? { setIdCleared: setId } : {}),
    },
    tail: output.tail.text(),
  };
}

/** Closes a file descriptor, ignoring one already closed. */
function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // already closed
  }
}

/** The result of a step that never started: `spawnError` says why. */
function notStartedResult(spawnError: string): SupervisedResult {
  const now = Date.now();
  return {
    receipt: {
      pid: null,
      exitCode: null,
      signal: null,
      startedAt: now,
      endedAt: now,
      durationMs: 0,
      timedOut: false,
      cancelled: false,
      stalled: false,
      stoppedAfterFinal: false,
      startTime: null,
      spawnError,
      outputBytes: 0,
    },
    tail: '',
  };
}

/**
 * What the spawn helper is asked to start: `command` (the step's, wrapped in its cgroup when it has one) with the
 * step's environment and descriptors, its output into the log (relayed when `relayOutput`); sandboxed, dying with the
 * helper and with bubblewrap's init (and its network stack where it has a namespace of its own), else under `cookie`
 * with the pipe sweep after PIPE_GRACE_MS (or `pipeGraceMs`).
 */
function spawnRequest(
  opts: SuperviseOptions,
  command: { file: string; args: string[] },
  step: { env: Record<string, string>; files: string[] },
  cookie: string,
): Parameters<typeof spawnViaHelper>[0] {
  return {
    file: command.file,
    args: command.args,
    cwd: opts.cwd,
    env: step.env,
    log: opts.logFile,
    files: step.files,
    // A capped log has the helper as its one writer, so that it can be held while it is compacted (log-cap.ts).
    ...(opts.relayOutput ? { relay: true } : opts.logMaxBytes ? { relay: 'pipe' as const } : {}),
    ...(opts.sandbox
      ? {
          dieWithHelper: true,
          sandboxInit: true,
          ...(stepNetwork(opts.sandbox) === 'netns' ? { netstack: opts.sandbox.netstack as string } : {}),
          ...(opts.sandbox.onInit ? { onInit: opts.sandbox.onInit } : {}),
        }
      : { cookie, sweepAgainMs: opts.pipeGraceMs ?? PIPE_GRACE_MS }),
  };
}

/**
 * The step's command line and environment: the inherited environment without Verdict's credentials, `unsetEnv` and
 * (sandboxed) the user's credentials, plus `opts.env`, PWD and the host's loopback; the command resolved on PATH and,
 * sandboxed, wrapped in bubblewrap (`files`: the descriptors bubblewrap reads its arguments from).
 * @returns `spawnError` when the command is not found (said as an unsandboxed spawn says it)
 */
function stepCommand(
  opts: SuperviseOptions,
  cookie: string,
): { env: Record<string, string>; files: string[]; plain: { file: string; args: string[] } } | { spawnError: string } {
  const inherited = { ...(opts.inherit ?? process.env) };
  for (const name of [...CREDENTIAL_ENV, ...(opts.unsetEnv ?? [])]) delete inherited[name];
  // A sandboxed step inherits no credential of the user's (secrets.ts) but its engine's own; what the step is given
  // explicitly (opts.env: the task's variables, an engine's settings) stays.
  if (opts.sandbox) {
    const keep = opts.sandbox.credentialEnv ?? [];
    for (const [name, value] of Object.entries(inherited))
      if (value !== undefined && !keep.includes(name) && looksLikeCredential(name, value)) delete inherited[name];
  }
  const merged = { ...inherited, ...opts.env };
  // Resolved once per name and PATH (a check's `bash` no longer walks PATH on every spawn). In a sandbox a missing
  // command would be bwrap's exit 1, not a spawn error: it is said the way an unsandboxed spawn says it.
  const file = resolveCommand(opts.file, merged.PATH ?? '');
  if (file === null) return { spawnError: `spawn ${opts.file} ENOENT` };
  const files: string[] = [];
  // Some CLIs (opencode) take their project folder from $PWD, which would otherwise be the orchestrator's.
  // Where the host's loopback is for this step (absent: it has none to reach), whatever the inherited one said.
  const network = stepNetwork(opts.sandbox);
  const loopback = network === 'none' ? {} : { VERDICT_HOST_LOOPBACK: network === 'netns' ? HOST_LOOPBACK_ADDRESS : '127.0.0.1' };
  if (network === 'none') delete merged.VERDICT_HOST_LOOPBACK;
  const env = opts.sandbox
    ? sandboxEnv({ ...merged, ...loopback, PWD: opts.cwd }, opts.sandbox.sockets ?? [])
    : definedEnv({ ...merged, ...loopback, PWD: opts.cwd, [STEP_COOKIE_VAR]: cookie });
  const plain = opts.sandbox ? bwrapCommand(opts.sandbox, opts.cwd, file, opts.args, files, env, true) : { file, args: opts.args };
  return { env, files, plain };
}

/** The step's own memory cgroup (joined before its command runs) and its record; no cgroup without `memoryMb` or a mechanism. */
function stepMemory(opts: SuperviseOptions): { cgroup: StepCgroup | null; memory: MemoryCapRecord | undefined } {
  if (!opts.memoryMb) return { cgroup: null, memory: undefined };
  const mech = memoryCapMechanism();
  if (mech.kind === 'none') return { cgroup: null, memory: { kind: mech.kind, limitMb: opts.memoryMb } };
  try {
    return { cgroup: createStepCgroup(mech, opts.memoryMb), memory: { kind: mech.kind, limitMb: opts.memoryMb } };
  } catch (e) {
    return { cgroup: null, memory: { kind: 'none', limitMb: opts.memoryMb, error: (e as Error).message } };
  }
}

/** After the step: its peak and whether it ran out of memory go into `memory`; the cgroup is removed. */
async function settleMemory(cgroup: StepCgroup, memory: MemoryCapRecord, outOfMemory: boolean): Promise<void> {
  if (!outOfMemory && cgroup.oomKills() > 0) outOfMemory = true;
  memory.peakMb = bytesToMb(cgroup.peakBytes());
  if (outOfMemory) memory.outOfMemory = true;
  if (!(await cgroup.remove())) memory.error = `the step's cgroup ${cgroup.dir} could not be removed: processes of the step are still in it`;
}

/**
 * Reads what a step appends to its log, in order, into the bounded tail and the live view (`onOutput`), and keeps
 * the log within its cap (log-cap.ts). `offset` is the next byte to read.
 */
class LogFollower {
  readonly tail: RingBuffer;
  readonly cap: LogCap | null;
  offset: number;
  /** When the step last wrote (ms since the epoch). */
  lastOutputAt: number;
  /** Bytes the compactions took out of the log (cut, or moved down: the kept tail counts once). */
  private removed = 0;
  capError: string | null = null;
  /** A compaction waits for the helper to hold the log's writer, or runs. */
  private compacting = false;
  /** The step has ended ({@link finish}): a hold answered after it compacts nothing. */
  private finished = false;
  private readonly readBuf = Buffer.allocUnsafe(READ_CHUNK_BYTES);

  /** `writer`: the step as the spawn helper runs it, whose relay is held while the log is compacted. */
  constructor(
    private readonly log: number,
    private readonly startOffset: number,
    private readonly opts: SuperviseOptions,
    private readonly watched: boolean,
    startedAt: number,
    private readonly writer: Pick<Spawned, 'hold' | 'release'>,
  ) {
    this.tail = new RingBuffer(opts.tailBytes ?? 64 * 1024);
    this.offset = startOffset;
    this.lastOutputAt = startedAt;
    // Output cut from the middle of the log (log-cap.ts) still counts in outputBytes.
    this.cap = opts.logMaxBytes ? new LogCap(log, startOffset, opts.logMaxBytes) : null;
  }

  /** Reads what the step appended since the last read, in order, into the tail and the live view. */
  readNew(): void {
    for (;;) {
      let n: number;
      try {
        n = fs.readSync(this.log, this.readBuf, 0, this.readBuf.length, this.offset);
      } catch {
        return;
      }
      if (n <= 0) return;
      this.offset += n;
      this.lastOutputAt = Date.now();
      const chunk = Buffer.from(this.readBuf.subarray(0, n));
      this.tail.push(chunk);
      this.opts.onOutput?.(chunk);
    }
  }

  /**
   * While the step runs: when its log is over the cap, the helper is asked to hold the log's writer (the relay), the log
   * is compacted, and the writer released. One compaction at a time; none once the step has ended.
   */
  keepWithinCap(): void {
    if (!this.cap || this.capError || this.compacting || this.finished) return;
    if (!this.cap.over(safeSize(this.log, 0))) return;
    this.compacting = true;
    void this.writer.hold().then(() => {
      try {
        if (!this.finished) this.compact();
      } finally {
        this.writer.release();
        this.compacting = false;
      }
    });
  }

  /**
   * Compacts the log when it is over its cap; nothing writes it meanwhile (held, or the step has ended). The live view
   * gets every byte the log keeps; the usage meter (onCompact) reads what is cut first.
   */
  private compact(): void {
    const { cap, opts, watched } = this;
    if (!cap || this.capError) return;
    try {
      if (!cap.over(fs.fstatSync(this.log).size)) return;
      if (watched) this.readNew();
      opts.onCompact?.before();
      const done = cap.compact(watched ? this.offset : Number.MAX_SAFE_INTEGER, (chunk) => {
        this.lastOutputAt = Date.now();
        this.tail.push(chunk);
        opts.onOutput?.(chunk);
      });
      opts.onCompact?.after(done);
      if (!done) return;
      // Everything below `seen` is read now (an unwatched step's tail is read from the end of the log, at the end).
      this.removed += done.seen - done.end;
      if (watched) this.offset = done.end;
    } catch (e) {
      this.capError = `the log could not be kept within its cap: ${(e as Error).message}`;
    }
  }

  /**
   * The step has ended (its exit reported, so the helper has written its last output): the rest of the log, in order,
   * then within its cap for good. Unwatched, only the part the tail can hold is read.
   * @returns the bytes the step wrote (outputBytes)
   */
  finish(): number {
    this.finished = true;
    if (this.watched) this.readNew();
    this.compact();
    const end = safeSize(this.log, this.offset);
    if (!this.watched) this.offset = Math.max(this.offset, end - this.tail.capacityBytes);
    this.readNew();
    return this.offset - this.startOffset + this.removed;
  }
}

/**
 * Ends a step on its timeout, abort, idle timeout, final event or memory cap: SIGTERM to its process group (and,
 * unsandboxed, everything under its cookie), SIGKILL after the grace period. Polls the log every TAIL_POLL_MS while
 * the step is watched, capped or in a cgroup. Its flags say why the step was stopped.
 */
class StepStopper {
  timedOut = false;
  cancelled = false;
  stalled = false;
  stoppedAfterFinal = false;
  outOfMemory = false;
  private killTimer: NodeJS.Timeout | undefined;
  private finalSeenAt: number | null = null;
  private isEnded = false;
  private readonly timer: NodeJS.Timeout;
  private readonly poll: NodeJS.Timeout | undefined;
  private readonly guard: NodeJS.Timeout | undefined;
  private readonly onAbort = () => {
    this.cancelled = true;
    this.stopGroup();
  };

  constructor(
    private readonly opts: SuperviseOptions,
    private readonly pid: number,
    private readonly cookie: string,
    startedAt: number,
    output: LogFollower,
    cgroup: StepCgroup | null,
  ) {
    this.timer = setTimeout(
      () => {
        this.timedOut = true;
        this.stopGroup();
      },
      timerDelay(opts.timeoutMs - (Date.now() - startedAt)),
    );
    const watched = Boolean(opts.onOutput || opts.idleTimeoutMs || opts.finalEvent);
    this.poll =
      watched || output.cap || cgroup
        ? setInterval(() => {
            if (watched) output.readNew();
            output.keepWithinCap();
            // Over its memory cap: the kernel killed a process of the step; the rest of it is ended too.
            if (cgroup && !this.outOfMemory && cgroup.oomKills() > 0) {
              this.outOfMemory = true;
              cgroup.killAll();
            }
          }, TAIL_POLL_MS)
        : undefined;
    this.guard = opts.idleTimeoutMs || opts.finalEvent ? setInterval(() => this.checkIdle(output), GUARD_TICK_MS) : undefined;
    if (opts.signal?.aborted) this.onAbort();
    opts.signal?.addEventListener('abort', this.onAbort);
  }

  /** Stops a step silent for longer than `idleTimeoutMs`, or one still running `finalEvent.graceMs` after its final event. */
  private checkIdle(output: LogFollower): void {
    const { opts } = this;
    const now = Date.now();
    if (opts.idleTimeoutMs && now - output.lastOutputAt > opts.idleTimeoutMs && !this.killTimer) {
      this.stalled = true;
      this.stopGroup();
    }
    if (opts.finalEvent && this.finalSeenAt === null && opts.finalEvent.seen()) this.finalSeenAt = now;
    if (opts.finalEvent && this.finalSeenAt !== null && now - this.finalSeenAt > opts.finalEvent.graceMs && !this.killTimer) {
      this.stoppedAfterFinal = true;
      this.stopGroup();
    }
  }

  /** Unsandboxed: every process carrying this step's cookie, wherever it moved. */
  private killDescendants(sig: NodeJS.Signals): void {
    if (!this.opts.sandbox) killByCookie(this.cookie, sig);
  }

  private stopGroup(): void {
    if (this.isEnded || this.killTimer) return;
    signalGroup(this.pid, 'SIGTERM');
    this.killDescendants('SIGTERM');
    this.killTimer = setTimeout(() => {
      signalGroup(this.pid, 'SIGKILL');
      this.killDescendants('SIGKILL');
    }, this.opts.killGraceMs ?? KILL_GRACE_MS);
  }

  /** The step's leader has exited (`lost`: the spawn helper died before it could say how). */
  ended(lost: boolean): void {
    this.isEnded = true;
    if (lost) {
      // The helper died under the step: a sandboxed step died with it; an unsandboxed one is ended from here.
      signalGroup(this.pid, 'SIGKILL');
      this.killDescendants('SIGKILL');
    }
  }

  /** Clears every timer and the abort listener. */
  dispose(): void {
    clearTimeout(this.timer);
    clearInterval(this.guard);
    clearInterval(this.poll);
    if (this.killTimer) clearTimeout(this.killTimer);
    this.opts.signal?.removeEventListener('abort', this.onAbort);
  }
}

/** The size of an open file, or `fallback` when it cannot be read. */
function safeSize(fd: number, fallback: number): number {
  try {
    return fs.fstatSync(fd).size;
  } catch {
    return fallback;
  }
}

/**
 * Why the log may not hold everything the step printed, or null: the helper died under the step, or the log's
 * filesystem is full (the step's own writes then failed with ENOSPC; this process never saw them).
 */
function logProblem(logFile: string, lost: string | undefined): string | null {
  if (lost) return `${lost}; the step was killed`;
  try {
    const st = fs.statfsSync(path.dirname(logFile));
    if (st.bavail === 0) return `${logFile}: no space left on device; output may be missing from the log`;
  } catch {
    // no statfs here: nothing known
  }
  return null;
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

/**
 * Sends `sig` to process group `pgid`; a group that is already gone is not an error. A pgid that is not an integer
 * above 1 is ignored: kill(2) reads -1 as "every process this user may signal" and 0 as "this process's own group", so
 * a pid read from a file (a state file a repository or another user planted) must never reach it as 1 or 0.
 */
export function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  if (!Number.isInteger(pgid) || pgid <= 1) return;
  try {
    process.kill(-pgid, sig);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}

/**
 * A sandboxed step's whole environment: ours and the step's, without what reaches the user's own sessions — unless the
 * variable names a socket the user's config declares (`declared`: SSH_AUTH_SOCK for a declared agent socket).
 */
function sandboxEnv(env: NodeJS.ProcessEnv, declared: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && (!SESSION_ENV.includes(k) || declared.some((d) => v.includes(d)))) out[k] = v;
  return out;
}

/** The environment without unset entries. */
function definedEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
