/**
 * The workflow sections table (docs/workflows.md "Where workflows live"): every workflow's section of a manifest task,
 * which the loader (manifest/load.ts parseManifest) checks — its problems, the engines it names — and compiles into
 * ordinary tasks, task by task, order kept. Adding a workflow's section is one folder manifest/workflows/<name>/
 * exporting a `WorkflowSection` (section.ts) and one entry here. Lint refuses a task with two sections that compile
 * (each workflow's rule), so at most one `compile` answers for a task; a task none compiles comes back as it is. Pure.
 * Every section has a folder of its own: best-of-n/, generate/, validate/, council/, phases/, critique/.
 */
import type { ProblemCode, TaskSpec } from '../types';
import { bestOfNSection } from './best-of-n';
import { councilSection } from './council';
import { critiqueSection } from './critique';
import { generateSection } from './generate';
import { phasesSection } from './phases';
import type { EngineRef, SectionContext, WorkflowProblem, WorkflowSection } from './section';
import { validateSection } from './validate';

export type { EngineLint, EngineRef, SectionContext, WorkflowProblem, WorkflowSection } from './section';

/** Every registered workflow section, in the order the loader reports and compiles them. */
export const WORKFLOW_SECTIONS: readonly WorkflowSection[] = [bestOfNSection, generateSection, validateSection, councilSection, phasesSection, critiqueSection];

/**
 * Every workflow section of a manifest's tasks compiled into ordinary tasks, task by task, order kept.
 * @param raw the manifest's `tasks` array as written, index for index with `tasks`
 * @param opts.worktrees the run's mode
 */
export function compileWorkflows(
  tasks: readonly TaskSpec[],
  raw: readonly Record<string, unknown>[],
  opts: { worktrees: boolean } = { worktrees: false },
  sections: readonly WorkflowSection[] = WORKFLOW_SECTIONS,
): TaskSpec[] {
  return tasks.flatMap((spec, i) => {
    const t = raw[i] ?? {};
    for (const s of sections) {
      const compiled = s.compile?.(spec, t, opts) ?? null;
      if (compiled) return compiled;
    }
    return [spec];
  });
}

/** Every section's problems in `tasks` (as written), each with the code it is reported under, in table order. */
export function sectionProblems(
  tasks: readonly unknown[],
  ctx: SectionContext,
  sections: readonly WorkflowSection[] = WORKFLOW_SECTIONS,
): { code: ProblemCode; problem: WorkflowProblem }[] {
  return sections.flatMap((s) => (s.problems?.(tasks, ctx) ?? []).map((problem) => ({ code: s.code, problem })));
}

/**
 * How many tasks that run an engine one task as written compiles into, and what they are, from the first section
 * that counts it (Workflow.count); a task no section counts is one task.
 */
export function compiledCount(raw: Record<string, unknown>, sections: readonly WorkflowSection[] = WORKFLOW_SECTIONS): { tasks: number; what: string } {
  for (const s of sections) {
    const n = s.count?.(raw) ?? null;
    if (n) return n;
  }
  return { tasks: 1, what: 'task' };
}

/**
 * Each engine name an EngineRef holds with its path under the task: a writer's or a single reader's one, or each entry
 * of a readers list (a name at `[...at, list, j]`, an `{engine}` entry at `[...at, list, j, 'engine']`); names not
 * strings included.
 */
export function namedEngines(ref: EngineRef): { at: (string | number)[]; name: unknown }[] {
  if (ref.kind === 'writer' || ref.kind === 'reader') return [{ at: ref.at, name: ref.name }];
  const list = ref.list ?? 'engines';
  if (!Array.isArray(ref.entries)) return [];
  return ref.entries.map((e, j) =>
    typeof e === 'string' ? { at: [...ref.at, list, j], name: e } : { at: [...ref.at, list, j, 'engine'], name: isObject(e) ? e.engine : undefined },
  );
}

/** Every engine the sections name in one task (as written), in table order. */
export function sectionEngines(task: Record<string, unknown>, sections: readonly WorkflowSection[] = WORKFLOW_SECTIONS): EngineRef[] {
  return sections.flatMap((s) => s.engines?.(task) ?? []);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
