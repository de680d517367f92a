import { isFree, isTextToText, microUsdPerToken, type OpenRouterModel } from '../catalog/openrouter';
import type { GroupStats } from './group-stats';
import type { ReviewerStats } from './review-stats';
import type { WonStats } from './won-stats';

/** Filters of the scoreboard (`verdict models` flags; the panel's controls). All optional. */
export interface ScoreboardFilters {
  /** Exact task type. */
  taskType?: string | null;
  /** Case-insensitive substring of the model id. */
  model?: string | null;
  /** Exact worker engine; applied while aggregating (see loadScoreboard). */
  engine?: string | null;
  /** ISO 8601 date or time: only attempts that ended at or after it; applied while aggregating. */
  since?: string | null;
}

/**
 * Tiers (docs/scoreboard.md): proven = at least 3 first tries (tasks whose first judged attempt was its own) and first_try_pass_rate ≥ 0.67 (so 2 of 3 is
 * not enough: 0.666… < 0.67); probation = some evidence (≥ 1 judged task) but not proven; untested = a catalog
 * model never seen in the log.
 */
export type Tier = 'proven' | 'probation' | 'untested';

/** Minimum first tries for proven. */
export const PROVEN_MIN_TASKS = 3;
/** Minimum first_try_pass_rate for proven. */
export const PROVEN_MIN_FIRST_TRY = 0.67;
/** Catalog models suggested as untested: at most this many. */
export const UNTESTED_MAX = 10;
/** Untested suggestions need at least this context window, tokens ("32k"; OpenRouter lists 32,000 and 32,768). */
export const UNTESTED_MIN_CONTEXT = 32_000;

/** One scoreboard line: the evidence for a (model, task_type) with at least one judged task, and its tier. */
export interface ScoreboardRow extends GroupStats {
  model: string;
  tier: 'proven' | 'probation';
  /** Best-of-N groups (one run's task with candidates) the model had a candidate in (scoreboard/won-stats.ts). */
  groups: number;
  /** Of those, the groups its candidate won (was chosen): the "won" column. */
  won: number;
  /** Of those, the groups where a candidate of it passed its check and consensus decided against it (scoreboard/won-stats.ts). */
  lost_consensus: number;
}

/** A catalog model worth a first try: text→text, ≥ 32k context, never seen in the log. */
export interface UntestedModel {
  tier: 'untested';
  model: string;
  name: string | null;
  free: boolean;
  /** micro-USD per token, as the catalog prices it. */
  prompt_microusd_per_token: number;
  completion_microusd_per_token: number;
  context_length: number;
}

/** A (model, task_type) with engine errors or rate limits: shown apart from the rates. */
export interface ErrorLine {
  model: string | null;
  task_type: string | null;
  errors: number;
  rate_limits: number;
  engines: string[];
}

/**
 * Everything the scoreboard panel and `verdict models` show, filters applied. Rows are sorted proven first, then
 * by first_try_pass_rate, pass_rate and tasks (all descending), then model and task type.
 */
export interface ScoreboardView {
  filters: ScoreboardFilters;
  rows: ScoreboardRow[];
  /** From the catalog; empty when none was given (`verdict models` passes one with --explore). */
  untested: UntestedModel[];
  /** Engine errors and rate limits by (model, task_type), every group that has any, kept out of the rates. */
  errors: ErrorLine[];
  /** Rows with no stamped model, by task type: never credited to an engine's default model. */
  quarantined: GroupStats[];
  totals: { tasks: number; attempts: number; errors: number; rate_limits: number; quarantined_attempts: number };
  /** Every task type and model in the evidence before the taskType/model filters: the panel's filter choices. */
  task_types: string[];
  models: string[];
  /** Per reviewing model, its reviews (step `review` rows), apart from the attempts; the model filter applies. */
  reviews: ReviewerStats[];
}

/** The tier of one group with evidence. */
export function tierOf(s: Pick<GroupStats, 'first_tries' | 'first_try_pass_rate'>): 'proven' | 'probation' {
  return s.first_tries >= PROVEN_MIN_TASKS && (s.first_try_pass_rate ?? 0) >= PROVEN_MIN_FIRST_TRY ? 'proven' : 'probation';
}

/** True when the log's model id and a catalog id name the same model (same id, or one is the other with a prefix). */
function sameModel(logModel: string, catalogId: string): boolean {
  return logModel === catalogId || logModel.endsWith(`/${catalogId}`) || catalogId.endsWith(`/${logModel}`);
}

/**
 * Untested catalog models: text→text, context ≥ 32k, not seen in `seen`, matching the model filter; free ones
 * first, then cheapest (prompt + completion price per token), then by id; at most 10.
 */
export function untestedModels(catalog: readonly OpenRouterModel[], seen: readonly string[], modelFilter?: string | null): UntestedModel[] {
  const f = modelFilter?.toLowerCase();
  const out: UntestedModel[] = [];
  for (const m of catalog) {
    const p = microUsdPerToken(m.pricing.prompt);
    const c = microUsdPerToken(m.pricing.completion);
    if (p === null || c === null || !isTextToText(m) || (m.context_length ?? 0) < UNTESTED_MIN_CONTEXT) continue;
    if (f && !m.id.toLowerCase().includes(f)) continue;
    if (seen.some((s) => sameModel(s, m.id))) continue;
    out.push({
      tier: 'untested',
      model: m.id,
      name: typeof m.name === 'string' ? m.name : null,
      free: isFree(m),
      prompt_microusd_per_token: p,
      completion_microusd_per_token: c,
      context_length: m.context_length ?? 0,
    });
  }
  out.sort(
    (a, b) =>
      Number(b.free) - Number(a.free) ||
      a.prompt_microusd_per_token + a.completion_microusd_per_token - (b.prompt_microusd_per_token + b.completion_microusd_per_token) ||
      (a.model < b.model ? -1 : 1),
  );
  return out.slice(0, UNTESTED_MAX);
}

/**
 * The scoreboard from aggregated evidence: tiers, filters (taskType, model; engine and since must already be
 * applied to `stats`), untested suggestions from `catalog`, errors and quarantine apart. Pure: no I/O.
 * @param stats one entry per (model, task_type), as extension/core/scoreboard/group-stats.ts computes them
 * @param catalog OpenRouter models, or null for no untested suggestions
 * @param reviews per reviewing model, as extension/core/scoreboard/review-stats.ts computes them (engine and since
 *   applied)
 * @param won per (model, task_type), best-of-N groups taken part in and won (scoreboard/won-stats.ts; engine and
 *   since applied)
 */
export function scoreboardView(
  stats: readonly GroupStats[],
  catalog: readonly OpenRouterModel[] | null,
  filters: ScoreboardFilters = {},
  reviews: readonly ReviewerStats[] = [],
  won: readonly WonStats[] = [],
): ScoreboardView {
  const wonOf = (s: GroupStats) => won.find((w) => w.model === s.model && w.task_type === s.task_type);
  const mf = filters.model?.toLowerCase();
  const keep = (s: GroupStats) => (!filters.taskType || s.task_type === filters.taskType) && (!mf || (s.model ?? '').toLowerCase().includes(mf));
  const selected = stats.filter(keep);
  const rows: ScoreboardRow[] = selected
    .filter((s): s is GroupStats & { model: string } => s.model !== null && s.tasks > 0)
    .map((s) => ({ ...s, tier: tierOf(s), groups: wonOf(s)?.groups ?? 0, won: wonOf(s)?.won ?? 0, lost_consensus: wonOf(s)?.lost_consensus ?? 0 }))
    .sort(
      (a, b) =>
        (a.tier === b.tier ? 0 : a.tier === 'proven' ? -1 : 1) ||
        (b.first_try_pass_rate ?? 0) - (a.first_try_pass_rate ?? 0) ||
        (b.pass_rate ?? 0) - (a.pass_rate ?? 0) ||
        b.tasks - a.tasks ||
        a.model.localeCompare(b.model) ||
        (a.task_type ?? '').localeCompare(b.task_type ?? ''),
    );
  const quarantined = selected.filter((s) => s.model === null);
  const errors: ErrorLine[] = selected
    .filter((s) => s.errors || s.rate_limits)
    .map((s) => ({ model: s.model, task_type: s.task_type, errors: s.errors, rate_limits: s.rate_limits, engines: s.engines }));
  const seen = [...new Set(stats.map((s) => s.model).filter((m): m is string => m !== null))].sort();
  const sum = (list: readonly GroupStats[], f: (s: GroupStats) => number) => list.reduce((n, s) => n + f(s), 0);
  return {
    filters,
    rows,
    untested: catalog ? untestedModels(catalog, seen, filters.model) : [],
    errors,
    quarantined,
    totals: {
      tasks: sum(rows, (s) => s.tasks),
      attempts: sum(rows, (s) => s.attempts),
      errors: sum(selected, (s) => s.errors),
      rate_limits: sum(selected, (s) => s.rate_limits),
      quarantined_attempts: sum(quarantined, (s) => s.attempts + s.errors + s.rate_limits + s.other),
    },
    task_types: [...new Set(stats.map((s) => s.task_type).filter((t): t is string => t !== null))].sort(),
    models: seen,
    reviews: reviews.filter((r) => !mf || (r.model ?? '').toLowerCase().includes(mf)),
  };
}
