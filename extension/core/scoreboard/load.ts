import crypto from 'node:crypto';
import path from 'node:path';
import type { Database, SqlValue } from 'sql.js';
import { readSnapshot } from '../catalog/snapshot';
import { evalLogPath } from '../config/home';
import fs from 'node:fs';
import writeFileAtomic from 'write-file-atomic';
import { fileSize } from '../store/log-lines';
import { ATTEMPT_COLUMNS, EvalIndex, headOf, INDEX_SCHEMA_VERSION, openCurrentIndex, type CorruptLine } from '../store/sqlite-index';
import { GROUP_STATS_TABLE, GROUP_COLUMNS, groupStatsSql, queryGroupStats, refreshGroupStats, type GroupStats } from './group-stats';
import { queryReviewStats, type ReviewerStats } from './review-stats';
import { queryWonStats, type WonStats } from './won-stats';
import { scoreboardView, type ScoreboardFilters, type ScoreboardView } from './view';
import { columnsFromIndex, readColumns, writeColumns, type StoredColumns } from './columns';
import { filteredStats } from './filtered-stats';

/** Where the evidence came from, for the footer of `verdict models` and the panel. */
export interface ScoreboardSource {
  /** runs.jsonl read (absolute), or the Postgres table. */
  from: string;
  /** Attempts in the evidence (work rows, all verdicts, before filters; review rows are counted in view.reviews). */
  rows: number;
  /** Corrupt lines of runs.jsonl skipped (never fatal), with the first few. */
  corrupt: number;
  /**
   * Rows of runs started over lint errors with --force (eval row `forced: true`), in the whole log or table, filters
   * not applied: kept in the log, never counted in any figure (a forced run's check may be one that cannot fail).
   */
  forced: number;
  corruptSamples: CorruptLine[];
  /** Postgres only: why the local outbox could not be flushed first (the table may then lack this machine's latest rows). */
  outboxError: string | null;
  /**
   * Postgres only: swarm_runs checked before it is counted (store/pg-verify.ts, depth `columns`): against this home's
   * log and outbox, and other logs' rows against their links and heads. Rows proven edited, forged or unverifiable
   * (`rejected`) are left out of every figure; rows deleted cannot be put back, so `intact` false means the figures
   * are not the evidence's. Absent for the local log.
   */
  verification?: { intact: boolean; findings: number; first: string | null; rejected: number; depth: 'columns' };
}

/** Options of {@link loadScoreboard}. */
export interface LoadScoreboardOptions {
  /** VERDICT_HOME, absolute. */
  home: string;
  /** Another eval log than `<home>/runs.jsonl` (its index goes to `<home>/index/<sha256 of its path>.sqlite`). */
  logFile?: string;
  filters?: ScoreboardFilters;
  /** Add untested suggestions from the catalog snapshot under home (none when there is no snapshot). */
  explore?: boolean;
  /** Aggregate table swarm_runs of this database (every machine) instead of the local log; flushes the outbox first. */
  postgresUrl?: string | null;
}

const BIGINT_COLUMNS = new Set(['ord', 'tokens', 'cost_microusd', 'outvoted'].map((c) => ATTEMPT_COLUMNS.indexOf(c as (typeof ATTEMPT_COLUMNS)[number])));

/** Every attempt counted in `stats`, whatever its verdict. */
function attemptCount(stats: readonly GroupStats[]): number {
  return stats.reduce((n, s) => n + s.attempts + s.errors + s.rate_limits + s.other, 0);
}

/** `<home>/verdict.sqlite` for the home's own log, else a per-log index file under `<home>/index/`. */
export function indexFileFor(home: string, logFile: string): string {
  if (path.resolve(logFile) === path.resolve(evalLogPath(home))) return path.join(home, 'verdict.sqlite');
  return path.join(home, 'index', `${crypto.createHash('sha256').update(path.resolve(logFile)).digest('hex').slice(0, 16)}.sqlite`);
}

/** SQL condition and parameters for the filters applied while aggregating (engine, since). */
function aggregationWhere(f: ScoreboardFilters): { where: string; params: SqlValue[] } {
  const parts: string[] = [];
  const params: SqlValue[] = [];
  if (f.engine) {
    parts.push('engine = ?');
    params.push(f.engine);
  }
  if (f.since) {
    parts.push('ended_at >= ?');
    params.push(new Date(f.since).toISOString());
  }
  return { where: parts.length ? parts.join(' AND ') : '1', params };
}

/**
 * Opens the index of the eval log, bringing it up to date (incrementally, under a lock) and keeping its materialized
 * per-group aggregates in step. The caller closes it.
 */
export async function openScoreboardIndex(home: string, logFile = evalLogPath(home)): Promise<EvalIndex> {
  const { index } = await openCurrentIndex(
    logFile,
    indexFileFor(home, logFile),
    (i) => i.db.run(GROUP_STATS_TABLE),
    (i, u) => refreshGroupStats(i.db, u.touched, u.rebuilt),
  );
  return index;
}

/**
 * Per-group evidence from an open index: the materialized aggregates when no engine/since filter applies (fast),
 * else aggregated from the attempts now.
 */
export function indexGroupStats(index: EvalIndex, filters: ScoreboardFilters = {}): GroupStats[] {
  const { where, params } = aggregationWhere(filters);
  if (where === '1') return queryGroupStats(index.db, `SELECT ${GROUP_COLUMNS.join(', ')} FROM group_stats`);
  return queryGroupStats(index.db, groupStatsSql(where), params);
}

/**
 * The scoreboard for `verdict models` and the dashboard: evidence from the local eval log (or Postgres), filters
 * applied, tiers, untested catalog models with `explore`. This is the one call the scoreboard panel needs.
 * @throws Error when `since` is not a date; Postgres errors when `postgresUrl` is given and the database cannot be
 *   read (a failed outbox flush is not an error: it is reported in source.outboxError)
 */
export async function loadScoreboard(opts: LoadScoreboardOptions): Promise<{ view: ScoreboardView; source: ScoreboardSource }> {
  const filters = opts.filters ?? {};
  if (filters.since && Number.isNaN(Date.parse(filters.since))) throw new Error(`since: "${filters.since}" is not a date (use YYYY-MM-DD or ISO 8601)`);
  const catalog = opts.explore ? (readSnapshot(opts.home)?.data ?? []) : null;
  if (opts.postgresUrl) return postgresScoreboard(opts, opts.postgresUrl, filters, catalog);
  const logFile = path.resolve(opts.logFile ?? evalLogPath(opts.home));
  const unfiltered = !filters.engine && !filters.since;
  const cacheFile = indexFileFor(opts.home, logFile) + '.groups.json';
  if (unfiltered) {
    const cached = readGroupsCache(cacheFile, logFile);
    if (cached)
      return {
        view: scoreboardView(cached.stats, catalog, filters, cached.reviews, cached.won),
        source: {
          from: logFile,
          rows: attemptCount(cached.stats),
          corrupt: cached.corrupt,
          corruptSamples: cached.samples,
          forced: cached.forced,
          outboxError: null,
        },
      };
  }
  if (!unfiltered) {
    const columns = await currentColumns(opts.home, logFile);
    const { stats, reviews, won } = filteredStats(columns, { engine: filters.engine, sinceIso: filters.since ? new Date(filters.since).toISOString() : null });
    return {
      view: scoreboardView(stats, catalog, filters, reviews, won),
      source: {
        from: logFile,
        rows: attemptCount(stats),
        corrupt: columns.corrupt,
        corruptSamples: columns.corruptSamples,
        forced: columns.forced,
        outboxError: null,
      },
    };
  }
  const index = await openScoreboardIndex(opts.home, logFile);
  try {
    const stats = indexGroupStats(index, filters);
    const { where, params } = aggregationWhere(filters);
    const reviews = queryReviewStats(index.db, where, params);
    const won = queryWonStats(index.db, where, params);
    const forced = forcedCount(index.db);
    if (unfiltered)
      await writeFileAtomic(
        cacheFile,
        JSON.stringify({
          version: INDEX_SCHEMA_VERSION,
          offset: index.offset,
          head: index.meta('head'),
          corrupt: index.corruptCount,
          samples: index.corruptSamples(),
          forced,
          stats,
          reviews,
          won,
        } satisfies GroupsCache),
      );
    return {
      view: scoreboardView(stats, catalog, filters, reviews, won),
      source: { from: logFile, rows: attemptCount(stats), corrupt: index.corruptCount, corruptSamples: index.corruptSamples(), forced, outboxError: null },
    };
  } finally {
    index.close();
  }
}

/**
 * The scoreboard from Postgres (`url`): the local outbox flushed first (its failure kept in source.outboxError), the
 * rows of table swarm_runs verified against the eval log (columns depth) and read into an in-memory index, then
 * aggregated under `filters`; `catalog`: the catalog snapshot's models for `explore`, or null.
 * @throws Error when the database cannot be read
 */
async function postgresScoreboard(
  opts: LoadScoreboardOptions,
  url: string,
  filters: ScoreboardFilters,
  catalog: Parameters<typeof scoreboardView>[1],
): Promise<{ view: ScoreboardView; source: ScoreboardSource }> {
  // pg is loaded only here: a scoreboard of the local log never needs it.
  const { syncToPostgres } = await import('../store/postgres');
  const { verifySwarmRuns } = await import('../store/pg-verify');
  let outboxError: string | null = null;
  try {
    await syncToPostgres(opts.home, url);
  } catch (e) {
    outboxError = (e as Error).message;
  }
  // Counted only after it is checked: an UPDATE of a FAIL row to PASS must not pass as evidence.
  const logFile = evalLogPath(opts.home);
  const { report, rows } = await verifySwarmRuns(url, { logFile, home: opts.home, depth: 'columns', collect: true });
  const verification = {
    intact: report.intact,
    findings: report.findings.length,
    first: report.findings[0]?.message ?? null,
    rejected: report.rejected.length,
    depth: 'columns' as const,
  };
  const index = await EvalIndex.open(evalLogPath(opts.home), null);
  try {
    const insert = index.db.prepare(`INSERT INTO attempts (${ATTEMPT_COLUMNS.join(', ')}) VALUES (?${', ?'.repeat(ATTEMPT_COLUMNS.length - 1)})`);
    index.db.run('BEGIN');
    // pg returns BIGINT columns (ord, tokens, cost_microusd) as strings.
    for (const r of rows) insert.run(r.map((v, i) => (BIGINT_COLUMNS.has(i) && typeof v === 'string' ? Number(v) : (v as SqlValue))));
    index.db.run('COMMIT');
    insert.free();
    const { where, params } = aggregationWhere(filters);
    const stats = queryGroupStats(index.db, groupStatsSql(where), params);
    return {
      view: scoreboardView(stats, catalog, filters, queryReviewStats(index.db, where, params), queryWonStats(index.db, where, params)),
      source: {
        from: 'postgres: table swarm_runs',
        rows: attemptCount(stats),
        corrupt: 0,
        corruptSamples: [],
        forced: forcedCount(index.db),
        outboxError,
        verification,
      },
    };
  } finally {
    index.close();
  }
}

/** Rows of the attempts table from runs forced over lint errors (every step). */
function forcedCount(db: Database): number {
  return Number(db.exec('SELECT COUNT(*) FROM attempts WHERE forced = 1')[0]?.values[0]?.[0] ?? 0);
}

/**
 * `<index>.groups.json`: the unfiltered aggregates with the log position they describe, so `verdict models` on an
 * unchanged log reads a few KB instead of loading the whole index into wasm.
 */
interface GroupsCache {
  version: number;
  offset: number;
  head: string | null;
  corrupt: number;
  samples: CorruptLine[];
  forced: number;
  stats: GroupStats[];
  reviews: ReviewerStats[];
  won: WonStats[];
}

/** The cache when it describes the log as it is now (same size and head), else null. */
function readGroupsCache(file: string, logFile: string): GroupsCache | null {
  try {
    const c = JSON.parse(fs.readFileSync(file, 'utf8')) as GroupsCache;
    if (
      c.version === INDEX_SCHEMA_VERSION &&
      typeof c.forced === 'number' &&
      Array.isArray(c.reviews) &&
      Array.isArray(c.won) &&
      c.offset === fileSize(logFile) &&
      c.head === headOf(logFile, c.offset)
    )
      return c;
  } catch {
    // no cache, or a damaged one: the index answers
  }
  return null;
}

/**
 * The attempts' columns for the filtered scoreboard (columns.ts), current with the log: read from `<index>.columns`
 * when it describes the log as it is now (same size and head: the index is not even opened), else the index is
 * brought up to date and the rows it got since the file was written are appended (all rows when the log was
 * replaced), and the file rewritten.
 */
export async function currentColumns(home: string, logFile: string): Promise<StoredColumns> {
  const file = indexFileFor(home, logFile) + '.columns';
  const size = fileSize(logFile);
  const cached = readColumns(file);
  if (cached && cached.offset === size && cached.head === headOf(logFile, size)) return cached;
  const index = await openScoreboardIndex(home, logFile);
  try {
    const head = index.meta('head') ?? '';
    const base = readColumns(file, true);
    // Rows can only be appended to a base whose log bytes are still the start of the log (the index kept them too).
    const extend = base && base.offset <= index.offset && base.head === headOf(logFile, base.offset) ? base : null;
    const columns = columnsFromIndex(index.db, extend, index.offset, head, index.corruptCount, index.corruptSamples());
    await writeColumns(file, columns);
    return columns;
  } finally {
    index.close();
  }
}
