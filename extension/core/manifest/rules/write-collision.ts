import path from 'node:path';
import type { Rule, RuleFinding, LintTask } from './document';
import type { SourceRange } from '../positions';
import { normalizeRelative, pathsInSpec, placeOf } from './task-paths';
import { ordered } from './task-graph';

/** Stands for the folder that holds the worktrees (under VERDICT_HOME, unknown to the linter): task dirs are its children. */
const WORKTREES_ROOT = path.resolve('/', '<verdict worktrees>');

/**
 * write-collision (warning): two tasks write one file. (1) Both modes: the same absolute expected file (an
 * absolute expect_files entry, or one whose `..` leaves the task dir: task dirs are siblings, under `workdir` in
 * plain mode and under one worktrees folder in worktree mode, so `../x` from two tasks is one file). Plain-mode
 * `<workdir>/<key>/<file>` paths cannot collide. (2) Worktree mode: the same repository file named by two tasks,
 * in their specs (path-like tokens with a file extension, see pathsInSpec) or expect_files: each task works on
 * its own branch, so both changing it is a merge conflict waiting to happen. Reported on the later task's
 * mention, naming the first task. Two tasks ordered by `after` (directly or not) are not reported in (2): the later
 * one's branch starts from the earlier one's.
 */
export const writeCollision: Rule = (doc) => {
  const out: RuleFinding[] = [];
  const report = (task: LintTask, first: LintTask, file: string, range: SourceRange, why: string) => {
    out.push({
      rule: 'write-collision',
      severity: 'warning',
      message: `Task ${label(first)} also names ${file}; ${why}`,
      range,
      taskKey: task.key,
    });
  };

  const owners = new Map<string, LintTask>();
  const taskRoot = doc.worktrees ? WORKTREES_ROOT : doc.workdir;
  for (const task of doc.tasks) {
    for (const file of task.expectFiles ?? []) {
      const place = placeOf(file.value);
      if (place === 'inside') continue;
      const target = place === 'absolute' ? path.resolve(file.value) : path.resolve(taskRoot, task.key ?? `#${task.index}`, file.value);
      const first = owners.get(target);
      if (!first) owners.set(target, task);
      else if (first !== task)
        report(
          task,
          first,
          file.value,
          file.range,
          "parallel workers overwrite each other's file and one task's check may pass on the other's work. Give each task its own path inside its task dir.",
        );
    }
  }

  if (!doc.worktrees) return out;
  const repoOwners = new Map<string, LintTask>();
  for (const task of doc.tasks) {
    const mentions = new Map<string, SourceRange>();
    for (const file of task.expectFiles ?? []) {
      const rel = normalizeRelative(file.value);
      if (placeOf(file.value) === 'inside' && !mentions.has(rel)) mentions.set(rel, file.range);
    }
    const spec = task.spec;
    for (const p of spec ? pathsInSpec(spec.value) : []) {
      if (!mentions.has(p.path)) mentions.set(p.path, (spec as NonNullable<typeof spec>).rangeOf(p.start, p.end));
    }
    for (const [rel, range] of mentions) {
      const first = repoOwners.get(rel);
      if (!first) repoOwners.set(rel, task);
      // A task that comes after the other (`after`) starts from its branch: both changing a file is no conflict.
      else if (!(
        first.key &&
        task.key &&
        ordered(
          doc.tasks.map((t) => t.raw),
          first.key,
          task.key,
        )
      ))
        report(
          task,
          first,
          rel,
          range,
          'each task works on its own branch, so if both change it their branches conflict at merge. Give the file to one task, merge the two tasks, or put one after the other (`after`).',
        );
    }
  }
  return out;
};

function label(task: LintTask): string {
  return task.key ? `"${task.key}"` : `tasks[${task.index}]`;
}
