import type { Rule, RuleFinding } from './document';
import type { JsonString } from './json-string';
import { normalizeRelative, placeOf } from './task-paths';
import { ignoredPaths } from './git-ignored';

/**
 * deliverable-lost (warning): an expected file that will not reach the deliverable. Expected files are judged
 * relative to the task dir, and in worktree mode the deliverable is the task branch the orchestrator commits
 * with `git add -A` (step `seal`: docs/attempt.md "The steps"). So: an absolute path, or one whose `..` leaves the task dir
 * (both modes); and in worktree mode a path the repository's .gitignore ignores (asked of `git check-ignore` in
 * the repository's top folder, which is where a worktree's paths start; skipped when `repo` is not a git
 * repository or `ctx.useGit` is false). The range is the expect_files entry.
 */
export const deliverableLost: Rule = async (doc, ctx) => {
  const out: RuleFinding[] = [];
  const inside: { key: string | null; file: JsonString; rel: string }[] = [];
  for (const task of doc.tasks) {
    for (const file of task.expectFiles ?? []) {
      const place = placeOf(file.value);
      if (place === 'inside') {
        inside.push({ key: task.key, file, rel: normalizeRelative(file.value) });
        continue;
      }
      out.push({
        rule: 'deliverable-lost',
        severity: 'warning',
        message:
          place === 'absolute'
            ? `Expected files are looked for relative to the task dir, so the absolute path ${file.value} is outside it${doc.worktrees ? ' and never reaches the task branch' : ''}. Use a path inside the task dir.`
            : `${file.value} leaves the task dir with "..", so it is shared by every task${doc.worktrees ? ' and never reaches the task branch' : ''}. Use a path inside the task dir.`,
        range: file.range,
        taskKey: task.key,
      });
    }
  }
  if (doc.worktrees && ctx.useGit !== false && inside.length) {
    const ignored = await ignoredPaths(doc.repo, [...new Set(inside.map((e) => e.rel))]);
    for (const entry of inside.filter((e) => ignored.has(e.rel))) {
      out.push({
        rule: 'deliverable-lost',
        severity: 'warning',
        message: `${entry.file.value} is ignored by the repository's .gitignore, so the orchestrator's commit leaves it out of the task branch and it is lost with the worktree. Expect a file git tracks, or un-ignore this one.`,
        range: entry.file.range,
        taskKey: entry.key,
      });
    }
  }
  return out;
};
