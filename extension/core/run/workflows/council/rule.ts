/**
 * council (error): a council task (`council`, docs/workflows.md "Council") must compile into ordinary tasks
 * (compile.ts): not best-of-N, a planner or validated as well, its files inside their task dirs, every member
 * with at least one answer by another model to review (no model reviews its own answer: a member whose every peer is
 * its own engine and model would review nothing), and no compiled key (`<key>--a<N>`, `<key>--r<N>`) taken by another
 * task. Pure, on the parsed data: the loader reports these as problems of code `council`, lint under rule `council`.
 */
import { answerKey, councilMembers, reviewKey, sameModelAs } from './compile';
import { isObject, keyIndex, takenKeys, unsafeRelativePath } from '../../../manifest/sections/shared';
import type { WorkflowProblem } from '../../../manifest/sections/section';

/** The problems of every council task; values of the wrong type are skipped (the schema reports them). */
export function councilProblems(tasks: readonly unknown[], external: ReadonlySet<string> = new Set()): WorkflowProblem[] {
  const out: WorkflowProblem[] = [];
  const keys = keyIndex(tasks);
  tasks.forEach((t, i) => {
    if (!isObject(t) || !isObject(t.council)) return;
    const c = t.council;
    const other = ['repeat', 'candidates', 'generate', 'validate'].filter((f) => t[f] !== undefined);
    if (other.length)
      out.push({
        path: ['tasks', i, 'council'],
        message: `a council task cannot also have ${other.map((f) => `"${f}"`).join(', ')}: each workflow compiles the task into its own tasks; split it into two tasks joined by "after"`,
      });
    const files: [(string | number)[], unknown][] = [
      [['answer'], c.answer],
      [['review', 'file'], isObject(c.review) ? c.review.file : undefined],
      [['chair', 'file'], isObject(c.chair) ? c.chair.file : undefined],
    ];
    for (const [at, file] of files) {
      if (typeof file !== 'string') continue;
      const why = unsafeRelativePath(file);
      if (why) out.push({ path: ['tasks', i, 'council', ...at], message: `the file must be inside its task dir: ${why}` });
    }
    if (!Array.isArray(c.members) || c.members.some((m) => !isObject(m) || typeof m.engine !== 'string')) return;
    const members = councilMembers(c);
    members.forEach((m, j) => {
      if (sameModelAs(members, j + 1).length === members.length) {
        out.push({
          path: ['tasks', i, 'council', 'members', j],
          message: `member ${j + 1} (${m.engine}${m.model ? `/${m.model}` : ''}) would have no answer to review: every member is that engine and model, and no model reviews its own answer; add a member on another engine or model`,
        });
      }
    });
    if (typeof t.key === 'string') {
      const compiled = members.flatMap((_, j) => [answerKey(t.key as string, j + 1), reviewKey(t.key as string, j + 1)]);
      out.push(...takenKeys(t.key, compiled, ['tasks', i, 'council', 'members'], keys, external, 'council task'));
    }
  });
  // One finding per member is enough when all are one model.
  return out.filter(
    (p, k) =>
      !/would have no answer to review/.test(p.message) ||
      out.findIndex((q) => q.path.slice(0, 4).join() === p.path.slice(0, 4).join() && /would have no answer/.test(q.message)) === k,
  );
}
