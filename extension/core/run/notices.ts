// The one-line texts the editor shows for a finished attempt and for a merge (progress notifications and messages):
// each names the task, its branch when it has one, and what happens next, so a notice read alone is never ambiguous
// ("flaky: FAIL" did not say whether a retry was coming; "merged 1/1" did not say what went where).
import { suiteStopLine, type MergeOutcome } from '../git/merge';
import type { Verdict } from '../../../schemas/status';

/** A finished attempt as a notice sees it. */
export interface AttemptNoticeInput {
  key: string;
  /** 1-based attempt number. */
  attempt: number;
  verdict: Verdict;
  /** One line: why (the attempt's notes); empty when none. */
  reason: string;
  /** True when the task is not settled yet: another attempt (or a requeue) follows. */
  willRetry: boolean;
  /** The task branch (worktree mode), null in plain mode. */
  branch: string | null;
}

/**
 * One line for a finished attempt, e.g. `flaky, attempt 1: FAIL (check exited 1) — retrying (attempt 2)` or
 * `greet, attempt 2: PASS — work on branch verdict/r1/greet`.
 */
export function attemptNotice(e: AttemptNoticeInput): string {
  const head = `${e.key}, attempt ${e.attempt}: ${e.verdict}${e.reason && e.verdict !== 'PASS' ? ` (${firstLine(e.reason)})` : ''}`;
  if (e.willRetry) return `${head} — retrying (attempt ${e.attempt + 1})`;
  if (e.verdict === 'PASS') return e.branch ? `${head} — work on branch ${e.branch}` : head;
  return `${head} — no attempt left`;
}

/**
 * The message after a merge queue: what was merged into `target` (task and branch), then each task that was not and
 * why, e.g. `merged greet (verdict/r1/greet) into main; not merged: flaky CHECK_FAILED (check exited 1)`.
 * When the suite stopped the queue, its last part says which merge broke it and where `target` was left (git/merge.ts
 * suiteStopLine). `branches` maps task key to its branch (the merge requests'); `target` is the branch merged into,
 * null if unknown.
 */
export function mergeNotice(outcomes: readonly MergeOutcome[], branches: ReadonlyMap<string, string>, target: string | null): string {
  const named = (key: string) => (branches.has(key) ? `${key} (${branches.get(key)})` : key);
  const merged = outcomes.filter((o) => o.status === 'MERGED').map((o) => named(o.key));
  const others = outcomes
    .filter((o) => o.status !== 'MERGED')
    .map((o) => {
      const why = o.status === 'BLOCKED' && o.conflicts.length ? `conflicts in ${o.conflicts.join(', ')}` : 'reason' in o ? firstLine(o.reason) : '';
      return `${named(o.key)} ${o.status}${why ? ` (${why})` : ''}`;
    });
  const into = target ? ` into ${target}` : '';
  const parts = [merged.length ? `merged ${merged.join(', ')}${into}` : `nothing merged${into}`];
  if (others.length) parts.push(`not merged: ${others.join('; ')}`);
  const stop = suiteStopLine(outcomes, target);
  if (stop) parts.push(stop);
  return parts.join('; ');
}

function firstLine(text: string): string {
  const line = text.split('\n')[0]?.trim() ?? '';
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}

/**
 * An error's message as the one line a notification shows (VS Code's notifications show a single line, so a message
 * cut at its first newline read "…before its run started:" and nothing more): its first non-empty line, followed by
 * the next lines while the text so far ends with a colon, at most `maxChars` characters (an ellipsis marks a cut).
 */
export function notificationLine(message: string, maxChars = 400): string {
  const lines = message
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  let text = lines[0] ?? '';
  for (let i = 1; text.endsWith(':') && i < lines.length; i++) text = `${text} ${lines[i]}`;
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}
