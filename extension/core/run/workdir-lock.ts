/**
 * One run per plain-mode workdir at a time (issue 12): two runs sharing `<workdir>` would see each other's files (a
 * lying worker passing on the other run's output) and the second would move the first one's task dirs aside. The
 * lock is proper-lockfile's (`<workdir>/.verdict-run.lock`, refreshed while the run lives, stale 30 s after its
 * orchestrator stops refreshing it), with who holds it in `<workdir>/.verdict-run.json`. Task keys never start with a
 * dot, so neither name can be a task dir.
 */
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';

/** Who holds a workdir. Times epoch ms. */
export interface WorkdirHolder {
  runId: string;
  pid: number;
  identity: string;
  host: string;
  since: number;
}

/** The workdir is in use by another run; the message names it, its pid, identity and host. Nothing was touched. */
export class WorkdirBusyError extends Error {
  constructor(readonly workdir: string, readonly holder: WorkdirHolder | null) {
    super(
      holder
        ? `workdir ${workdir} is in use by run ${holder.runId} (pid ${holder.pid}, identity ${holder.identity}, host ${holder.host}); one run per plain-mode workdir at a time: wait for it to finish, or give this manifest another "workdir"`
        : `workdir ${workdir} is in use by another run (its lock ${path.join(workdir, '.verdict-run.lock')} is held); wait for it to finish, or give this manifest another "workdir"`,
    );
    this.name = 'WorkdirBusyError';
  }
}

/**
 * Takes `workdir` for this run (creating the folder). Returns the release function (idempotent, never throws).
 * @throws WorkdirBusyError when another live run holds it; Error when the folder cannot be created
 */
export async function lockWorkdir(workdir: string, holder: WorkdirHolder): Promise<() => Promise<void>> {
  fs.mkdirSync(workdir, { recursive: true });
  const info = path.join(workdir, '.verdict-run.json');
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(workdir, {
      lockfilePath: path.join(workdir, '.verdict-run.lock'),
      stale: 30_000,
      update: 10_000,
      realpath: false,
      // A lost refresh (a machine that slept) must not crash the run: the records are still ours to finish.
      onCompromised: () => undefined,
    });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ELOCKED') throw e;
    let held: WorkdirHolder | null = null;
    try {
      held = JSON.parse(fs.readFileSync(info, 'utf8')) as WorkdirHolder;
    } catch {
      // the holder has not written who it is yet
    }
    throw new WorkdirBusyError(workdir, held);
  }
  fs.writeFileSync(info, JSON.stringify(holder, null, 1));
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    fs.rmSync(info, { force: true });
    await release().catch(() => undefined);
  };
}
