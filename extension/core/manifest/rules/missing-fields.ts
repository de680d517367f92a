import { findNodeAtLocation } from 'jsonc-parser';
import { harnessOf, taskAnchor, type Rule, type RuleFinding } from './document';

/**
 * missing-verified (info): a task without `verified`, the one sentence shown beside its deliverable saying what
 * a passing check proves. The range is the task's key.
 */
export const missingVerified: Rule = (doc) =>
  doc.tasks
    .filter((t) => typeof t.raw.verified !== 'string')
    .map((task): RuleFinding => ({
      rule: 'missing-verified',
      severity: 'info',
      message: 'Add "verified": one sentence saying what a passing check proves, shown beside the deliverable so a reviewer knows what the PASS is worth.',
      range: taskAnchor(doc, task),
      taskKey: task.key,
    }));

/**
 * missing-task-type (info): a task without `task_type` (or with Ringer's empty one), so the scoreboard cannot say which model to trust with
 * this kind of work. Not for the `script` engine (no model to score). The range is the task's key.
 */
export const missingTaskType: Rule = (doc, ctx) =>
  doc.tasks
    .filter((t) => !(typeof t.raw.task_type === 'string' && t.raw.task_type.trim()) && harnessOf(t, ctx) !== 'script')
    .map((task): RuleFinding => ({
      rule: 'missing-task-type',
      severity: 'info',
      message:
        'Add "task_type" (e.g. "parser", "ui", "refactor"): the scoreboard ranks models per task type, and untyped attempts teach it nothing about this kind of work.',
      range: taskAnchor(doc, task),
      taskKey: task.key,
    }));

/**
 * missing-expect-files (info), plain mode only: a task without expect_files (or with an empty list). Then a
 * check that passes on an empty task dir is the only guard, and nothing names the deliverable. The range is the
 * empty list, or the task's key when the field is absent. (In worktree mode the branch is the deliverable.)
 */
export const missingExpectFiles: Rule = (doc) => {
  if (doc.worktrees) return [];
  return (
    doc.tasks
      // A planner's tasks file is always expected (`generate`: manifest/load.ts adds it).
      .filter((t) => (!Array.isArray(t.raw.expect_files) || t.raw.expect_files.length === 0) && t.raw.generate === undefined)
      .map((task): RuleFinding => {
        const empty = findNodeAtLocation(task.node, ['expect_files']);
        return {
          rule: 'missing-expect-files',
          severity: 'info',
          message:
            'List the files this task must produce in "expect_files": a PASS then also needs them to exist and be non-empty, and the dashboard shows them as the deliverable.',
          range: empty ? doc.index.range(empty.offset, empty.length) : taskAnchor(doc, task),
          taskKey: task.key,
        };
      })
  );
};
