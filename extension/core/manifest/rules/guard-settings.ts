import { allowedPathMatcher } from '../allow-paths';
import { normalizeRelative } from './task-paths';
import { taskAnchor, type Rule, type RuleFinding } from './document';

/**
 * allow-paths (error): an expected file outside the task's `allow_paths` (the task's, else the run's). The worker
 * may not write it, so the task could never pass; widen allow_paths or fix the path. The range is the entry.
 */
export const allowPathsRule: Rule = (doc) => {
  const out: RuleFinding[] = [];
  const runPaths = stringList(doc.raw.allow_paths);
  for (const task of doc.tasks) {
    const paths = stringList(task.raw.allow_paths) ?? runPaths;
    if (!paths?.length || !task.expectFiles) continue;
    const allowed = allowedPathMatcher(paths);
    for (const f of task.expectFiles) {
      if (allowed(normalizeRelative(f.value))) continue;
      out.push({
        rule: 'allow-paths',
        severity: 'error',
        message: `The expected file ${f.value} is outside allow_paths (${paths.join(', ')}): the worker may not write it, so the task cannot pass. Add its folder to allow_paths or fix the path.`,
        range: f.range,
        taskKey: task.key,
      });
    }
  }
  return out;
};

/** Words in a spec that ask the worker to add a dependency. */
const ADDS_DEPENDENCY =
  /\b(?:npm (?:i|install|add)|yarn add|pnpm add|pip install|poetry add|uv add|cargo add|go get)\s+[@\w]|\badd (?:a |the )?(?:new )?(?:dependency|dependencies|package|library)\b/i;

/**
 * deps-not-allowed (warning): a spec that asks for a new dependency (`npm install zod`, "add the dependency …") while
 * the task's `deps` guard is on and `allow_deps` allows nothing: every attempt that does what the spec says FAILs.
 * The range is the task's key.
 */
export const depsNotAllowed: Rule = (doc) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    if (!task.spec || !ADDS_DEPENDENCY.test(task.spec.value)) continue;
    const allow = task.raw.allow_deps !== undefined ? task.raw.allow_deps : doc.raw.allow_deps;
    if (allow === true || (Array.isArray(allow) && allow.length)) continue;
    if (!guardOn(doc.raw.guard, task.raw.guard, 'deps')) continue;
    out.push({
      rule: 'deps-not-allowed',
      severity: 'warning',
      message:
        'The spec asks for a new dependency, but the `deps` guard refuses any dependency not in `allow_deps`, so the work would FAIL. Name the packages in "allow_deps" (or set it to true).',
      range: taskAnchor(doc, task),
      taskKey: task.key,
    });
  }
  return out;
};

/** Whether guard `name` is on, given the run's and the task's `guard` (as the loader reads them). */
function guardOn(run: unknown, task: unknown, name: string): boolean {
  let on = true;
  for (const v of [run, task]) {
    if (typeof v === 'boolean') on = v;
    else if (v && typeof v === 'object' && typeof (v as Record<string, unknown>)[name] === 'boolean') on = (v as Record<string, boolean>)[name] as boolean;
  }
  return on;
}

function stringList(v: unknown): string[] | null {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : null;
}
