/**
 * The contract of a workflow's section of a manifest task (docs/workflows.md "Where workflows live"): what the loader
 * (manifest/load.ts parseManifest) checks of it — its problems and the engines it names — and how it compiles into
 * ordinary tasks. A section is one folder manifest/workflows/<name>/ whose index.ts exports one `WorkflowSection`; the
 * table in manifest/workflows/index.ts registers it, and parseManifest reaches a workflow only through that table.
 * A workflow's run-time part (steps, hooks) is its plugin in run/workflows/<name>/: the manifest is read below the run
 * (docs/architecture.md "Layers and import rules"), so this half cannot live there.
 */
import type { Rule } from '../rules/document';
import type { ProblemCode, TaskSpec } from '../types';

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

/**
 * An engine a section names in one task, checked by the loader against the engines that exist. `at` is the JSON path
 * under the task (`tasks[i]`).
 * - `writer`: one engine a compiled task runs on (`name` as written; anything but a string is the schema's to report);
 *   an unknown one is an `unknown-engine` error saying `who` would run on it ("the validator", "candidate 2").
 * - `readers`: a list of read-only engines at `at` (`list` its field, default `engines`; each entry a name or
 *   `{engine}`) whose prompt holds another's work. Unknown ones are errors, and so is the script engine, which runs
 *   its prompt as a bash script (a line of the work it reads would run and could answer for it); `verb` words both.
 * - `reader`: one such engine written as `{engine, model}` at `at` (the object; `name` its `engine` as written), held
 *   to the same two rules (a consensus group's inputs engine: its prompt holds the passing candidates' work).
 */
export type EngineRef = (
  | { kind: 'writer'; at: (string | number)[]; name: unknown; who: string }
  | { kind: 'readers'; at: (string | number)[]; entries: unknown; verb: 'review' | 'rank' | 'criticise'; list?: string }
  | { kind: 'reader'; at: (string | number)[]; name: unknown; verb: 'write inputs' }
) & { lint?: EngineLint };

/**
 * How lint's engine-not-installed rule (manifest/rules/engine-installed.ts) says an EngineRef's engines; absent: `who`
 * as the ref says it ("a reader" for a list), order 100.
 */
export interface EngineLint {
  /** Who runs on the engine, in lower case: "a worker", "the validator" (the finding says "A worker runs on …"). */
  who: string;
  /**
   * Which use the rule reports when one task names an engine in several places: the lowest order (then the first
   * written). The task's own engine is 0, a fallback 1, its reviewers 3; a workflow's are 2 and 4 to 13.
   */
  order: number;
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
