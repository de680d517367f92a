import type { Database, SqlValue } from 'sql.js';

/**
 * What one reviewing model did as a reviewer (eval rows with `step = 'review'`, run/review-record.ts): its reviews and
 * how they came out. Kept apart from the work figures: a review is not an attempt, and a model's reviews never move
 * its pass rates. Grouped by the stamped model (null: reviews by an engine that named no model).
 */
export interface ReviewerStats {
  model: string | null;
  /** Reviews (rows), whatever their outcome. */
  reviews: number;
  approve: number;
  changes: number;
  reject: number;
  /** Reviews with no valid answer (the row's verdict ERROR). */
  errors: number;
  /** Engines the reviews ran on, sorted. */
  engines: string[];
  /** Latest ended_at (ISO 8601), null when no row has a time. */
  last_seen: string | null;
}

/** The aggregation over the attempts table's review rows that `where` selects (a condition on its columns; '1' for all), forced runs' rows left out. */
export function reviewStatsSql(where: string): string {
  return `SELECT model, COUNT(*), SUM(review_verdict = 'approve'), SUM(review_verdict = 'changes'), SUM(review_verdict = 'reject'),
      SUM(review_verdict IS NULL), GROUP_CONCAT(DISTINCT engine), MAX(ended_at)
    FROM attempts WHERE step = 'review' AND forced = 0 AND (${where}) GROUP BY model ORDER BY COUNT(*) DESC, model`;
}

/** Runs {@link reviewStatsSql} with bound parameters; most reviews first. */
export function queryReviewStats(db: Database, where: string, params: SqlValue[] = []): ReviewerStats[] {
  const stmt = db.prepare(reviewStatsSql(where));
  try {
    stmt.bind(params);
    const out: ReviewerStats[] = [];
    while (stmt.step()) {
      const v = stmt.get();
      const n = (i: number) => Number(v[i] ?? 0);
      out.push({
        model: v[0] === null ? null : String(v[0]),
        reviews: n(1),
        approve: n(2),
        changes: n(3),
        reject: n(4),
        errors: n(5),
        engines: v[6] === null ? [] : String(v[6]).split(',').sort(),
        last_seen: v[7] === null ? null : String(v[7]),
      });
    }
    return out;
  } finally {
    stmt.free();
  }
}
