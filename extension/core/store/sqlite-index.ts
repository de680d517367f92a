import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Database } from 'sql.js';
import writeFileAtomic from 'write-file-atomic';
import { withLock } from '../fs/lock';
import { toIndexRow, RowError, type IndexRow } from './index-row';
import { fileSize, readCompleteLines } from './log-lines';
import { loadSqlJs } from './sqljs';

/** Bump when the tables below change: an index of another version is rebuilt from runs.jsonl. */
export const INDEX_SCHEMA_VERSION = 6;

/** Corrupt lines kept by line number and reason (all are counted). */
const CORRUPT_SAMPLES = 100;

/** Bytes at the head of runs.jsonl that identify it: a different head means a different log, so a rebuild. */
const HEAD_BYTES = 256;

/** The attempts table: the narrow columns of every eval row (the row itself stays in runs.jsonl). */
export const ATTEMPT_COLUMNS = [
  'run_id',
  'task_key',
  'attempt',
  'ord',
  'model',
  'task_type',
  'engine',
  'harness',
  'lab',
  'reported_model',
  'access_plan',
  'reasoning_effort',
  'verdict',
  'duration_ms',
  'tokens',
  'cost_microusd',
  'ended_at',
  'identity',
  'host',
  'format',
  'step',
  'reviewer',
  'review_verdict',
  'group_key',
  'candidate',
  'forced',
  'outvoted',
] as const satisfies readonly (keyof IndexRow)[];

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
  line INTEGER PRIMARY KEY, run_id TEXT NOT NULL, task_key TEXT NOT NULL, attempt INTEGER, ord INTEGER NOT NULL,
  model TEXT, task_type TEXT NOT NULL, engine TEXT NOT NULL, harness TEXT, lab TEXT, reported_model TEXT,
  access_plan TEXT, reasoning_effort TEXT, verdict TEXT NOT NULL, duration_ms REAL, tokens INTEGER,
  cost_microusd INTEGER, ended_at TEXT, identity TEXT, host TEXT, format TEXT NOT NULL, step TEXT NOT NULL,
  reviewer INTEGER, review_verdict TEXT, group_key TEXT, candidate INTEGER, forced INTEGER NOT NULL DEFAULT 0, outvoted INTEGER);
CREATE INDEX IF NOT EXISTS attempts_group ON attempts (model, task_type);
CREATE TABLE IF NOT EXISTS corrupt (line INTEGER PRIMARY KEY, offset INTEGER NOT NULL, reason TEXT NOT NULL);
`;

/** What one {@link EvalIndex.update} did. */
export interface IndexUpdate {
  /** Rows added to the index. */
  added: number;
  /** Lines skipped as corrupt in this update. */
  corrupt: number;
  /** True when the index was (re)built from byte 0: new, another schema version, or runs.jsonl replaced/truncated. */
  rebuilt: boolean;
  /** (model, task_type) groups that got rows; `model` null is the quarantine. */
  touched: { model: string | null; task_type: string }[];
}

/** A corrupt line of runs.jsonl that was skipped. */
export interface CorruptLine {
  /** 1-based line number. */
  line: number;
  /** Byte offset of the line. */
  offset: number;
  reason: string;
}

/**
 * The sql.js (SQLite in wasm) index of runs.jsonl, stored as `verdict.sqlite`. It is a cache: rebuildable from the
 * log at any time and never the only copy. It remembers how many bytes of the log it has read, so an update
 * reads only what was appended, and it never reads a trailing line still being written.
 */
export class EvalIndex {
  private constructor(
    /** The open database (in memory; {@link save} writes it back). */
    readonly db: Database,
    readonly logFile: string,
    readonly indexFile: string | null,
  ) {}

  /**
   * Opens the index file (or a fresh one when it is missing, unreadable or of another schema version).
   * @param indexFile null: in memory only, never saved
   */
  static async open(logFile: string, indexFile: string | null): Promise<EvalIndex> {
    const SQL = await loadSqlJs();
    let db: Database | null = null;
    if (indexFile && fs.existsSync(indexFile)) {
      try {
        db = new SQL.Database(fs.readFileSync(indexFile));
        const v = db.exec("SELECT value FROM meta WHERE key = 'schema_version'")[0]?.values[0]?.[0];
        if (Number(v) !== INDEX_SCHEMA_VERSION) {
          db.close();
          db = null;
        }
      } catch {
        // A damaged index is only a cache: start again from the log.
        db?.close();
        db = null;
      }
    }
    const fresh = db === null;
    db ??= new SQL.Database();
    db.run(SCHEMA);
    const index = new EvalIndex(db, path.resolve(logFile), indexFile);
    if (fresh) index.reset();
    return index;
  }

  /** Bytes of runs.jsonl already in the index. */
  get offset(): number {
    return Number(this.meta('log_offset') ?? 0);
  }

  /** Lines of runs.jsonl read so far (complete lines, corrupt ones included). */
  get lines(): number {
    return Number(this.meta('lines') ?? 0);
  }

  /** Corrupt lines skipped so far, over the whole log. */
  get corruptCount(): number {
    return Number(this.meta('corrupt') ?? 0);
  }

  /** The first corrupt lines (at most 100), in log order. */
  corruptSamples(): CorruptLine[] {
    const res = this.db.exec('SELECT line, offset, reason FROM corrupt ORDER BY line');
    return (res[0]?.values ?? []).map(([line, offset, reason]) => ({ line: Number(line), offset: Number(offset), reason: String(reason) }));
  }

  /** True when runs.jsonl has bytes the index has not read, or is not the log the index was built from. */
  stale(): boolean {
    const size = fileSize(this.logFile);
    return size !== this.offset || (size > 0 && this.meta('head') !== headOf(this.logFile, this.offset));
  }

  /**
   * Reads what was appended to runs.jsonl since the last update (everything, after a rebuild). Corrupt lines
   * (not JSON, not an object, a required field missing or mistyped) are skipped and counted, never fatal.
   */
  update(): IndexUpdate {
    let rebuilt = false;
    const size = fileSize(this.logFile);
    if (size < this.offset || this.meta('head') !== headOf(this.logFile, this.offset)) {
      this.reset();
      rebuilt = true;
    }
    if (this.offset === 0) rebuilt = true;
    const touched = new Map<string, { model: string | null; task_type: string }>();
    let added = 0;
    let corrupt = 0;
    let line = this.lines;
    const insert = this.db.prepare(`INSERT INTO attempts (line, ${ATTEMPT_COLUMNS.join(', ')}) VALUES (?${', ?'.repeat(ATTEMPT_COLUMNS.length)})`);
    const bad = this.db.prepare('INSERT INTO corrupt (line, offset, reason) VALUES (?, ?, ?)');
    this.db.run('BEGIN');
    try {
      const end = readCompleteLines(this.logFile, this.offset, ({ text, offset }) => {
        line++;
        if (!text.trim()) return;
        let row: IndexRow;
        try {
          row = toIndexRow(JSON.parse(text), line);
        } catch (e) {
          corrupt++;
          if (this.corruptCount + corrupt <= CORRUPT_SAMPLES) {
            bad.run([line, offset, e instanceof RowError ? e.message : `not JSON (${(e as Error).message})`]);
          }
          return;
        }
        insert.run([line, ...ATTEMPT_COLUMNS.map((c) => row[c])]);
        added++;
        const key = `${row.model ?? '\u0000'}\u0001${row.task_type}`;
        if (!touched.has(key)) touched.set(key, { model: row.model, task_type: row.task_type });
      });
      this.setMeta('log_offset', String(end));
      this.setMeta('lines', String(line));
      this.setMeta('corrupt', String(this.corruptCount + corrupt));
      this.setMeta('head', headOf(this.logFile, end));
      this.db.run('COMMIT');
    } catch (e) {
      this.db.run('ROLLBACK');
      throw e;
    } finally {
      insert.free();
      bad.free();
    }
    return { added, corrupt, rebuilt, touched: [...touched.values()] };
  }

  /**
   * Writes the index to its file atomically (unique temp file + rename), so a reader never sees half a file.
   * No-op for an in-memory index.
   */
  async save(): Promise<void> {
    if (!this.indexFile) return;
    fs.mkdirSync(path.dirname(this.indexFile), { recursive: true });
    const bytes = this.db.export();
    await writeFileAtomic(this.indexFile, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  /** Frees the database (wasm memory). */
  close(): void {
    this.db.close();
  }

  /** Empties the index, to be rebuilt from byte 0 of the log. */
  private reset(): void {
    this.db.run('DELETE FROM attempts; DELETE FROM corrupt; DELETE FROM meta;');
    this.setMeta('schema_version', String(INDEX_SCHEMA_VERSION));
    this.setMeta('log_file', this.logFile);
    this.setMeta('log_offset', '0');
    this.setMeta('lines', '0');
    this.setMeta('corrupt', '0');
    this.setMeta('head', '');
  }

  /** A value of the meta table (log_offset, lines, corrupt, head, schema_version, and derived tables' own keys). */
  meta(key: string): string | null {
    const stmt = this.db.prepare('SELECT value FROM meta WHERE key = ?');
    try {
      stmt.bind([key]);
      return stmt.step() ? String(stmt.get()[0]) : null;
    } finally {
      stmt.free();
    }
  }

  /** Sets a meta value. */
  setMeta(key: string, value: string): void {
    this.db.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value', [key, value]);
  }
}

/** sha256 of the first min(offset, 256) bytes of the log: identifies the file the index was built from. */
export function headOf(file: string, offset: number): string {
  const n = Math.min(offset, HEAD_BYTES);
  if (n === 0) return '';
  const buf = Buffer.alloc(n);
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return 'missing';
  }
  try {
    const read = fs.readSync(fd, buf, 0, n, 0);
    return crypto.createHash('sha256').update(buf.subarray(0, read)).digest('hex');
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Opens the index of `logFile` stored at `indexFile`, brings it up to date and saves it when it changed, under a
 * cross-process lock so two updaters never interleave.
 * @param onUpdate runs inside the lock after an update that added rows or rebuilt, before the save (the
 *   scoreboard refreshes its aggregates there)
 */
export async function openCurrentIndex(
  logFile: string,
  indexFile: string,
  prepare: (index: EvalIndex) => void,
  onUpdate: (index: EvalIndex, u: IndexUpdate) => void,
): Promise<{ index: EvalIndex; update: IndexUpdate | null }> {
  let index = await EvalIndex.open(logFile, indexFile);
  prepare(index);
  if (!index.stale()) return { index, update: null };
  index.close();
  fs.mkdirSync(path.dirname(indexFile), { recursive: true });
  return withLock(indexFile, async () => {
    // Another process may have updated the file while we waited.
    index = await EvalIndex.open(logFile, indexFile);
    prepare(index);
    const update = index.update();
    if (update.added || update.corrupt || update.rebuilt) {
      onUpdate(index, update);
      await index.save();
    }
    return { index, update };
  });
}
