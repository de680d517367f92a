/**
 * `verdict models --route TASK_TYPE [--manifest FILE]`: how `engine: "auto"` ranks its candidates on a task type, from
 * the scoreboard, and what it would pick for a first attempt and why (core/scoreboard/route.ts routeRanking). The
 * candidates and policy are the manifest's `route` (with --manifest), else the config file's.
 */
import path from 'node:path';
import type { EngineSpec } from '../../engines/types';
import { routeProblems, toRouteSpec } from '../core/manifest/route-spec';
import { formatProblem, ManifestError, type RouteSpec } from '../core/manifest/types';
import { catalogPrices, routeEvidence } from '../core/scoreboard/plan';
import { seededRandom } from '../core/scoreboard/random';
import { costHint, evidenceLine, routeLine, routeRanking } from '../core/scoreboard/route';
import { UsageError, type Io } from './io';
import { loadManifest } from '../core/run/manifest';

const pct = (r: number | null) => (r === null ? '-' : `${Math.round(r * 100)}%`);
const usd = (micro: number | null) => (micro === null ? '-' : `$${(micro / 1e6).toFixed(4)}`);

/** The route block in force: the manifest's (--manifest), else the config's; UsageError when there is none. */
function routeSpecOf(
  manifestFile: string | undefined,
  configRoute: Record<string, unknown> | null,
  engines: ReadonlyMap<string, EngineSpec>,
  io: Io,
): RouteSpec | null {
  if (manifestFile) {
    try {
      const m = loadManifest(path.resolve(manifestFile), { engines: new Set(engines.keys()), route: configRoute }).manifest;
      const raw = (m.raw as { route?: unknown }).route;
      if (raw && typeof raw === 'object') return toRouteSpec(raw as Record<string, unknown>, 'manifest');
    } catch (e) {
      if (!(e instanceof ManifestError)) throw e;
      for (const p of e.problems) io.err(formatProblem(p));
      return null;
    }
  }
  if (!configRoute) throw new UsageError(`--route needs candidates: a manifest with a "route" block (--manifest FILE) or "route" in the config file`);
  const problem = routeProblems(configRoute, new Set(engines.keys()))[0];
  if (problem) throw new UsageError(`the config's route: ${problem.message}`);
  return toRouteSpec(configRoute, 'config');
}

/**
 * Prints the ranking (a table, then auto's pick and why), or with `json` the RouteRanking. Exit 0 shown, 2 bad input.
 */
export async function routeCommand(
  taskType: string,
  opts: { home: string; log?: string; manifest?: string; json: boolean; engines: ReadonlyMap<string, EngineSpec>; configRoute: Record<string, unknown> | null },
  io: Io,
): Promise<number> {
  const spec = routeSpecOf(opts.manifest, opts.configRoute, opts.engines, io);
  if (!spec) return 2;
  const evidence = await routeEvidence(opts.home, opts.log);
  const seed = `${spec.seed ?? 'plan'}/${taskType}`;
  const price = catalogPrices(opts.home);
  const candidates = spec.from.map((c) => ({ ...c, costHintMicroUsd: costHint(c.model, taskType, spec, evidence, price) }));
  const r = routeRanking(taskType, candidates, spec, evidence, seededRandom(seed), seed);
  if (opts.json) {
    io.out(JSON.stringify({ task_type: taskType, source: spec.source, ...r }, null, 2));
    return 0;
  }
  const rows = [['RANK', 'CANDIDATE', 'TIER', 'TASKS', 'FIRST TRY', 'PASS', 'COST/PASS', 'ATTEMPT COST']];
  r.candidates.forEach((c, i) =>
    rows.push([
      String(i + 1),
      c.candidate,
      c.tier,
      String(c.tasks),
      pct(c.firstTryPassRate),
      pct(c.passRate),
      usd(c.costPerPassMicroUsd),
      usd(c.attemptCostMicroUsd),
    ]),
  );
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows)
    io.out(
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
  io.out('');
  io.out(`task type ${taskType}, policy prefer ${spec.prefer}, explore ${spec.explore}, min_tasks ${spec.minTasks} (the ${spec.source}'s route)`);
  io.out(`${routeLine(r.pick, spec.prefer)} — ${r.pick.reason}`);
  if (r.pick.exploration)
    io.out(
      `(an exploration: another draw may pick another; the best proven is ${r.candidates[0]?.tier === 'proven' ? `${r.candidates[0].candidate}, ${evidenceLine(r.candidates[0], spec.prefer)}` : 'none'})`,
    );
  return 0;
}
