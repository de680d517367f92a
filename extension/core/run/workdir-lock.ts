/**
 * Folders one orchestrator holds at a time, with proper-lockfile (`<folder>/.verdict-run.lock`, refreshed while the run
 * lives, stale 30 s after its orchestrator stops refreshing it) and who holds it in `<folder>/.verdict-run.json`:
 * - a plain-mode workdir: two runs sharing `<workdir>` would see each other's files (a lying worker passing
 *   on the other run's output) and the second would move the first one's task dirs aside. Task keys never start with
 *   a dot, so neither name can be a task dir;
 * - a run's own folder `runs/<run_id>/`: `verdict resume` and `verdict rerun` of a run that ended start an
 *   orchestrator on the same run id, and two of them at once would run every task twice.
 * A holder on this host whose process is gone (its pid dead, or reused: the start time differs) does not hold the
 * folder any more, even before the lock goes stale: an orchestrator killed with SIGKILL is resumed at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { shortHost } from '../host/hostname';
import { processStartTime } from '../process/start-time';

/** Who holds a folder. Times epoch ms. */
export interface WorkdirHolder {
  runId: string;
  pid: number;
  identity: string;
  host: string;
  since: number;
  /** The holder's start time (/proc/<pid>/stat field 22), to tell a reused pid; absent in older files. */
  startTime?: string | null;
}

/** The workdir is in use by another run; the message names it, its pid, identity and host. Nothing was touched. */
export class WorkdirBusyError extends Error {
  constructor(
    readonly workdir: string,
    readonly holder: WorkdirHolder | null,
  ) {
    super(
      holder
        ? `workdir ${workdir} is in use by run ${holder.runId} (pid ${holder.pid}, identity ${holder.identity}, host ${holder.host}); one run per plain-mode workdir at a time: wait for it to finish, or give this manifest another "workdir"`
        : `workdir ${workdir} is in use by another run (its lock ${path.join(workdir, '.verdict-run.lock')} is held); wait for it to finish, or give this manifest another "workdir"`,
    );
    this.name = 'WorkdirBusyError';
  }
}

/** Another orchestrator works on this run now; the message names its pid, identity, host and since when. */
export class RunBusyError extends Error {
  constructor(
    readonly runId: string,
    readonly holder: WorkdirHolder | null,
  ) {
    super(
      holder
        ? `run ${runId} is being orchestrated by pid ${holder.pid} (identity ${holder.identity}, host ${holder.host}, since ${new Date(holder.since).toISOString()}); one orchestrator per run: control that one (verdict pause|drain|stop|rerun ${runId}) or wait for it to end`
        : `run ${runId} is being orchestrated by another process (its lock is held); wait for it to end`,
    );
    this.name = 'RunBusyError';
  }
}

/**
 * Takes `workdir` for this run (creating the folder). Returns the release function (idempotent, never throws).
 * @throws WorkdirBusyError when another live run holds it; Error when the folder cannot be created
 */
export function lockWorkdir(workdir: string, holder: WorkdirHolder): Promise<() => Promise<void>> {
  return lockFolder(workdir, holder, (held) => new WorkdirBusyError(workdir, held));
}

/**
 * Takes the run's folder `runs/<run_id>/` for this orchestrator (every `verdict run`, `resume` and `rerun` holds it
 * while it runs). Returns the release function (idempotent, never throws).
 * @throws RunBusyError when another live orchestrator holds it
 */
export function lockRun(runFolder: string, holder: WorkdirHolder): Promise<() => Promise<void>> {
  return lockFolder(runFolder, holder, (held) => new RunBusyError(holder.runId, held));
}

/** This process as a holder: pid and its start time. */
export function selfHolder(runId: string, identity: string): WorkdirHolder {
  return { runId, pid: process.pid, identity, host: shortHost(), since: Date.now(), startTime: processStartTime(process.pid) };
}

async function lockFolder(folder: string, holder: WorkdirHolder, busy: (held: WorkdirHolder | null) => Error): Promise<() => Promise<void>> {
  fs.mkdirSync(folder, { recursive: true });
  const info = path.join(folder, '.verdict-run.json');
  const lockPath = path.join(folder, '.verdict-run.lock');
  const take = () =>
    lockfile.lock(folder, {
      lockfilePath: lockPath,
      stale: 30_000,
      update: 10_000,
      realpath: false,
      // A lost refresh (a machine that slept) must not crash the run: the records are still ours to finish.
      onCompromised: () => undefined,
    });
  let release: () => Promise<void>;
  try {
    release = await take();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ELOCKED') throw e;
    const held = await awaitHolder(info);
    if (!held || !holderGone(held)) throw busy(held);
    // Its holder died on this host (SIGKILL leaves the lock fresh for up to 30 s): the folder is free.
    fs.rmSync(lockPath, { recursive: true, force: true });
    try {
      release = await take();
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code !== 'ELOCKED') throw again;
      throw busy(readHolder(info));
    }
  }
  // Written beside, then renamed: a process refused meanwhile reads the whole holder or none.
  const tmp = `${info}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(holder, null, 1));
  fs.renameSync(tmp, info);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    fs.rmSync(info, { force: true });
    await release().catch(() => undefined);
  };
}

/** How long a refused process waits for the lock's new holder to say who it is, ms (it writes that just after taking it). */
const HOLDER_WAIT_MS = 2000;

/** The holder of a lock that was just found held: waits up to HOLDER_WAIT_MS for it to write who it is; null if it never does. */
async function awaitHolder(info: string): Promise<WorkdirHolder | null> {
  const until = Date.now() + HOLDER_WAIT_MS;
  for (;;) {
    const held = readHolder(info);
    if (held || Date.now() >= until) return held;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function readHolder(info: string): WorkdirHolder | null {
  try {
    return JSON.parse(fs.readFileSync(info, 'utf8')) as WorkdirHolder;
  } catch {
    return null; // the holder has not written who it is yet
  }
}

/** A holder on this host whose process no longer exists (or whose pid now names another process). */
export function holderGone(held: Pick<WorkdirHolder, 'host' | 'pid' | 'startTime'>): boolean {
  if (held.host !== shortHost()) return false;
  const now = processStartTime(held.pid);
  // No /proc entry: gone, unless the system has no /proc (then only the signal-0 probe can tell).
  if (now === null) return !pidExists(held.pid);
  return held.startTime != null && held.startTime !== now;
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
