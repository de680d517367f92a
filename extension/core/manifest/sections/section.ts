/**
 * The contract of a workflow's section of a manifest task (docs/workflows.md "Where workflows live"): what the loader
 * (manifest/load.ts parseManifest) checks of it — its problems and the engines it names — and how it compiles into
 * ordinary tasks. A section is the file section.ts of its workflow's folder run/workflows/<name>/, held by that
 * workflow's plugin (run/workflows/workflow.ts Workflow.section); the loader and lint are handed every section by
 * their caller (ParseOptions.sections, LintOptions.sections: run/workflows/index.ts WORKFLOW_SECTIONS) and reach a
 * workflow only through that list. The contract lives here, below the run (docs/architecture.md "Layers and import
 * rules"), because the loader calls it.
 */
import type { Rule } from '../rules/document';
import type { ProblemCode, TaskSpec } from '../types';
import type { EngineRef } from './engine-ref';

export type { EngineLint, EngineRef } from './engine-ref';

/** One problem a section finds: the JSON path of the offending value and what is wrong. */
export interface WorkflowProblem {
  path: (string | number)[];
  message: string;
}

/** What a section's checks are told besides the tasks. */
export interface SectionContext {
  /** Keys of tasks outside this text that its tasks join (a generated file's: the run's compiled keys); may be empty. */
  existingKeys: ReadonlySet<string>;
  /** The engine of a task without `engine`. */
  defaultEngine: string;
}

/** One workflow's section of a task; every hook optional, each called for every task (or the whole list). */
export interface WorkflowSection {
  /** The workflow's name as docs/workflows.md spells it. */
  name: string;
  /** The code of the problems `problems` finds: the loader refuses the manifest on them, lint shows them under it. */
  code: ProblemCode;
  /**
   * What is wrong with this workflow's sections in `tasks` (the manifest's `tasks` as written, before the schema's
   * verdict: values of the wrong type are skipped, the schema reports them). Pure.
   */
  problems?(tasks: readonly unknown[], ctx: SectionContext): WorkflowProblem[];
  /** The engines this workflow names in task `task` (as written), for the loader to check; [] when it has no section there. */
  engines?(task: Record<string, unknown>): EngineRef[];
  /**
   * The ordinary tasks task `spec` compiles into when it has this workflow's section (`raw`: the task as written;
   * `opts.worktrees`: the run's mode), else null. Called only on a manifest without errors. Pure.
   */
  compile?(spec: TaskSpec, raw: Record<string, unknown>, opts: { worktrees: boolean }): TaskSpec[] | null;
  /**
   * How many tasks that run an engine task `raw` (as written, not yet checked by the schema: best effort) compiles
   * into, and what they are in words ("candidates"), when it has this section; else null. A planner's `max_tasks`
   * counts these for each task of its generated file (generate/file.ts).
   */
  count?(raw: Record<string, unknown>): { tasks: number; what: string } | null;
  /**
   * Lint rules of this workflow alone (manifest/lint.ts runs them with its own, on every manifest; each finds what it
   * warns of in a task with this section); absent: none.
   */
  lintRules?: readonly Rule[];
}
