/**
 * Merged and discarded as recorded states of a task (state.json `merged` / `discarded`, schemas/run-state.ts): what
 * the merge queue and discard did with a task's work after its verdict, so every view can show it and a second merge
 * changes nothing.
 */
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { withLock } from '../fs/lock';
import { describeRun, readState } from '../live/registry';
import type { Landed } from '../live/control';
import type { TaskState } from '../live/state';
import { lockRun, RunBusyError, selfHolder } from './workdir-lock';
import { sendControlAndWait } from './run-launch';

/** How long recording on a live run waits for its orchestrator's acknowledgment, ms. */
export const RECORD_WAIT_MS = 15_000;

/**
 * Why the merge queue must leave `t` alone because of what was already done with it, as one line, or null:
 * "already merged into <branch> at <commit>", or discarded with the command that recovers its branch.
 */
export function landedReason(t: TaskState): string | null {
  if (t.merged) return `already merged into ${t.merged.into} at ${t.merged.commit.slice(0, 10)}; nothing was changed`;
  if (t.discarded)
    return `discarded${t.discarded.commit ? ` (recover it with: git branch ${t.branch ?? `verdict/<run>/${t.key}`} ${t.discarded.commit})` : ''}; nothing was changed`;
  return null;
}

/**
 * Whether `t` is waiting to be merged: it passed, its branch holds the work, nothing was done with it yet (neither
 * merged nor discarded), and it is no best-of-N candidate (the group's own task merges the winner). What Merge All
 * takes (run/merge-plan.ts) and the runs view's "Ready to merge" lists.
 */
export function readyToMerge(t: TaskState): boolean {
  return t.status === 'PASS' && !!t.branch && !t.merged && !t.discarded && t.candidate === undefined;
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
 * see half a file). A live run's orchestrator owns its state.json and rewrites it whole from memory, so a write from
 * here would be lost or would race it: the record goes through its control channel instead (verb `record`), and this
 * waits up to `waitMs` (default RECORD_WAIT_MS) for the acknowledgment. Returns null when recorded, else why not.
 * @throws Error when the state file cannot be read or written
 */
export async function recordLanding(stateFile: string, key: string, what: Landed, waitMs = RECORD_WAIT_MS): Promise<string | null> {
  const folder = path.dirname(stateFile);
  const runId = path.basename(folder);
  // The run's folder lock (run/workdir-lock.ts) is what every orchestrator, resume and rerun included, holds while it
  // runs: taking it proves none owns state.json now, and keeps one from starting until the record is written.
  let release: () => Promise<void>;
  try {
    release = await lockRun(folder, selfHolder(runId, 'verdict-record'));
  } catch (e) {
    if (!(e instanceof RunBusyError)) throw e;
    // A live run: its orchestrator puts it on the task (control verb `record`) and acknowledges it in state.json.
    const { command, ack } = await sendControlAndWait(stateFile, { verb: 'record', task: key, landed: what, by: 'verdict' }, waitMs);
    if (ack?.result === 'done') return null;
    return ack
      ? `the live run refused to record it: ${ack.reason}`
      : `${e.message}: sent to it (control command ${command.id}), but not acknowledged within ${waitMs / 1000} s; see control in ${stateFile}`;
  }
  try {
    return await withLock(stateFile, async () => {
      const read = readState(stateFile);
      if (!('state' in read)) throw new Error(`${stateFile}: ${read.reason}`);
      if (describeRun(read.state, stateFile).liveness === 'running')
        return `run ${read.state.runId} is live: its orchestrator owns ${stateFile}, so this was not recorded there`;
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
