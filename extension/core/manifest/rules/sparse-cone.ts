import { parse as shellParse } from 'shell-quote';
import { sparseCone, visibleInCone, inCone } from '../../git/sparse-cone';
import { normalizeRelative } from './task-paths';
import { taskAnchor, type Rule, type RuleFinding } from './document';

/**
 * sparse-outside (warning), for `"tree": "sparse"`: a path the check names that a sparse checkout of the task's
 * `sparse` folders does not hold (git's cone mode: the folders, plus the files directly in the root and in their parent
 * folders), or an expected file outside those folders (the worker may not write there and the seal would not commit
 * it). A path the check names is a word of it, not an option or variable, with a `/` or a file extension. A task with
 * `"tree": "sparse"` but no `sparse` at all is told so at the key (the run then refuses to start).
 */
export const sparseOutside: Rule = (doc) => {
  if (doc.raw.tree !== 'sparse') return [];
  const out: RuleFinding[] = [];
  const runSparse = stringList(doc.raw.sparse);
  for (const task of doc.tasks) {
    const entries = stringList(task.raw.sparse) ?? runSparse;
    if (!entries?.length) {
      out.push({
        rule: 'sparse-outside',
        severity: 'warning',
        message: 'With "tree": "sparse" every task needs its folders: give it (or the run) "sparse": ["src/…/**"]; the run refuses to start without them.',
        range: taskAnchor(doc, task),
        taskKey: task.key,
      });
      continue;
    }
    let cone: string[];
    try {
      cone = sparseCone(entries);
    } catch {
      continue; // the run's preflight names the bad entry
    }
    const shown = cone.join(', ');
    if (task.check) {
      for (const p of checkPaths(task.check.value)) {
        if (visibleInCone(cone, p)) continue;
        out.push({
          rule: 'sparse-outside',
          severity: 'warning',
          message: `The check names ${p}, which the sparse tree of ${shown} does not hold, so the check may fail for want of it. Add its folder to "sparse".`,
          range: task.check.range,
          taskKey: task.key,
        });
      }
    }
    for (const f of task.expectFiles ?? []) {
      if (inCone(cone, normalizeRelative(f.value))) continue;
      out.push({
        rule: 'sparse-outside',
        severity: 'warning',
        message: `The expected file ${f.value} is outside the sparse folders (${shown}): the worker cannot write it there and the seal would not commit it. Add its folder to "sparse".`,
        range: f.range,
        taskKey: task.key,
      });
    }
  }
  return out;
};

/** Words of a check that look like relative paths: a `/` or a file extension, no option, variable, URL or glob. */
function checkPaths(check: string): string[] {
  let tokens: ReturnType<typeof shellParse>;
  try {
    tokens = shellParse(check, (name) => `$${name}`);
  } catch {
    return [];
  }
  const out = new Set<string>();
  for (const t of tokens) {
    if (typeof t !== 'string' || !t || t.startsWith('-') || t.startsWith('/') || /[$:*?[\]=~]/.test(t)) continue;
    if (!t.includes('/') && !/^[\w.-]+\.[A-Za-z0-9]{1,8}$/.test(t)) continue;
    const rel = normalizeRelative(t);
    if (rel === '.' || rel.startsWith('..')) continue;
    out.add(rel);
  }
  return [...out];
}

function stringList(v: unknown): string[] | null {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : null;
}
