import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import writeFileAtomic from 'write-file-atomic';
import { withLock } from '../fs/lock';
import { timerDelay } from '../fs/timer';
import { canonicalJson, chainKey, isChained, readChainHeads, rowHash, type ChainHead } from './chain';
import { toIndexRow, type IndexRow } from './index-row';
import { readCompleteLines } from './log-lines';
import { ATTEMPT_COLUMNS } from './sqlite-index';

/**
 * Table swarm_runs: every machine's eval rows, so one scoreboard covers them all. `row_key` makes a row land once:
 * `run_id/task_key/attempt` for work rows (run ids are unique across machines), `run_id/task_key/attempt/<step>/<n>`
 * for a step's rows of an attempt (review n of it), or `sha256:<line>` for Ringer rows, which have no attempt number.
 * A second row of the same log whose key is taken (two critics' rows of one attempt) lands as `<key>#<hash>`
 * (sharedKey). `row` holds the whole eval row as written to runs.jsonl. A table made before the step columns gets them (ALTER …
 * IF NOT EXISTS; its rows are work rows), and the group columns (rows inserted before them have none: their
 * candidates do not count in the "won" column).
 *
 * Each row carries its evidence (docs/scoreboard.md "The Postgres copy"): `row_hash`, the SHA-256 of the row's
 * canonical form as the local chain hashes it (chain.ts rowHash: the whole eval row, its prev_hash included);
 * `prev_hash`, the row's own prev_hash (null for a chain's first row and for rows of no chain); `log_id`, the random
 * id of the log that sent it (its `runs.chain.json`); `row_text`, the line exactly as logged, only for a row JSONB
 * cannot hold (a NUL or an unpaired surrogate in a string, which `row` then holds as U+FFFD). A table made before
 * these columns gets them empty; the sending machine fills them for its own rows (see syncToPostgres), and a row
 * nobody fills stays unverifiable (pg-verify.ts).
 */
export const SWARM_RUNS_DDL = `CREATE TABLE IF NOT EXISTS swarm_runs (
  row_key TEXT PRIMARY KEY,
  run_id TEXT NOT NULL, task_key TEXT NOT NULL, attempt INTEGER, ord BIGINT NOT NULL, model TEXT, task_type TEXT NOT NULL,
  engine TEXT NOT NULL, harness TEXT, lab TEXT, reported_model TEXT, access_plan TEXT, reasoning_effort TEXT,
  verdict TEXT NOT NULL, duration_ms DOUBLE PRECISION, tokens BIGINT, cost_microusd BIGINT, ended_at TEXT,
  identity TEXT, host TEXT, format TEXT NOT NULL, row JSONB NOT NULL, inserted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  step TEXT NOT NULL DEFAULT 'work', reviewer INTEGER, review_verdict TEXT, group_key TEXT, candidate INTEGER,
  row_hash TEXT, prev_hash TEXT, log_id TEXT, row_text TEXT, forced INTEGER NOT NULL DEFAULT 0, outvoted BIGINT);
ALTER TABLE swarm_runs ADD COLUMN IF NOT EXISTS step TEXT NOT NULL DEFAULT 'work', ADD COLUMN IF NOT EXISTS reviewer INTEGER,
  ADD COLUMN IF NOT EXISTS review_verdict TEXT, ADD COLUMN IF NOT EXISTS group_key TEXT, ADD COLUMN IF NOT EXISTS candidate INTEGER,
  ADD COLUMN IF NOT EXISTS row_hash TEXT, ADD COLUMN IF NOT EXISTS prev_hash TEXT, ADD COLUMN IF NOT EXISTS log_id TEXT,
  ADD COLUMN IF NOT EXISTS row_text TEXT;
ALTER TABLE swarm_runs ADD COLUMN IF NOT EXISTS forced INTEGER NOT NULL DEFAULT 0;
UPDATE swarm_runs SET forced = 1 WHERE forced = 0 AND row->>'forced' = 'true';
ALTER TABLE swarm_runs ADD COLUMN IF NOT EXISTS outvoted BIGINT`;

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
  /**
   * True once the rows before `offset` were sent by a Verdict that keeps row_hash (a cursor without it was written
   * by an older one: the log is sent once more from byte 0, which fills the hashes of the rows already there).
   */
  hashed?: boolean;
}

/** `<home>/postgres-outbox.json`: the cursor. The outbox is runs.jsonl after the cursor: nothing is copied. */
export function cursorPath(home: string): string {
  return path.join(home, 'postgres-outbox.json');
}

/**
 * The key of a row of a log whose own key another row of the same log already holds in swarm_runs (two critics' rows
 * of one attempt): `<key>#<the first 16 hex digits of its row_hash>`, the same on every send.
 */
export function sharedKey(key: string, hash: string): string {
  return `${key}#${hash.slice(0, 16)}`;
}

/** The idempotency key of one row; see SWARM_RUNS_DDL. */
export function rowKey(row: IndexRow, line: string): string {
  if (row.attempt === null) return `sha256:${crypto.createHash('sha256').update(line).digest('hex')}`;
  const attempt = `${row.run_id}/${row.task_key}/${row.attempt}`;
  return row.step === 'work' ? attempt : `${attempt}/${row.step}/${row.reviewer ?? 0}`;
}

/**
 * The outbox cursor of `home` for the database whose URL hashes to `target`; from byte 0 when there is none, it is
 * another database's, or an older Verdict wrote it (no `hashed`: its rows are sent again to fill their hashes).
 */
export function readCursor(home: string, target: string): Cursor {
  try {
    const c = JSON.parse(fs.readFileSync(cursorPath(home), 'utf8')) as Cursor;
    if (c.target === target && Number.isInteger(c.offset) && Number.isInteger(c.lines) && c.hashed === true) return c;
  } catch {
    // no cursor yet (or a damaged one): send from the start; row_key drops what is already there
  }
  return { target, offset: 0, lines: 0, hashed: true };
}

/**
 * Bytes of `<home>/runs.jsonl` the outbox sent to the database at `url`; null when its cursor is another database's
 * (or there is none: then nothing was sent, 0).
 */
export function sentOffset(home: string, url: string): number | null {
  let c: Partial<Cursor>;
  try {
    c = JSON.parse(fs.readFileSync(cursorPath(home), 'utf8')) as Partial<Cursor>;
  } catch {
    return fs.existsSync(cursorPath(home)) ? null : 0;
  }
  return c.target === cursorTarget(url) && Number.isInteger(c.offset) ? (c.offset as number) : null;
}

/** The outbox cursor's `target` for a database URL (its SHA-256: the URL may hold a password). */
export function cursorTarget(url: string): string {
  return crypto.createHash('sha256').update(url).digest('hex');
}

/** A NUL, or a UTF-16 surrogate without its pair: what Postgres' JSONB and TEXT refuse. */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `s` as Postgres can store it: each NUL and unpaired surrogate replaced by U+FFFD (the rest unchanged). */
export function storable(s: string): string {
  return s.replace(UNSTORABLE, '\uFFFD');
}

/** `v` (a parsed JSON value) with every string and key made {@link storable}; the same object when none needed it. */
export function storableJson(v: unknown): unknown {
  if (typeof v === 'string') return storable(v);
  if (!v || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(storableJson);
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [storable(k), storableJson(x)]));
}

/** True when the line holds a string Postgres cannot store as it is (JSON.stringify writes both as \u escapes). */
export function needsRowText(line: string): boolean {
  return /\\u0000|\\ud[89ab][0-9a-f]{2}|\\ud[c-f][0-9a-f]{2}/i.test(line) && canonicalJson(storableJson(JSON.parse(line))) !== canonicalJson(JSON.parse(line));
}

/** One column value of swarm_runs as sent: strings made storable, everything else as it is. */
export function columnValue(v: unknown): unknown {
  return typeof v === 'string' ? storable(v) : v;
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
  const target = cursorTarget(url);
  fs.mkdirSync(home, { recursive: true });
  return withLock(cursorPath(home), async () => {
    const cursor = readCursor(home, target);
    const { pending, corrupt, end, line } = readPending(logFile, cursor);
    const result: SyncResult = { inserted: 0, sent: 0, corrupt };
    if (end === cursor.offset) return result;
    const logId = readChainHeads(logFile)?.log_id ?? null;
    const client = await connectPostgres(url);
    try {
      await client.query(SWARM_RUNS_DDL);
      if (logId) await client.query(CHAIN_HEADS_DDL);
      for (let i = 0; i < pending.length; i += BATCH_ROWS) {
        const batch = pending.slice(i, i + BATCH_ROWS);
        const inserted = await sendBatch(client, logId, batch);
        result.inserted += inserted.size;
        result.sent += batch.length;
        const last = batch[batch.length - 1] as Pending;
        await writeFileAtomic(cursorPath(home), JSON.stringify({ target, offset: last.end, lines: last.line, hashed: true } satisfies Cursor));
      }
      // Past trailing corrupt or blank lines too.
      await writeFileAtomic(cursorPath(home), JSON.stringify({ target, offset: end, lines: line, hashed: true } satisfies Cursor));
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      await client.end().catch(() => undefined);
    }
    return result;
  });
}

/**
 * The outbox's complete rows after `cursor`, with the lines that are not rows counted (`corrupt`); `end` is the byte
 * offset after the last complete line and `line` its number.
 */
function readPending(logFile: string, cursor: Cursor): { pending: Pending[]; corrupt: number; end: number; line: number } {
  const pending: Pending[] = [];
  let corrupt = 0;
  let line = cursor.lines;
  const end = readCompleteLines(logFile, cursor.offset, ({ text, offset }) => {
    line++;
    if (!text.trim()) return;
    try {
      const parsed: unknown = JSON.parse(text);
      const row = toIndexRow(parsed, line);
      pending.push({
        key: columnValue(rowKey(row, text)) as string,
        row,
        text,
        end: offset + Buffer.byteLength(text) + 1,
        line,
        parsed: parsed as Record<string, unknown>,
        hash: rowHash(parsed),
      });
    } catch {
      corrupt++;
    }
  });
  return { pending, corrupt, end, line };
}

/** `INSERT … VALUES` of `rows` (each under `keyOf(p)`) with `conflict`, returning the keys inserted. */
async function insertRows(client: pg.Client, logId: string | null, rows: Pending[], keyOf: (p: Pending) => string, conflict: string): Promise<Set<string>> {
  const cols = ['row_key', ...ATTEMPT_COLUMNS, 'row', 'row_hash', 'prev_hash', 'log_id', 'row_text'];
  const values: unknown[] = [];
  const tuples = rows.map((p) => {
    const base = values.length;
    const asText = needsRowText(p.text);
    values.push(
      keyOf(p),
      ...ATTEMPT_COLUMNS.map((c) => columnValue(p.row[c])),
      asText ? JSON.stringify(storableJson(p.parsed)) : p.text,
      p.hash,
      isChained(p.parsed) ? (p.parsed.prev_hash ?? null) : null,
      logId,
      asText ? p.text : null,
    );
    return `(${cols.map((_, j) => `$${base + j + 1}`).join(', ')})`;
  });
  const res = await client.query(
    `INSERT INTO swarm_runs AS s (${cols.join(', ')}) VALUES ${tuples.join(', ')} ${conflict} RETURNING row_key, (xmax = 0) AS inserted`,
    values,
  );
  return new Set(res.rows.filter((r: { inserted: boolean }) => r.inserted).map((r: { row_key: string }) => r.row_key));
}

/**
 * Sends one batch in one transaction (BEGIN … COMMIT; the caller rolls back on a throw) and moves the log's chain
 * heads past it. A row whose key is taken by another row of this very log lands under its shared key.
 * @returns the keys inserted
 */
async function sendBatch(client: pg.Client, logId: string | null, batch: Pending[]): Promise<Set<string>> {
  // A row_key twice in one statement would make ON CONFLICT … DO UPDATE touch one row twice, which Postgres
  // refuses: a later row of a key goes in the second statement below.
  const keys = new Set<string>();
  const first: Pending[] = [];
  const later: Pending[] = [];
  for (const p of batch) {
    (keys.has(p.key) ? later : first).push(p);
    keys.add(p.key);
  }
  await client.query('BEGIN');
  // A row already there without a hash (sent by a Verdict before row_hash) that is this very row gets its
  // hash, prev_hash and log_id; any other row already there is left as it is.
  const inserted = await insertRows(
    client,
    logId,
    first,
    (p) => p.key,
    `ON CONFLICT (row_key) DO UPDATE SET row_hash = EXCLUDED.row_hash, prev_hash = EXCLUDED.prev_hash, log_id = EXCLUDED.log_id, row_text = EXCLUDED.row_text
             WHERE s.row_hash IS NULL AND s.row = EXCLUDED.row`,
  );
  // Another row of this very log under a key taken (two critics' rows of one attempt share a key): it lands too,
  // under `<key>#<its hash's first 16 hex digits>`, so the log's chain has no gap in the table. A row of another
  // log under a key taken (a backfill's rewrite: Postgres keeps the rows as first sent) does not.
  const conflicting = [...first.filter((p) => !inserted.has(p.key)), ...later];
  if (conflicting.length && logId) {
    const held = await client.query('SELECT row_key, row_hash, log_id FROM swarm_runs WHERE row_key = ANY($1)', [[...new Set(conflicting.map((p) => p.key))]]);
    const holder = new Map(held.rows.map((r: { row_key: string; row_hash: string | null; log_id: string | null }) => [r.row_key, r]));
    const second = conflicting.filter((p) => {
      const h = holder.get(p.key);
      return h && h.row_hash !== null && h.row_hash !== p.hash && h.log_id === logId;
    });
    for (const p of second) p.key = sharedKey(p.key, p.hash);
    if (second.length) for (const k of await insertRows(client, logId, second, (p) => p.key, 'ON CONFLICT (row_key) DO NOTHING')) inserted.add(k);
  }
  if (logId)
    await advanceChainHeads(
      client,
      logId,
      batch.map((p) => ({ key: p.key, chained: isChained(p.parsed) ? p.parsed : null })),
      inserted,
    );
  await client.query('COMMIT');
  return inserted;
}

/** A row of the outbox on its way to swarm_runs. */
interface Pending {
  key: string;
  row: IndexRow;
  /** The line as logged. */
  text: string;
  /** Byte offset just past the line's newline. */
  end: number;
  line: number;
  parsed: Record<string, unknown>;
  /** chain.ts rowHash of the parsed row. */
  hash: string;
}

/**
 * Moves the Postgres chain heads of `logId` over the chained rows of `batch` that were inserted now (in log order),
 * in the caller's transaction. Rows already in swarm_runs (a batch sent again) do not move a head twice.
 */
async function advanceChainHeads(
  client: pg.Client,
  logId: string,
  batch: { key: string; chained: Record<string, unknown> | null }[],
  inserted: Set<string>,
): Promise<void> {
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
