import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import writeFileAtomic from 'write-file-atomic';
import { withLock } from '../fs/lock';
import { timerDelay } from '../fs/timer';
import { chainKey, isChained, readChainHeads, rowHash, type ChainHead } from './chain';
import { toIndexRow, type IndexRow } from './index-row';
import { readCompleteLines } from './log-lines';
import { ATTEMPT_COLUMNS } from './sqlite-index';

/**
 * Table swarm_runs: every machine's eval rows, so one scoreboard covers them all. `row_key` makes a row land once:
 * `run_id/task_key/attempt` for work rows (run ids are unique across machines), `run_id/task_key/attempt/<step>/<n>`
 * for a step's rows of an attempt (review n of it), or `sha256:<line>` for Ringer rows, which have no attempt number.
 * `row` holds the whole eval row as written to runs.jsonl. A table made before the step columns gets them (ALTER …
 * IF NOT EXISTS; its rows are work rows), and the group columns (rows inserted before them have none: their
 * candidates do not count in the "won" column).
 */
export const SWARM_RUNS_DDL = `CREATE TABLE IF NOT EXISTS swarm_runs (
  row_key TEXT PRIMARY KEY,
  run_id TEXT NOT NULL, task_key TEXT NOT NULL, attempt INTEGER, ord BIGINT NOT NULL, model TEXT, task_type TEXT NOT NULL,
  engine TEXT NOT NULL, harness TEXT, lab TEXT, reported_model TEXT, access_plan TEXT, reasoning_effort TEXT,
  verdict TEXT NOT NULL, duration_ms DOUBLE PRECISION, tokens BIGINT, cost_microusd BIGINT, ended_at TEXT,
  identity TEXT, host TEXT, format TEXT NOT NULL, row JSONB NOT NULL, inserted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  step TEXT NOT NULL DEFAULT 'work', reviewer INTEGER, review_verdict TEXT, group_key TEXT, candidate INTEGER);
ALTER TABLE swarm_runs ADD COLUMN IF NOT EXISTS step TEXT NOT NULL DEFAULT 'work', ADD COLUMN IF NOT EXISTS reviewer INTEGER,
  ADD COLUMN IF NOT EXISTS review_verdict TEXT, ADD COLUMN IF NOT EXISTS group_key TEXT, ADD COLUMN IF NOT EXISTS candidate INTEGER`;

/**
 * Table verdict_chain_heads: the head of every host's hash chain of one log (extension/core/store/chain.ts), kept
 * apart from the machine that writes the log. `log_id` is the random id in the log's head file
 * (`<home>/runs.chain.json`). A head moves only as rows are inserted into swarm_runs, one row at a time, so it never
 * takes a head from the machine's own files: rows later cut from the log, or edited, no longer match it.
 */
export const CHAIN_HEADS_DDL = `CREATE TABLE IF NOT EXISTS verdict_chain_heads (
  log_id TEXT NOT NULL, host TEXT NOT NULL, hash TEXT NOT NULL, rows BIGINT NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (log_id, host))`;

/** Rows per INSERT statement. */
const BATCH_ROWS = 500;
/** ms allowed to connect; an outage must not hold a run up. */
const CONNECT_TIMEOUT_MS = 5000;

/** The outbox cursor: how much of runs.jsonl has reached which database. */
interface Cursor {
  /** sha256 of the URL: another database starts from byte 0 (row_key keeps that from duplicating). */
  target: string;
  /** Bytes of runs.jsonl sent. */
  offset: number;
  /** Lines of runs.jsonl sent (Ringer rows are ordered by line). */
  lines: number;
}

/** `<home>/postgres-outbox.json`: the cursor. The outbox is runs.jsonl after the cursor: nothing is copied. */
export function cursorPath(home: string): string {
  return path.join(home, 'postgres-outbox.json');
}

/** The idempotency key of one row; see SWARM_RUNS_DDL. */
export function rowKey(row: IndexRow, line: string): string {
  if (row.attempt === null) return `sha256:${crypto.createHash('sha256').update(line).digest('hex')}`;
  const attempt = `${row.run_id}/${row.task_key}/${row.attempt}`;
  return row.step === 'work' ? attempt : `${attempt}/${row.step}/${row.reviewer ?? 0}`;
}

function readCursor(home: string, target: string): Cursor {
  try {
    const c = JSON.parse(fs.readFileSync(cursorPath(home), 'utf8')) as Cursor;
    if (c.target === target && Number.isInteger(c.offset) && Number.isInteger(c.lines)) return c;
  } catch {
    // no cursor yet (or a damaged one): send from the start; row_key drops what is already there
  }
  return { target, offset: 0, lines: 0 };
}

/** What one sync did. */
export interface SyncResult {
  /** Rows inserted now (rows already in the table are not counted). */
  inserted: number;
  /** Rows read from the outbox and sent (inserted or already there). */
  sent: number;
  /** Lines skipped as corrupt. */
  corrupt: number;
}

/** A client connected to `url` with Verdict's timeouts; the caller ends it. */
export async function connectPostgres(url: string): Promise<pg.Client> {
  // pg is imported on first use: a run without Postgres never loads it.
  const { default: driver } = await import('pg');
  const client = new driver.Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => undefined); // a dropped connection surfaces on the next query instead of crashing
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => undefined);
    throw e;
  }
  return client;
}

/**
 * Sends the rows of `<home>/runs.jsonl` that have not reached `url` yet to table swarm_runs (created if missing),
 * in batches, each in one transaction; the cursor moves only after a batch is committed, so an outage at any point
 * loses nothing, and a batch re-sent after a crash lands once (ON CONFLICT (row_key) DO NOTHING). Runs under a
 * lock: two syncs never send the same rows at once. A half-written trailing line waits for the next sync.
 * @throws Error from pg when the database cannot be reached or refuses a statement; the rows stay in the outbox
 */
export async function syncToPostgres(home: string, url: string): Promise<SyncResult> {
  const logFile = path.join(home, 'runs.jsonl');
  const target = crypto.createHash('sha256').update(url).digest('hex');
  fs.mkdirSync(home, { recursive: true });
  return withLock(cursorPath(home), async () => {
    const cursor = readCursor(home, target);
    const pending: { key: string; row: IndexRow; text: string; end: number; line: number; chained: Record<string, unknown> | null }[] = [];
    let corrupt = 0;
    let line = cursor.lines;
    const end = readCompleteLines(logFile, cursor.offset, ({ text, offset }) => {
      line++;
      if (!text.trim()) return;
      try {
        const parsed: unknown = JSON.parse(text);
        const row = toIndexRow(parsed, line);
        pending.push({ key: rowKey(row, text), row, text, end: offset + Buffer.byteLength(text) + 1, line, chained: isChained(parsed) ? parsed : null });
      } catch {
        corrupt++;
      }
    });
    const result: SyncResult = { inserted: 0, sent: 0, corrupt };
    if (end === cursor.offset) return result;
    const logId = readChainHeads(logFile)?.log_id ?? null;
    const client = await connectPostgres(url);
    try {
      await client.query(SWARM_RUNS_DDL);
      if (logId) await client.query(CHAIN_HEADS_DDL);
      const cols = ['row_key', ...ATTEMPT_COLUMNS, 'row'];
      for (let i = 0; i < pending.length; i += BATCH_ROWS) {
        const batch = pending.slice(i, i + BATCH_ROWS);
        const values: unknown[] = [];
        const tuples = batch.map((p) => {
          const base = values.length;
          values.push(p.key, ...ATTEMPT_COLUMNS.map((c) => p.row[c]), p.text);
          return `(${cols.map((_, j) => `$${base + j + 1}`).join(', ')})`;
        });
        await client.query('BEGIN');
        const res = await client.query(`INSERT INTO swarm_runs (${cols.join(', ')}) VALUES ${tuples.join(', ')} ON CONFLICT (row_key) DO NOTHING RETURNING row_key`, values);
        if (logId) await advanceChainHeads(client, logId, batch, new Set(res.rows.map((r: { row_key: string }) => r.row_key)));
        await client.query('COMMIT');
        result.inserted += res.rowCount ?? 0;
        result.sent += batch.length;
        const last = batch[batch.length - 1] as (typeof pending)[number];
        await writeFileAtomic(cursorPath(home), JSON.stringify({ target, offset: last.end, lines: last.line } satisfies Cursor));
      }
      // Past trailing corrupt or blank lines too.
      await writeFileAtomic(cursorPath(home), JSON.stringify({ target, offset: end, lines: line } satisfies Cursor));
    } finally {
      await client.end().catch(() => undefined);
    }
    return result;
  });
}

/**
 * Moves the Postgres chain heads of `logId` over the chained rows of `batch` that were inserted now (in log order),
 * in the caller's transaction. Rows already in swarm_runs (a batch sent again) do not move a head twice.
 */
async function advanceChainHeads(client: pg.Client, logId: string, batch: { key: string; chained: Record<string, unknown> | null }[], inserted: Set<string>): Promise<void> {
  const rows = batch.filter((p) => p.chained && inserted.has(p.key)).map((p) => p.chained as Record<string, unknown>);
  if (!rows.length) return;
  const hosts = [...new Set(rows.map(chainKey))];
  const res = await client.query('SELECT host, hash, rows FROM verdict_chain_heads WHERE log_id = $1 AND host = ANY($2) FOR UPDATE', [logId, hosts]);
  const heads = new Map<string, ChainHead>(res.rows.map((r: { host: string; hash: string; rows: string }) => [r.host, { hash: r.hash, rows: Number(r.rows) }]));
  for (const row of rows) {
    const host = chainKey(row);
    heads.set(host, { hash: rowHash(row), rows: (heads.get(host)?.rows ?? 0) + 1 });
  }
  for (const host of hosts) {
    const h = heads.get(host) as ChainHead;
    await client.query(
      'INSERT INTO verdict_chain_heads (log_id, host, hash, rows) VALUES ($1, $2, $3, $4) ON CONFLICT (log_id, host) DO UPDATE SET hash = EXCLUDED.hash, rows = EXCLUDED.rows, updated_at = now()',
      [logId, host, h.hash, h.rows],
    );
  }
}

/** The Postgres chain heads of the log whose head file has `logId`, by host (empty when the table is missing). */
export async function readPostgresChainHeads(url: string, logId: string): Promise<Record<string, ChainHead>> {
  const client = await connectPostgres(url);
  try {
    await client.query(CHAIN_HEADS_DDL);
    const res = await client.query('SELECT host, hash, rows FROM verdict_chain_heads WHERE log_id = $1', [logId]);
    return Object.fromEntries(res.rows.map((r: { host: string; hash: string; rows: string }) => [r.host, { hash: r.hash, rows: Number(r.rows) }]));
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Rows of swarm_runs as attempts-table rows (ATTEMPT_COLUMNS order), for aggregating every machine's evidence. */
export async function readSwarmRuns(url: string): Promise<unknown[][]> {
  const client = await connectPostgres(url);
  try {
    await client.query(SWARM_RUNS_DDL);
    const res = await client.query({ text: `SELECT ${ATTEMPT_COLUMNS.join(', ')} FROM swarm_runs`, rowMode: 'array' });
    return res.rows as unknown[][];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Keeps Postgres in step during a run: {@link kick} after each row starts a sync unless one is running (then one
 * more follows it). Never throws; the last error is kept for the run's report.
 */
export class PostgresMirror {
  private running: Promise<void> | null = null;
  private again = false;
  /** The last sync error, null after a successful sync. */
  lastError: string | null = null;

  constructor(
    private readonly home: string,
    private readonly url: string,
  ) {}

  /** Starts a sync in the background. */
  kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          await syncToPostgres(this.home, this.url);
          this.lastError = null;
        } catch (e) {
          this.lastError = (e as Error).message || String(e);
        }
      } while (this.again);
    })().finally(() => {
      this.running = null;
    });
  }

  /**
   * Waits for the running sync and makes one last one, at most `timeoutMs` ms in all.
   * @returns null when everything reached the database, else why rows still wait in the outbox
   */
  async flush(timeoutMs: number): Promise<string | null> {
    const work = (async () => {
      await this.running;
      this.kick();
      await this.running;
    })();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timerDelay(timeoutMs))));
    const won = await Promise.race([work.then(() => 'done' as const), timeout]);
    clearTimeout(timer);
    return won === 'timeout' ? `still sending after ${timeoutMs} ms` : this.lastError;
  }
}
