// `verdict doctor MANIFEST`: can this manifest run here, task by task. It reads the manifest (load and lint, as `verdict
// run` would), looks each engine's binary up on PATH and asks the run's own preflight about the rest (repository,
// base_ref, sandbox, network stack, full access, trees); it starts nothing the manifest names: no worker, check or
// setup runs, and git runs only through core/git/safe-git.ts (the repository's fsmonitor, hooks and drivers off).
import path from 'node:path';
import { findBinary } from '../../engines';
import type { EngineSpec } from '../../engines/types';
import { formatFinding } from '../core/manifest/lint';
import { ManifestError } from '../core/manifest/types';
import type { Manifest, TaskSpec } from '../core/manifest/types';
import { preflight, PreflightError } from '../core/run/preflight';
import { workflowReaderEngines } from '../core/run/workflows';
import type { ContainmentChoice } from '../core/config/settings';
import { lintManifestFile, loadManifest } from '../core/run/manifest';

/** One task of the manifest as `verdict doctor MANIFEST` judges it. */
export interface ManifestTaskReport {
  key: string;
  /** `ready`: nothing known stops it; `will-fail`: it can start but its check names a file nowhere; `cannot-run`: it cannot start here. */
  state: 'ready' | 'will-fail' | 'cannot-run';
  /** Every engine it may run on (its own, fallbacks, reviewers, ranking reviewers, critics), in that order. */
  engines: string[];
  /** One line each: why it cannot run, or why it would fail (an engine not installed with its install command, a lint error, a missing check file). */
  reasons: string[];
}

/** `verdict doctor MANIFEST`'s answer; `--json` prints it as the report's `manifest`. */
export interface ManifestReport {
  /** Absolute path of the manifest. */
  file: string;
  /** True when every task is `ready` and nothing stops the run as a whole. */
  ok: boolean;
  /** What stops the whole run here (the preflight's answer without its per-engine lines, or why the manifest does not load). */
  problems: string[];
  tasks: ManifestTaskReport[];
}

/** What {@link manifestReport} needs from the command line and config. */
export interface ManifestReportOptions {
  engines: ReadonlyMap<string, EngineSpec>;
  /** The config file's `route` block (null for none): an engine "auto" manifest without its own route loads with it, as its run does. */
  route: Record<string, unknown> | null;
  containment: ContainmentChoice;
  home: string;
  env: NodeJS.ProcessEnv;
}

/** The preflight's line for a missing engine binary (core/run/preflight.ts): reported per task instead. */
const ENGINE_LINE = /^engine "[^"]+" needs the `/;

/**
 * Judges `file` on this machine (see ManifestReport). Never throws for a bad manifest: one that does not load is a
 * report with `problems` (its errors as `file:line:column: error [rule] message`) and no tasks.
 */
export async function manifestReport(file: string, o: ManifestReportOptions): Promise<ManifestReport> {
  const abs = path.resolve(file);
  const findings = await lintManifestFile(abs, {
    engines: o.engines,
    allowFullAccess: o.containment.allowFullAccess,
    pathEnv: o.env.PATH ?? '',
    route: o.route,
  });
  let tasks: TaskSpec[];
  let manifest: Manifest;
  try {
    manifest = loadManifest(abs, { engines: new Set(o.engines.keys()), route: o.route }).manifest;
    tasks = manifest.tasks;
  } catch (e) {
    const lines = e instanceof ManifestError ? findings.filter((f) => f.severity === 'error').map(formatFinding) : [];
    return { file: abs, ok: false, problems: lines.length ? lines : [`the manifest does not load: ${(e as Error).message}`], tasks: [] };
  }
  const problems: string[] = [];
  try {
    await preflight(
      manifest,
      o.engines,
      o.env,
      o.home,
      {
        sandbox: o.containment.sandbox,
        allowFullAccess: o.containment.allowFullAccess,
        configSource: o.containment.configSource,
      },
      workflowReaderEngines,
    );
  } catch (e) {
    if (e instanceof PreflightError) problems.push(...e.problems.filter((p) => !ENGINE_LINE.test(p)));
    else problems.push((e as Error).message);
  }
  for (const f of findings) if (f.taskKey === null && f.severity === 'error') problems.push(formatFinding(f));
  const installed = new Map<string, boolean>();
  const report = tasks.map((t): ManifestTaskReport => {
    const engines = [
      ...new Set([
        t.engine,
        ...t.fallback.map((f) => f.engine),
        ...(t.review?.engines ?? []).map((r) => r.engine),
        ...(t.rank?.engines ?? []).map((r) => r.engine),
        ...(t.critique?.critics ?? []).map((c) => c.engine),
      ]),
    ];
    const cannot: string[] = [];
    const fails: string[] = [];
    for (const name of engines) {
      const spec = o.engines.get(name);
      if (!spec) continue; // the manifest would not have loaded
      let found = installed.get(spec.binary);
      if (found === undefined) installed.set(spec.binary, (found = findBinary(spec.binary, o.env.PATH ?? '') !== null));
      if (!found) cannot.push(`engine ${name}: \`${spec.binary}\` is not on PATH — ${spec.install}`);
    }
    // A workflow's compiled tasks (`k--c1`, `k--impl-1`) answer for the findings of the task they came from.
    for (const f of findings.filter((x) => x.taskKey !== null && (x.taskKey === t.key || t.key.startsWith(`${x.taskKey}--`)))) {
      if (f.severity === 'error') cannot.push(`${f.rule}: ${f.message}`);
      else if (f.rule === 'check-file-missing') fails.push(f.message);
    }
    return { key: t.key, state: cannot.length ? 'cannot-run' : fails.length ? 'will-fail' : 'ready', engines, reasons: [...cannot, ...fails] };
  });
  return { file: abs, ok: problems.length === 0 && report.every((t) => t.state === 'ready'), problems, tasks: report };
}

/** The lines `verdict doctor MANIFEST` prints for the report: one block per task, then the run's problems and the answer. */
export function manifestLines(r: ManifestReport): string[] {
  const out = [`manifest: ${r.file}`];
  const width = Math.max(0, ...r.tasks.map((t) => t.key.length));
  const word = { ready: 'ready', 'will-fail': 'WILL FAIL', 'cannot-run': 'CANNOT RUN' } as const;
  for (const t of r.tasks) {
    out.push(`  ${t.key.padEnd(width)}  ${word[t.state]}${t.state === 'ready' ? ` (${t.engines.join(', ')})` : ''}`);
    for (const reason of t.reasons) out.push(`  ${' '.repeat(width)}    ${reason}`);
  }
  if (r.problems.length) {
    out.push('  the run as a whole:');
    for (const p of r.problems) out.push(`    ${p}`);
  }
  const cannot = r.tasks.filter((t) => t.state === 'cannot-run').length;
  const fail = r.tasks.filter((t) => t.state === 'will-fail').length;
  if (r.ok) out.push(`this manifest can run here: ${r.tasks.length} task(s) ready`);
  else {
    const parts = [
      ...(cannot ? [`${cannot} of ${r.tasks.length} task(s) cannot run`] : []),
      ...(fail ? [`${fail} would fail on a file their check names`] : []),
      ...(r.problems.length ? ['the run cannot start (above)'] : []),
    ];
    out.push(`this manifest cannot run here as it is: ${parts.join('; ')}`);
  }
  return out;
}
