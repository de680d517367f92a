import writeFileAtomic from 'write-file-atomic';
import type { RunState } from '../../../schemas/run-state';

/** The state file's shape is a contract other processes read (views, the dashboard): it lives in schemas/run-state.ts. */
export type { AttemptState, RunState, TaskState, TaskStatus } from '../../../schemas/run-state';

/** Heartbeat period of a live run, ms. A heartbeat older than 3 periods is stale. */
export const HEARTBEAT_MS = 5000;

/**
 * Owns one state.json: every write puts the whole state in a unique temp file and renames it over the old one
 * (write-file-atomic), so readers never see half a file. Saves coalesce: at most one write is in flight and one
 * waits, and the waiting one serialises the state when it starts, so a burst of changes costs two writes and memory
 * stays flat however large the run. A heartbeat timer saves every HEARTBEAT_MS while the run lives.
 */
export class StateFile {
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(readonly file: string, readonly state: RunState) {}

  /** Starts the heartbeat. */
  start(): void {
    this.timer = setInterval(() => void this.save(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /**
   * Writes the current state; resolves once a write that began after this call is on disk (so it holds every change
   * made before the call). Write errors are reported as process warnings, not thrown.
   */
  save(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.writing) return this.startWrite();
    this.queued = this.writing.then(() => {
      this.queued = null;
      return this.startWrite();
    });
    return this.queued;
  }

  private startWrite(): Promise<void> {
    this.state.heartbeatAt = Date.now();
    const text = JSON.stringify(this.state, null, 1);
    this.writing = writeFileAtomic(this.file, text)
      .catch((e: Error) => process.emitWarning(`cannot write ${this.file}: ${e.message}`))
      .finally(() => {
        this.writing = null;
      });
    return this.writing;
  }

  /** Stops the heartbeat and writes the final state. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.save();
  }
}
