// The order every view lists a run's tasks in (the dashboard, the runs tree, the Test Explorer, the CLI's tables):
// the task graph's order (`after`), so a task shows after its prerequisites, ties in manifest order. Pure; no Node,
// no DOM, no vscode, so the Svelte app and the extension share it.

/** What ordering needs of a task: its key and the keys it comes `after` (absent: none). */
export interface OrderedTask {
  key: string;
  after?: readonly string[];
}

/**
 * `tasks` in graph order: a task comes after every prerequisite it names that is in the list, and otherwise keeps its
 * place (Kahn's algorithm, always taking the earliest task in manifest order that is ready). Unknown prerequisites are
 * ignored; tasks on a cycle (lint refuses those, so only a damaged state file has one) follow in manifest order.
 * Returns a new array; `tasks` is not changed.
 */
export function graphOrder<T extends OrderedTask>(tasks: readonly T[]): T[] {
  const keys = new Set(tasks.map((t) => t.key));
  const placed = new Set<string>();
  const out: T[] = [];
  const left = [...tasks];
  while (left.length) {
    const i = left.findIndex((t) => (t.after ?? []).every((k) => placed.has(k) || !keys.has(k)));
    const [next] = left.splice(i < 0 ? 0 : i, 1) as [T];
    placed.add(next.key);
    out.push(next);
  }
  return out;
}

/** "after a, b" for a task with prerequisites; '' without. */
export function afterLabel(task: OrderedTask): string {
  return task.after?.length ? `after ${task.after.join(', ')}` : '';
}
