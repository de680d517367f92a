import { RunControl } from '../core/run/runner';

/** A run this window started: how to cancel it and stop its tasks. */
export interface RunSession {
  runId: string;
  abort: AbortController;
  control: RunControl;
}

/** The runs started in this window, by run id, while they last. */
export class RunSessions {
  private readonly byId = new Map<string, RunSession>();

  /** A new session; `register` it once the run id is known. */
  create(): { abort: AbortController; control: RunControl } {
    return { abort: new AbortController(), control: new RunControl() };
  }

  register(session: RunSession): void {
    this.byId.set(session.runId, session);
  }

  get(runId: string): RunSession | undefined {
    return this.byId.get(runId);
  }

  end(runId: string): void {
    this.byId.delete(runId);
  }

  /** Cancels every run of this window (on deactivate). */
  cancelAll(): void {
    for (const s of this.byId.values()) s.abort.abort();
  }
}
