/**
 * The orchestrator's side of the spawn helper (spawn-helper.pl, or spawn-helper.cjs where there is no perl;
 * docs/spawning.md). libuv starts a child with fork on Linux, synchronously on the event loop, and the
 * cost of a fork grows with the forking process's memory: every step's spawn used to stall the orchestrator (a large
 * process) for milliseconds. Instead one small helper process, started on the first spawn and living as long as the
 * orchestrator, starts every step's process; the orchestrator only writes a request and later reads the replies. The
 * child's stdout and stderr are the log file itself (opened by the helper), or a socket or pipe the helper relays into
 * it (`relay`: readers and workers, capped logs), so no output passes through the orchestrator; the supervisor tails
 * the file. The protocol (described in spawn-helper.pl) is encoded and decoded here only: {@link encodeRequest},
 * {@link parseReply}.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import { findBinary } from '../../../engines/find-binary';

/** What to start. */
export interface SpawnRequest {
  /** Executable: an absolute path, or a name the helper's spawn looks up on `env.PATH`. */
  file: string;
  args: string[];
  cwd: string;
  /** The child's whole environment (nothing is inherited from the helper). */
  env: Record<string, string>;
  /** stdout and stderr are this file, opened for appending (created if missing). */
  log: string;
  /** stderr is this file instead of `log`, opened for appending (created if missing): output that is parsed. */
  errLog?: string;
  /** stdin is this file, opened read-only, instead of /dev/null: a command's input (`git cat-file --batch`). */
  stdin?: string;
  /**
   * stdout (and stderr, unless `errLog`) are one end of a unix socket pair instead of the log; the helper appends
   * what arrives on the other end to `log` as it comes (at most 64 KiB held at a time) and, once the child has exited
   * (sandboxed: once its init and so every process of the sandbox is gone), reads what is left before it reports the
   * exit, then closes its end. No process of the step can reach the log itself: `open("/proc/<pid>/fd/1")` of a socket
   * fails with ENXIO (a file or a pipe would be opened again), and nothing written after the exit report lands. A
   * reader's engine runs so (docs/containment.md "Readers"): code it runs cannot write into the output its answer is
   * read from; so does a worker's (its usage is read from it). `'pipe'`: the same through a pipe, which the step may
   * open again through /proc/<pid>/fd/1 (/dev/stdout) or /dev/stderr and so write into the relay (the Node helper,
   * without pipe(2), makes a FIFO next to the log and removes it once open; where it cannot, its socket). Either way
   * the helper is the log's one writer, which {@link Spawned.hold} needs (a capped log: log-cap.ts).
   */
  relay?: boolean | 'pipe';
  /** Files opened read-only as the child's fds 3, 4, … in this order (bubblewrap's `--file FD`). */
  files?: string[];
  /**
   * Unsandboxed steps: when the child exits, every process whose environment carries `VERDICT_STEP_COOKIE=<cookie>`
   * is killed (by the helper, off the orchestrator's event loop), again at least `sweepAgainMs` later when given (on
   * a whole second of the clock, so the second sweeps of steps that ended within the same second are one pass over /proc).
   */
  cookie?: string;
  sweepAgainMs?: number;
  /** A sandboxed step: its process group is killed when the helper ends (the orchestrator died). */
  dieWithHelper?: boolean;
  /**
   * `file` is bubblewrap run with `--info-fd <3 + files.length>` ({@link bwrapCommand}'s `infoFd`): the helper makes
   * that fd a pipe, reads the sandbox's init pid from it while bwrap runs, and when bwrap exits kills that init (and so
   * every process of the sandbox's PID namespace) before it reports the exit. The perl helper holds a pidfd of the
   * init; the Node helper checks its /proc start time before the kill. docs/containment.md.
   */
  sandboxInit?: boolean;
  /**
   * With `sandboxInit`: the path of slirp4netns. bwrap runs with `--unshare-net` and `--block-fd <4 + files.length>`
   * ({@link bwrapCommand}'s `netstack`); the helper starts slirp4netns on the sandbox's network namespace once it holds
   * the init, lets the step start when the network is up, and kills slirp4netns when the step ends (or stops the step,
   * a line in its log saying why, when slirp4netns fails). spawn-helper.pl's header says how.
   */
  netstack?: string;
  /**
   * A cgroup's `cgroup.procs` file (memory-cap.ts): the child writes its own pid there before it execs `file`, so the
   * step and everything it starts is in that cgroup from its first instruction. The perl helper writes it between fork
   * and exec, and reports a refused write as a spawn error ("cannot join the memory cgroup"); the Node helper, which
   * cannot run code there, puts a `/bin/sh` in front that writes it and execs (exit 125 with that line in the log when
   * refused). Either way the step never runs outside it.
   */
  cgroupProcs?: string;
  /**
   * With `sandboxInit`: called once the helper has found the sandbox's init and holds it (its pid and /proc start
   * time), so the caller can record it where crash recovery finds it (a SIGKILL of the helper itself leaves nothing
   * else to kill an init whose step cleared its parent-death signal: run/reconcile.ts). Not sent to the helper.
   */
  onInit?: (init: { pid: number; startTime: string | null }) => void;
}

/** How a started process ended: Node's (code, signal) pair; `lost` when the helper died before it could say. */
export interface SpawnExit {
  code: number | null;
  signal: string | null;
  /** Set when the helper died while the process ran: the reason; code and signal are then null. */
  lost?: string;
}

/** A process the helper started. */
export interface Spawned {
  /** Its pid, which is also its process group id and session id. */
  pid: number;
  /** /proc/<pid>/stat field 22 read right after the start, or null. */
  startTime: string | null;
  /** Resolves once it has ended and what it left in its group (and, unsandboxed, under its cookie) was killed. */
  exited: Promise<SpawnExit>;
  /**
   * A relayed step (SpawnRequest.relay): resolves once the helper has stopped writing its output into the log (the step
   * blocks when the relay is full) until {@link release}; its exit is not reported meanwhile. Also resolves when the
   * step has ended or the helper is gone (nothing writes the log then). Without a relay the log is the step's own
   * stdout and nothing is held.
   */
  hold(): Promise<void>;
  /** Ends a {@link hold}: the helper writes what the step printed meanwhile, and reports an exit held back. */
  release(): void;
}

/** Which helper program runs: `perl` (spawn-helper.pl, the default where perl and pidfd_open exist) or `node`. */
export type HelperKind = 'perl' | 'node';

/** What the running helper said about itself (its first line), and why it is not the perl one when it is not. */
export interface HelperInfo {
  kind: HelperKind;
  /** The interpreter's version (`v5.36.0`, `v20.20.2`). */
  version: string;
  /** The interpreter's path. */
  binary: string;
  /** Why the Node helper runs instead of the perl one (no perl on PATH, no pidfd_open, VERDICT_SPAWN_HELPER), or null. */
  fallback: string | null;
}

/**
 * One request on the wire: `<bytes>\n` then the NUL-separated fields (spawn-helper.pl's header says their order).
 * @throws Error naming the field when a string holds a NUL byte (no argv, environment or path can carry one)
 */
export function encodeRequest(id: number, req: SpawnRequest): string {
  const files = req.files ?? [];
  const keys = Object.keys(req.env);
  let payload = `${id}\0${req.file}\0${req.cwd}\0${req.log}\0${req.cookie ?? ''}\0${req.sweepAgainMs === undefined ? '' : Math.round(req.sweepAgainMs)}\0${req.dieWithHelper ? '1' : ''}\0${req.sandboxInit ? '1' : ''}\0${req.errLog ?? ''}\0${req.stdin ?? ''}\0${req.relay === 'pipe' ? 'pipe' : req.relay ? '1' : ''}\0${req.netstack ?? ''}\0${req.cgroupProcs ?? ''}\0${req.args.length}`;
  for (const a of req.args) payload += `\0${a}`;
  payload += `\0${keys.length}`;
  for (const k of keys) payload += `\0${k}=${req.env[k]}`;
  payload += `\0${files.length}`;
  for (const f of files) payload += `\0${f}`;
  // As many NULs as separators, or a value holds one: found and named (the slow path, for the error only).
  let nuls = 0;
  for (let at = payload.indexOf('\0'); at !== -1; at = payload.indexOf('\0', at + 1)) nuls++;
  if (nuls !== 15 + req.args.length + keys.length + files.length) {
    const env = keys.map((k) => `${k}=${req.env[k]}`);
    const where = [
      ['file', [req.file]],
      ['cwd', [req.cwd]],
      ['log', [req.log]],
      ['cookie', [req.cookie ?? '']],
      ['errLog', [req.errLog ?? '']],
      ['stdin', [req.stdin ?? '']],
      ['netstack', [req.netstack ?? '']],
      ['cgroupProcs', [req.cgroupProcs ?? '']],
      ['args', req.args],
      ['env', env],
      ['files', files],
    ] as const;
    for (const [name, values] of where) {
      const i = values.findIndex((v) => v.includes('\0'));
      if (i !== -1) throw new Error(`spawn ${req.file}: a NUL byte in ${name}${name === 'args' || name === 'env' || name === 'files' ? `[${i}]` : ''}`);
    }
  }
  return `${Buffer.byteLength(payload)}\n${payload}`;
}

const SIGNAL_NAMES = new Map<number, string>(Object.entries(os.constants.signals).map(([name, n]) => [n, name]));

/** One reply line from a helper, decoded; null for a line that is none of them. */
export type Reply =
  | { type: 'ready'; kind: HelperKind; version: string }
  | { type: 'unsupported'; reason: string }
  | { type: 'pid'; id: number; pid: number; startTime: string | null }
  | { type: 'init'; id: number; pid: number; startTime: string | null }
  | { type: 'error'; id: number; message: string }
  | { type: 'exit'; id: number; code: number | null; signal: string | null }
  | { type: 'held'; id: number };

/** Decodes one reply line (without its newline). Pure. Signal numbers become Node's names (9 → "SIGKILL"). */
export function parseReply(line: string): Reply | null {
  const sp = line.indexOf(' ');
  const head = sp === -1 ? line : line.slice(0, sp);
  const rest = sp === -1 ? '' : line.slice(sp + 1);
  if (head === 'ready') {
    const [kind, version = ''] = rest.split(' ');
    return kind === 'perl' || kind === 'node' ? { type: 'ready', kind, version } : null;
  }
  if (head === 'unsupported') return { type: 'unsupported', reason: rest };
  const id = Number(head);
  if (!Number.isInteger(id)) return null;
  const sp2 = rest.indexOf(' ');
  const kind = sp2 === -1 ? rest : rest.slice(0, sp2);
  const more = sp2 === -1 ? '' : rest.slice(sp2 + 1);
  if (kind === 'error') return { type: 'error', id, message: more };
  if (kind === 'held') return { type: 'held', id };
  const [a = '-', b = '-'] = more.split(' ');
  if (kind === 'pid' || kind === 'init') return { type: kind, id, pid: Number(a), startTime: b === '-' ? null : b };
  if (kind === 'exit')
    return { type: 'exit', id, code: a === '-' ? null : Number(a), signal: b === '-' ? null : (SIGNAL_NAMES.get(Number(b)) ?? `signal ${b}`) };
  return null;
}

interface Waiter {
  started: (s: { pid: number; startTime: string | null }) => void;
  failed: (message: string) => void;
  ended: (e: SpawnExit) => void;
  init?: (init: { pid: number; startTime: string | null }) => void;
  pid: number | null;
}

/** A helper program: beside the bundle (dist/, where esbuild.mjs copies it), else beside this source file (seen from the sources, or from a bundle one or two folders below the root: out/integration). */
function helperProgram(name: string): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [
    path.join(here, name),
    path.join(here, '..', 'extension', 'core', 'process', name),
    path.join(here, '..', '..', 'extension', 'core', 'process', name),
  ]) {
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`the spawn helper (${name}) is missing beside ${here}; rebuild with \`node esbuild.mjs\``);
}

/**
 * Which helper to start: `VERDICT_SPAWN_HELPER=node` forces the Node one; else perl on Linux when it is on PATH
 * (perl-base is Essential on Debian and Ubuntu, git needs it on most distributions), else Node. Returns the
 * interpreter's path and why not perl.
 */
function chooseHelper(env: NodeJS.ProcessEnv): { kind: HelperKind; binary: string; fallback: string | null } {
  const forced = env.VERDICT_SPAWN_HELPER;
  if (forced === 'node') return { kind: 'node', binary: process.execPath, fallback: 'VERDICT_SPAWN_HELPER=node' };
  if (process.platform !== 'linux')
    return { kind: 'node', binary: process.execPath, fallback: `the perl helper needs Linux (pidfd_open), not ${process.platform}` };
  const perl = findBinary('perl', env.PATH ?? '');
  if (perl) return { kind: 'perl', binary: perl, fallback: null };
  return { kind: 'node', binary: process.execPath, fallback: 'no perl on PATH' };
}

class SpawnHelper {
  private child!: ChildProcess;
  private readonly waiters = new Map<number, Waiter>();
  /** Holds asked for and not yet answered ("held"), by step id, in the order asked. */
  private readonly holds = new Map<number, Array<() => void>>();
  /** Requests written before the helper said it is ready: sent again to the Node helper if the perl one cannot run. */
  private early: string[] | null = [];
  private nextId = 1;
  private buffered = '';
  private decoder = new StringDecoder('utf8');
  private choice: { kind: HelperKind; binary: string; fallback: string | null };
  private readonly readyWaiters: Array<(info: HelperInfo | null) => void> = [];
  info: HelperInfo | null = null;
  dead: string | null = null;

  constructor() {
    this.choice = chooseHelper(process.env);
    this.launch();
  }

  private launch(): void {
    const { kind, binary } = this.choice;
    // Its own session: a Ctrl-C in the terminal reaches the orchestrator (which stops the steps in order), not the
    // helper. Under VS Code's Electron, process.execPath runs as plain Node only with ELECTRON_RUN_AS_NODE. Perl gets
    // no PERL5OPT / PERL5LIB of the user's (each step's environment travels in its request).
    const child = spawn(binary, [helperProgram(kind === 'perl' ? 'spawn-helper.pl' : 'spawn-helper.cjs')], {
      stdio: ['pipe', 'pipe', 'inherit'],
      detached: true,
      env: kind === 'perl' ? { PATH: process.env.PATH ?? '', LC_ALL: 'C' } : { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
    });
    this.child = child;
    this.buffered = '';
    this.decoder = new StringDecoder('utf8');
    child.stdout?.on('data', (chunk: Buffer) => {
      if (child === this.child) this.onData(chunk);
    });
    child.stdin?.on('error', () => undefined);
    child.on('error', (e) => {
      if (child !== this.child) return;
      if (this.perlFailed(`perl could not start: ${e.message}`)) return;
      this.die(`the spawn helper could not start: ${e.message}`);
    });
    child.on('exit', (code, signal) => {
      if (child !== this.child) return;
      const how = signal ?? `exit ${code}`;
      // Before it said it is ready, what it printed last (`unsupported …`) is read first: its stdout closes after the exit.
      if (this.choice.kind === 'perl' && !this.info)
        child.once('close', () => child === this.child && this.perlFailed(`perl exited before it was ready (${how})`));
      else this.die(`the spawn helper exited (${how}) while the step ran`);
    });
    for (const line of this.early ?? []) child.stdin?.write(line);
    // Until it has said it is ready, the helper keeps the orchestrator's event loop alive (a few ms).
    this.busy();
  }

  /**
   * The perl helper cannot run here (no pidfd_open, a broken perl) and has not said it is ready: the Node one takes
   * over, the requests written so far included. False when it is not that case.
   */
  private perlFailed(reason: string): boolean {
    if (this.choice.kind !== 'perl' || this.info) return false;
    this.choice = { kind: 'node', binary: process.execPath, fallback: reason };
    this.launch();
    return true;
  }

  request(req: SpawnRequest): Promise<Spawned> {
    if (this.dead) return Promise.reject(new Error(this.dead));
    const id = this.nextId++;
    let line: string;
    try {
      line = encodeRequest(id, req);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    let ended!: (e: SpawnExit) => void;
    const exited = new Promise<SpawnExit>((resolve) => (ended = resolve));
    const started = new Promise<Spawned>((resolve, reject) => {
      this.waiters.set(id, {
        started: (s) => resolve({ ...s, exited, hold: () => this.hold(id), release: () => this.control(`release ${id}`) }),
        failed: (message) => reject(new Error(message)),
        ended,
        ...(req.onInit ? { init: req.onInit } : {}),
        pid: null,
      });
    });
    this.busy();
    this.early?.push(line);
    this.child.stdin?.write(line);
    return started;
  }

  /** Asks the helper to hold step `id`'s relayed output (Spawned.hold); resolves at its "held", or when it dies. */
  private hold(id: number): Promise<void> {
    if (this.dead) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.holds.get(id) ?? [];
      list.push(resolve);
      this.holds.set(id, list);
      this.busy();
      this.control(`hold ${id}`);
    });
  }

  /** Writes a control line ("hold ID", "release ID": spawn-helper.pl's header) unless the helper is gone. */
  private control(line: string): void {
    if (!this.dead) this.child.stdin?.write(`${line}\n`);
  }

  /** Resolves with what the helper said about itself once it has (null when it died first). */
  ready(): Promise<HelperInfo | null> {
    if (this.info || this.dead) return Promise.resolve(this.info);
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  private onData(chunk: Buffer): void {
    // A character split across two chunks (a non-ASCII path in an error reply) is decoded whole.
    this.buffered += this.decoder.write(chunk);
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) !== -1) {
      const msg = parseReply(this.buffered.slice(0, nl));
      this.buffered = this.buffered.slice(nl + 1);
      if (!msg) continue;
      if (msg.type === 'unsupported') {
        this.perlFailed(`perl: ${msg.reason}`);
        return;
      }
      if (msg.type === 'ready') {
        this.early = null;
        this.info = { kind: msg.kind, version: msg.version, binary: this.choice.binary, fallback: this.choice.fallback };
        for (const r of this.readyWaiters.splice(0)) r(this.info);
        if (this.waiters.size === 0) this.idle();
        continue;
      }
      if (msg.type === 'held') {
        const list = this.holds.get(msg.id);
        list?.shift()?.();
        if (list?.length === 0) this.holds.delete(msg.id);
        continue;
      }
      const w = this.waiters.get(msg.id);
      if (!w) continue;
      if (msg.type === 'error') {
        this.waiters.delete(msg.id);
        w.failed(msg.message);
      } else if (msg.type === 'init') {
        w.init?.({ pid: msg.pid, startTime: msg.startTime });
      } else if (msg.type === 'pid') {
        w.pid = msg.pid;
        w.started({ pid: msg.pid, startTime: msg.startTime });
      } else {
        this.waiters.delete(msg.id);
        w.ended({ code: msg.code, signal: msg.signal });
      }
    }
    if (this.waiters.size === 0 && this.holds.size === 0 && this.info) this.idle();
  }

  private die(reason: string): void {
    if (this.dead) return;
    this.dead = reason;
    for (const w of this.waiters.values()) {
      if (w.pid === null) w.failed(reason);
      else w.ended({ code: null, signal: null, lost: reason });
    }
    this.waiters.clear();
    for (const list of this.holds.values()) for (const resolve of list) resolve();
    this.holds.clear();
    for (const r of this.readyWaiters.splice(0)) r(null);
    if (helper === this) helper = null;
  }

  /** While a request is outstanding, or the helper has not yet said it is ready, its pipe keeps the orchestrator's event loop alive. */
  private busy(): void {
    this.child.ref();
    (this.child.stdout as unknown as { ref?: () => void } | null)?.ref?.();
  }

  /** Idle, the helper never keeps the orchestrator alive; the orchestrator's exit ends the helper (stdin EOF). */
  private idle(): void {
    this.child.unref();
    (this.child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    (this.child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  }

  /** Ends this helper (its stdin closes; it kills its sandboxed steps' groups and exits). */
  stop(): void {
    this.die('the spawn helper was stopped');
    this.child.stdin?.end();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }
}

let helper: SpawnHelper | null = null;

/**
 * Starts a process through the helper (started on first use, restarted if it died). Resolves once the process exists.
 * @throws Error with the OS error when it could not be started (`spawn FILE ENOENT`, a log that cannot be opened:
 *   `ENOENT: no such file or directory, open 'LOG'`), a NUL byte in a field, or the reason the helper is gone
 */
export function spawnViaHelper(req: SpawnRequest): Promise<Spawned> {
  if (!helper || helper.dead) helper = new SpawnHelper();
  return helper.request(req);
}

/**
 * Starts the helper now if none runs, so its start-up overlaps other work instead of delaying the first spawn. Idle,
 * it keeps nothing alive: the orchestrator's exit ends it.
 */
export function startSpawnHelper(): void {
  if (!helper || helper.dead) helper = new SpawnHelper();
}

/**
 * Which helper runs (starting one if none does), once it has said so: for `verdict doctor` and the run's header.
 * Null when it could not start.
 */
export async function spawnHelperInfo(): Promise<HelperInfo | null> {
  startSpawnHelper();
  return (helper as SpawnHelper).ready();
}

/** Ends the running helper, if any; the next spawn starts a new one (chosen again from VERDICT_SPAWN_HELPER and PATH). */
export function stopSpawnHelper(): void {
  helper?.stop();
  helper = null;
}

/** The running helper's pid, or null when none runs (tests look at it). */
export function spawnHelperPid(): number | null {
  return helper && !helper.dead ? (helper.pid ?? null) : null;
}
