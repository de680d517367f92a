import type { ReviewerRow, ScoreRow } from '../../../schemas/protocol';
import { loadScoreboard } from '../scoreboard/load';

/**
 * The scoreboard rows a page shows, from extension/core/scoreboard (the same evidence as `verdict models --explore`):
 * proven and probation rows with their rates, then untested catalog models (when a catalog snapshot exists); apart,
 * each reviewing model's reviews (approve / changes / reject / error counts); `quarantined` counts the attempts set aside
 * because no model was stamped on them (shown so an empty scoreboard over a full log is explained).
 * Rates 0..1; durations ms; cost micro-USD. `source` names the evidence (the eval log's path, or Postgres).
 * @throws what loadScoreboard throws (an unreadable index)
 */
export async function dashboardScoreboard(home: string): Promise<{ rows: ScoreRow[]; reviews: ReviewerRow[]; source: string; quarantined: number }> {
  const { view, source } = await loadScoreboard({ home, explore: true });
  const errorsOf = (model: string | null, taskType: string | null) =>
    view.errors.filter((e) => e.model === model && e.task_type === taskType).reduce((n, e) => n + e.errors + e.rate_limits, 0);
  const rows: ScoreRow[] = view.rows.map((r) => ({
    model: r.model,
    taskType: r.task_type ?? '—',
    tier: r.tier,
    tasks: r.tasks,
    attempts: r.attempts,
    passRate: r.pass_rate,
    firstTryPassRate: r.first_try_pass_rate,
    medianDurationMs: r.median_duration_ms,
    medianTokens: r.median_tokens,
    medianCostMicroUsd: r.median_cost_microusd,
    engineErrors: errorsOf(r.model, r.task_type),
    lastSeen: r.last_seen,
    groups: r.groups,
    won: r.won,
    lostConsensus: r.lost_consensus,
  }));
  for (const u of view.untested) {
    rows.push({
      model: u.model,
      taskType: '—',
      tier: 'untested',
      tasks: 0,
      attempts: 0,
      passRate: null,
      firstTryPassRate: null,
      medianDurationMs: null,
      medianTokens: null,
      medianCostMicroUsd: null,
      engineErrors: 0,
      lastSeen: null,
      groups: 0,
      won: 0,
      lostConsensus: 0,
    });
  }
  const reviews: ReviewerRow[] = view.reviews.map((r) => ({
    model: r.model ?? '(no model)',
    reviews: r.reviews,
    approve: r.approve,
    changes: r.changes,
    reject: r.reject,
    errors: r.errors,
    engines: r.engines,
  }));
  return {
    rows,
    reviews,
    quarantined: view.totals.quarantined_attempts,
    source: `${source.from} (${source.rows} attempts${source.corrupt ? `, ${source.corrupt} corrupt lines skipped` : ''}${source.forced ? `, ${source.forced} rows of forced runs left out` : ''})`,
  };
}
