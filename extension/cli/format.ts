import { formatUsd } from '../core/cost/pricing';
import type { RunEvent, RunSummary } from '../core/run/runner';
import { spendLine } from '../../schemas/spend';
import { candidateLabel, groupedOrder, leadLines, memberLabel, oneLine, rowAfter, selectLines } from '../../schemas/task-order';

/** Seconds with one decimal from ms: 1234 → "1.2s". */
export function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

const mark: Record<string, string> = {
  PASS: '✓',
  FAIL: '✗',
  TIMEOUT: '⏱',
  ERROR: '!',
  CANCELLED: '-',
  RATE_LIMITED: '~',
  INTERRUPTED: '?',
  BUDGET_EXCEEDED: '$',
  BLOCKED: '⊘',
};

/**
 * `text` without terminal control characters (C0 but tab, DEL, C1), each shown as `?`: a check's output or a worker's
 * message reaches the terminal in notes and reasons, and an escape sequence in it could rewrite the screen ("all good")
 * or the clipboard (OSC 52).
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g, '?');
}

/**
 * One line for a run event, prefixed with the local time; null for events that print nothing. Only `run-started` spans
 * lines (its own two); in every other event a newline is shown as `?` like any control character: a reason or note can
 * carry a name a worker chose (a file named `x\n12:00:00  ✓ t  attempt 9  PASS` would otherwise print a forged line).
 */
export function eventLine(e: RunEvent, now = new Date()): string | null {
  const line = eventText(e, now);
  if (line === null) return null;
  return e.type === 'run-started' ? line.split('\n').map(printable).join('\n') : printable(line);
}

function eventText(e: RunEvent, now: Date): string | null {
  const t = now.toTimeString().slice(0, 8);
  switch (e.type) {
    case 'run-started':
      return `${t}  run ${e.runId}: ${e.tasks} task(s), max_parallel ${e.maxParallel}\n${t}  state: ${e.stateFile}`;
    case 'attempt-started':
      return `${t}  ▶ ${e.key}  attempt ${e.attempt}  ${e.engine}${e.model ? `/${e.model}` : ''}`;
    case 'attempt-checking':
      return `${t}  … ${e.key}  attempt ${e.attempt}  checking`;
    case 'attempt-finished': {
      const tokens = e.tokens === null ? '' : `  ${e.tokens} tokens`;
      const cost = typeof e.costMicroUsd === 'number' ? `  ${formatUsd(e.costMicroUsd)}` : '';
      const why = e.reason ? `  — ${e.reason}` : '';
      const spend = e.spend ? spendLine(e.spend) : null;
      return `${t}  ${mark[e.verdict] ?? ' '} ${e.key}  attempt ${e.attempt}  ${e.verdict}  ${seconds(e.durationMs)}${tokens}${cost}${why}${e.willRetry ? '  (will retry)' : ''}${spend ? `  [${spend}]` : ''}`;
    }
    case 'task-cancelled':
      return `${t}  - ${e.key}  CANCELLED before it ran`;
    case 'task-note':
      return `${t}  · ${e.key}  ${e.note}`;
    case 'run-note':
      return `${t}  ${e.note}`;
    case 'task-skipped':
      return `${t}  ○ ${e.key}  ${e.reason}`;
    case 'task-blocked':
      return `${t}  ⊘ ${e.key}  BLOCKED — ${e.reason}`;
    case 'run-finished':
      return null;
  }
}

/**
 * The final verdict table: task, verdict, attempts, duration, tokens, the step a task that did not pass ended in (from
 * the run's state, `s.state`: `check`, `work`…; shown when any did), what the task waited for (`a, b`, when any task did), and what the
 * check proves or why it did not pass. Tasks in the graph's order (a task after its prerequisites), as every view
 * lists them. Under it: passed of all and the run id, the spend line (`spent $0.8000 · budget $1.00 (80 %)`, with
 * reserved and budget_tokens when there are; schemas/spend.ts spendLine), the Postgres outbox, the task branches.
 */
export function verdictTable(s: RunSummary): string {
  const { state } = s;
  const live = new Map(state.tasks.map((t) => [t.key, t]));
  // A best-of-N task's candidates are listed under it (indented), with the winner, scores and the select decision; a
  // validated, council or phases task's members under its lead, with their role, number and letter.
  const grouped = groupedOrder(
    s.tasks.map((t) => {
      const { after, group, candidate, select, winner, scores, tie, disagreement, consensus, workflow, reason } = live.get(t.key) ?? {};
      return { ...t, status: t.verdict, after, group, candidate, select, winner, scores, tie, disagreement, consensus, workflow, stateReason: reason };
    }),
    state.inputNames,
  );
  type Row = (typeof grouped)[number]['task'];
  const stepOf = (t: Row) => {
    const last = live.get(t.key)?.attempts.at(-1);
    return t.verdict !== 'PASS' && last?.verdict === t.verdict && last.step ? last.step : '';
  };
  const engineOf = (key: string) => {
    const t = live.get(key);
    return t ? `${t.engine}${t.model ? `/${t.model}` : ''}` : '';
  };
  const lines = grouped.flatMap((row) => [
    {
      t: row.task,
      key: row.task.key,
      after: rowAfter(row).after ?? [],
      why: row.candidates.length
        ? selectLines({ ...row.task, reason: row.task.stateReason ?? row.task.reason }).join('; ')
        : [...leadLines(row), row.task.verdict === 'PASS' ? (row.task.verified ?? '') : row.task.reason].filter(Boolean).join('; '),
    },
    ...row.candidates.map((c) => ({
      t: c.task,
      key: `  ${c.task.key}`,
      after: [] as string[],
      why: [candidateLabel(c), live.get(c.task.key)?.engine ?? '', c.task.verdict === 'PASS' ? '' : c.task.reason].filter(Boolean).join(' · '),
    })),
    ...row.members.map((m) => ({
      t: m.task,
      key: `  ${m.task.key}`,
      after: [] as string[],
      why: [memberLabel(m), engineOf(m.task.key), m.task.verdict === 'PASS' ? '' : m.task.reason].filter(Boolean).join(' · '),
    })),
  ]);
  const steps = lines.some((l) => stepOf(l.t));
  const graph = lines.some((l) => l.after.length);
  const rows = lines.map(({ t, key, after, why }) => [
    oneLine(key),
    t.verdict,
    String(t.attempts),
    seconds(t.durationMs),
    t.tokens === null ? '?' : String(t.tokens),
    ...(steps ? [stepOf(t) || '—'] : []),
    ...(graph ? [after.join(', ') || '—'] : []),
    printable(why),
  ]);
  const head = ['task', 'verdict', 'attempts', 'duration', 'tokens', ...(steps ? ['ended at'] : []), ...(graph ? ['after'] : []), 'verified / why not'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const passed = s.tasks.filter((t) => t.verdict === 'PASS').length;
  const footer = `${passed}/${s.tasks.length} passed in ${seconds(s.durationMs)}${s.cancelled ? ' (cancelled)' : ''} — run ${s.runId}`;
  const { spentMicroUsd, budgetMicroUsd, postgresPending } = s.spend;
  // The one spend line of every view (`verdict runs RUN`, the runs tree): spent, reserved, budget_usd and
  // budget_tokens, from the state the run ended with (a state without it, the summary's spent and budget).
  const money = spendLine(state.spend ?? { spentMicroUsd, reservedMicroUsd: 0, budgetMicroUsd }) ?? '';
  const notes = [money, postgresPending ? `postgres: rows wait in the outbox (${postgresPending})` : ''].filter(Boolean);
  const branches = s.tasks.filter((t) => t.branch && t.commit).map((t) => `  ${t.branch}  ${t.commit?.slice(0, 10)}`);
  return [line(head), ...rows.map(line), '', footer, ...notes, ...(branches.length ? ['task branches with the work:', ...branches] : [])].join('\n');
}
