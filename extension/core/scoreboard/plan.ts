/**
 * A manifest's forecast before launch (what `verdict plan`, the MCP server's plan tool and the editor's Run Manifest
 * confirmation and CodeLens show): the manifest loaded, its worker tasks forecast from the eval log
 * (core/scoreboard/forecast.ts). Runs nothing.
 */
import path from 'node:path';
import type { EngineSpec } from '../../../engines/types';
import { evalLogPath } from '../config/home';
import { formatUsd } from '../cost/pricing';
import { loadManifest, parseManifest } from '../manifest/load';
import type { WorkflowSection } from '../manifest/sections';
import type { Manifest } from '../manifest/types';
import { forecast, totalOf, type Forecast, type ForecastTotal, type TaskForecast } from './forecast';
import { currentColumns, loadScoreboard } from './load';
import { seededRandom } from './random';
import { costHint, routeLine, routeRanking } from './route';
import { readSnapshotQuietly } from '../catalog/snapshot';
import { priceOf, type ModelPrice } from '../cost/pricing';
import type { GroupStats } from './group-stats';

/** The catalog snapshot's prices under `home` (none without a snapshot), as auto's cost hints read them. */
export function catalogPrices(home: string): (model: string) => ModelPrice | null {
  const models = readSnapshotQuietly(home)?.data ?? [];
  return (model) => priceOf(models, model);
}

/** The scoreboard's rows under `home` (none when the log cannot be read): the evidence auto routes by. */
export async function routeEvidence(home: string, logFile?: string): Promise<GroupStats[]> {
  try {
    return (await loadScoreboard({ home, logFile })).view.rows;
  } catch {
    return [];
  }
}

/** A manifest's forecast, with its file, budget (micro-USD, null for none) and max_parallel. */
export interface ManifestForecast extends Forecast {
  manifest: string;
  /**
   * `engine: "auto"` tasks: what auto would pick for each one's first attempt and why (scoreboard/route.ts), by task
   * key; the task's forecast is that pick's.
   */
  routes: Record<string, { line: string; reason: string; exploration: boolean }>;
  budgetMicroUsd: number | null;
  maxParallel: number;
}

/**
 * Loads `file` and forecasts it from the eval log under `home` (no log yet: every task without history).
 * `configRoute` is the config file's `route` block (null for none), which an `engine: "auto"` manifest without its
 * own route needs to load; every caller passes what its run would use, so the forecast loads what the run loads.
 * `sections`: every workflow's section (run/workflows/index.ts WORKFLOW_SECTIONS; the workflows sit above the scoreboard).
 * @throws ManifestError when the manifest does not load (its problems with positions)
 */
export async function forecastManifest(
  file: string,
  home: string,
  engines: ReadonlyMap<string, EngineSpec>,
  configRoute: Record<string, unknown> | null,
  sections: readonly WorkflowSection[],
): Promise<ManifestForecast> {
  return forecastOf(loadManifest(path.resolve(file), { sections, engines: new Set(engines.keys()), route: configRoute }).manifest, home, engines);
}

/**
 * A manifest's text (the editor's, unsaved) parsed as `file` with the config file's `route` block (`configRoute`,
 * null for none) and the workflows' `sections` (as forecastManifest's) as a run would load it, and its forecastOf; null
 * when the text does not parse to a manifest.
 */
export async function forecastText(
  text: string,
  file: string,
  home: string,
  engines: ReadonlyMap<string, EngineSpec>,
  configRoute: Record<string, unknown> | null,
  sections: readonly WorkflowSection[],
): Promise<{ manifest: Manifest; forecast: ManifestForecast } | null> {
  const { manifest } = parseManifest(text, file, { sections, engines: new Set(engines.keys()), route: configRoute });
  return manifest ? { manifest, forecast: await forecastOf(manifest, home, engines) } : null;
}

/** forecastManifest of a manifest already loaded (the editor's, parsed from its unsaved text). */
export async function forecastOf(manifest: Manifest, home: string, engines: ReadonlyMap<string, EngineSpec>): Promise<ManifestForecast> {
  // engine "auto": each routed task's first attempt as a run would route it (the seed a run without route.seed would
  // not use, so this shows one likely draw; the pick is the same whenever no draw decides it).
  const routes: ManifestForecast['routes'] = {};
  const evidence = manifest.tasks.some((t) => t.route) ? await routeEvidence(home) : [];
  const price = catalogPrices(home);
  const picks = new Map<string, { engine: string; model: string | null }>();
  for (const t of manifest.tasks) {
    if (!t.route || t.select) continue;
    const seed = `${t.route.seed ?? 'plan'}/${t.key}/1`;
    const candidates = t.route.from.map((c) => ({ ...c, costHintMicroUsd: costHint(c.model, t.taskType, t.route!, evidence, price) }));
    const r = routeRanking(t.taskType, candidates, t.route, evidence, seededRandom(seed), seed);
    routes[t.key] = { line: routeLine(r.pick, t.route.prefer), reason: r.pick.reason, exploration: r.pick.exploration };
    picks.set(t.key, { engine: r.pick.engine, model: r.pick.model });
  }
  // A best-of-N group's own entry runs no worker: its candidates are the tasks.
  const tasks = manifest.tasks
    .filter((t) => !t.select)
    .map((t) => {
      const { engine, model } = picks.get(t.key) ?? t;
      // The script engine runs a bash script, no model: it costs nothing.
      const free = engines.get(engine)?.harness === 'script';
      return { key: t.key, engine, model: model ?? engines.get(engine)?.defaultModel ?? null, taskType: t.taskType, ...(free ? { free } : {}) };
    });
  let columns = null;
  try {
    columns = await currentColumns(home, evalLogPath(home));
  } catch {
    // no eval log yet: every task is without history
  }
  return {
    manifest: manifest.file,
    routes,
    budgetMicroUsd: manifest.budgetUsd === null ? null : Math.round(manifest.budgetUsd * 1_000_000),
    maxParallel: manifest.maxParallel,
    ...forecast(tasks, columns),
  };
}

/**
 * The forecast's total as one line: `forecast: $0.40 expected (p50), $1.20 at p90`; when some task's cost is unknown,
 * never a $0 total: `forecast: cost unknown — no history for any of its 3 task(s)`, or `forecast: cost unknown — at
 * least $0.40 expected (p50), $1.20 at p90 from 2 task(s); 1 of 3 task(s) without history` (without a known cost, for
 * tasks whose history has none).
 */
export function forecastTotalLine(f: Forecast): string {
  const n = f.tasks.length;
  const t = f.total;
  if (t.costMedianMicroUsd !== null && t.costP90MicroUsd !== null)
    return `forecast: ${formatUsd(t.costMedianMicroUsd)} expected (p50), ${formatUsd(t.costP90MicroUsd)} at p90`;
  const unknown = t.withoutHistory === t.costUnknown ? 'without history' : 'without a known cost';
  if (t.costUnknown === n) return `forecast: cost unknown — ${t.withoutHistory === n ? 'no history' : 'no known cost'} for any of its ${n} task(s)`;
  return `forecast: cost unknown — at least ${formatUsd(t.known.costMedianMicroUsd)} expected (p50), ${formatUsd(t.known.costP90MicroUsd)} at p90 from ${n - t.costUnknown} task(s); ${t.costUnknown} of ${n} task(s) ${unknown}`;
}

/**
 * The warning when budget_usd (micro-USD; null: none) is below the forecast's expected cost — its p50 total, or with
 * tasks of unknown cost the p50 of the others, which the run costs at least — naming both figures; null otherwise
 * (and when nothing is known: no figure to compare). `verdict plan` prints it, lint's budget-forecast rule says it.
 */
export function budgetWarning(budgetMicroUsd: number | null, t: ForecastTotal): string | null {
  if (budgetMicroUsd === null) return null;
  const exact = t.costMedianMicroUsd !== null;
  const p50 = t.costMedianMicroUsd ?? t.known.costMedianMicroUsd;
  const p90 = t.costP90MicroUsd ?? t.known.costP90MicroUsd;
  if (budgetMicroUsd >= p50 || (!exact && p50 === 0)) return null;
  const figure = exact
    ? `the expected cost ${formatUsd(p50)} (p50; ${formatUsd(p90)} at p90)`
    : `the expected cost of its tasks with a known cost, ${formatUsd(p50)} (p50; ${formatUsd(p90)} at p90), and ${t.costUnknown} more task(s) of unknown cost`;
  return `budget_usd ${formatUsd(budgetMicroUsd)} is below ${figure}: the run will probably end BUDGET_EXCEEDED`;
}

/**
 * For lint's budget-forecast rule (LintContext.budgetForecast): the budgetWarning of budget_usd (micro-USD) against the
 * whole forecast (`taskKey` null) or against the forecast of the task `taskKey` and the tasks a workflow compiled from
 * it (entryForecasts); null when within it, or when the forecast has no such task.
 */
export function budgetCheck(f: Forecast): (budgetMicroUsd: number, taskKey: string | null) => string | null {
  return (budgetMicroUsd, taskKey) => {
    if (taskKey === null) return budgetWarning(budgetMicroUsd, f.total);
    const tasks = entryForecasts(f, [taskKey]).get(taskKey) ?? [];
    return tasks.length ? budgetWarning(budgetMicroUsd, totalOf(tasks)) : null;
  };
}

/**
 * Why a run of this forecast should be confirmed before it starts, as the question's end (`above your $1 threshold
 * (verdict.confirmAboveUsd)`), or null when it need not be: its p90 total (what it may well cost) is above `thresholdUsd`
 * (the editor's `verdict.confirmAboveUsd`), or its cost is unknown (some task without history) and no budget_usd at
 * or below the threshold caps it. Unknown is never taken as under the threshold: a manifest nobody ran before may cost
 * anything.
 */
export function confirmationReason(f: Forecast & { budgetMicroUsd?: number | null }, thresholdUsd: number): string | null {
  const threshold = Math.round(thresholdUsd * 1_000_000);
  const setting = `your $${thresholdUsd} threshold (verdict.confirmAboveUsd)`;
  const p90 = f.total.costP90MicroUsd;
  if (p90 !== null) return p90 > threshold ? `above ${setting}` : null;
  if (f.total.known.costP90MicroUsd > threshold) return `above ${setting} already for the tasks with a known cost`;
  const budget = f.budgetMicroUsd ?? null;
  if (budget !== null && budget <= threshold) return null;
  return budget === null
    ? `its cost is unknown and no budget_usd caps it: it may cost more than ${setting}`
    : `its cost is unknown and its budget_usd ${formatUsd(budget)} is above ${setting}`;
}

/**
 * The forecast tasks of one manifest entry `key`: the task of that key, or the tasks a workflow compiled from it
 * (their keys start with it and a separator), each given to the entry whose key is their longest such prefix.
 */
export function entryForecasts(f: Forecast, keys: readonly string[]): Map<string, TaskForecast[]> {
  const out = new Map<string, TaskForecast[]>(keys.map((k) => [k, []]));
  for (const t of f.tasks) {
    let best: string | null = null;
    for (const k of keys)
      if ((t.key === k || (t.key.startsWith(k) && /[^A-Za-z0-9]/.test(t.key.charAt(k.length)))) && (best === null || k.length > best.length)) best = k;
    if (best !== null) out.get(best)?.push(t);
  }
  return out;
}

/**
 * One manifest entry's expected cost as the editor's CodeLens shows it: `expected $0.0200 (p50) · $0.0600 at p90 ·
 * 1 attempt(s) · from 3 past task(s)`, `no history` when none of its tasks has any, `cost unknown` when its history
 * has no known cost, with `· 2 task(s)` for a workflow compiled into several; when some of those have no known cost,
 * `at least` before the sum of the others (never a sum that passes for the whole).
 */
export function entryForecastText(tasks: readonly TaskForecast[]): string {
  const known = tasks.filter((t) => t.figures);
  const costed = tasks.filter((t) => t.free || t.figures?.costMedianMicroUsd != null);
  if (!known.length && !costed.length) return `no history${tasks.length > 1 ? ` · ${tasks.length} task(s)` : ''}`;
  if (!costed.length) return `cost unknown (its history has no known cost)${tasks.length > 1 ? ` · ${tasks.length} task(s)` : ''}`;
  const p50 = costed.reduce((s, t) => s + (t.figures?.costMedianMicroUsd ?? 0), 0);
  const p90 = costed.reduce((s, t) => s + (t.figures?.costP90MicroUsd ?? 0), 0);
  const attempts = known.reduce((s, t) => s + (t.figures?.attempts ?? 0), 0);
  const atLeast = costed.length < tasks.length ? 'at least ' : '';
  const parts = [`expected ${atLeast}${formatUsd(p50)} (p50)`, `${atLeast}${formatUsd(p90)} at p90`];
  if (known.length) parts.push(`${attempts} attempt(s)`, `from ${Math.min(...known.map((t) => t.figures?.tasks ?? 0))} past task(s)`);
  else parts.push('runs no model');
  if (tasks.length > 1) parts.push(`${tasks.length} task(s)${costed.length < tasks.length ? `, ${tasks.length - costed.length} of unknown cost` : ''}`);
  return parts.join(' · ');
}
