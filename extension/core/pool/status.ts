/**
 * `verdict pool status`: the pool's workers as their heartbeat rows say (host, slots, engines, last heartbeat, what
 * each runs) and the depth of each engine's queue (attempts enqueued and not yet settled).
 */
import type pg from 'pg';
import { ensurePoolSchema, leaseMs, poolDb } from './schema';

/** One worker. Times epoch ms. */
export interface PoolWorkerStatus {
  workerId: string;
  host: string;
  pid: number;
  slots: number;
  engines: string[];
  startedAt: number;
  heartbeatAt: number;
  /** ms since its last heartbeat, by the database's clock. */
  silentMs: number;
  /** `live`, `draining`, `stopped` (drained and ended), or `lost` (silent for longer than the lease). */
  state: 'live' | 'draining' | 'stopped' | 'lost';
  /** The attempts it holds: `run/task/attempt`. */
  running: string[];
}

/** The pool as its database says. */
export interface PoolStatus {
  workers: PoolWorkerStatus[];
  /** Per engine: attempts enqueued and not yet claimed, and claimed but not settled. */
  queues: { engine: string; waiting: number; running: number }[];
}

/**
 * Reads the pool's state; workers stopped more than an hour ago are left out.
 * @throws Error when the database cannot be reached
 */
export async function poolStatus(url: string, env: NodeJS.ProcessEnv = process.env): Promise<PoolStatus> {
  const db = poolDb(url);
  try {
    await ensurePoolSchema(db);
    return await readStatus(db, leaseMs(env));
  } finally {
    await db.end().catch(() => undefined);
  }
}

async function readStatus(db: pg.Pool, lease: number): Promise<PoolStatus> {
  const w = await db.query(
    `SELECT w.worker_id, w.host, w.pid, w.slots, w.engines, w.started_at, w.heartbeat_at, w.draining, w.stopped_at,
       (extract(epoch from (now() - w.heartbeat_at)) * 1000)::bigint AS silent_ms,
       COALESCE((SELECT array_agg(a.run_id || '/' || a.task_key || '/' || a.attempt ORDER BY a.claimed_at) FROM verdict_pool_attempts a WHERE a.worker_id = w.worker_id AND a.record IS NULL), '{}') AS holds
     FROM verdict_pool_workers w WHERE w.stopped_at IS NULL OR w.stopped_at > now() - interval '1 hour' ORDER BY w.host, w.started_at`,
  );
  const workers = w.rows.map((r): PoolWorkerStatus => {
    const silentMs = Number(r.silent_ms);
    return {
      workerId: r.worker_id, host: r.host, pid: r.pid, slots: r.slots, engines: r.engines, startedAt: new Date(r.started_at).getTime(), heartbeatAt: new Date(r.heartbeat_at).getTime(), silentMs,
      state: r.stopped_at ? 'stopped' : silentMs > lease ? 'lost' : r.draining ? 'draining' : 'live',
      running: r.holds,
    };
  });
  const q = await db.query(`SELECT engine, count(*) FILTER (WHERE worker_id IS NULL)::int AS waiting, count(*) FILTER (WHERE worker_id IS NOT NULL)::int AS running FROM verdict_pool_attempts WHERE record IS NULL GROUP BY engine ORDER BY engine`);
  return { workers, queues: q.rows.map((r) => ({ engine: r.engine, waiting: r.waiting, running: r.running })) };
}

/** The status as a table for a terminal. */
export function formatPoolStatus(s: PoolStatus, now = Date.now()): string[] {
  void now;
  const lines = [`${s.workers.length} worker(s)`];
  for (const w of s.workers) {
    lines.push(`  ${w.host}  ${w.state}  slots ${w.running.length}/${w.slots}  engines ${w.engines.join(',')}  heartbeat ${(w.silentMs / 1000).toFixed(1)} s ago  (${w.workerId})`);
    for (const r of w.running) lines.push(`    runs ${r}`);
  }
  for (const q of s.queues) lines.push(`queue ${q.engine}: ${q.waiting} waiting, ${q.running} running`);
  return lines;
}
