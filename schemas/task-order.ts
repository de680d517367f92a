// The order every view lists a run's tasks in (the dashboard, the runs tree, the Test Explorer, the CLI's tables):
// the task graph's order (`after`), so a task shows after its prerequisites, ties in manifest order, and a best-of-N
// task's candidates under it (groupedOrder) with the winner, scores and select decision labelled. Pure; no Node, no
// DOM, no vscode, so the Svelte app and the extension share it.

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

/** What grouping needs of a task: its order fields and its workflow fields (schemas/run-state.ts TaskState's). */
export interface GroupedTask extends OrderedTask {
  status?: string;
  reason?: string;
  group?: string;
  candidate?: number;
  select?: string;
  winner?: string;
  scores?: Record<string, number>;
  tie?: string | null;
  disagreement?: string | null;
}

/** A candidate as its task's row lists it. `score`: its aggregate score on a ranked task, else null. */
export interface CandidateRow<T> {
  task: T;
  number: number;
  winner: boolean;
  score: number | null;
}

/** A row of a run's task list: a task and, for a best-of-N task's entry, its candidates by number (else empty). */
export interface TaskRow<T> {
  task: T;
  candidates: CandidateRow<T>[];
}

/**
 * `tasks` in graph order (graphOrder) with each best-of-N group's candidates nested under the group's entry (the task
 * whose `group` is its own key), by candidate number; the entry takes the place of the first of its members in graph
 * order, so a task after the group still comes after it. A task that claims a group with no entry (or names itself)
 * stays a row of its own: nothing in the list is dropped. The one grouping every view uses (the runs tree, the
 * dashboard, the CLI). Returns new arrays; `tasks` is not changed.
 */
export function groupedOrder<T extends GroupedTask>(tasks: readonly T[]): TaskRow<T>[] {
  const entries = new Map(tasks.filter((t) => t.group === t.key && t.candidate === undefined).map((t) => [t.key, t]));
  const isMember = (t: T) => t.candidate !== undefined && t.group !== undefined && t.group !== t.key && entries.has(t.group);
  const members = new Map<string, T[]>();
  for (const t of tasks) if (isMember(t)) members.set(t.group as string, [...(members.get(t.group as string) ?? []), t]);
  const rows: TaskRow<T>[] = [];
  const placed = new Set<string>();
  for (const t of graphOrder(tasks)) {
    const entry = isMember(t) ? (entries.get(t.group as string) as T) : t;
    if (placed.has(entry.key)) continue;
    placed.add(entry.key);
    const list = [...(members.get(entry.key) ?? [])].sort((a, b) => (a.candidate as number) - (b.candidate as number));
    rows.push({ task: entry, candidates: list.map((c) => ({ task: c, number: c.candidate as number, winner: entry.winner === c.key, score: typeof entry.scores?.[c.key] === 'number' ? (entry.scores[c.key] as number) : null })) });
  }
  return rows;
}

/**
 * What a row waits for, as `afterLabel` shows it: a best-of-N entry's own `after` lists only its candidates, so its
 * row shows what its candidates wait for (the task's `after` as written); any other row its own.
 */
export function rowAfter<T extends GroupedTask>(row: TaskRow<T>): OrderedTask {
  return row.candidates.length ? { key: row.task.key, after: row.candidates[0]?.task.after } : row.task;
}

/**
 * `text` as one line of plain text: every control character (newlines, ESC, C1) shown as `?`. Keys and reasons come
 * from state files and worker output; an escape sequence or a line break must not rewrite a terminal or a tree row.
 */
export function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

/** A candidate's short label: `candidate 2 · winner · score 7.5` (the parts that apply). */
export function candidateLabel(c: CandidateRow<GroupedTask>): string {
  return [`candidate ${c.number}`, c.winner ? 'winner' : '', c.score === null ? '' : `score ${Math.round(c.score * 100) / 100}`].filter(Boolean).join(' · ');
}

/**
 * How a best-of-N task's entry was (or is to be) decided, one line per fact: `select ranked`, the decision as the
 * state says it (its reason: the winner, or why none passed), the tie and the reviewers' disagreement when there are
 * any. Empty for a task that is not a group's entry. Each line is oneLine'd.
 */
export function selectLines(t: GroupedTask): string[] {
  if (t.group !== t.key || t.candidate !== undefined) return [];
  const reason = t.reason ?? '';
  const tie = typeof t.tie === 'string' ? t.tie : (t.tie as unknown) === true ? 'tie' : '';
  // A ranked decision's reason already says its tie and disagreement; they are added only when it does not.
  const extra = [tie, t.disagreement ?? ''].filter((x) => x && !reason.includes(x));
  return [`select ${t.select ?? 'first-pass'}`, reason, ...extra].filter(Boolean).map(oneLine);
}
