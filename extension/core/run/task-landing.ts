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
import { lockRun, RunBusyError, selfHolder } from './workdir-lock';
import { sendControlAndWait } from './run-launch';

/** How long recording on a live run waits for its orchestrator's acknowledgment, ms. */
export const RECORD_WAIT_MS = 15_000;

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
