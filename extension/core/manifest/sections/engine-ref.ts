/**
 * The engines a workflow's section names in a task (manifest/sections/section.ts WorkflowSection.engines), in a file
 * of their own so that lint's rule context (LintContext.sectionEngines, in the rules' document module) can name them without
 * importing the section contract, which names lint's rules.
 */

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
