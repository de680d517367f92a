/**
 * The orchestrator's side of the spawn helper (spawn-helper.cjs; docs/architecture.md "Spawning"). libuv starts a
 * child with fork on Linux, synchronously on the event loop, and the cost of a fork grows with the forking process's
 * memory: every step's spawn used to stall the orchestrator (a large process) for milliseconds. Instead one small
 * helper process, started on the first spawn and living as long as the orchestrator, starts every step's process; the
 * orchestrator only writes a request line and later reads the replies. The child's stdout and stderr are the log file
 * itself (opened by the helper), so no output passes through the orchestrator; the supervisor tails the file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
  /** Files opened read-only as the child's fds 3, 4, … in this order (bubblewrap's `--file FD`). */
  files?: string[];
  /**
   * Unsandboxed steps: when the child exits, every process whose environment carries `VERDICT_STEP_COOKIE=<cookie>`
   * is killed (by the helper, off the orchestrator's event loop), again `sweepAgainMs` later when given.
   */
  cookie?: string;
  sweepAgainMs?: number;
  /** A sandboxed step: its process group is killed when the helper ends (the orchestrator died). */
  dieWithHelper?: boolean;
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
}

interface Waiter {
  started: (s: { pid: number; startTime: string | null }) => void;
  failed: (message: string) => void;
  ended: (e: SpawnExit) => void;
  pid: number | null;
}

/** The helper program: beside the bundle (dist/, where esbuild.mjs copies it), else beside this source file (seen from the sources, or from a bundle one or two folders below the root: out/integration). */
function helperProgram(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.join(here, 'spawn-helper.cjs'), path.join(here, '..', 'extension', 'core', 'process', 'spawn-helper.cjs'), path.join(here, '..', '..', 'extension', 'core', 'process', 'spawn-helper.cjs')]) {
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`the spawn helper (spawn-helper.cjs) is missing beside ${here}; rebuild with \`node esbuild.mjs\``);
}

class SpawnHelper {
  private readonly child: ChildProcess;
  private readonly waiters = new Map<number, Waiter>();
  private nextId = 1;
  private buffered = '';
  dead: string | null = null;

  constructor() {
    // Its own session: a Ctrl-C in the terminal reaches the orchestrator (which stops the steps in order), not the
    // helper. Under VS Code's Electron, process.execPath runs as plain Node only with ELECTRON_RUN_AS_NODE.
    this.child = spawn(process.execPath, [helperProgram()], {
      stdio: ['pipe', 'pipe', 'inherit'],
      detached: true,
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
    });
    this.child.stdout?.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.stdin?.on('error', () => undefined);
    this.child.on('error', (e) => this.die(`the spawn helper could not start: ${e.message}`));
    this.child.on('exit', (code, signal) => this.die(`the spawn helper exited (${signal ?? `exit ${code}`}) while the step ran`));
    this.idle();
  }

  request(req: SpawnRequest): Promise<Spawned> {
    if (this.dead) return Promise.reject(new Error(this.dead));
    const id = this.nextId++;
    let ended!: (e: SpawnExit) => void;
    const exited = new Promise<SpawnExit>((resolve) => (ended = resolve));
    const started = new Promise<Spawned>((resolve, reject) => {
      this.waiters.set(id, {
        started: (s) => resolve({ ...s, exited }),
        failed: (message) => reject(new Error(message)),
        ended,
        pid: null,
      });
    });
    this.busy();
    this.child.stdin?.write(`${JSON.stringify({ id, ...req })}\n`);
    return started;
  }

  private onData(chunk: Buffer): void {
    this.buffered += chunk.toString('utf8');
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) !== -1) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      let msg: { id: number; pid?: number; startTime?: string | null; error?: string; exit?: number | null; signal?: string | null };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        continue;
      }
      const w = this.waiters.get(msg.id);
      if (!w) continue;
      if (msg.error !== undefined) {
        this.waiters.delete(msg.id);
        w.failed(msg.error);
      } else if (msg.pid !== undefined) {
        w.pid = msg.pid;
        w.started({ pid: msg.pid, startTime: msg.startTime ?? null });
      } else if ('exit' in msg) {
        this.waiters.delete(msg.id);
        w.ended({ code: msg.exit ?? null, signal: msg.signal ?? null });
      }
    }
    if (this.waiters.size === 0) this.idle();
  }

  private die(reason: string): void {
    if (this.dead) return;
    this.dead = reason;
    for (const w of this.waiters.values()) {
      if (w.pid === null) w.failed(reason);
      else w.ended({ code: null, signal: null, lost: reason });
    }
    this.waiters.clear();
    if (helper === this) helper = null;
  }

  /** While a request is outstanding the helper's pipe keeps the orchestrator's event loop alive. */
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

  get pid(): number | undefined {
    return this.child.pid;
  }
}

let helper: SpawnHelper | null = null;

/**
 * Starts a process through the helper (started on first use, restarted if it died). Resolves once the process exists.
 * @throws Error with the OS error when it could not be started (`spawn FILE ENOENT`, a log that cannot be opened),
 *   or the reason the helper is gone
 */
export function spawnViaHelper(req: SpawnRequest): Promise<Spawned> {
  if (!helper || helper.dead) helper = new SpawnHelper();
  return helper.request(req);
}

/**
 * Starts the helper now if none runs, so its start-up (a Node process) overlaps other work instead of delaying the
 * first spawn. Idle, it keeps nothing alive: the orchestrator's exit ends it.
 */
export function startSpawnHelper(): void {
  if (!helper || helper.dead) helper = new SpawnHelper();
}

/** The running helper's pid, or null when none runs (tests look at it). */
export function spawnHelperPid(): number | null {
  return helper && !helper.dead ? (helper.pid ?? null) : null;
}
