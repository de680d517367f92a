import writeFileAtomic from 'write-file-atomic';
import type { AttemptState, RunState, TaskState } from '../../../schemas/run-state';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { appendWorker, openWorkerJournal, workerJournalFile, type SandboxInit } from './worker-journal';

/** The state file's shape is a contract other processes read (views, the dashboard): it lives in schemas/run-state.ts. */
export type { AttemptState, EngineWait, RunState, TaskState, TaskStatus } from '../../../schemas/run-state';

/** Heartbeat period of a live run, ms. A heartbeat older than 3 periods is stale. */
export const HEARTBEAT_MS = 5000;

/**
 * Shortest time between the starts of two state.json writes, ms. Readers poll the file every 400 ms (live/watch.ts
 * RUNS_POLL_MS), so a change reaches them as soon as before; a run whose events come faster (100 instant tasks end in a
 * second, each attempt changing its state ~10 times) writes the whole file ~10 times a second instead of back to back.
 */
export const STATE_WRITE_GAP_MS = 100;

/**
 * Owns one state.json: every write puts the whole state in a unique temp file, flushed to disk, and renames it over
 * the old one (write-file-atomic), so readers never see half a file. Saves coalesce: at most one write is in flight and one
 * waits, the waiting one starts no sooner than `gapMs` after the one before it began and serialises the state when it
 * starts, so a burst of changes costs at most two writes, a steady stream one write per `gapMs`, and memory stays flat
 * however large the run. A heartbeat timer saves every HEARTBEAT_MS while the run lives; `close()` writes at once.
 *
 * Each task's part of the text is kept from the write before and made again only when the task may have changed: a
 * `saveTask(task)` (an attempt's own sync: it changes only its task) marks that task, any other save every task (the
 * runner, control, the heartbeat: they may change any). So a write at the end of one attempt serialises that attempt's
 * task, not the whole run (300 tasks: ~1 ms of JSON per write, ten writes a second, for the run's whole length). The
 * text is exactly `JSON.stringify(state, null, 1)`.
 */
export class StateFile {
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  /** When the last write began (epoch ms), to keep `gapMs` between writes. */
  private lastStart = -Infinity;
  /** The wait of the queued write for its turn; cleared by close(), which writes without waiting. */
  private gapTimer: { timeout: NodeJS.Timeout; go: () => void } | null = null;
  /** Set by close(): from then on no write waits for its turn. */
  private closing = false;
  /** Set by an urgent save until its write begins: the queued write does not wait for its turn. */
  private urgent = false;
  /** The worker journal, open for appending once a worker was recorded (recordWorker); closed by close(). */
  private journal: number | null = null;
  /** Each task's part of the last text written (indented as it stands in the file), while the task is unchanged. */
  private taskText = new WeakMap<TaskState, string>();
  /** Tasks changed since the last write began (saveTask); `allChanged`: any task may have changed (save). */
  private changed = new Set<TaskState>();
  private allChanged = true;
  /** Stands for the tasks array while the rest of the state is serialised: unique to this file, never in a state. */
  private readonly tasksMarker = JSON.stringify(`\u0000tasks-${crypto.randomUUID()}`);

  /** @param gapMs shortest time between the starts of two writes, ms (default STATE_WRITE_GAP_MS) */
  constructor(
    readonly file: string,
    readonly state: RunState,
    private readonly gapMs = STATE_WRITE_GAP_MS,
  ) {}

  /** Starts the heartbeat. */
  start(): void {
    this.timer = setInterval(() => void this.save(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /**
   * Writes the current state; resolves once a write that began after this call is on disk (so it holds every change
   * made before the call). `urgent` (a worker's pid that the journal could not take: recordWorker) skips the gap between
   * writes: the write begins as soon as the one in flight, if any, is done. Write errors are reported as process
   * warnings, not thrown.
   */
  save(urgent = false): Promise<void> {
    this.allChanged = true;
    return this.schedule(urgent);
  }

  /** Saves after a change to `task` alone (an attempt's sync): as save(), serialising only the tasks that changed. */
  saveTask(task: TaskState): Promise<void> {
    this.changed.add(task);
    return this.schedule(false);
  }

  /** Saves after a change to the run's own fields alone (its spend): as save(), serialising no task again. */
  saveRun(): Promise<void> {
    return this.schedule(false);
  }

  private schedule(urgent: boolean): Promise<void> {
    if (urgent) {
      this.urgent = true;
      this.gapTimer?.go();
    }
    if (this.queued) return this.queued;
    if (!this.writing && (urgent || Date.now() - this.lastStart >= this.gapMs)) return this.startWrite();
    this.queued = (this.writing ?? Promise.resolve())
      .then(() => this.gap())
      .then(() => {
        this.queued = null;
        return this.startWrite();
      });
    return this.queued;
  }

  /** Resolves when `gapMs` have passed since the last write began (at once after close()). */
  private gap(): Promise<void> {
    const wait = this.lastStart + this.gapMs - Date.now();
    if (wait <= 0 || this.closing || this.urgent) return Promise.resolve();
    return new Promise((resolve) => {
      const go = () => {
        if (this.gapTimer) clearTimeout(this.gapTimer.timeout);
        this.gapTimer = null;
        resolve();
      };
      this.gapTimer = { timeout: setTimeout(go, wait), go };
    });
  }

  private startWrite(): Promise<void> {
    this.urgent = false;
    this.lastStart = Date.now();
    this.state.heartbeatAt = this.lastStart;
    const text = this.serialize();
    this.writing = writeFileAtomic(this.file, text)
      .catch((e: Error) => process.emitWarning(`cannot write ${this.file}: ${e.message}`))
      .finally(() => {
        this.writing = null;
      });
    return this.writing;
  }

  /** `JSON.stringify(this.state, null, 1)`, with the part of each task that did not change since the last write reused. */
  private serialize(): string {
    const all = this.allChanged;
    const changed = this.changed;
    this.allChanged = false;
    this.changed = new Set();
    const parts = this.state.tasks.map((task) => {
      const keep = typeof task === 'object' && task !== null;
      let text = all || !keep || changed.has(task) ? undefined : this.taskText.get(task);
      if (text === undefined) {
        // An element of the root's "tasks" array: two levels deep, so every line indented by two more spaces.
        text = `  ${String(JSON.stringify(task, null, 1)).replaceAll('\n', '\n  ')}`;
        if (keep) this.taskText.set(task, text);
      }
      return text;
    });
    const rest = JSON.stringify({ ...this.state, tasks: JSON.parse(this.tasksMarker) as string }, null, 1);
    return rest.replace(this.tasksMarker, () => (parts.length ? `[\n${parts.join(',\n')}\n ]` : '[]'));
  }

  /**
   * Records a worker the moment it started, for crash recovery: its attempt's view (pid and start time) appended to
   * the worker journal beside the state file (live/worker-journal.ts, read back by reconcile); state.json takes it with
   * the caller's save (saveTask) on the usual schedule. When the journal cannot be written, the state is written at
   * once instead (an urgent save).
   */
  recordWorker(key: string, view: AttemptState): void {
    try {
      this.journal ??= openWorkerJournal(workerJournalFile(this.file));
      appendWorker(this.journal, { key, view });
    } catch {
      void this.save(true);
    }
  }

  /**
   * Records a sandbox's init (PID 1 of a step's PID namespace) the moment the spawn helper holds it: a line of the
   * worker journal, read back by reconcile, which SIGKILLs an init still alive with this pid and start time. Needed
   * because a step that traced its init can clear its parent-death signal; if the helper (which kills the init when
   * bwrap exits) is SIGKILLed too, nothing else would. A line that cannot be written is reported as a warning.
   */
  recordSandboxInit(init: SandboxInit): void {
    try {
      this.journal ??= openWorkerJournal(workerJournalFile(this.file));
      appendWorker(this.journal, { init });
    } catch (e) {
      process.emitWarning(`cannot record a sandbox's init (pid ${init.pid}) in ${workerJournalFile(this.file)}: ${(e as Error).message}`);
    }
  }

  /** Stops the heartbeat, closes the worker journal and writes the final state (a write waiting for its turn goes at once). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.journal !== null) {
      try {
        fs.closeSync(this.journal);
      } catch {
        // already closed
      }
      this.journal = null;
    }
    this.closing = true;
    this.gapTimer?.go();
    await this.save();
  }
}
