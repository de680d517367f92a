/**
 * `verdict pool status`: the pool's workers as their heartbeat rows say (host, slots, engines, last heartbeat, what
 * each runs, how many of its PASSes did not hold when the orchestrator re-ran the check) and the depth of each
 * engine's queue (attempts enqueued and not yet settled).
 */
import type pg from 'pg';
import type { PoolStatus, PoolWorkerStatus } from '../../../schemas/pool-view';
import { ensurePoolSchema, leaseMs, poolDb } from './schema';

export type { PoolStatus, PoolWorkerStatus };

/**
 * Reads the pool's state; workers stopped more than an hour ago are left out, unless a PASS they reported did not hold.
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

/** Reads the pool's state over an open connection pool (its schema ensured). @throws Error when the query fails */
export async function readStatus(db: pg.Pool, lease: number): Promise<PoolStatus> {
  const w = await db.query(
    `SELECT w.worker_id, w.host, w.pid, w.slots, w.engines, w.started_at, w.heartbeat_at, w.draining, w.stopped_at,
       (extract(epoch from (now() - w.heartbeat_at)) * 1000)::bigint AS silent_ms,
       COALESCE((SELECT array_agg(a.run_id || '/' || a.task_key || '/' || a.attempt ORDER BY a.claimed_at) FROM verdict_pool_attempts a WHERE a.worker_id = w.worker_id AND a.record IS NULL), '{}') AS holds,
       (SELECT count(*) FROM verdict_pool_mismatches m WHERE m.worker_id = w.worker_id)::int AS mismatches
     FROM verdict_pool_workers w
     WHERE w.stopped_at IS NULL OR w.stopped_at > now() - interval '1 hour' OR EXISTS (SELECT 1 FROM verdict_pool_mismatches m WHERE m.worker_id = w.worker_id)
     ORDER BY w.host, w.started_at`,
  );
  const workers = w.rows.map((r): PoolWorkerStatus => {
    const silentMs = Number(r.silent_ms);
    return {
      workerId: r.worker_id,
      host: r.host,
      pid: r.pid,
      slots: r.slots,
      engines: r.engines,
      startedAt: new Date(r.started_at).getTime(),
      heartbeatAt: new Date(r.heartbeat_at).getTime(),
      silentMs,
      state: r.stopped_at ? 'stopped' : silentMs > lease ? 'lost' : r.draining ? 'draining' : 'live',
      running: r.holds,
      mismatches: r.mismatches,
    };
  });
  const q = await db.query(
    `SELECT engine, count(*) FILTER (WHERE worker_id IS NULL)::int AS waiting, count(*) FILTER (WHERE worker_id IS NOT NULL)::int AS running FROM verdict_pool_attempts WHERE record IS NULL GROUP BY engine ORDER BY engine`,
  );
  return { workers, queues: q.rows.map((r) => ({ engine: r.engine, waiting: r.waiting, running: r.running })) };
}
