import type { Database, SqlValue } from 'sql.js';

/**
 * The evidence for one (model, task_type): what the scoreboard shows before tiers. The rules (docs/scoreboard.md),
 * chosen so a model is judged only on attempts that were its own work:
 * - a task is one (run_id, task_key); only its judged attempts (PASS / FAIL / TIMEOUT) count in the rates;
 * - pass_rate = tasks with any PASS / tasks with a judged attempt (after retry);
 * - first_try_pass_rate = first_try / first_tries: of the tasks whose first judged attempt — across every model that
 *   worked on the task — was this model's (first_tries), those where it passed (first_try). A PASS rescued by a retry
 *   never counts, neither on the model that failed nor on the one the retry moved to (engine "auto"'s retry rule, a
 *   `fallback`): that PASS had the failure to learn from. Rate limits and engine errors are not anyone's judged
 *   attempts, so one before the first judged attempt does not make it a retry; without them (the usual case) this is
 *   "attempt 1 passed";
 * - ERROR and RATE_LIMITED attempts are counted apart (errors, rate_limits) and kept out of every rate and median;
 *   CANCELLED, INTERRUPTED and unknown verdicts go to `other`;
 * - medians are over judged attempts with a known value (the mean of the two middle values for an even count).
 */
export interface GroupStats {
  /** The stamped model; null = quarantined rows (no stamped model). */
  model: string | null;
  /** null when the rows have no task type. */
  task_type: string | null;
  /** Tasks with at least one judged attempt: the denominator of both rates. */
  tasks: number;
  /** Judged attempts. */
  attempts: number;
  /** Tasks that passed, after retry. */
  passed: number;
  /** Tasks whose first judged attempt (of any model) was this model's: the denominator of first_try_pass_rate. */
  first_tries: number;
  /** Of those, the tasks where that attempt passed. */
  first_try: number;
  /** passed / tasks, null when tasks is 0. */
  pass_rate: number | null;
  /** first_try / first_tries, null when first_tries is 0. */
  first_try_pass_rate: number | null;
  /** ms, null when no judged attempt has one. */
  median_duration_ms: number | null;
  /** tokens in + out, null when unknown for every judged attempt. */
  median_tokens: number | null;
  /** Integer micro-USD (rounded), null when no judged attempt has a known cost. */
  median_cost_microusd: number | null;
  /** ERROR attempts (setup, spawn, engine errors). */
  errors: number;
  /** RATE_LIMITED attempts. */
  rate_limits: number;
  /** CANCELLED, INTERRUPTED and unknown verdicts. */
  other: number;
  /** Latest ended_at (ISO 8601) of any attempt, null when no row has a time (Ringer rows). */
  last_seen: string | null;
  /** Engines the rows came from, sorted. */
  engines: string[];
  /** The model's lab when a row names it. */
  lab: string | null;
}

const JUDGED = "verdict IN ('PASS', 'FAIL', 'TIMEOUT')";

function median(col: string): string {
  return `SELECT model, task_type, AVG(${col}) AS med FROM (
      SELECT model, task_type, ${col}, ROW_NUMBER() OVER (PARTITION BY model, task_type ORDER BY ${col}) AS rn,
             COUNT(*) OVER (PARTITION BY model, task_type) AS cnt
      FROM a WHERE ${JUDGED} AND ${col} IS NOT NULL)
    WHERE rn IN ((cnt + 1) / 2, (cnt + 2) / 2) GROUP BY model, task_type`;
}

/**
 * The aggregation, in SQL over the attempts table (extension/core/store/sqlite-index.ts), for the work rows `where`
 * selects (a SQL condition on attempts' columns; '1' for all): only `step = 'work'` rows are attempts (a review row is
 * the reviewer's, counted by review-stats.ts), and never the rows of a run forced over lint errors (`forced = 1`).
 * A task's first judged attempt (`tf`) is taken over all its work rows, whatever `where` selects: a filter never turns
 * a retry into a first try. Columns in {@link GROUP_COLUMNS} order.
 */
export function groupStatsSql(where: string): string {
  return `WITH a AS (SELECT * FROM attempts WHERE step = 'work' AND forced = 0 AND (${where})),
  tf AS (SELECT run_id, task_key, MIN(ord) AS task_first FROM attempts
         WHERE step = 'work' AND forced = 0 AND ${JUDGED} AND (run_id, task_key) IN (SELECT run_id, task_key FROM a)
         GROUP BY run_id, task_key),
  t AS (SELECT model, task_type, run_id, task_key,
          MIN(CASE WHEN ${JUDGED} THEN ord END) AS first_judged,
          MIN(CASE WHEN verdict = 'PASS' THEN ord END) AS first_pass
        FROM a GROUP BY model, task_type, run_id, task_key),
  tg AS (SELECT t.model, t.task_type, COUNT(first_judged) AS tasks, COUNT(first_pass) AS passed,
           SUM(first_judged = tf.task_first) AS first_tries,
           SUM(first_pass = first_judged AND first_judged = tf.task_first) AS first_try
         FROM t LEFT JOIN tf ON tf.run_id = t.run_id AND tf.task_key = t.task_key GROUP BY t.model, t.task_type),
  ag AS (SELECT model, task_type, SUM(${JUDGED}) AS attempts, SUM(verdict = 'ERROR') AS errors,
           SUM(verdict = 'RATE_LIMITED') AS rate_limits,
           SUM(verdict NOT IN ('PASS', 'FAIL', 'TIMEOUT', 'ERROR', 'RATE_LIMITED')) AS other,
           MAX(ended_at) AS last_seen, GROUP_CONCAT(DISTINCT engine) AS engines, MAX(lab) AS lab
         FROM a GROUP BY model, task_type),
  md AS (${median('duration_ms')}),
  mt AS (${median('tokens')}),
  mc AS (${median('cost_microusd')})
  SELECT ag.model, ag.task_type, COALESCE(tg.tasks, 0), ag.attempts, COALESCE(tg.passed, 0), COALESCE(tg.first_try, 0),
         md.med, mt.med, mc.med, ag.errors, ag.rate_limits, ag.other, ag.last_seen, ag.engines, ag.lab, COALESCE(tg.first_tries, 0)
  FROM ag
  LEFT JOIN tg ON tg.model IS ag.model AND tg.task_type = ag.task_type
  LEFT JOIN md ON md.model IS ag.model AND md.task_type = ag.task_type
  LEFT JOIN mt ON mt.model IS ag.model AND mt.task_type = ag.task_type
  LEFT JOIN mc ON mc.model IS ag.model AND mc.task_type = ag.task_type`;
}

/** The columns {@link groupStatsSql} returns, which are also the group_stats table's. */
export const GROUP_COLUMNS = [
  'model',
  'task_type',
  'tasks',
  'attempts',
  'passed',
  'first_try',
  'median_duration_ms',
  'median_tokens',
  'median_cost_microusd',
  'errors',
  'rate_limits',
  'other',
  'last_seen',
  'engines',
  'lab',
  'first_tries',
] as const;

/** The materialized aggregates for the unfiltered scoreboard, one row per (model, task_type). */
export const GROUP_STATS_TABLE = `CREATE TABLE IF NOT EXISTS group_stats (
  model TEXT, task_type TEXT NOT NULL, tasks INTEGER, attempts INTEGER, passed INTEGER, first_try INTEGER,
  median_duration_ms REAL, median_tokens REAL, median_cost_microusd REAL, errors INTEGER, rate_limits INTEGER,
  other INTEGER, last_seen TEXT, engines TEXT, lab TEXT, first_tries INTEGER)`;

/** Above this many touched groups, one full recompute is cheaper than one per group. */
const FULL_RECOMPUTE_GROUPS = 32;

/**
 * Recomputes the materialized group_stats rows of the groups that got new rows (all of them after a rebuild), so a
 * later unfiltered scoreboard reads one small table instead of aggregating every attempt.
 */
export function refreshGroupStats(db: Database, touched: { model: string | null; task_type: string }[], full: boolean): void {
  db.run(GROUP_STATS_TABLE);
  db.run('BEGIN');
  try {
    if (full || touched.length > FULL_RECOMPUTE_GROUPS) {
      db.run('DELETE FROM group_stats');
      db.run(`INSERT INTO group_stats (${GROUP_COLUMNS.join(', ')}) ${groupStatsSql('1')}`);
    } else {
      for (const g of touched) {
        db.run('DELETE FROM group_stats WHERE model IS ? AND task_type = ?', [g.model, g.task_type]);
        db.run(`INSERT INTO group_stats (${GROUP_COLUMNS.join(', ')}) ${groupStatsSql('model IS ? AND task_type = ?')}`, [g.model, g.task_type]);
      }
    }
    db.run('COMMIT');
  } catch (e) {
    db.run('ROLLBACK');
    throw e;
  }
}

/** Reads result rows (in GROUP_COLUMNS order) into GroupStats. */
export function toGroupStats(values: SqlValue[][]): GroupStats[] {
  return values.map((v) => {
    const n = (i: number) => Number(v[i] ?? 0);
    const opt = (i: number) => (v[i] === null || v[i] === undefined ? null : Number(v[i]));
    const tasks = n(2);
    const cost = opt(8);
    return {
      model: v[0] === null ? null : String(v[0]),
      task_type: v[1] === '' || v[1] === null ? null : String(v[1]),
      tasks,
      attempts: n(3),
      passed: n(4),
      first_tries: n(15),
      first_try: n(5),
      pass_rate: tasks ? n(4) / tasks : null,
      first_try_pass_rate: n(15) ? n(5) / n(15) : null,
      median_duration_ms: opt(6),
      median_tokens: opt(7),
      median_cost_microusd: cost === null ? null : Math.round(cost),
      errors: n(9),
      rate_limits: n(10),
      other: n(11),
      last_seen: v[12] === null ? null : String(v[12]),
      engines: v[13] === null ? [] : String(v[13]).split(',').sort(),
      lab: v[14] === null ? null : String(v[14]),
    };
  });
}

/** Runs a query returning GROUP_COLUMNS with bound parameters. */
export function queryGroupStats(db: Database, sql: string, params: SqlValue[] = []): GroupStats[] {
  const stmt = db.prepare(sql);
  try {
    stmt.bind(params);
    const rows: SqlValue[][] = [];
    while (stmt.step()) rows.push(stmt.get());
    return toGroupStats(rows);
  } finally {
    stmt.free();
  }
}
