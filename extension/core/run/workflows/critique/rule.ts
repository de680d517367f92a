/**
 * critique (error): a critique loop (`critique`, docs/workflows.md "Critique loop") must be one the runner can carry
 * out: not on a best-of-N, validated or council task (`repeat`/`candidates`, `validate`, `council`: they compile into
 * several tasks; revise the outcome in a task `after` it instead) nor on a planner (`generate`: its deliverable is a plan, whose tasks
 * have checks of their own). Pure, on the parsed data: the loader reports these as problems of code `critique` (so it
 * refuses the manifest) and the linter shows them under rule `critique`, at the `critique` value. Critic engines are
 * checked as readers (index.ts: the loader refuses unknown ones and the script engine, which cannot read a prompt as
 * text).
 */

/** One problem: the JSON path of the offending value and what is wrong. */
export interface CritiqueProblem {
  path: (string | number)[];
  message: string;
}

/** The problems of every task with `critique`; values of the wrong type are skipped (the schema reports them). */
export function critiqueProblems(tasks: readonly unknown[]): CritiqueProblem[] {
  const out: CritiqueProblem[] = [];
  tasks.forEach((t, i) => {
    if (!isObject(t) || !isObject(t.critique)) return;
    if (t.repeat !== undefined || t.candidates !== undefined) {
      out.push({
        path: ['tasks', i, 'critique'],
        message:
          'a best-of-N task ("repeat"/"candidates") cannot also have a critique loop: its candidates are judged once and the group picks one; put the critique on a task that comes "after" it',
      });
    }
    for (const workflow of ['validate', 'council', 'phases'] as const) {
      if (t[workflow] !== undefined)
        out.push({
          path: ['tasks', i, 'critique'],
          message: `a "${workflow}" task cannot also have a critique loop: it compiles into several tasks of its own; put the critique on a task that comes "after" it`,
        });
    }
    if (t.generate !== undefined) {
      out.push({
        path: ['tasks', i, 'critique'],
        message:
          'a planner ("generate") cannot have a critique loop: its deliverable is a plan whose tasks have checks of their own; put "critique" on the generated tasks instead',
      });
    }
  });
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
