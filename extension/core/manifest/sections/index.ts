/**
 * The loader's functions over a list of workflow sections (docs/workflows.md "Where workflows live"): every workflow's
 * section of a manifest task — its problems, the engines it names — and its compile into ordinary tasks, task by task,
 * order kept. The sections themselves live with their workflows, each in run/workflows/<name>/section.ts, registered
 * by the workflow table (run/workflows/index.ts WORKFLOW_SECTIONS); the manifest is read below the run
 * (docs/architecture.md "Layers and import rules"), so the loader and lint are handed that list (ParseOptions.sections,
 * LintContext.sections) by their caller, never import it. Lint refuses a task with two sections that compile (each
 * workflow's rule), so at most one `compile` answers for a task; a task none compiles comes back as it is. Pure.
 */
import type { ProblemCode, TaskSpec } from '../types';
import type { EngineRef, SectionContext, WorkflowProblem, WorkflowSection } from './section';

export type { EngineLint, EngineRef, SectionContext, WorkflowProblem, WorkflowSection } from './section';

/**
 * Every workflow section of a manifest's tasks compiled into ordinary tasks, task by task, order kept.
 * @param raw the manifest's `tasks` array as written, index for index with `tasks`
 * @param opts.worktrees the run's mode
 */
export function compileWorkflows(
  tasks: readonly TaskSpec[],
  raw: readonly Record<string, unknown>[],
  opts: { worktrees: boolean },
  sections: readonly WorkflowSection[],
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
  sections: readonly WorkflowSection[],
): { code: ProblemCode; problem: WorkflowProblem }[] {
  return sections.flatMap((s) => (s.problems?.(tasks, ctx) ?? []).map((problem) => ({ code: s.code, problem })));
}

/**
 * How many tasks that run an engine one task as written compiles into, and what they are, from the first section
 * that counts it (Workflow.count); a task no section counts is one task.
 */
export function compiledCount(raw: Record<string, unknown>, sections: readonly WorkflowSection[]): { tasks: number; what: string } {
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
export function sectionEngines(task: Record<string, unknown>, sections: readonly WorkflowSection[]): EngineRef[] {
  return sections.flatMap((s) => s.engines?.(task) ?? []);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
