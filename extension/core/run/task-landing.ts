/**
 * Merged and discarded as recorded states of a task (state.json `merged` / `discarded`, schemas/run-state.ts): what
 * the merge queue and discard did with a task's work after its verdict, so every view can show it and a second merge
 * changes nothing.
 */
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { withLock } from '../fs/lock';
import { describeRun, readState } from '../live/registry';
import type { TaskState } from '../live/state';
import { lockRun, RunBusyError, selfHolder } from './workdir-lock';

/**
 * Why the merge queue must leave `t` alone because of what was already done with it, as one line, or null:
 * "already merged into <branch> at <commit>", or discarded with the command that recovers its branch.
 */
export function landedReason(t: TaskState): string | null {
  if (t.merged) return `already merged into ${t.merged.into} at ${t.merged.commit.slice(0, 10)}; nothing was changed`;
  if (t.discarded) return `discarded${t.discarded.commit ? ` (recover it with: git branch ${t.branch ?? `verdict/<run>/${t.key}`} ${t.discarded.commit})` : ''}; nothing was changed`;
  return null;
}

/** The state a task shows for what was done with its work: `MERGED <commit>` or `DISCARDED <commit>`, or null. */
export function landedLabel(t: TaskState): string | null {
  if (t.merged) return `MERGED ${t.merged.commit.slice(0, 10)}`;
  if (t.discarded) return `DISCARDED${t.discarded.commit ? ` ${t.discarded.commit.slice(0, 10)}` : ''}`;
  return null;
}

/**
 * Records on task `key` of the run whose state file is `stateFile` that it was merged (`{ merged }`) or discarded
 * (`{ discarded }`). A finished run's state.json is rewritten while holding the run's folder lock (no orchestrator
 * can run it meanwhile) and the lock on the state file (reconcile's), atomically (write-file-atomic: readers never
 * see half a file). A live run's orchestrator
 * owns its state.json and rewrites it whole from memory, so a write from here would be lost or would race it:
 * nothing is written then, and the reason is returned. Returns null when recorded.
 * @throws Error when the state file cannot be read or written
 */
export async function recordLanding(stateFile: string, key: string, what: Pick<TaskState, 'merged'> | Pick<TaskState, 'discarded'>): Promise<string | null> {
  const folder = path.dirname(stateFile);
  const runId = path.basename(folder);
  // The run's folder lock (run/workdir-lock.ts) is what every orchestrator, resume and rerun included, holds while it
  // runs: taking it proves none owns state.json now, and keeps one from starting until the record is written.
  let release: () => Promise<void>;
  try {
    release = await lockRun(folder, selfHolder(runId, 'verdict-record'));
  } catch (e) {
    if (e instanceof RunBusyError) return `${e.message}; its orchestrator owns ${stateFile}, so this was not recorded there`;
    throw e;
  }
  try {
    return await withLock(stateFile, async () => {
      const read = readState(stateFile);
      if (!('state' in read)) throw new Error(`${stateFile}: ${read.reason}`);
      if (describeRun(read.state, stateFile).liveness === 'running') return `run ${read.state.runId} is live: its orchestrator owns ${stateFile}, so this was not recorded there`;
      const task = read.state.tasks.find((t) => t.key === key);
      if (!task) throw new Error(`${stateFile}: no task ${key}`);
      Object.assign(task, what);
      await writeFileAtomic(stateFile, JSON.stringify(read.state, null, 1));
      return null;
    });
  } finally {
    await release();
  }
}
