/**
 * A manifest's forecast before launch (what `verdict plan`, the MCP server's plan tool and the editor's Run Manifest
 * confirmation and CodeLens show): the manifest loaded, its worker tasks forecast from the eval log
 * (core/scoreboard/forecast.ts). Runs nothing.
 */
import path from 'node:path';
import type { EngineSpec } from '../../../engines/types';
import { evalLogPath } from '../config/home';
import { formatUsd } from '../cost/pricing';
import { loadManifest } from '../manifest/load';
import type { Manifest } from '../manifest/types';
import { forecast, type Forecast, type TaskForecast } from './forecast';
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
 * @throws ManifestError when the manifest does not load (its problems with positions)
 */
export async function forecastManifest(
  file: string,
  home: string,
  engines: ReadonlyMap<string, EngineSpec>,
  configRoute: Record<string, unknown> | null = null,
): Promise<ManifestForecast> {
  return forecastOf(loadManifest(path.resolve(file), { engines: new Set(engines.keys()), route: configRoute }).manifest, home, engines);
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
      return { key: t.key, engine, model: model ?? engines.get(engine)?.defaultModel ?? null, taskType: t.taskType };
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
 * The forecast's total as one line: `forecast: $0.40 expected (p50), $1.20 at p90` with `; 1 of 3 task(s) without
 * history (not counted)` when some have none, or `forecast: no history for any of its 3 task(s)`.
 */
export function forecastTotalLine(f: Forecast): string {
  const n = f.tasks.length;
  if (n > 0 && f.total.withoutHistory === n) return `forecast: no history for any of its ${n} task(s)`;
  const line = `forecast: ${formatUsd(f.total.costMedianMicroUsd)} expected (p50), ${formatUsd(f.total.costP90MicroUsd)} at p90`;
  return f.total.withoutHistory ? `${line}; ${f.total.withoutHistory} of ${n} task(s) without history (not counted)` : line;
}

/**
 * True when a run of this forecast should be confirmed before it starts: its p90 total (what it may well cost) is
 * above `thresholdUsd` (the editor's `verdict.confirmAboveUsd`).
 */
export function needsConfirmation(f: Forecast, thresholdUsd: number): boolean {
  return f.total.costP90MicroUsd > Math.round(thresholdUsd * 1_000_000);
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
 * 1 attempt(s) · from 3 past task(s)`, `no history` when none of its tasks has any, with `· 2 task(s)` for a workflow
 * compiled into several.
 */
export function entryForecastText(tasks: readonly TaskForecast[]): string {
  const known = tasks.filter((t) => t.figures);
  if (!known.length) return `no history${tasks.length > 1 ? ` · ${tasks.length} task(s)` : ''}`;
  const p50 = known.reduce((s, t) => s + (t.figures?.costMedianMicroUsd ?? 0), 0);
  const p90 = known.reduce((s, t) => s + (t.figures?.costP90MicroUsd ?? 0), 0);
  const attempts = known.reduce((s, t) => s + (t.figures?.attempts ?? 0), 0);
  const past = Math.min(...known.map((t) => t.figures?.tasks ?? 0));
  const parts = [`expected ${formatUsd(p50)} (p50)`, `${formatUsd(p90)} at p90`, `${attempts} attempt(s)`, `from ${past} past task(s)`];
  if (tasks.length > 1) parts.push(`${tasks.length} task(s)${known.length < tasks.length ? `, ${tasks.length - known.length} without history` : ''}`);
  return parts.join(' · ');
}
