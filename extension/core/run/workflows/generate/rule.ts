/**
 * generate (error): a planner task (`generate`) in a manifest must name a file inside its task dir and must not be
 * best-of-N as well. Pure, on the parsed data, like rules/task-graph.ts: the loader reports these as problems of code
 * `generate` and lint shows them under rule `generate`, at the offending value. What a generated file may not do
 * (generate again, exceed max_tasks, widen access) is checked on that file by file.ts.
 */
import { unsafeRelativePath } from '../../../manifest/sections/shared';

/** One problem: the JSON path of the offending value and what is wrong. */
export interface GenerateProblem {
  path: (string | number)[];
  message: string;
}

/** The problems of every planner task; values of the wrong type are skipped (the schema reports them). */
export function generateProblems(tasks: readonly unknown[]): GenerateProblem[] {
  const out: GenerateProblem[] = [];
  tasks.forEach((t, i) => {
    if (!isObject(t) || !isObject(t.generate)) return;
    if (t.repeat !== undefined || t.candidates !== undefined) {
      out.push({
        path: ['tasks', i, 'generate'],
        message: 'a planner cannot be best-of-N as well ("repeat"/"candidates"): which candidate\'s tasks would join the run? Drop one of the two',
      });
    }
    const file = t.generate.file;
    if (typeof file === 'string') {
      const why = unsafeRelativePath(file);
      if (why) out.push({ path: ['tasks', i, 'generate', 'file'], message: `the generated tasks file must be inside the task dir: ${why}` });
    }
  });
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
