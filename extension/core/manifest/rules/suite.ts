/**
 * suite (error): a `suite` (docs/workflows.md "The full suite") must be able to judge the task it is on. A task's own
 * `suite` on a council task or a planner (`generate`) is refused: their work is a document or a plan, which a
 * repository's test suite does not judge (the run's `suite` is never given to them). A `suite_timeout_s` that limits
 * no suite (neither the task's nor the run's) is refused too: the author believes a suite runs. Empty commands and
 * out-of-range limits are the schema's. Pure, on the parsed data: the loader reports these as problems of code
 * `suite`, lint under rule `suite`.
 */
import { isObject } from '../sections/shared';
import type { WorkflowProblem } from '../sections/section';

/** The problems of `suite` and `suite_timeout_s` in a manifest's data (`tasks` as written, `run` the manifest's top level). */
export function suiteProblems(tasks: readonly unknown[], run: Record<string, unknown>): WorkflowProblem[] {
  const out: WorkflowProblem[] = [];
  const runSuite = typeof run.suite === 'string';
  if (run.suite_timeout_s !== undefined && !runSuite && !tasks.some((t) => isObject(t) && typeof t.suite === 'string')) {
    out.push({
      path: ['suite_timeout_s'],
      message: 'suite_timeout_s limits the suite, but neither the run nor any task has a "suite": add one (e.g. "suite": "npm test") or remove the limit',
    });
  }
  tasks.forEach((t, i) => {
    if (!isObject(t)) return;
    const kind = isObject(t.council) ? 'council' : isObject(t.generate) ? 'generate' : null;
    if (typeof t.suite === 'string' && kind) {
      out.push({
        path: ['tasks', i, 'suite'],
        message: `a ${kind === 'council' ? 'council task (its answers, reviews and synthesis are documents)' : 'planner ("generate": its work is a plan of tasks)'} has nothing a test suite judges; remove "suite" here (the tasks it leads to get the run's "suite" or their own)`,
      });
    }
    const gets = typeof t.suite === 'string' || (runSuite && !kind);
    if (t.suite_timeout_s !== undefined && !gets) {
      out.push({
        path: ['tasks', i, 'suite_timeout_s'],
        message: kind
          ? `a ${kind === 'council' ? 'council task' : 'planner ("generate")'} runs no suite, so suite_timeout_s limits nothing; remove it`
          : 'suite_timeout_s limits the suite, but this task has none and the run has no "suite": add one or remove the limit',
      });
    }
  });
  return out;
}
