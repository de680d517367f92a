/**
 * What a caller hands runManifest (run/runner.ts): the run's settings and its hooks into it, and the handle
 * that stops single tasks. A module of its own so that the run's parts read them without importing the runner.
 */
import type { ContinueRequest } from './resume';
import type { RunSettings } from './run-types';
import type { Step } from './steps/context';

/** Options of runManifest (run/runner.ts): the run's settings and the caller's hooks into it. */
export interface RunOptions extends RunSettings {
  /**
   * Continue this existing run instead of starting a new one (`verdict resume RUN`, `verdict rerun RUN TASK` of a run
   * that is not live; run/resume.ts): same run id, state.json, records, branches and worktrees; the manifest is the
   * run's frozen one.
   */
  continueRun?: ContinueRequest;
  /** Lets a caller stop single tasks while the run goes on. */
  control?: RunControl;
  /**
   * The steps of every attempt, instead of the local ones (workflows/index.ts ATTEMPT_STEPS): a pool run's one step that
   * runs the attempt on a pool worker (core/pool/dispatch.ts). Every decision stays this runner's. With them, the
   * engines need not be installed on this machine.
   */
  attemptSteps?: readonly Step[];
}

/**
 * Stops single tasks of a run in this process: the running attempt's process groups are stopped (SIGTERM, grace,
 * SIGKILL), it is recorded CANCELLED and the task is not retried; a queued task never starts.
 */
export class RunControl {
  private readonly stoppers = new Map<string, () => void>();

  /** Stops task `key`; false when the run has no such task (or has not started yet). */
  stopTask(key: string): boolean {
    const stop = this.stoppers.get(key);
    stop?.();
    return stop !== undefined;
  }

  /** Called by the runner for each task. */
  bind(key: string, stop: () => void): void {
    this.stoppers.set(key, stop);
  }
}
