import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { canonicalJson, readChainHeads, rowHash, type ChainHead } from './chain';
import { evalRowLabel } from './eval-row';
import { toIndexRow, type IndexRow } from './index-row';
import { readCompleteLines } from './log-lines';
import { CHAIN_HEADS_DDL, columnValue, connectPostgres, rowKey, sentOffset, sharedKey, storableJson, SWARM_RUNS_DDL } from './postgres';
import { ATTEMPT_COLUMNS } from './sqlite-index';

/**
 * Verification of the Postgres copy of the evidence (table swarm_runs) against what this home holds outside it: its
 * eval log `runs.jsonl`, itself checked against `runs.chain.json` (chain.ts), and the outbox cursor saying how much of
 * the log was sent. Anyone who can write the database (a pool worker machine has its URL) can edit swarm_runs and
 * verdict_chain_heads alike; they cannot edit this home.
 *
 * Every row of the table is checked on its own first, in order, the first failure being its finding:
 * 1. `unhashed`: no row_hash (sent by a Verdict before the column and not filled since, or stripped).
 * 2. `row-edited` (depth `full` only): its row (row_text when set, else the JSONB `row`) no longer hashes to row_hash,
 *    or prev_hash is not the row's own.
 * 3. `column-edited`: a column the scoreboard reads (ATTEMPT_COLUMNS: verdict, cost, tokens, model, task type, …) is
 *    not what the row says (index-row.ts toIndexRow of it, as the sync computed it).
 * 4. `wrong-key`: row_key is not the key of its row, nor that key with its hash (postgres.ts sharedKey): a row copied
 *    under another attempt's key.
 * Then by row_hash: a row of this home's logs (runs.jsonl, and backups a `verdict backfill` left beside it) must have
 * that row's columns and key (`column-edited`, `wrong-key`) and be there once (`copied`); a row that says it came
 * from one of them (its log_id) and is none of their rows is `forged` (inserted, or edited with its hash recomputed).
 * Every row the outbox cursor says was sent must be there: `missing` (deleted), unless another row of this home's
 * logs holds its key (a backfill's earlier version: Postgres keeps rows as first sent) — a note.
 * Rows of other logs (other machines) are checked by their links and against verdict_chain_heads, which sits in the
 * same database: `broken` (a row's prev_hash names no row of its chain there: rows before it deleted or edited),
 * `forked` (two rows after one), `no-head`, `cut` (the head counts more rows), `head-mismatch`, `beyond-head`. Someone
 * who can write the database can forge another machine's rows together with their head; only that machine's own
 * `verify-log --pg` finds it. Where one home writes every row (one machine, or a pool's orchestrator), nothing of
 * another log should be there at all, and `mine_only` makes every such row a finding (`foreign`).
 */

/** What one finding is about; see the module comment. */
export type PgFindingKind =
  | 'unhashed'
  | 'row-edited'
  | 'column-edited'
  | 'wrong-key'
  | 'copied'
  | 'forged'
  | 'missing'
  | 'broken'
  | 'forked'
  | 'no-head'
  | 'cut'
  | 'head-mismatch'
  | 'beyond-head'
  | 'foreign';

/** One finding of {@link verifySwarmRuns}. */
export interface PgFinding {
  kind: PgFindingKind;
  /** The row of swarm_runs concerned; null for a row that is not there (`missing`, `cut`). */
  row_key: string | null;
  /** `run_id/task_key attempt n`. */
  row: string | null;
  /** 1-based line of this home's eval log the row is (or should be), when it is one of its rows. */
  line: number | null;
  message: string;
}

/** How deep {@link verifySwarmRuns} reads. */
export type PgDepth = 'full' | 'columns';

/** What {@link verifySwarmRuns} checked and found. */
export interface PgVerification {
  table: 'swarm_runs';
  /**
   * `full` (verify-log --pg): every row read whole and its hash recomputed. `columns` (models --pg): the columns the
   * scoreboard reads, each row's fields they come from (read in Postgres, not the whole row) and the hash columns;
   * rows of this home are compared with its log, so only an edit of another machine's row that keeps its row_hash
   * and changes both a column and its row stays for `full` to find.
   */
  depth: PgDepth;
  intact: boolean;
  /** Rows in swarm_runs. */
  rows: number;
  /** Rows whose row_hash is a row of this home's logs (edited ones included). */
  mine: number;
  /** Rows of runs.jsonl the outbox cursor says reached this database; null when the cursor is another database's. */
  sent: number | null;
  /** Rows of other logs, per chain (log_id, host); `head_rows` from verdict_chain_heads, null without a head. */
  others: { log_id: string | null; host: string; rows: number; head_rows: number | null }[];
  /** Rows of other logs in no chain (Ringer's; rows from before the chain): only their own columns are checked. */
  unchained_others: number;
  /** Every finding, those naming a line of this home's log first (by line), then in row_key order. */
  findings: PgFinding[];
  /** row_keys of the rows proven edited, forged or unverifiable: what `verdict models --pg` leaves out. */
  rejected: string[];
  notes: string[];
}

/** Options of {@link verifySwarmRuns}. */
export interface PgVerifyOptions {
  /** This home's eval log (`<home>/runs.jsonl`), or another log given with `--log`. */
  logFile: string;
  /** The home whose outbox cursor says what was sent (null: the log is not a home's; nothing is known to be sent). */
  home: string | null;
  depth: PgDepth;
  /** Every row must be one of this home's (one writer: a machine alone, a pool's orchestrator). */
  mineOnly?: boolean;
  /** Also return the scoreboard columns (ATTEMPT_COLUMNS order) of every row not rejected. */
  collect?: boolean;
}

/** Rows read per query. */
const PAGE_ROWS = 1000;

/** swarm_runs columns pg returns as strings (BIGINT). */
const BIGINT_COLUMNS = new Set<string>(['ord', 'tokens', 'cost_microusd', 'outvoted']);

/** The fields of an eval row that toIndexRow reads (the `columns` depth reads only these of `row`). */
const INDEX_FIELDS = [
  'run_id',
  'task_key',
  'attempt',
  'tokens_in',
  'tokens_out',
  'worker_tokens',
  'model',
  'reported_model',
  'task_type',
  'worker_engine',
  'harness',
  'lab',
  'access_plan',
  'reasoning_effort',
  'verdict',
  'duration_ms',
  'cost_microusd',
  'ended_at',
  'logged_at',
  'identity',
  'host',
  'step',
  'group',
  'candidate',
  'prev_hash',
];

/** A row of one of this home's logs. */
interface LocalRow {
  file: string;
  line: number;
  label: string;
  key: string;
  /** canonicalJson of its scoreboard columns as sent ({@link columnsOf}). */
  columns: string;
  /** In runs.jsonl before the outbox cursor of this database. */
  sent: boolean;
  /** Seen in swarm_runs. */
  found: boolean;
}

/** A row read from swarm_runs. */
interface PgRow {
  row_key: string;
  row: Record<string, unknown> | null;
  row_text: string | null;
  row_hash: string | null;
  prev_hash: string | null;
  log_id: string | null;
  chained: boolean;
  [column: string]: unknown;
}

/** The scoreboard columns of an indexed row, as the sync sends them (strings made storable). */
function columnsOf(row: IndexRow): unknown[] {
  return ATTEMPT_COLUMNS.map((c) => columnValue(row[c]));
}

/** The scoreboard columns of a swarm_runs row as JSON values (BIGINT strings as numbers). */
function pgColumns(r: PgRow): unknown[] {
  return ATTEMPT_COLUMNS.map((c) => {
    const v = r[c];
    return BIGINT_COLUMNS.has(c) && typeof v === 'string' ? Number(v) : v === undefined ? null : v;
  });
}

/** "verdict is PASS in swarm_runs, FAIL in …", for each column that differs. */
function columnDiff(have: unknown[], want: unknown[], where: string): string {
  const diffs: string[] = [];
  ATTEMPT_COLUMNS.forEach((c, i) => {
    if (canonicalJson(have[i] ?? null) !== canonicalJson(want[i] ?? null)) diffs.push(`${c} is ${show(have[i])} in swarm_runs, ${show(want[i])} in ${where}`);
  });
  return diffs.join('; ');
}

function show(v: unknown): string {
  return v === null || v === undefined ? 'null' : typeof v === 'string' ? v : JSON.stringify(v);
}

/** The logs this home holds: `logFile` and the backups `verdict backfill` kept beside it (backfill.ts). */
function localLogs(logFile: string): string[] {
  const dir = path.dirname(logFile);
  const prefix = `${path.basename(logFile)}.before-backfill-`;
  let names: string[] = [];
  try {
    names = fs
      .readdirSync(dir)
      .filter((n) => n.startsWith(prefix) && !n.endsWith('.chain.json'))
      .sort();
  } catch {
    // no folder: no backups
  }
  return [logFile, ...names.map((n) => path.join(dir, n))];
}

/**
 * Reads this home's logs: every row by hash (runs.jsonl's own first, so a row a backup shares keeps its line there),
 * and the log ids they go by.
 * @param sentBytes bytes of `logFile` the outbox sent to this database; null when unknown
 */
function readLocal(logFile: string, sentBytes: number | null): { byHash: Map<string, LocalRow>; logIds: Set<string> } {
  const byHash = new Map<string, LocalRow>();
  const logIds = new Set<string>();
  for (const file of localLogs(logFile)) {
    const id = readChainHeads(file)?.log_id;
    if (id) logIds.add(id);
    let line = 0;
    readCompleteLines(file, 0, ({ text, offset }) => {
      line++;
      if (!text.trim()) return;
      let parsed: unknown;
      let row: IndexRow;
      try {
        parsed = JSON.parse(text);
        row = toIndexRow(parsed, line);
      } catch {
        return; // a line the outbox never sends
      }
      const hash = rowHash(parsed);
      if (byHash.has(hash)) return;
      const sent = file === logFile && sentBytes !== null && offset + Buffer.byteLength(text) + 1 <= sentBytes;
      byHash.set(hash, {
        file,
        line,
        label: evalRowLabel(parsed as Record<string, unknown>),
        key: columnValue(rowKey(row, text)) as string,
        columns: canonicalJson(columnsOf(row)),
        sent,
        found: false,
      });
    });
  }
  return { byHash, logIds };
}

/** The SELECT list of one depth. */
function selectList(depth: PgDepth): string {
  const cols = ['row_key', ...ATTEMPT_COLUMNS, 'row_hash', 'prev_hash', 'log_id', "(row ? 'prev_hash') AS chained"];
  if (depth === 'full') return [...cols, 'row', 'row_text'].join(', ');
  // Only the fields the columns come from, built in Postgres: the rows' big fields (check output, spec) stay there.
  const fields = INDEX_FIELDS.map((f) => `'${f}', row->'${f}'`).join(', ');
  const reduced = (f: string) =>
    `CASE WHEN jsonb_typeof(row->'${f}') = 'object' THEN jsonb_build_object('reviewer', row->'${f}'->'reviewer', 'verdict', row->'${f}'->'verdict') ELSE row->'${f}' END`;
  return [
    ...cols,
    `jsonb_build_object(${fields}) || jsonb_build_object('review', ${reduced('review')}, 'rank', ${reduced('rank')}) AS row`,
    'NULL::text AS row_text',
  ].join(', ');
}

/** One other log's chained rows in swarm_runs, by their keys, hashes and links. */
interface ChainGroup {
  log_id: string | null;
  host: string;
  entries: { key: string; hash: string; prev: string | null; label: string }[];
}

/** What {@link verifySwarmRuns} gathers while it reads the table. */
interface VerifyState {
  opts: PgVerifyOptions;
  /** This home's rows by hash, and its logs' ids. */
  byHash: Map<string, LocalRow>;
  logIds: Set<string>;
  findings: PgFinding[];
  /** Row keys of rejected rows. */
  rejected: Set<string>;
  /** Keys held by rows of this home's logs, and by rows without a hash. */
  localKeys: Set<string>;
  unhashedKeys: Set<string>;
  seenHashes: Set<string>;
  /** Other logs' chained rows, by `log_id \0 host`. */
  groups: Map<string, ChainGroup>;
  unchainedOthers: number;
  /** Rows of this home's logs found in the table. */
  mine: number;
}

/** Records a finding; `reject`: its row is left out of the rows returned. */
function find(v: VerifyState, f: PgFinding, reject: boolean): void {
  v.findings.push(f);
  if (reject && f.row_key !== null) v.rejected.add(f.row_key);
}

/**
 * Checks every row of swarm_runs (see the module comment) against this home's eval log and outbox cursor. Writes
 * nothing but the table's missing columns (SWARM_RUNS_DDL), to the database or the home.
 * @returns the report, and with `collect` the scoreboard columns of every row not rejected
 * @throws Error when the database cannot be read or the log cannot be read
 */
export async function verifySwarmRuns(url: string, opts: PgVerifyOptions): Promise<{ report: PgVerification; rows: unknown[][] }> {
  const sentBytes = opts.home ? sentOffset(opts.home, url) : null;
  const { byHash, logIds } = readLocal(opts.logFile, sentBytes);
  const v: VerifyState = {
    opts,
    byHash,
    logIds,
    findings: [],
    rejected: new Set(),
    localKeys: new Set(),
    unhashedKeys: new Set(),
    seenHashes: new Set(),
    groups: new Map(),
    unchainedOthers: 0,
    mine: 0,
  };
  const collected: { key: string; columns: unknown[] }[] = [];
  let heads = new Map<string, ChainHead>();
  let total = 0;

  const client = await connectPostgres(url);
  try {
    await client.query(SWARM_RUNS_DDL);
    let after = '';
    for (;;) {
      const page = await client.query(`SELECT ${selectList(opts.depth)} FROM swarm_runs WHERE row_key > $1 ORDER BY row_key LIMIT ${PAGE_ROWS}`, [after]);
      for (const r of page.rows as PgRow[]) {
        total++;
        const ok = checkRow(v, r);
        if (ok && opts.collect) collected.push({ key: r.row_key, columns: pgColumns(r) });
      }
      if (page.rows.length < PAGE_ROWS) break;
      after = (page.rows[page.rows.length - 1] as PgRow).row_key;
    }
    heads = await otherHeads(client, logIds);
    checkChains(v, heads);
  } finally {
    await client.end().catch(() => undefined);
  }
  const notes = missingRows(v, sentBytes);
  v.findings.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
  const others = [...v.groups.entries()].map(([id, g]) => ({ log_id: g.log_id, host: g.host, rows: g.entries.length, head_rows: heads.get(id)?.rows ?? null }));
  const report: PgVerification = {
    table: 'swarm_runs',
    depth: v.opts.depth,
    intact: v.findings.length === 0,
    rows: total,
    mine: v.mine,
    sent: sentBytes === null ? null : [...byHash.values()].filter((l) => l.sent).length,
    others,
    unchained_others: v.unchainedOthers,
    findings: v.findings,
    rejected: [...v.rejected].sort(),
    notes,
  };
  return { report, rows: collected.filter((c) => !v.rejected.has(c.key)).map((c) => c.columns) };
}

/** Checks one row; false when it is rejected. */
function checkRow(v: VerifyState, r: PgRow): boolean {
  const have = pgColumns(r);
  const local = r.row_hash ? v.byHash.get(r.row_hash) : undefined;
  // There, edited or not: its own finding names it, not a `missing` one.
  if (local) {
    local.found = true;
    v.mine++;
  }
  const base = { row_key: r.row_key, line: local && local.file === v.opts.logFile ? local.line : null };
  let parsed: Record<string, unknown> | null = r.row;
  if (r.row_text !== null) {
    try {
      parsed = JSON.parse(r.row_text) as Record<string, unknown>;
    } catch {
      parsed = null;
    }
  }
  let derived: IndexRow | null = null;
  try {
    derived = parsed ? toIndexRow(v.opts.depth === 'full' ? parsed : storableJson(parsed), local?.line ?? 0) : null;
  } catch {
    derived = null;
  }
  const label = local?.label ?? (parsed ? evalRowLabel(parsed) : `${String(r.run_id)}/${String(r.task_key)}`);
  const at = `row_key ${r.row_key} (${label}${base.line !== null ? `, line ${base.line} of ${v.opts.logFile}` : ''})`;
  if (!r.row_hash) {
    v.unhashedKeys.add(r.row_key);
    find(
      v,
      {
        kind: 'unhashed',
        ...base,
        row: label,
        message: `${at} has no row_hash: it was sent before Verdict kept one and no machine whose log holds it has synced since (the next sync of that machine fills it), or its hash was stripped; it cannot be verified`,
      },
      true,
    );
    return false;
  }
  if (v.opts.depth === 'full') {
    const rehash = parsed ? rowHash(parsed) : null;
    const jsonbOk = r.row_text === null || (parsed !== null && canonicalJson(storableJson(parsed)) === canonicalJson(r.row));
    if (rehash !== r.row_hash || !jsonbOk) {
      find(v, { kind: 'row-edited', ...base, row: label, message: `${at} was edited in swarm_runs: its row no longer hashes to its row_hash` }, true);
      return false;
    }
  }
  if (!parsed || !derived) {
    find(v, { kind: 'row-edited', ...base, row: label, message: `${at} was edited in swarm_runs: its row is not an eval row any more` }, true);
    return false;
  }
  const ownPrev = r.chained ? ((parsed.prev_hash as string | null | undefined) ?? null) : null;
  if (ownPrev !== r.prev_hash) {
    find(
      v,
      {
        kind: 'row-edited',
        ...base,
        row: label,
        message: `${at} was edited in swarm_runs: its prev_hash column (${show(r.prev_hash)}) is not its row's (${show(ownPrev)})`,
      },
      true,
    );
    return false;
  }
  // Ringer rows' ord is their line in the log that sent them: only this home knows it for its own rows.
  const want = columnsOf(derived);
  const ordIndex = ATTEMPT_COLUMNS.indexOf('ord');
  if (derived.attempt === null && !local) want[ordIndex] = have[ordIndex];
  const diff = columnDiff(have, want, 'its row');
  if (diff) {
    find(v, { kind: 'column-edited', ...base, row: label, message: `${at} was edited in swarm_runs: ${diff}` }, true);
    return false;
  }
  return placeRow(v, { ...r, row_hash: r.row_hash }, { local, base, at, label, derived, have });
}

/** What {@link checkRow} learned of a row whose own content is intact. */
interface RowFacts {
  local: LocalRow | undefined;
  base: { row_key: string; line: number | null };
  at: string;
  label: string;
  derived: IndexRow;
  have: unknown[];
}

/** Checks an intact row's place: its key, and this home's copy of it or, another log's, its chain group; false when it is rejected. */
function placeRow(v: VerifyState, r: PgRow & { row_hash: string }, row: RowFacts): boolean {
  const { local, base, at, label, derived, have } = row;
  const key = derived.attempt === null ? null : (columnValue(rowKey(derived, '')) as string);
  if (key !== null ? key !== r.row_key && sharedKey(key, r.row_hash) !== r.row_key : !r.row_key.startsWith('sha256:')) {
    find(
      v,
      {
        kind: 'wrong-key',
        ...base,
        row: label,
        message: `${at} is filed under a key that is not its row's (${key ?? 'sha256:<its line>'}): a row copied under another attempt`,
      },
      true,
    );
    return false;
  }
  if (local) {
    if (v.seenHashes.has(r.row_hash)) {
      find(v, { kind: 'copied', ...base, row: label, message: `${at} is a second copy of a row already in swarm_runs under another key` }, true);
      return false;
    }
    v.seenHashes.add(r.row_hash);
    const localDiff = local.columns === canonicalJson(have) ? '' : columnDiff(have, JSON.parse(local.columns) as unknown[], `the row this home logged`);
    if (localDiff) {
      find(v, { kind: 'column-edited', ...base, row: label, message: `${at} was edited in swarm_runs: ${localDiff}` }, true);
      return false;
    }
    if (local.key !== r.row_key && sharedKey(local.key, r.row_hash) !== r.row_key) {
      find(v, { kind: 'wrong-key', ...base, row: label, message: `${at} is the row this home logged under key ${local.key}: copied under another key` }, true);
      return false;
    }
    v.localKeys.add(r.row_key);
    return true;
  }
  if (r.log_id !== null && v.logIds.has(r.log_id)) {
    find(
      v,
      {
        kind: 'forged',
        ...base,
        row: label,
        message: `${at} names this home's log (log_id ${r.log_id}) but is not a row of this home's log: inserted, or edited with its hash recomputed`,
      },
      true,
    );
    return false;
  }
  if (v.opts.mineOnly) {
    find(
      v,
      {
        kind: 'foreign',
        ...base,
        row: label,
        message: `${at} (host ${derived.host ?? '?'}, log ${r.log_id ?? 'none'}) is not a row of this home's log, and this home writes every row (--mine-only)`,
      },
      true,
    );
    return false;
  }
  if (!r.chained) {
    v.unchainedOthers++;
    return true;
  }
  const host = derived.host ?? '';
  const id = `${r.log_id ?? ''}\0${host}`;
  const g = v.groups.get(id) ?? { log_id: r.log_id, host, entries: [] };
  g.entries.push({ key: r.row_key, hash: r.row_hash, prev: r.prev_hash, label });
  v.groups.set(id, g);
  return true;
}

/** Other logs' chains: their links, and their ends against verdict_chain_heads. */
function checkChains(v: VerifyState, heads: Map<string, ChainHead>): void {
  for (const [id, head] of heads) {
    if (v.groups.has(id) || head.rows === 0) continue;
    const [logId, host] = id.split('\0') as [string, string];
    if (v.opts.mineOnly)
      find(
        v,
        {
          kind: 'foreign',
          row_key: null,
          row: null,
          line: null,
          message: `verdict_chain_heads holds a head for host ${host || '(none)'}'s chain of log ${logId}, which is not this home's log, and this home writes every row (--mine-only)`,
        },
        false,
      );
    else
      find(
        v,
        {
          kind: 'cut',
          row_key: null,
          row: null,
          line: null,
          message: `verdict_chain_heads records ${head.rows} rows for host ${host || '(none)'}'s chain of log ${logId}, swarm_runs has none of them: they were deleted`,
        },
        false,
      );
  }
  for (const [id, g] of v.groups) checkChain(v, g, heads.get(id));
}

/** One other log's chain `g`: its links, forks, and its end against its head in verdict_chain_heads (`head`; absent: none). */
function checkChain(v: VerifyState, g: ChainGroup, head: ChainHead | undefined): void {
  const where = `host ${g.host || '(none)'}'s chain of log ${g.log_id ?? '(none)'}`;
  const next = new Map<string | null, ChainGroup['entries']>();
  for (const e of g.entries) next.set(e.prev, [...(next.get(e.prev) ?? []), e]);
  linkFindings(v, g, where, next);
  chainEndFindings(v, g, where, chainFromStart(next), head);
}

/**
 * The findings of chain `g`'s links (`where`: the chain in words; `next`: its rows by the hash they follow, null the
 * start): a row that follows one not in the table (broken), two rows that follow the same one (forked).
 */
function linkFindings(v: VerifyState, g: ChainGroup, where: string, next: ReadonlyMap<string | null, ChainGroup['entries']>): void {
  const byHash = new Map(g.entries.map((e) => [e.hash, e]));
  for (const e of g.entries) {
    if (e.prev !== null && !byHash.has(e.prev))
      find(
        v,
        {
          kind: 'broken',
          row_key: e.key,
          row: e.label,
          line: null,
          message: `row_key ${e.key} (${e.label}), in ${where}, follows a row that is not in swarm_runs: the rows before it were deleted, or the one before it edited`,
        },
        false,
      );
  }
  for (const [prev, list] of next) {
    if (list.length > 1)
      find(
        v,
        {
          kind: 'forked',
          row_key: (list[1] as (typeof list)[number]).key,
          row: (list[1] as (typeof list)[number]).label,
          line: null,
          message: `${list.map((e) => `row_key ${e.key} (${e.label})`).join(' and ')} both follow ${prev === null ? 'the start' : `the row hashed ${prev.slice(0, 12)}…`} of ${where}: one was inserted`,
        },
        false,
      );
  }
}

/** The chain from its start (`next`: rows by the hash they follow, null the start), as far as it runs without a fork. */
function chainFromStart(next: ReadonlyMap<string | null, ChainGroup['entries']>): ChainGroup['entries'] {
  const order: ChainGroup['entries'] = [];
  let at = (next.get(null) ?? [])[0];
  const seen = new Set<string>();
  while (at && !seen.has(at.hash)) {
    seen.add(at.hash);
    order.push(at);
    const after: ChainGroup['entries'] = next.get(at.hash) ?? [];
    at = after.length === 1 ? after[0] : undefined;
  }
  return order;
}

/**
 * The findings of chain `g`'s end (`order`: its rows from the start as far as it runs without a fork) against its head
 * in verdict_chain_heads (`head`; absent: every row is unvouched for): rows cut from its end, the head row edited, rows
 * inserted after it. With a head, nothing is said of the end of a chain that does not run whole from its start
 * without a fork (its breaks and forks are found already).
 */
function chainEndFindings(v: VerifyState, g: ChainGroup, where: string, order: ChainGroup['entries'], head: ChainHead | undefined): void {
  if (!head) {
    for (const e of g.entries)
      find(
        v,
        {
          kind: 'no-head',
          row_key: e.key,
          row: e.label,
          line: null,
          message: `row_key ${e.key} (${e.label}), in ${where}: no head in verdict_chain_heads for that chain, so nothing vouches for it (inserted by something other than Verdict's outbox)`,
        },
        true,
      );
    return;
  }
  if (order.length === g.entries.length) {
    if (order.length < head.rows)
      find(
        v,
        {
          kind: 'cut',
          row_key: null,
          row: null,
          line: null,
          message: `verdict_chain_heads records ${head.rows} rows for ${where}, swarm_runs has ${order.length}: rows were deleted from its end`,
        },
        false,
      );
    else {
      const last = order[head.rows - 1];
      if (last && last.hash !== head.hash)
        find(
          v,
          {
            kind: 'head-mismatch',
            row_key: last.key,
            row: last.label,
            line: null,
            message: `row_key ${last.key} (${last.label}), row ${head.rows} of ${where}, is not the row verdict_chain_heads records there: it was edited`,
          },
          true,
        );
      for (const e of order.slice(head.rows))
        find(
          v,
          {
            kind: 'beyond-head',
            row_key: e.key,
            row: e.label,
            line: null,
            message: `row_key ${e.key} (${e.label}) comes after the last row verdict_chain_heads records for ${where}: it was inserted`,
          },
          true,
        );
    }
  }
}

/**
 * Finds every row the outbox sent that is not in the table (`missing`), and says what cannot be known.
 * @returns notes for the report
 */
function missingRows(v: VerifyState, sentBytes: number | null): string[] {
  const notes: string[] = [];
  const held: LocalRow[] = [];
  for (const local of v.byHash.values()) {
    if (!local.sent || local.found) continue;
    if (v.unhashedKeys.has(local.key)) continue; // its `unhashed` finding says it
    if (v.localKeys.has(local.key)) {
      held.push(local);
      continue;
    }
    find(
      v,
      {
        kind: 'missing',
        row_key: null,
        row: local.label,
        line: local.line,
        message: `line ${local.line} of ${local.file} (${local.label}) was sent to swarm_runs and is not there: it was deleted, or edited and filed under another key`,
      },
      false,
    );
  }
  if (held.length)
    notes.push(
      `${held.length} row(s) of ${v.opts.logFile} are in swarm_runs as another row of this home under the same key (first: line ${held[0]?.line}, ${held[0]?.label}): Postgres keeps the first row sent for a key, and a backfill's earlier version stays as it was sent`,
    );
  if (sentBytes === null) notes.push(`${v.opts.logFile} is not a home's runs.jsonl: what it sent is unknown, so rows missing from swarm_runs cannot be named`);
  return notes;
}

/** verdict_chain_heads of every log but this home's, by `log_id \0 host`. */
async function otherHeads(client: pg.Client, mine: Set<string>): Promise<Map<string, ChainHead>> {
  const heads = new Map<string, ChainHead>();
  await client.query(CHAIN_HEADS_DDL);
  const res = await client.query('SELECT log_id, host, hash, rows FROM verdict_chain_heads WHERE NOT (log_id = ANY($1))', [[...mine]]);
  for (const r of res.rows as { log_id: string; host: string; hash: string; rows: string }[])
    heads.set(`${r.log_id}\0${r.host}`, { hash: r.hash, rows: Number(r.rows) });
  return heads;
}
