/**
 * phases (error): a task with `phases` (docs/workflows.md "Phases") must compile into ordinary tasks
 * (compile.ts): its test phase written by another engine or model than the implementation (the point of the
 * workflow: the code and its tests do not share one writer's blind spots), files inside the task dir, no second
 * workflow on the task, and no implement key (`<key>--impl-<N>`) taken by another task. Pure, on the parsed data: the
 * loader reports these as problems of code `phases` and lint shows them under rule `phases`, at the offending value.
 */
import { isObject, keyIndex, takenKeys, unsafeRelativePath } from '../../../manifest/sections/shared';
import type { WorkflowProblem } from '../../../manifest/sections/section';
import { implementKey, implementerOf } from './compile';

/**
 * The problems of every task with `phases`; values of the wrong type are skipped (the schema reports them).
 * `defaultEngine`: the engine of a task without `engine`; `external`: keys of tasks outside `tasks` (the run's).
 */
export function phasesProblems(tasks: readonly unknown[], defaultEngine: string, external: ReadonlySet<string> = new Set()): WorkflowProblem[] {
  const out: WorkflowProblem[] = [];
  const keys = keyIndex(tasks);
  tasks.forEach((t, i) => {
    if (!isObject(t) || !isObject(t.phases)) return;
    const p = t.phases;
    const other = ['repeat', 'candidates', 'generate', 'validate', 'council'].filter((f) => t[f] !== undefined);
    if (other.length)
      out.push({
        path: ['tasks', i, 'phases'],
        message: `a task with phases cannot also have ${other.map((f) => `"${f}"`).join(', ')}: each workflow compiles the task into its own tasks; split it into two tasks joined by "after"`,
      });
    const files = Array.isArray(p.files) ? p.files : [];
    files.forEach((f, j) => {
      const why = typeof f === 'string' ? unsafeRelativePath(f) : null;
      if (why) out.push({ path: ['tasks', i, 'phases', 'files', j], message: `a file of the phases must be inside the task dir: ${why}` });
    });
    const test = isObject(p.test) ? p.test : null;
    if (test && typeof test.engine === 'string') {
      const engine = typeof t.engine === 'string' ? t.engine : defaultEngine;
      const implementer = implementerOf({ engine, model: typeof t.model === 'string' && t.model.trim() ? t.model.trim() : null }, p);
      const testModel = typeof test.model === 'string' ? test.model : null;
      if (test.engine === implementer.engine && testModel === implementer.model) {
        out.push({
          path: ['tasks', i, 'phases', 'test', 'engine'],
          message: `the test phase runs on the implementer's own engine and model (${implementer.engine}${implementer.model ? `/${implementer.model}` : ''}): the tests must be written by another engine or model than the code, or they share its blind spots; name another in "phases.test"`,
        });
      }
    }
    if (typeof t.key === 'string')
      out.push(
        ...takenKeys(
          t.key,
          files.map((_, j) => implementKey(t.key as string, j + 1)),
          ['tasks', i, 'phases', 'files'],
          keys,
          external,
          'implement task',
        ),
      );
  });
  return out;
}
