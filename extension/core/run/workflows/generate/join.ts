/**
 * A planner's generated tasks joining its run (docs/workflows.md "Generated"): they are appended to the run's frozen
 * manifest as a new version, so rerun, resume and merge read them like the tasks the run started with, and the runner
 * gets them compiled (best-of-N included) as ordinary tasks. The tasks come validated (run/workflows/generate/file.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { runDir } from '../../../config/home';
import type { RunState } from '../../../live/state';
import { parseManifest } from '../../../manifest/load';
import type { WorkflowSection } from '../../../manifest/sections';
import { formatProblem, type TaskSpec } from '../../../manifest/types';
import { frozenManifestPath } from '../../frozen-manifest';
import { statusInfo } from '../../../../../schemas/status';
import { endTask } from '../../end-task';
import type { LiveRun } from '../../live-run';
import type { TaskRuntime } from '../../steps/context';
import type { TaskGraph } from '../../task-graph';
import { plannedTasks } from './step';

/** runs/<run_id>/manifest.json: the frozen manifest, with its version and what planners added (absent before version 2). */
interface FrozenFile {
  source: string;
  manifest: { tasks: unknown[] } & Record<string, unknown>;
  /** 1 when absent: the manifest as the run started. */
  version?: number;
  /** One entry per planner whose tasks joined, in order. Times epoch ms. */
  generated?: { by: string; file: string; keys: string[]; at: number }[];
}

/**
 * Appends `tasks` (raw, validated) to the run's frozen manifest as version N+1, keeping version N beside it as
 * `manifest.v<N>.json`; the new file is written atomically and only once it loads.
 * @param planner the planner's key; `file` its tasks file (as in its `generate`)
 * @param known every key the frozen manifest compiles to as it stands (the run's frozenKeys), so it is not parsed again
 * @param sections every workflow's section (AttemptContext.sections), which the manifest with the tasks is loaded with
 * @returns the added tasks compiled (a best-of-N task as its entry and its candidates), in file order
 * @throws Error when the frozen manifest cannot be read, or would no longer load with the tasks added (nothing written)
 */
export function freezeGenerated(
  home: string,
  state: RunState,
  planner: string,
  file: string,
  tasks: Record<string, unknown>[],
  engines: ReadonlySet<string>,
  known: ReadonlySet<string>,
  sections: readonly WorkflowSection[],
): TaskSpec[] {
  const frozenPath = frozenManifestPath(home, state.runId);
  const frozen = JSON.parse(fs.readFileSync(frozenPath, 'utf8')) as FrozenFile;
  const version = frozen.version ?? 1;
  const manifest = { ...frozen.manifest, tasks: [...frozen.manifest.tasks, ...tasks] };
  const after = parseManifest(JSON.stringify(manifest), state.manifestFile, { sections, engines });
  if (!after.manifest) {
    throw new Error(
      `the frozen manifest would no longer load with the generated tasks: ${after.problems
        .filter((p) => p.severity === 'error')
        .map(formatProblem)
        .join('; ')}`,
    );
  }
  fs.copyFileSync(frozenPath, path.join(runDir(home, state.runId), `manifest.v${version}.json`));
  const next: FrozenFile = {
    ...frozen,
    manifest,
    version: version + 1,
    generated: [...(frozen.generated ?? []), { by: planner, file, keys: tasks.map((t) => String(t.key)), at: Date.now() }],
  };
  writeFileAtomic.sync(frozenPath, JSON.stringify(next, null, 2));
  return after.manifest.tasks.filter((t) => !known.has(t.key));
}

/**
 * A planner that passed brings the tasks its step `generate` validated (plannedTasks): they join the frozen
 * manifest (a new version) and the run's state, and wait for the planner like any `after` dependent. Tasks that cannot
 * join end the planner ERROR (a record error of the run), saying why.
 */
export function joinGenerated(run: LiveRun, graph: TaskGraph, planner: TaskRuntime): void {
  const raw = plannedTasks.get(planner);
  if (!raw) return;
  plannedTasks.delete(planner);
  let specs: TaskSpec[];
  try {
    specs = freezeGenerated(
      run.home,
      run.state,
      planner.spec.key,
      planner.spec.generate?.file ?? '',
      raw,
      new Set(run.opts.engines.keys()),
      run.frozenKeys,
      run.ctx.sections,
    );
  } catch (e) {
    endTask(run.ctx, planner, 'ERROR', `its generated tasks could not join the run: ${(e as Error).message}`, { recordError: true });
    return;
  }
  const added = specs.map((spec) => run.runtimeOf(spec));
  for (const t of added) {
    run.tasks.push(t);
    run.state.tasks.push(t.state);
    run.byKey.set(t.spec.key, t);
    run.frozenKeys.add(t.spec.key);
    run.opts.control?.bind(t.spec.key, () => t.abort.abort());
  }
  planner.state.generated = added.map((t) => t.spec.key);
  run.emit({ type: 'task-note', key: planner.spec.key, note: `${added.length} generated task(s) joined the run: ${added.map((t) => t.spec.key).join(', ')}` });
  void run.stateFile.save();
  for (const t of added) if (!statusInfo(t.state.status).final) graph.enqueue(t);
}
