/**
 * The pool's own tables, beside pg-boss's schema (which holds the queue itself: claiming, retry, expiry).
 *
 * verdict_pool_workers: one row per `verdict pool worker` process, renewed every HEARTBEAT_MS (its heartbeat). The
 * orchestrator gives an attempt to another worker when the worker holding it has not renewed its row for LEASE_MS.
 *
 * verdict_pool_attempts: one row per attempt, keyed by run/task/attempt like the Postgres mirror's row_key: written
 * by the orchestrator when it enqueues, claimed by the worker that runs it, settled once (`record` is set by a
 * conditional UPDATE ... WHERE record IS NULL, so the first of the worker's result or the orchestrator's INTERRUPTED
 * wins and the other changes nothing). While it runs, its worker keeps `spend` (payload.ts JobSpend) up to date: what
 * the attempt has spent so far, which the orchestrator counts against the run's budgets.
 *
 * verdict_pool_mismatches: one row per attempt a worker reported PASS for whose check the orchestrator re-ran on the
 * reported commit and saw fail (pool/recheck.ts); `verdict pool status` counts them per worker. Anyone with the
 * database's password can delete them: the orchestrator's eval rows (`pool.recheck`) are the evidence.
 */
import pg from 'pg';

/** How often a worker renews its row, ms. */
export const HEARTBEAT_MS = 2000;
/**
 * A worker whose row is older than this (by the database's clock) is lost, ms; its running attempts are recorded
 * INTERRUPTED and run again. Overridable per run (`VERDICT_POOL_LEASE_MS`, for tests).
 */
export const LEASE_MS = 15_000;

export const POOL_DDL = [
  `CREATE TABLE IF NOT EXISTS verdict_pool_workers (
    worker_id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, slots INTEGER NOT NULL, engines TEXT[] NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(), heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    draining BOOLEAN NOT NULL DEFAULT false, stopped_at TIMESTAMPTZ, running TEXT[] NOT NULL DEFAULT '{}')`,
  `CREATE TABLE IF NOT EXISTS verdict_pool_attempts (
    run_id TEXT NOT NULL, task_key TEXT NOT NULL, attempt INTEGER NOT NULL, engine TEXT NOT NULL, queue TEXT NOT NULL,
    job_id TEXT, enqueued_at TIMESTAMPTZ NOT NULL DEFAULT now(), worker_id TEXT, host TEXT, claimed_at TIMESTAMPTZ,
    finished_at TIMESTAMPTZ, record JSONB, log_tail TEXT, log_dir TEXT, cancel_requested BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (run_id, task_key, attempt))`,
  // What the attempt has spent so far (payload.ts JobSpend), written by its worker while it runs; a pool made before the
  // column gets it here.
  `ALTER TABLE verdict_pool_attempts ADD COLUMN IF NOT EXISTS spend JSONB`,
  `CREATE INDEX IF NOT EXISTS verdict_pool_attempts_open ON verdict_pool_attempts (worker_id) WHERE record IS NULL`,
  `CREATE TABLE IF NOT EXISTS verdict_pool_mismatches (
    run_id TEXT NOT NULL, task_key TEXT NOT NULL, attempt INTEGER NOT NULL, worker_id TEXT NOT NULL, host TEXT,
    commit_sha TEXT NOT NULL, worker_exit INTEGER, recheck_exit INTEGER, at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, task_key, attempt))`,
];

/** A pool of connections to the pool's database that never crashes the process on a dropped connection. */
export function poolDb(url: string): pg.Pool {
  const db = new pg.Pool({ connectionString: url, connectionTimeoutMillis: 5000, max: 4 });
  // An idle connection dropped by a restarting server: the next query opens another.
  db.on('error', () => undefined);
  return db;
}

/**
 * Runs `fn` holding the pool's setup lock (a session advisory lock, key 7216001) on one connection of `db`, which `fn`
 * is given: processes setting up the same database (tables, pg-boss's schema, its queues) take turns instead of
 * running DDL at once, which Postgres can end with "deadlock detected" (seen in CI: a pool worker starting beside
 * another stopped with it during its set-up).
 * @throws Error from the database or from `fn`
 */
export async function withPoolSetupLock<T>(db: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('SELECT pg_advisory_lock(7216001)');
    return await fn(client);
  } finally {
    await client.query('SELECT pg_advisory_unlock(7216001)').catch(() => undefined);
    client.release();
  }
}

/** Creates the pool's tables when missing (idempotent; safe from several processes: the setup lock orders them). */
export async function ensurePoolSchema(db: pg.Pool): Promise<void> {
  await withPoolSetupLock(db, async (client) => {
    for (const ddl of POOL_DDL) await client.query(ddl);
  });
}

/** The lease in force: `VERDICT_POOL_LEASE_MS` when set to a positive integer, else LEASE_MS. */
export function leaseMs(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.VERDICT_POOL_LEASE_MS);
  return Number.isInteger(n) && n > 0 ? n : LEASE_MS;
}

/** The URL with its password replaced by `***` (for messages). */
export function hidePassword(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, '$1***@');
}
