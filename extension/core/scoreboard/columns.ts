import fs from 'node:fs';
import writeFileAtomic from 'write-file-atomic';
import type { Database } from 'sql.js';
import type { CorruptLine } from '../store/sqlite-index';

/**
 * The attempts table's columns that the filtered scoreboard reads (`--engine`, `--since`: filtered-stats.ts), as typed
 * arrays in one file beside the index (`<index>.columns`), so a filtered `verdict models` neither loads the sql.js
 * database (173 MB for 1M rows) nor asks SQLite to sort every attempt for the medians: it scans the arrays. Exact: every
 * value is kept (medians need them), strings are ids into `strings`. A cache like the index: valid for the log bytes
 * it names (`offset`, `head`), extended by the rows the index got since (`lastLine`), rebuilt when the log was replaced.
 */
export interface AttemptColumns {
  /** The log bytes these rows describe, and the hash of the log's head (sqlite-index.ts headOf). */
  offset: number;
  head: string;
  /** Highest `line` of the attempts table included. */
  lastLine: number;
  rows: number;
  /** Corrupt lines of the log skipped by the index, and the first few (what `verdict models` reports). */
  corrupt: number;
  corruptSamples: CorruptLine[];
  /** Dictionary: every model, task type, engine and lab named by a row. */
  strings: string[];
  /** Per group id: [model id or -1 (no stamped model), task type id ('' when none)]. */
  groups: [number, number][];
  /** Task ids (one per (model, task_type, run_id, task_key)) in use: 0..units-1. */
  units: number;
  /** Ids of whole tasks (one per (run_id, task_key), whatever model worked on them) in use: 0..tasks-1. */
  tasks: number;
  /** Best-of-N group ids in use: 0..bestOfs-1. */
  bestOfs: number;
  /** Rows whose ended_at is not in Date.toISOString's form (Ringer's, another writer's): row → the text. */
  endedText: Record<number, string>;
  /** Rows of runs forced over lint errors (eval row `forced: true`): kept as step 3, counted here. */
  forced: number;
  /** 0 work, 1 review, 2 select, 3 another step or a row of a run forced over lint errors (never evidence). */
  step: Uint8Array;
  group: Int32Array;
  unit: Int32Array;
  /** The row's whole task (run_id, task_key): where a retry on another model is told from a first try. */
  task: Int32Array;
  engine: Int32Array;
  /** -1 when the row names no lab. */
  lab: Int32Array;
  /** Id of (run_id, group_key) for best-of-N rows; -1 outside a group. */
  bestOf: Int32Array;
  /** The row's candidate number (1…32), 0 when it has none. */
  candidate: Uint8Array;
  /** Select rows of a decided consensus group: the outvoted candidates as a bit mask (index-row.ts `outvoted`); 0 otherwise. */
  outvoted: Float64Array;
  ord: Float64Array;
  /** 0 PASS, 1 FAIL, 2 TIMEOUT, 3 ERROR, 4 RATE_LIMITED, 5 another verdict. */
  verdict: Uint8Array;
  /** 0 none (a review without a valid answer, or not a review), 1 approve, 2 changes, 3 reject, 4 another. */
  review: Uint8Array;
  /** ms; NaN when unknown. */
  duration: Float64Array;
  tokens: Float64Array;
  /** micro-USD; NaN when unknown. */
  cost: Float64Array;
  /** ended_at as ms since the epoch when it is in toISOString's form; NaN when null or in another form (endedText). */
  ended: Float64Array;
}

/** Bump when the layout changes: a file of another version is rebuilt. */
const COLUMNS_VERSION = 4;

const VERDICTS = ['PASS', 'FAIL', 'TIMEOUT', 'ERROR', 'RATE_LIMITED'];
const REVIEWS = ['approve', 'changes', 'reject'];
const STEPS = ['work', 'review', 'select'];
/** toISOString's form, years 0000-9999: for these, comparing the strings is comparing the times. */
export const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

type ColumnName =
  | 'step'
  | 'group'
  | 'unit'
  | 'task'
  | 'engine'
  | 'lab'
  | 'bestOf'
  | 'candidate'
  | 'outvoted'
  | 'ord'
  | 'verdict'
  | 'review'
  | 'duration'
  | 'tokens'
  | 'cost'
  | 'ended';
const LAYOUT: [ColumnName, Uint8ArrayConstructor | Int32ArrayConstructor | Float64ArrayConstructor][] = [
  ['ord', Float64Array],
  ['duration', Float64Array],
  ['tokens', Float64Array],
  ['cost', Float64Array],
  ['ended', Float64Array],
  ['outvoted', Float64Array],
  ['group', Int32Array],
  ['unit', Int32Array],
  ['task', Int32Array],
  ['engine', Int32Array],
  ['lab', Int32Array],
  ['bestOf', Int32Array],
  ['step', Uint8Array],
  ['candidate', Uint8Array],
  ['verdict', Uint8Array],
  ['review', Uint8Array],
];

/** What the file's JSON header holds besides the arrays. */
type Header = Omit<AttemptColumns, ColumnName> & { version: number };

/** The keys behind the task and best-of-N group ids: read only to extend the columns (a file of their own). */
interface Keys {
  units: string[];
  bestOf: string[];
}

/** Growable builder over an existing (or empty) set of columns. */
class Builder {
  readonly strings: string[];
  private readonly stringIds = new Map<string, number>();
  readonly groups: [number, number][];
  private readonly groupIds = new Map<string, number>();
  readonly unitKeys: string[];
  private readonly unitIds = new Map<string, number>();
  /**
   * Whole tasks by `run_id\u0001task_key`. Not stored: a task's id is given at its first row, as its first unit's is,
   * so numbering the tasks of the units in unit order gives the same ids again.
   */
  private readonly taskIds = new Map<string, number>();
  readonly bestOfKeys: string[];
  private readonly bestOfIds = new Map<string, number>();
  readonly endedText: Record<number, string>;
  forced: number;
  cols: { [K in ColumnName]: number[] | Uint8Array | Int32Array | Float64Array };
  rows: number;

  constructor(base: StoredColumns | null) {
    this.strings = base ? [...base.strings] : [];
    this.strings.forEach((s, i) => this.stringIds.set(s, i));
    this.groups = base ? base.groups.map((g) => [g[0], g[1]]) : [];
    this.groups.forEach((g, i) => this.groupIds.set(`${g[0]}\u0001${g[1]}`, i));
    this.unitKeys = base ? [...base.keys.units] : [];
    this.unitKeys.forEach((k, i) => {
      this.unitIds.set(k, i);
      this.taskOf(k.slice(k.indexOf('\u0001') + 1));
    });
    this.bestOfKeys = base ? [...base.keys.bestOf] : [];
    this.bestOfKeys.forEach((k, i) => this.bestOfIds.set(k, i));
    this.endedText = base ? { ...base.endedText } : {};
    this.rows = base?.rows ?? 0;
    this.forced = base?.forced ?? 0;
    this.cols = Object.fromEntries(LAYOUT.map(([name]) => [name, base ? Array.from(base[name] as ArrayLike<number>) : []])) as Builder['cols'];
  }

  /** The id of the whole task `run_id\u0001task_key`, a new one for a task not seen yet. */
  private taskOf(key: string): number {
    let id = this.taskIds.get(key);
    if (id === undefined) this.taskIds.set(key, (id = this.taskIds.size));
    return id;
  }

  private str(s: string): number {
    let id = this.stringIds.get(s);
    if (id === undefined) this.stringIds.set(s, (id = this.strings.push(s) - 1));
    return id;
  }

  /** Adds one attempts-table row (columns in {@link SELECT_COLUMNS} order). */
  add(v: unknown[]): void {
    const [runId, taskKey, ord, model, taskType, engine, lab, verdict, duration, tokens, cost, endedAt, step, review, groupKey, candidate, forced, outvoted] =
      v;
    const modelId = model === null ? -1 : this.str(String(model));
    const typeId = this.str(String(taskType ?? ''));
    const gk = `${modelId}\u0001${typeId}`;
    let group = this.groupIds.get(gk);
    if (group === undefined) this.groupIds.set(gk, (group = this.groups.push([modelId, typeId]) - 1));
    const tk = `${String(runId)}\u0001${String(taskKey)}`;
    const uk = `${group}\u0001${tk}`;
    let unit = this.unitIds.get(uk);
    if (unit === undefined) {
      this.unitIds.set(uk, (unit = this.unitKeys.push(uk) - 1));
    }
    let bestOf = -1;
    if (groupKey !== null && groupKey !== undefined) {
      const bk = `${String(runId)}\u0001${String(groupKey)}`;
      const b = this.bestOfIds.get(bk);
      if (b === undefined) this.bestOfIds.set(bk, (bestOf = this.bestOfKeys.push(bk) - 1));
      else bestOf = b;
    }
    const num = (x: unknown) => (x === null || x === undefined ? NaN : Number(x));
    let ended = NaN;
    if (endedAt !== null && endedAt !== undefined) {
      const text = String(endedAt);
      if (CANONICAL_ISO.test(text) && new Date(Date.parse(text)).toISOString() === text) ended = Date.parse(text);
      else this.endedText[this.rows] = text;
    }
    const c = this.cols as { [K in ColumnName]: number[] };
    if (Number(forced) === 1) this.forced++;
    c.step.push(Number(forced) === 1 ? 3 : indexOr(STEPS, step, 3));
    c.group.push(group);
    c.unit.push(unit);
    c.task.push(this.taskOf(tk));
    c.engine.push(this.str(String(engine)));
    c.lab.push(lab === null || lab === undefined ? -1 : this.str(String(lab)));
    c.bestOf.push(bestOf);
    const n = candidate === null || candidate === undefined ? 0 : Number(candidate);
    c.candidate.push(Number.isInteger(n) && n >= 1 && n <= 32 ? n : 0);
    c.outvoted.push(outvoted === null || outvoted === undefined ? 0 : Number(outvoted));
    c.ord.push(Number(ord));
    c.verdict.push(indexOr(VERDICTS, verdict, 5));
    c.review.push(review === null || review === undefined ? 0 : indexOr(REVIEWS, review, 3) + 1);
    c.duration.push(num(duration));
    c.tokens.push(num(tokens));
    c.cost.push(num(cost));
    c.ended.push(ended);
    this.rows++;
  }

  build(offset: number, head: string, lastLine: number, corrupt: number, corruptSamples: CorruptLine[]): StoredColumns {
    const arrays = Object.fromEntries(LAYOUT.map(([name, Type]) => [name, Type.from(this.cols[name] as ArrayLike<number>)])) as Pick<
      AttemptColumns,
      ColumnName
    >;
    return {
      offset,
      head,
      lastLine,
      corrupt,
      corruptSamples,
      rows: this.rows,
      units: this.unitKeys.length,
      tasks: this.taskIds.size,
      bestOfs: this.bestOfKeys.length,
      strings: this.strings,
      groups: this.groups,
      endedText: this.endedText,
      forced: this.forced,
      keys: { units: this.unitKeys, bestOf: this.bestOfKeys },
      ...arrays,
    };
  }
}

function indexOr(list: string[], value: unknown, other: number): number {
  const i = list.indexOf(String(value));
  return i < 0 ? other : i;
}

/** The attempts table's columns {@link Builder.add} reads, in its order. */
const SELECT_COLUMNS =
  'run_id, task_key, ord, model, task_type, engine, lab, verdict, duration_ms, tokens, cost_microusd, ended_at, step, review_verdict, group_key, candidate, forced, outvoted';

/**
 * The columns of every row of the index's attempts table with `line` above `base.lastLine` appended to `base` (all
 * rows when `base` is null).
 * @param offset, head the log position the index is now at (its meta log_offset and head)
 * @param corrupt, corruptSamples the index's corrupt-line count and first lines, kept with the columns
 */
export function columnsFromIndex(
  db: Database,
  base: StoredColumns | null,
  offset: number,
  head: string,
  corrupt: number,
  corruptSamples: CorruptLine[],
): StoredColumns {
  const b = new Builder(base);
  const stmt = db.prepare(`SELECT line, ${SELECT_COLUMNS} FROM attempts WHERE line > ? ORDER BY line`);
  let lastLine = base?.lastLine ?? 0;
  try {
    stmt.bind([lastLine]);
    while (stmt.step()) {
      const v = stmt.get();
      lastLine = Number(v[0]);
      b.add(v.slice(1));
    }
  } finally {
    stmt.free();
  }
  return b.build(offset, head, lastLine, corrupt, corruptSamples);
}

/** The columns as stored (with the keys an incremental update needs to find existing tasks and groups). */
export type StoredColumns = AttemptColumns & { keys: Keys };

/**
 * Writes the columns to `file` atomically: a 4-byte little-endian header length, the JSON header, padding to 8 bytes,
 * then each array's bytes in LAYOUT order (each padded to 8); the keys go to `<file>.keys.json` first.
 */
export async function writeColumns(file: string, c: StoredColumns): Promise<void> {
  await writeFileAtomic(`${file}.keys.json`, JSON.stringify({ version: COLUMNS_VERSION, lastLine: c.lastLine, ...c.keys }));
  const header: Header = {
    version: COLUMNS_VERSION,
    offset: c.offset,
    head: c.head,
    lastLine: c.lastLine,
    corrupt: c.corrupt,
    corruptSamples: c.corruptSamples,
    rows: c.rows,
    units: c.units,
    tasks: c.tasks,
    bestOfs: c.bestOfs,
    strings: c.strings,
    groups: c.groups,
    endedText: c.endedText,
    forced: c.forced,
  };
  const json = Buffer.from(JSON.stringify(header));
  const parts: Buffer[] = [];
  const lengthField = Buffer.alloc(4);
  lengthField.writeUInt32LE(json.length);
  parts.push(lengthField, json, Buffer.alloc(pad(4 + json.length)));
  for (const [name] of LAYOUT) {
    const a = c[name];
    parts.push(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.alloc(pad(a.byteLength)));
  }
  await writeFileAtomic(file, Buffer.concat(parts));
}

const pad = (n: number) => (8 - (n % 8)) % 8;

/**
 * The columns stored in `file`, or null when it is missing, of another version or damaged (it is only a cache).
 * With `keys`, also the keys behind the ids (needed only to extend them); null when they do not match.
 */
export function readColumns(file: string, keys = false): StoredColumns | null {
  let buf: Buffer;
  try {
    // Read into a buffer of its own (offset 0 of its ArrayBuffer), so the arrays, 8-aligned in the file, are views.
    const fd = fs.openSync(file, 'r');
    try {
      buf = Buffer.from(new ArrayBuffer(fs.fstatSync(fd).size));
      let got = 0;
      while (got < buf.length) {
        const n = fs.readSync(fd, buf, got, buf.length - got, got);
        if (n === 0) return null;
        got += n;
      }
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
  try {
    const length = buf.readUInt32LE(0);
    const header = JSON.parse(buf.toString('utf8', 4, 4 + length)) as Header;
    if (header.version !== COLUMNS_VERSION) return null;
    const body = buf.subarray(4 + length + pad(4 + length));
    let at = 0;
    const arrays: Partial<Pick<AttemptColumns, ColumnName>> = {};
    for (const [name, Type] of LAYOUT) {
      const bytes = header.rows * Type.BYTES_PER_ELEMENT;
      if (at + bytes > body.byteLength) return null;
      (arrays as Record<string, unknown>)[name] = new Type(body.buffer as ArrayBuffer, body.byteOffset + at, header.rows);
      at += bytes + pad(bytes);
    }
    let k: Keys = { units: [], bestOf: [] };
    if (keys) {
      const stored = JSON.parse(fs.readFileSync(`${file}.keys.json`, 'utf8')) as Keys & { version: number; lastLine: number };
      if (stored.version !== COLUMNS_VERSION || stored.lastLine !== header.lastLine || stored.units.length !== header.units) return null;
      k = { units: stored.units, bestOf: stored.bestOf };
    }
    return { ...header, keys: k, ...(arrays as Pick<AttemptColumns, ColumnName>) };
  } catch {
    return null;
  }
}
