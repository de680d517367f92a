/**
 * validate (error): a validated task (`validate`, docs/workflows.md "Validated") must compile into ordinary tasks
 * (compile.ts): not best-of-N, a planner or a council as well, `workers` and `engines` agreeing, a report
 * inside the validator's task dir, and no worker key (`<key>--w<N>`) taken by another task. Pure, on the parsed data:
 * the loader reports these as problems of code `validate` and lint shows them under rule `validate`, at the value.
 */
import { isObject, keyIndex, takenKeys, unsafeRelativePath } from '../../../manifest/sections/shared';
import type { WorkflowProblem } from '../../../manifest/sections/section';
import { workerKey } from './compile';

/** The problems of every validated task; values of the wrong type are skipped (the schema reports them). */
export function validateProblems(tasks: readonly unknown[], external: ReadonlySet<string> = new Set()): WorkflowProblem[] {
  const out: WorkflowProblem[] = [];
  const keys = keyIndex(tasks);
  tasks.forEach((t, i) => {
    if (!isObject(t) || !isObject(t.validate)) return;
    const v = t.validate;
    const other = ['repeat', 'candidates', 'generate', 'council'].filter((f) => t[f] !== undefined);
    if (other.length)
      out.push({
        path: ['tasks', i, 'validate'],
        message: `a validated task cannot also have ${other.map((f) => `"${f}"`).join(', ')}: each workflow compiles the task into its own tasks; split it into two tasks joined by "after"`,
      });
    const engines = Array.isArray(v.engines) ? v.engines.length : null;
    if (typeof v.workers === 'number' && engines !== null && v.workers !== engines)
      out.push({
        path: ['tasks', i, 'validate', 'workers'],
        message: `"workers" is ${v.workers} but "engines" lists ${engines}: worker N runs on entry N, so the two must agree (or drop "workers")`,
      });
    if (typeof v.report === 'string') {
      const why = unsafeRelativePath(v.report);
      if (why) out.push({ path: ['tasks', i, 'validate', 'report'], message: `the report must be inside the validator's task dir: ${why}` });
    }
    const n = engines ?? (typeof v.workers === 'number' ? v.workers : 2);
    if (typeof t.key === 'string')
      out.push(
        ...takenKeys(
          t.key,
          Array.from({ length: n }, (_, j) => workerKey(t.key as string, j + 1)),
          ['tasks', i, 'validate'],
          keys,
          external,
          'worker',
        ),
      );
  });
  return out;
}
