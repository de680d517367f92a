/**
 * `verdict plan MANIFEST`: what a manifest will probably cost and take, before launch, from the eval log (the
 * scoreboard's figures per model and task type; core/scoreboard/forecast.ts). Runs nothing.
 */
import path from 'node:path';
import type { EngineSpec } from '../../engines/types';
import { evalLogPath } from '../core/config/home';
import { formatUsd } from '../core/cost/pricing';
import { loadManifest } from '../core/manifest/load';
import { formatProblem, ManifestError } from '../core/manifest/types';
import { forecast, type Forecast } from '../core/scoreboard/forecast';
import { currentColumns } from '../core/scoreboard/load';
import type { Io } from './io';

/** ms → "1m 05s" / "12.3s". */
function duration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

const usd = (n: number | null) => (n === null ? '—' : formatUsd(n));

/** A manifest's forecast, with its file, budget (micro-USD, null for none) and max_parallel. */
export interface ManifestForecast extends Forecast {
  manifest: string;
  budgetMicroUsd: number | null;
  maxParallel: number;
}

/**
 * Loads `file` and forecasts it from the eval log under `home` (no log yet: every task without history).
 * @throws ManifestError when the manifest does not load (its problems with positions)
 */
export async function forecastManifest(file: string, home: string, engines: ReadonlyMap<string, EngineSpec>): Promise<ManifestForecast> {
  const manifest = loadManifest(path.resolve(file), { engines: new Set(engines.keys()) }).manifest;
  // A best-of-N group's own entry runs no worker: its candidates are the tasks.
  const tasks = manifest.tasks.filter((t) => !t.select).map((t) => ({ key: t.key, engine: t.engine, model: t.model ?? engines.get(t.engine)?.defaultModel ?? null, taskType: t.taskType }));
  let columns = null;
  try {
    columns = await currentColumns(home, evalLogPath(home));
  } catch {
    // no eval log yet: every task is without history
  }
  return { manifest: manifest.file, budgetMicroUsd: manifest.budgetUsd === null ? null : Math.round(manifest.budgetUsd * 1_000_000), maxParallel: manifest.maxParallel, ...forecast(tasks, columns) };
}

/**
 * Prints the forecast of `file` (a table, or with `json` the ManifestForecast).
 * Exit 0 printed, 2 the manifest does not load (its problems on stderr, file:line:column).
 */
export async function planCommand(file: string, opts: { home: string; json: boolean; engines: ReadonlyMap<string, EngineSpec> }, io: Io): Promise<number> {
  let f: ManifestForecast;
  try {
    f = await forecastManifest(file, opts.home, opts.engines);
  } catch (e) {
    if (!(e instanceof ManifestError)) throw e;
    for (const p of e.problems) io.err(formatProblem(p));
    return 2;
  }
  const budgetMicroUsd = f.budgetMicroUsd;
  if (opts.json) {
    io.out(JSON.stringify(f, null, 2));
    return 0;
  }
  const table = [['TASK', 'ENGINE/MODEL', 'ATTEMPTS', 'COST P50', 'COST P90', 'DURATION', 'FROM']];
  for (const t of f.tasks) {
    const who = `${t.engine}${t.model ? `/${t.model}` : ''}`;
    const g = t.figures;
    table.push(g
      ? [t.key, who, String(g.attempts), usd(g.costMedianMicroUsd), usd(g.costP90MicroUsd), duration(g.durationMedianMs), `${g.tasks} past task(s), ${{ model: 'this model, any task type', engine: 'this engine, any model and task type', 'engine+task_type': `this engine, any model, task type ${t.taskType ?? '(none)'}`, 'model+task_type': `task type ${t.taskType ?? '(none)'}`, none: '' }[t.basis]}`]
      : [t.key, who, '—', '—', '—', '—', 'no history']);
  }
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) io.out(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
  const t = f.total;
  io.out(`total: ${formatUsd(t.costMedianMicroUsd)} expected (p50), ${formatUsd(t.costP90MicroUsd)} at p90; ${duration(t.durationMedianMs)} of work summed over the tasks (max_parallel ${f.maxParallel})${t.withoutHistory ? `; ${t.withoutHistory} of ${f.tasks.length} task(s) have no history and add nothing` : ''}`);
  if (budgetMicroUsd !== null && budgetMicroUsd < t.costMedianMicroUsd) io.out(`warning: budget_usd ${formatUsd(budgetMicroUsd)} is below the expected cost ${formatUsd(t.costMedianMicroUsd)} (p50): the run will probably end BUDGET_EXCEEDED`);
  return 0;
}
