/**
 * The pool as the live views follow it (the dashboard, the runs tree): its status read every POOL_POLL_MS over one
 * connection pool and turned into the shared view model (schemas/pool-view.ts), told to subscribers after each read.
 * A database that cannot be read gives a view whose `error` says why; the monitor keeps polling and recovers.
 */
import type pg from 'pg';
import { poolView, type PoolView } from '../../../schemas/pool-view';
import { ensurePoolSchema, hidePassword, leaseMs, poolDb } from './schema';
import { readStatus } from './status';

/** How often a monitor reads the pool, ms (a worker heartbeats every HEARTBEAT_MS = 2 s). */
export const POOL_POLL_MS = 2000;

/**
 * Follows one pool's database at a time (`follow(url)`; null: none). Subscribers get every view read, and null
 * when it stops following. End with `close()` (which also closes its connections).
 */
export class PoolMonitor {
  private url: string | null = null;
  private db: pg.Pool | null = null;
  private schemaReady = false;
  private timer: NodeJS.Timeout | null = null;
  /** Bumped by follow() and close(): a read of an older generation is dropped. */
  private generation = 0;
  private last: PoolView | null = null;
  private readonly listeners = new Set<(v: PoolView | null) => void>();

  /** `pollMs`: how often the pool is read (default POOL_POLL_MS); `env`: where VERDICT_POOL_LEASE_MS is read. */
  constructor(private readonly opts: { pollMs?: number; env?: NodeJS.ProcessEnv } = {}) {}

  /** The last view read, or null (no pool followed, or its first read has not ended). */
  current(): PoolView | null {
    return this.last;
  }

  /** Calls `fn` after every read from now on (null: no pool followed any more); returns the unsubscribe function. */
  subscribe(fn: (v: PoolView | null) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Follows the pool of `url` (a Postgres URL; null: none), reading it at once. Following the same URL again
   * changes nothing. Resolves after the first read (its view; null for none). Never throws.
   */
  async follow(url: string | null): Promise<PoolView | null> {
    if (url === this.url) return this.last;
    const gen = ++this.generation;
    this.stopTimer();
    await this.disconnect();
    this.url = url;
    this.last = null;
    if (!url) {
      this.emit(null);
      return null;
    }
    return this.poll(gen);
  }

  /** Stops following and closes the connections. Never throws. */
  async close(): Promise<void> {
    this.generation++;
    this.url = null;
    this.stopTimer();
    this.listeners.clear();
    await this.disconnect();
  }

  private async poll(gen: number): Promise<PoolView | null> {
    const view = await this.read(this.url as string);
    if (gen !== this.generation) return null;
    this.last = view;
    this.emit(view);
    this.timer = setTimeout(() => void this.poll(gen), this.opts.pollMs ?? POOL_POLL_MS);
    this.timer.unref();
    return view;
  }

  private async read(url: string): Promise<PoolView> {
    const at = { url: hidePassword(url), readAt: Date.now() };
    try {
      this.db ??= poolDb(url);
      if (!this.schemaReady) {
        await ensurePoolSchema(this.db);
        this.schemaReady = true;
      }
      return poolView(await readStatus(this.db, leaseMs(this.opts.env)), at);
    } catch (e) {
      return poolView(null, { ...at, error: (e as Error).message || String(e) });
    }
  }

  private emit(v: PoolView | null): void {
    for (const fn of this.listeners) fn(v);
  }

  private stopTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async disconnect(): Promise<void> {
    const db = this.db;
    this.db = null;
    this.schemaReady = false;
    await db?.end().catch(() => undefined);
  }
}
