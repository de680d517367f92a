/**
 * `verdict plan MANIFEST`: what a manifest will probably cost and take, before launch, from the eval log (the
 * scoreboard's figures per model and task type; core/scoreboard/forecast.ts). Runs nothing.
 */
import type { EngineSpec } from '../../engines/types';
import { formatUsd } from '../core/cost/pricing';
import { formatProblem, ManifestError } from '../core/manifest/types';
import { budgetWarning, forecastManifest, type ManifestForecast } from '../core/scoreboard/plan';
import type { Io } from './io';
import { WORKFLOW_SECTIONS } from '../core/run/workflows';

/** ms → "1m 05s" / "12.3s". */
function duration(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
}

const usd = (n: number | null) => (n === null ? '—' : formatUsd(n));

export { forecastManifest, type ManifestForecast } from '../core/scoreboard/plan';

/**
 * Prints the forecast of `file` (a table, or with `json` the ManifestForecast).
 * Exit 0 printed, 2 the manifest does not load (its problems on stderr, file:line:column).
 */
export async function planCommand(
  file: string,
  opts: { home: string; json: boolean; engines: ReadonlyMap<string, EngineSpec>; route?: Record<string, unknown> | null },
  io: Io,
): Promise<number> {
  let f: ManifestForecast;
  try {
    f = await forecastManifest(file, opts.home, opts.engines, opts.route ?? null, WORKFLOW_SECTIONS);
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
    table.push(
      g
        ? [
            t.key,
            who,
            String(g.attempts),
            usd(g.costMedianMicroUsd),
            usd(g.costP90MicroUsd),
            duration(g.durationMedianMs),
            `${g.tasks} past task(s), ${{ model: 'this model, any task type', engine: 'this engine, any model and task type', 'engine+task_type': `this engine, any model, task type ${t.taskType ?? '(none)'}`, 'model+task_type': `task type ${t.taskType ?? '(none)'}`, none: '' }[t.basis]}`,
          ]
        : [t.key, who, '—', '—', '—', '—', 'no history'],
    );
  }
  const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
  for (const row of table) io.out(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
  // engine "auto": what it would pick for each task's first attempt, and why.
  for (const [key, r] of Object.entries(f.routes)) io.out(`${key}: ${r.line} — ${r.reason}`);
  const t = f.total;
  const summed = `of work summed over the tasks (max_parallel ${f.maxParallel})`;
  const work =
    t.durationMedianMs !== null
      ? `${duration(t.durationMedianMs)} ${summed}`
      : t.known.durationMedianMs > 0
        ? `at least ${duration(t.known.durationMedianMs)} ${summed}`
        : `duration unknown (max_parallel ${f.maxParallel})`;
  if (t.costMedianMicroUsd !== null && t.costP90MicroUsd !== null)
    io.out(`total: ${formatUsd(t.costMedianMicroUsd)} expected (p50), ${formatUsd(t.costP90MicroUsd)} at p90; ${work}`);
  else if (t.costUnknown === f.tasks.length)
    io.out(`total: cost unknown (no task has a known cost: ${t.withoutHistory} of ${f.tasks.length} without history); ${work}`);
  else
    io.out(
      `total: cost unknown — at least ${formatUsd(t.known.costMedianMicroUsd)} expected (p50), ${formatUsd(t.known.costP90MicroUsd)} at p90 from the others; ${t.costUnknown} of ${f.tasks.length} task(s) have no known cost (${t.withoutHistory} without history); ${work}`,
    );
  // What the tasks with a known cost are expected to cost: with unknowns, at least that (budgetWarning).
  const warning = budgetWarning(budgetMicroUsd, t);
  if (warning) io.out(`warning: ${warning}`);
  return 0;
}
