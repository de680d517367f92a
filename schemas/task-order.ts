// The order every view lists a run's tasks in (the dashboard, the runs tree, the Test Explorer, the CLI's tables):
// the task graph's order (`after`), so a task shows after its prerequisites, ties in manifest order, and a best-of-N
// task's candidates under it (groupedOrder) with the winner, scores and select decision labelled. Pure; no Node, no
// DOM, no vscode, so the Svelte app and the extension share it. Validated, council and phases workflows' members are
// listed under their lead (validator, chair, test phase) the same way, with their role, number and anonymous letter.

import { statusInfo } from './status';

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
  workflow?: { lead: string; role: string; member?: number };
}

/** A candidate as its task's row lists it. `score`: its aggregate score on a ranked task, else null. */
export interface CandidateRow<T> {
  task: T;
  number: number;
  winner: boolean;
  score: number | null;
}

/**
 * A member of a validated, council or phases workflow as its lead's row lists it: its role (`worker`, `answer`,
 * `review`, `implement`) and number; `letter`: the anonymous name the validator or the council's readers see it under
 * (state.json `inputNames`; a review bears its author's answer's letter), null when none was drawn or the inputs are
 * not anonymous; `blocking`: its lead ended BLOCKED and this member ended other than PASS.
 */
export interface MemberRow<T> {
  task: T;
  role: string;
  number: number;
  letter: string | null;
  blocking: boolean;
}

/**
 * A row of a run's task list: a task and, for a best-of-N task's entry, its candidates by number; for a workflow's
 * lead (validator, chair, test phase: `role`), its members (answers before reviews, each by number) and those that
 * blocked it (`blockedBy`, in its `after` order). Empty lists and a null role for any other task.
 */
export interface TaskRow<T> {
  task: T;
  candidates: CandidateRow<T>[];
  role: string | null;
  members: MemberRow<T>[];
  blockedBy: MemberRow<T>[];
}

/** Anonymous input names as state.json holds them (RunState `inputNames`): scope → member key → letter. */
export type InputNames = Readonly<Record<string, Readonly<Record<string, string>>>>;

/** Each lead role and the member roles it takes, in the order its members are listed. */
const LEAD_ROLES: Readonly<Record<string, readonly string[]>> = { validator: ['worker'], chair: ['answer', 'review'], test: ['implement'] };

/** A prerequisite that blocks its dependents: final and not PASS (as run/decide.ts graphGate decides). */
const blocks = (status: string | undefined): boolean => status !== undefined && status !== 'PASS' && statusInfo(status).final;

/**
 * `tasks` in graph order (graphOrder) with each best-of-N group's candidates nested under the group's entry (the task
 * whose `group` is its own key), by candidate number, and each validated, council or phases workflow's members under
 * its lead (the task whose `workflow` names itself as lead with a lead role). Membership is read only from the
 * `workflow` and `group`/`candidate` fields the compiler set (state.json), never from the shape of a key: a member must
 * name an existing lead whose role takes its own and be among that lead's `after`. The entry or lead takes the place
 * of the first of its members in graph order, so a task after the group still comes after it. A task that claims a
 * group or lead that does not take it stays a row of its own: nothing in the list is dropped. `inputNames` (state.json
 * `inputNames`) gives the members' letters. The one grouping every view uses (the runs tree, the dashboard, the CLI).
 * Returns new arrays; `tasks` is not changed.
 */
export function groupedOrder<T extends GroupedTask>(tasks: readonly T[], inputNames?: InputNames): TaskRow<T>[] {
  const entries = new Map(tasks.filter((t) => t.group === t.key && t.candidate === undefined).map((t) => [t.key, t]));
  const isCandidate = (t: T) => t.candidate !== undefined && t.group !== undefined && t.group !== t.key && entries.has(t.group);
  const leads = new Map(
    tasks
      .filter((t) => !isCandidate(t) && t.workflow?.lead === t.key && t.workflow.member === undefined && Object.hasOwn(LEAD_ROLES, t.workflow.role))
      .map((t) => [t.key, t]),
  );
  const leadOf = (t: T): T | undefined => {
    const w = t.workflow;
    if (isCandidate(t) || !w || w.lead === t.key || !Number.isInteger(w.member) || (w.member as number) < 1) return undefined;
    const lead = leads.get(w.lead);
    return lead && LEAD_ROLES[lead.workflow?.role as string]?.includes(w.role) && (lead.after ?? []).includes(t.key) ? lead : undefined;
  };
  const members = new Map<string, T[]>();
  for (const t of tasks) {
    const owner = isCandidate(t) ? (t.group as string) : leadOf(t)?.key;
    if (owner !== undefined) members.set(owner, [...(members.get(owner) ?? []), t]);
  }
  const rows: TaskRow<T>[] = [];
  const placed = new Set<string>();
  for (const t of graphOrder(tasks)) {
    const entry = isCandidate(t) ? (entries.get(t.group as string) as T) : (leadOf(t) ?? t);
    if (placed.has(entry.key)) continue;
    placed.add(entry.key);
    const mine = members.get(entry.key) ?? [];
    const candidates = mine.filter(isCandidate).sort((a, b) => (a.candidate as number) - (b.candidate as number));
    const role = leads.has(entry.key) ? (entry.workflow?.role as string) : null;
    rows.push({
      task: entry,
      candidates: candidates.map((c) => ({
        task: c,
        number: c.candidate as number,
        winner: entry.winner === c.key,
        score: typeof entry.scores?.[c.key] === 'number' ? (entry.scores[c.key] as number) : null,
      })),
      role,
      ...memberRows(
        entry,
        role,
        mine.filter((m) => !isCandidate(m)),
        inputNames,
      ),
    });
  }
  return rows;
}

/** A lead's members in their order (by role as LEAD_ROLES lists them, then number), with letters and who blocked it. */
function memberRows<T extends GroupedTask>(
  lead: T,
  role: string | null,
  mine: readonly T[],
  inputNames?: InputNames,
): Pick<TaskRow<T>, 'members' | 'blockedBy'> {
  if (role === null) return { members: [], blockedBy: [] };
  const roles = LEAD_ROLES[role] ?? [];
  const sorted = [...mine].sort(
    (a, b) =>
      roles.indexOf(a.workflow?.role as string) - roles.indexOf(b.workflow?.role as string) || (a.workflow?.member as number) - (b.workflow?.member as number),
  );
  const names = inputNames?.[lead.key];
  const letterOf = (key: string) => (names && Object.hasOwn(names, key) && typeof names[key] === 'string' ? (names[key] as string) : null);
  // A review is named after its author: the letter of the same member's answer.
  const answerLetter = (n: number) => {
    const answer = sorted.find((m) => m.workflow?.role === 'answer' && m.workflow.member === n);
    return answer ? letterOf(answer.key) : null;
  };
  const blocked = lead.status === 'BLOCKED';
  const members = sorted.map((m): MemberRow<T> => {
    const w = m.workflow as { role: string; member: number };
    return {
      task: m,
      role: w.role,
      number: w.member,
      letter: w.role === 'review' ? answerLetter(w.member) : letterOf(m.key),
      blocking: blocked && blocks(m.status),
    };
  });
  const after = lead.after ?? [];
  const blockedBy = members.filter((m) => m.blocking).sort((a, b) => after.indexOf(a.task.key) - after.indexOf(b.task.key));
  return { members, blockedBy };
}

/**
 * What a row waits for, as `afterLabel` shows it: a best-of-N entry's own `after` lists only its candidates, and a
 * lead's its members, so such a row shows what its first candidate or member waits for (the task's `after` as
 * written: every candidate, worker, answer and implement task is a copy of the task); any other row its own.
 */
export function rowAfter<T extends GroupedTask>(row: TaskRow<T>): OrderedTask {
  const first = row.candidates[0]?.task ?? row.members[0]?.task;
  return first ? { key: row.task.key, after: first.after } : row.task;
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

/**
 * A member's short label: `worker 2 · B`, `answer 1 · A`, `implement 3`, and a review with its author's letter,
 * `review 1 · by A` (the letter when one was drawn).
 */
export function memberLabel(m: MemberRow<GroupedTask>): string {
  return [`${m.role} ${m.number}`, m.letter === null ? '' : m.role === 'review' ? `by ${m.letter}` : m.letter].filter(Boolean).join(' · ');
}

const MEMBER_NOUN: Readonly<Record<string, string>> = { worker: 'workers', answer: 'answers', review: 'reviews', implement: 'implement tasks' };
const LEAD_NOUN: Readonly<Record<string, string>> = { validator: 'validator', chair: 'chair', test: 'test phase' };

/**
 * A workflow lead's lines: what it is over its members (`validator of 2 workers`, `chair of 3 answers, 3 reviews`,
 * `test phase of 2 implement tasks`), then, when it ended BLOCKED, which members blocked it (`blocked by worker 2
 * (sort--w2 FAIL)`). Empty for a row that is not a lead. Each line is oneLine'd.
 */
export function leadLines(row: TaskRow<GroupedTask>): string[] {
  if (row.role === null) return [];
  const counts = (LEAD_ROLES[row.role] ?? []).map((r) => [r, row.members.filter((m) => m.role === r).length] as const).filter(([, n]) => n > 0);
  const of = counts.map(([r, n]) => `${n} ${n === 1 ? r : (MEMBER_NOUN[r] ?? r)}`).join(', ');
  const blocked = row.blockedBy.map((m) => `${memberLabel(m)} (${m.task.key} ${m.task.status ?? ''})`.replace(' )', ')'));
  return [`${LEAD_NOUN[row.role] ?? row.role}${of ? ` of ${of}` : ''}`, blocked.length ? `blocked by ${blocked.join(', ')}` : ''].filter(Boolean).map(oneLine);
}
