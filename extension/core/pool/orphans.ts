/**
 * Crash recovery of a pool worker's sandboxes. A pool worker records each sandbox's init (PID 1 of a step's PID
 * namespace) in the worker journal beside its attempt's state file, `<home>/runs/<run>/tasks/<key>/workers.jsonl`
 * (pool/worker.ts runJob), as a local run does beside its state.json; no run-level reconcile reads those folders (a
 * pool run has no state.json on a worker). A step that traced its init and cleared its parent-death signal outlives
 * a pool worker SIGKILLed together with its spawn helper, with the engine's state dirs writable: the next start of a
 * pool worker on that home kills it here (run/reconcile.ts killSandboxInits: pid and start time must both match).
 */
import fs from 'node:fs';
import path from 'node:path';
import { runDir } from '../config/home';
import { pidAlive } from '../live/registry';
import { readSandboxInits, workerJournalFile } from '../live/worker-journal';
import { killSandboxInits } from '../run/reconcile';
import { readDirOrEmpty } from '../fs/read-dir';

/**
 * SIGKILLs the recorded sandbox inits still alive in the task folders of `home` whose attempt states (`state-<n>.json`)
 * are all ended or left by a dead worker of host `host` (status `running`, pid gone); a folder with an attempt still
 * running under a live pid, or of another host, is left alone. Never throws (an unreadable folder is skipped).
 * @returns the pids killed
 */
export function killOrphanedSandboxes(home: string, host: string): number[] {
  const killed: number[] = [];
  for (const run of readDirOrEmpty(path.join(home, 'runs'))) {
    for (const key of readDirOrEmpty(path.join(runDir(home, run), 'tasks'))) {
      const dir = path.join(runDir(home, run), 'tasks', key);
      const states = readDirOrEmpty(dir)
        .filter((f) => /^state-\d+\.json$/.test(f))
        .map((f) => readAttemptState(path.join(dir, f)));
      const orphaned = states.some((s) => s?.status === 'running' && s.host === host && !pidAlive(s.pid));
      const busy = states.some((s) => s === null || (s.status === 'running' && (s.host !== host || pidAlive(s.pid))));
      if (!orphaned || busy) continue;
      killed.push(...killSandboxInits(readSandboxInits(workerJournalFile(path.join(dir, 'state.json')))));
    }
  }
  return killed;
}

/** The fields read of an attempt's state file; null when unreadable (being written: the folder is then left alone). */
function readAttemptState(file: string): { status: unknown; host: unknown; pid: number } | null {
  try {
    const s = JSON.parse(fs.readFileSync(file, 'utf8')) as { status?: unknown; host?: unknown; pid?: unknown };
    return typeof s.pid === 'number' ? { status: s.status, host: s.host, pid: s.pid } : null;
  } catch {
    return null;
  }
}
