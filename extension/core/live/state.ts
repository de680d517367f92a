import os from 'node:os';
import writeFileAtomic from 'write-file-atomic';
import type { StepName, TaskStatus, Verdict } from '../../../schemas/status';
import type { Containment } from '../process/sandbox';

/**
 * Where a task is in its life; a final verdict once it is done (the table of what each means: schemas/status.ts).
 * SKIPPED: with --baseline, the check already passed on the untouched tree, so no worker ran.
 */
export type { TaskStatus };

/** One attempt as shown live. Times epoch ms. */
export interface AttemptState {
  attempt: number;
  phase: 'preparing' | 'running' | 'checking' | 'done';
  verdict: Verdict | null;
  startedAt: number;
  endedAt: number | null;
  /** Worker process group id while running. */
  workerPid: number | null;
  /**
   * The worker's start time (/proc/<pid>/stat field 22): a reconciler kills the group only if it still matches.
   * Absent in state files written before it existed.
   */
  workerStartTime?: string | null;
  tokensIn: number | null;
  tokensOut: number | null;
  costMicroUsd: number | null;
  checkExitCode: number | null;
  /** Folder with prompt.md, worker.log, check.log, receipt.json. */
  dir: string;
  notes: string;
  /** A retry: an attempt after a judged one (absent in older state files). */
  retry?: boolean;
  /** The containment of the attempt's steps (absent in older state files). */
  sandbox?: Containment | null;
  /** The step the attempt is in or ended in (schemas/status.ts StepName); null before the first. */
  step?: StepName | null;
}

/** One task as shown live. */
export interface TaskState {
  key: string;
  engine: string;
  model: string | null;
  taskType: string | null;
  verified: string | null;
  status: TaskStatus;
  /** The task directory (plain folder or worktree). */
  dir: string;
  branch: string | null;
  /** Worktree mode, after PASS: the commit holding the work. */
  commit: string | null;
  port: number | null;
  attempts: AttemptState[];
}

/** runs/<run_id>/state.json. Every change rewrites it whole, atomically. Times epoch ms. */
export interface RunState {
  version: 1;
  runId: string;
  runName: string;
  manifestFile: string;
  identity: string;
  host: string;
  /** The orchestrator's pid; with a stale heartbeat and a dead pid, the run is "orchestrator died". */
  pid: number;
  /** `interrupted`: its orchestrator died and a later start reconciled it (unfinished attempts INTERRUPTED). */
  status: 'running' | 'finished' | 'cancelled' | 'interrupted';
  startedAt: number;
  heartbeatAt: number;
  endedAt: number | null;
  maxParallel: number;
  worktrees: boolean;
  repo: string | null;
  baseRef: string | null;
  /** Set when this run resumes an earlier one (`verdict resume`): that run's id. */
  resumedFrom?: string;
  /** Worktree mode: base_ref resolved to the commit every task branch starts from. */
  baseSha: string | null;
  /** One line: what contains the run's steps (bwrap and its version, or off and why); absent in older records. */
  containment?: string;
  tasks: TaskState[];
}

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

/** The short host name recorded in state files and rows. */
export function shortHost(): string {
  return os.hostname().split('.')[0] || 'unknown';
}
