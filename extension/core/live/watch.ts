import fs from 'node:fs';
import path from 'node:path';

/** How often the runs folder is polled, ms. Polling (not fs.watch) works the same on every filesystem. */
export const RUNS_POLL_MS = 400;

/**
 * Calls `onChange` (at most once per poll) whenever a state.json under `<home>/runs` appears, changes or goes, so
 * views show a state change well within a second. Cheap: one readdir and one stat per run per poll.
 * Dispose with `close()`.
 */
export class RunsWatcher {
  private readonly timer: NodeJS.Timeout;
  private last = '';

  constructor(
    private readonly home: string,
    private readonly onChange: () => void,
    pollMs = RUNS_POLL_MS,
  ) {
    this.last = this.fingerprint();
    this.timer = setInterval(() => this.poll(), pollMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  private poll(): void {
    const now = this.fingerprint();
    if (now === this.last) return;
    this.last = now;
    this.onChange();
  }

  private fingerprint(): string {
    const dir = path.join(this.home, 'runs');
    let ids: string[];
    try {
      ids = fs.readdirSync(dir);
    } catch {
      return '';
    }
    return ids
      .map((id) => {
        try {
          const st = fs.statSync(path.join(dir, id, 'state.json'));
          return `${id}:${st.mtimeMs}:${st.size}`;
        } catch {
          return `${id}:-`;
        }
      })
      .join('|');
  }
}
