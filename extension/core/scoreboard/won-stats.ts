import type { Database, SqlValue } from 'sql.js';

/**
 * The "won" column (docs/workflows.md "Best-of-N"): per (model, task_type), how many best-of-N
 * groups the model took part in and how many of them its candidate won — the evidence a user routes on when several
 * models tried the same task. From the attempts table:
 * - a group is one (run_id, group_key); a model took part in it when it has a work row there with a candidate number
 *   (a model with two candidates in one group took part once);
 * - it won the group when the group's `select` row (run/workflows/best-of-n/select-row.ts, written once the group is decided)
 *   is credited to it. A group that no candidate won (BLOCKED) or that is not decided yet counts as taken part in,
 *   not won;
 * - a passing candidate of it lost on consensus when the group's select row (a `select: "consensus"` group that
 *   consensus decided) lists its candidate number among those outvoted (index-row.ts `outvoted`: the members of every
 *   group of alike behaviour but the winner's). Counted once per group, like `groups`.
 */
export interface WonStats {
  model: string | null;
  task_type: string | null;
  /** Groups the model had a candidate in. */
  groups: number;
  /** Of those, the groups its candidate won. */
  won: number;
  /** Of those, the groups where a candidate of it passed its check and consensus decided against it. */
  lost_consensus: number;
}

/** The aggregation over the rows `where` selects (a condition on attempts' columns; '1' for all), forced runs' rows left out. */
export function wonStatsSql(where: string): string {
  return `WITH p AS (SELECT DISTINCT model, task_type, run_id, group_key FROM attempts
      WHERE step = 'work' AND forced = 0 AND group_key IS NOT NULL AND candidate IS NOT NULL AND (${where})),
    w AS (SELECT DISTINCT model, task_type, run_id, group_key FROM attempts
      WHERE step = 'select' AND forced = 0 AND group_key IS NOT NULL AND (${where})),
    o AS (SELECT DISTINCT run_id, group_key, outvoted FROM attempts
      WHERE step = 'select' AND forced = 0 AND group_key IS NOT NULL AND outvoted IS NOT NULL),
    l AS (SELECT DISTINCT a.model, a.task_type, a.run_id, a.group_key FROM attempts a JOIN o ON o.run_id = a.run_id AND o.group_key = a.group_key
      WHERE a.step = 'work' AND a.forced = 0 AND a.verdict = 'PASS' AND a.candidate BETWEEN 1 AND 32
        AND ((o.outvoted >> (a.candidate - 1)) & 1) = 1 AND a.line IN (SELECT line FROM attempts WHERE ${where}))
  SELECT p.model, p.task_type, COUNT(*), COUNT(w.run_id), COUNT(l.run_id) FROM p
    LEFT JOIN w ON w.model IS p.model AND w.task_type = p.task_type AND w.run_id = p.run_id AND w.group_key = p.group_key
    LEFT JOIN l ON l.model IS p.model AND l.task_type = p.task_type AND l.run_id = p.run_id AND l.group_key = p.group_key
  GROUP BY p.model, p.task_type ORDER BY p.model, p.task_type`;
}

/** Runs {@link wonStatsSql} with bound parameters (`params` bound once per use of `where`, i.e. three times). */
export function queryWonStats(db: Database, where: string, params: SqlValue[] = []): WonStats[] {
  const stmt = db.prepare(wonStatsSql(where));
  try {
    stmt.bind([...params, ...params, ...params]);
    const out: WonStats[] = [];
    while (stmt.step()) {
      const v = stmt.get();
      out.push({
        model: v[0] === null ? null : String(v[0]),
        task_type: v[1] === '' || v[1] === null ? null : String(v[1]),
        groups: Number(v[2] ?? 0),
        won: Number(v[3] ?? 0),
        lost_consensus: Number(v[4] ?? 0),
      });
    }
    return out;
  } finally {
    stmt.free();
  }
}
