import { timerDelay } from '../fs/timer';

/** Optional per-group caps below the global limit (e.g. one engine halved after a rate limit). */
export interface GroupLimits<T> {
  /** The group a job belongs to. */
  groupOf: (job: T) => string;
  /** The current cap of a group; read on every start, so it may change while the scheduler runs. */
  limitOf: (group: string) => number;
}

/**
 * Keeps exactly `limit` jobs running while work remains: a job is started the moment a slot frees, and a job may
 * enqueue follow-up jobs (retries), optionally after a delay (backoff). With `groups`, a job also waits while its
 * group is at its own cap; jobs of other groups pass it. `idle()` resolves when nothing is queued, delayed or
 * running. After `close()`, queued and delayed jobs are handed to `onDropped` instead of running. While paused, nothing
 * starts (and idle() waits: queued jobs are still work).
 */
export class Scheduler<T> {
  private readonly queue: T[] = [];
  private readonly delayed = new Map<NodeJS.Timeout, T>();
  private active = 0;
  private readonly activeByGroup = new Map<string, number>();
  private closed = false;
  private paused = false;
  private idleWaiters: (() => void)[] = [];
  /** Highest number of jobs that ran at once; for tests and benchmarks. */
  peakActive = 0;

  constructor(
    private readonly limit: number,
    private readonly run: (job: T) => Promise<void>,
    private readonly onDropped: (job: T) => void = () => undefined,
    private readonly groups?: GroupLimits<T>,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`max_parallel must be an integer ≥ 1, got ${limit}`);
  }

  /**
   * Queues a job, or schedules it after `delayMs` ms. A delay past Node's timer limit (fs/timer.ts, ~24.8 days) is
   * held at that limit: the job comes back then, early rather than at once, and whoever queued it (the runner, for an
   * engine's quota wait) queues it again for the time left.
   */
  push(job: T, delayMs = 0): void {
    if (this.closed) return this.onDropped(job);
    if (delayMs > 0) {
      const t = setTimeout(() => {
        this.delayed.delete(t);
        this.push(job);
      }, timerDelay(delayMs));
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

  /** Jobs of `group` running now. */
  activeIn(group: string): number {
    return this.activeByGroup.get(group) ?? 0;
  }

  /** Starts no job until resume(); running ones go on, pushes queue up. */
  pause(): void {
    this.paused = true;
  }

  /** Undoes pause(): queued jobs start as slots allow. */
  resume(): void {
    this.paused = false;
    this.pump();
  }

  /** Takes a queued or delayed job out and hands it to `onDropped`; false when it was neither (running, or unknown). */
  drop(job: T): boolean {
    for (const [t, j] of this.delayed) {
      if (j !== job) continue;
      clearTimeout(t);
      this.delayed.delete(t);
      this.onDropped(job);
      this.checkIdle();
      return true;
    }
    const index = this.queue.indexOf(job);
    if (index < 0) return false;
    this.queue.splice(index, 1);
    this.onDropped(job);
    this.checkIdle();
    return true;
  }

  /**
   * Takes a queued or delayed job out without handing it to `onDropped` (the caller keeps it: a reader whose input is
   * rerun waits for it again); false when it was neither. Idle waiters are not woken here: the caller pushes or settles.
   */
  withdraw(job: T): boolean {
    for (const [t, j] of this.delayed) {
      if (j !== job) continue;
      clearTimeout(t);
      this.delayed.delete(t);
      return true;
    }
    const index = this.queue.indexOf(job);
    if (index < 0) return false;
    this.queue.splice(index, 1);
    return true;
  }

  /** Resolves once no job is queued, delayed or running. */
  idle(): Promise<void> {
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.checkIdle();
    });
  }

  private pump(): void {
    while (!this.closed && !this.paused && this.active < this.limit) {
      const index = this.queue.findIndex((job) => this.groupHasRoom(job));
      if (index < 0) return;
      const [job] = this.queue.splice(index, 1) as [T];
      const group = this.groups?.groupOf(job);
      this.active++;
      if (group !== undefined) this.activeByGroup.set(group, (this.activeByGroup.get(group) ?? 0) + 1);
      this.peakActive = Math.max(this.peakActive, this.active);
      void this.run(job)
        .catch((e) => process.emitWarning(`scheduler job failed: ${(e as Error).stack ?? e}`))
        .finally(() => {
          this.active--;
          if (group !== undefined) this.activeByGroup.set(group, (this.activeByGroup.get(group) ?? 1) - 1);
          this.pump();
          this.checkIdle();
        });
    }
  }

  private groupHasRoom(job: T): boolean {
    if (!this.groups) return true;
    const group = this.groups.groupOf(job);
    return (this.activeByGroup.get(group) ?? 0) < Math.max(1, this.groups.limitOf(group));
  }

  private checkIdle(): void {
    if (this.active || this.queue.length || this.delayed.size) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
