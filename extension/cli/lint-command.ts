import fs from 'node:fs';
import path from 'node:path';
import type { Finding } from '../core/manifest/findings';
import { budgetCheck, forecastManifest, routeEvidence } from '../core/scoreboard/plan';
import { formatFinding } from '../core/manifest/lint';
import type { EngineSpec } from '../../engines/types';
import type { Io } from './io';
import { lintManifestFile } from '../core/run/manifest';
import { WORKFLOW_SECTIONS } from '../core/run/workflows';

/** A file's text, or null when it cannot be read (lint then says so itself). */
function readText(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Whether `text` may use what `token` (a JSON string as written, quotes included) names: false only when the token is
 * nowhere in it (a comment naming it only costs the work this saves). A key spelt with escapes (`"budget\u005fusd"`)
 * reads as absent and its rule's finding, advice that never gates a run, is not made. An unreadable file: true.
 */
function mayName(text: string | null, token: string): boolean {
  return text === null || text.includes(token);
}

/** One finding as `verdict lint --json` prints it; line and column are 1-based. */
export interface LintJsonRow {
  rule: string;
  severity: Finding['severity'];
  message: string;
  file: string;
  line: number | null;
  column: number | null;
  task_key: string | null;
}

/**
 * `verdict lint MANIFEST... [--json]`: lints every file; prints findings (or a JSON list of LintJsonRow).
 * Returns 1 when any finding is an error, else 0.
 */
export async function lintCommand(
  files: string[],
  json: boolean,
  engines: ReadonlyMap<string, EngineSpec>,
  allowFullAccess: boolean,
  io: Io,
  routing: { home: string; route: Record<string, unknown> | null } | null = null,
): Promise<number> {
  const all: Finding[] = [];
  // engine "auto": whether the scoreboard has evidence for a candidate on a task type (the route rule's "auto will
  // explore"), read once, and only for a manifest that can name "auto": opening the eval log costs more than the lint.
  let rows: Awaited<ReturnType<typeof routeEvidence>> | null = null;
  const routeEvidenceOf = (model: string, taskType: string | null) => (rows ?? []).some((r) => r.model === model && r.task_type === taskType && r.tasks > 0);
  for (const file of files) {
    const text = readText(path.resolve(file));
    if (routing && rows === null && mayName(text, '"auto"')) rows = await routeEvidence(routing.home);
    // budget_usd against the manifest's forecast (budget-forecast rule), only for a manifest that can hold one (the
    // forecast loads the manifest again and reads the eval log); a manifest that does not load has none.
    const budgetForecast =
      routing && mayName(text, '"budget_usd"')
        ? await forecastManifest(path.resolve(file), routing.home, engines, routing.route, WORKFLOW_SECTIONS).then(budgetCheck, () => undefined)
        : undefined;
    all.push(
      ...(await lintManifestFile(path.resolve(file), {
        engines,
        allowFullAccess,
        pathEnv: process.env.PATH ?? '',
        route: routing?.route ?? null,
        ...(routing ? { routeEvidence: routeEvidenceOf } : {}),
        ...(budgetForecast ? { budgetForecast } : {}),
      })),
    );
  }
  if (json) {
    const rows: LintJsonRow[] = all.map((f) => ({
      rule: f.rule,
      severity: f.severity,
      message: f.message,
      file: f.file,
      line: f.range?.start.line ?? null,
      column: f.range?.start.column ?? null,
      task_key: f.taskKey,
    }));
    io.out(JSON.stringify(rows, null, 2));
  } else {
    for (const f of all) io.out(formatFinding(f));
    const errors = all.filter((f) => f.severity === 'error').length;
    io.out(
      `${files.length} manifest(s): ${errors} error(s), ${all.filter((f) => f.severity === 'warning').length} warning(s), ${all.filter((f) => f.severity === 'info').length} note(s)`,
    );
  }
  return all.some((f) => f.severity === 'error') ? 1 : 0;
}
