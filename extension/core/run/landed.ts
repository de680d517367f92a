/**
 * What was done with a task's work after its verdict, as every view reads it from its state (state.json `merged` /
 * `discarded`, schemas/run-state.ts). Pure; recording it is task-landing.ts.
 */
import type { TaskState } from '../live/state';

/**
 * Why the merge queue must leave `t` alone because of what was already done with it, as one line, or null:
 * "already merged into <branch> at <commit>", or discarded with the command that recovers its branch.
 */
export function landedReason(t: TaskState): string | null {
  if (t.merged) return `already merged into ${t.merged.into} at ${t.merged.commit.slice(0, 10)}; nothing was changed`;
  if (t.discarded)
    return `discarded${t.discarded.commit ? ` (recover it with: git branch ${t.branch ?? `verdict/<run>/${t.key}`} ${t.discarded.commit})` : ''}; nothing was changed`;
  return null;
}

/**
 * Whether `t` is waiting to be merged: it passed, its branch holds the work, nothing was done with it yet (neither
 * merged nor discarded), and it is no best-of-N candidate (the group's own task merges the winner). What Merge All
 * takes (run/merge-plan.ts) and the runs view's "Ready to merge" lists.
 */
export function readyToMerge(t: TaskState): boolean {
  return t.status === 'PASS' && !!t.branch && !t.merged && !t.discarded && t.candidate === undefined;
}

/** The state a task shows for what was done with its work: `MERGED <commit>` or `DISCARDED <commit>`, or null. */
export function landedLabel(t: TaskState): string | null {
  if (t.merged) return `MERGED ${t.merged.commit.slice(0, 10)}`;
  if (t.discarded) return `DISCARDED${t.discarded.commit ? ` ${t.discarded.commit.slice(0, 10)}` : ''}`;
  return null;
}
