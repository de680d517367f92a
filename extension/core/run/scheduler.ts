/**
 * Keeps exactly `limit` jobs running while work remains: a job is started the moment a slot frees, and a job may
 * enqueue follow-up jobs (retries), optionally after a delay (backoff). `idle()` resolves when nothing is queued,
 * delayed or running. After `close()`, queued and delayed jobs are handed to `onDropped` instead of running.
 */
export class Scheduler<T> {
  private readonly queue: T[] = [];
  private readonly delayed = new Map<NodeJS.Timeout, T>();
  private active = 0;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  /** Highest number of jobs that ran at once; for tests and benchmarks. */
  peakActive = 0;

  constructor(
    private readonly limit: number,
    private readonly run: (job: T) => Promise<void>,
    private readonly onDropped: (job: T) => void = () => undefined,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`max_parallel must be an integer ≥ 1, got ${limit}`);
  }

  /** Queues a job, or schedules it after `delayMs` ms. */
  push(job: T, delayMs = 0): void {
    if (this.closed) return this.onDropped(job);
    if (delayMs > 0) {
      const t = setTimeout(() => {
        this.delayed.delete(t);
        this.push(job);
      }, delayMs);
      this.delayed.set(t, job);
      return;
    }
    this.queue.push(job);
    this.pump();
  }

  /** Stops starting jobs; queued and delayed ones go to `onDropped`. Running ones finish on their own. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const [t, job] of this.delayed) {
      clearTimeout(t);
      this.onDropped(job);
    }
    this.delayed.clear();
    for (const job of this.queue.splice(0)) this.onDropped(job);
    this.checkIdle();
  }

  /** Resolves once no job is queued, delayed or running. */
  idle(): Promise<void> {
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.checkIdle();
    });
  }

  private pump(): void {
    while (!this.closed && this.active < this.limit && this.queue.length) {
      const job = this.queue.shift() as T;
      this.active++;
      this.peakActive = Math.max(this.peakActive, this.active);
      void this.run(job)
        .catch((e) => process.emitWarning(`scheduler job failed: ${(e as Error).stack ?? e}`))
        .finally(() => {
          this.active--;
          this.pump();
          this.checkIdle();
        });
    }
  }

  private checkIdle(): void {
    if (this.active || this.queue.length || this.delayed.size) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
