/**
 * A manifest's forecast before launch (what `verdict plan`, the MCP server's plan tool and the editor's Run Manifest
 * confirmation and CodeLens show): the manifest loaded, its worker tasks forecast from the eval log
 * (core/scoreboard/forecast.ts). Runs nothing.
 */
import path from 'node:path';
import type { EngineSpec } from '../../../engines/types';
import { evalLogPath } from '../config/home';
import { loadManifest } from '../manifest/load';
import { forecast, type Forecast } from './forecast';
import { currentColumns } from './load';

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
