// What the runs tree shows of one task row, as plain data (no vscode import, so a unit test reads it): the label,
// description, tooltip, context value and icon of a task, a best-of-N candidate or a workflow member. runs-tree.ts
// turns it into a TreeItem.
import type { TaskState } from '../core/live/state';
import { attemptLabel } from '../../schemas/attempt-label';
import { landedLabel } from '../core/run/landed';
import {
  afterLabel,
  candidateLabel,
  leadLines,
  memberLabel,
  oneLine,
  rowAfter,
  selectLines,
  type CandidateRow,
  type MemberRow,
  type TaskRow,
} from '../../schemas/task-order';

/** Where a task row sits: a row of the run (`row`), or under its task as a candidate or a workflow member. */
export interface TaskPlace {
  row?: TaskRow<TaskState>;
  candidate?: CandidateRow<TaskState>;
  member?: MemberRow<TaskState>;
}

/** A task row's text. `icon`: a codicon id and an optional theme colour id. */
export interface TaskRowText {
  label: string;
  description: string;
  tooltip: string;
  contextValue: string;
  icon: [string, string?];
}

const taskIcon: Record<string, [string, string?]> = {
  PASS: ['pass', 'testing.iconPassed'],
  FAIL: ['error', 'testing.iconFailed'],
  TIMEOUT: ['watch', 'testing.iconFailed'],
  ERROR: ['warning', 'problemsWarningIcon.foreground'],
  CANCELLED: ['circle-slash'],
  INTERRUPTED: ['debug-disconnect', 'testing.iconErrored'],
  RATE_LIMITED: ['clock'],
  SKIPPED: ['circle-large-outline'],
  BLOCKED: ['lock', 'disabledForeground'],
  queued: ['circle-outline'],
  retry_queued: ['history'],
};

/**
 * A task's row. A best-of-N task's entry (`row` with candidates) says how it was decided; a workflow's lead (`row` with
 * a role) what it is over and, when BLOCKED, which members blocked it; a candidate's row its number, `winner` and a
 * ranked task's score, and its engine; a member's row its role, number, letter and engine (and `blocked <lead>` when
 * it did). Labels are one line of plain text (state files and worker output can hold anything). `now`: epoch ms, for
 * an attempt still running.
 */
export function taskRowText(t: TaskState, place: TaskPlace = {}, now = Date.now()): TaskRowText {
  const { row, candidate, member } = place;
  const last = t.attempts[t.attempts.length - 1];
  const duration = t.attempts.reduce((ms, a) => ms + ((a.endedAt ?? now) - a.startedAt), 0);
  const tokens =
    t.attempts.every((a) => a.tokensIn !== null && a.tokensOut !== null) && t.attempts.length
      ? t.attempts.reduce((n, a) => n + (a.tokensIn ?? 0) + (a.tokensOut ?? 0), 0)
      : null;
  // The latest attempt's label while it runs or when it made the task's status (`running (check)`, `FAIL at check`).
  // What was done with the work after its verdict (MERGED <commit>, DISCARDED <commit>) comes first.
  const state = landedLabel(t) ?? (last && (last.verdict === null || last.verdict === t.status) ? attemptLabel(last) : t.status);
  const decision = row?.candidates.length ? selectLines(t) : [];
  const lead = row ? leadLines(row) : [];
  const engine = `${t.engine}${t.model ? `/${t.model}` : ''}`;
  const nested = candidate
    ? `${candidateLabel(candidate)} · ${engine}`
    : member
      ? `${memberLabel(member)} · ${engine}${member.blocking ? ' · blocked its lead' : ''}`
      : '';
  const work = decision.length
    ? [`${row?.candidates.length} candidates`, ...decision.slice(0, 2)]
    : [
        ...lead,
        nested,
        `${t.attempts.length} attempt${t.attempts.length === 1 ? '' : 's'}`,
        t.attempts.length ? `${(duration / 1000).toFixed(1)}s` : '',
        tokens === null ? '' : `${tokens} tokens`,
        t.status === 'BLOCKED' && !lead.length ? (t.reason ?? '') : '',
      ];
  const description = oneLine([state, candidate || member ? '' : afterLabel(row ? rowAfter(row) : t), ...work].filter(Boolean).join(' · '));
  const tooltip = [t.verified, ...(decision.length ? decision : [...lead, t.reason]), last?.notes, t.branch, t.dir].filter(Boolean).join('\n');
  // task.<passed|done|active>[.worktree][.compare]: `.compare` on a candidate with committed work that did not win a
  // task that has a winner (Compare with Winner).
  const compare = candidate && !candidate.winner && t.commit ? '.compare' : '';
  // A merged or discarded task is `done` (no Merge action); its worktree actions go with a discarded branch.
  const landed = t.merged ? 'merged' : t.discarded ? 'discarded' : null;
  const contextValue = `task.${landed ?? (t.status === 'PASS' ? 'passed' : /^[A-Z_]+$/.test(t.status) ? 'done' : 'active')}${t.branch && !t.discarded ? '.worktree' : ''}${compare}`;
  const icon: [string, string?] = candidate?.winner ? ['star-full', 'testing.iconPassed'] : (taskIcon[t.status] ?? ['loading~spin']);
  return { label: oneLine(t.key), description, tooltip, contextValue, icon };
}
