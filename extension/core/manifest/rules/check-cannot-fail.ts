import type { Rule, RuleFinding } from './document';
import type { JsonString } from './json-string';
import type { QuickFix } from '../findings';
import { simpleCommands, type ShellCommand, type ShellList } from './shell';
import { commandName, scriptOutcome } from './check-outcome';

const TRIVIAL = new Set(['true', ':', 'exit', 'echo', 'printf']);

/**
 * check-cannot-fail (error): the check exits 0 whatever the worker did, so every task PASSes and the verdict
 * proves nothing. Found by evaluating the check's structure (check-outcome.ts), not by matching text: `true`,
 * `:`, `exit 0`, only echo/printf, a chain ending in `|| true` / `|| echo ...` / `|| exit 0`, or a last command
 * after `;` that always succeeds (`; true`, `; exit 0`, `; echo done`), unless `set -e` makes earlier failures
 * count; an `if` none of whose branches can fail (`if grep -q x f; then echo good; fi`: a false condition with no
 * `else` exits 0 too); a check ending with `&` (backgrounded: bash does not wait, its status is never seen; quick
 * fix: drop the `&`). Checks are read as Verdict runs them, with pipefail. The range is the part that swallows the
 * failure (e.g. `|| true`, the `if ... fi`, `cmd &`), or the whole check when all of it is trivial.
 */
export const checkCannotFail: Rule = (doc) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const check = task.check;
    const lists = task.checkScript;
    if (!check || !lists) continue;
    if (scriptOutcome(lists).canFail) continue;
    const structural = backgrounded(lists, check) ?? lastIf(lists, check);
    if (structural) {
      out.push({ rule: 'check-cannot-fail', severity: 'error', taskKey: task.key, ...structural });
      continue;
    }
    const names = [...simpleCommands(lists)].map(commandName);
    const trivial = names.every((n) => n === null || TRIVIAL.has(n));
    const culprit = trivial ? null : swallowingTail(lists);
    const message = culprit
      ? `\`${check.value.slice(culprit.start, culprit.end).trim()}\` makes the check exit 0 whatever ran before it, so the task PASSes even when the work is wrong. Remove it, or make the fallback print why and end with \`exit 1\`.`
      : `This check always exits 0 (${trivial ? describe(names) : 'its last command always succeeds'}), so the task PASSes whatever the worker did. Make it run something that fails when the work is wrong, such as the tests or a grep for the expected code.`;
    out.push({
      rule: 'check-cannot-fail',
      severity: 'error',
      message,
      range: culprit ? check.rangeOf(culprit.start, culprit.end) : check.range,
      taskKey: task.key,
    });
  }
  return out;
};

type Structural = Pick<RuleFinding, 'message' | 'range' | 'fix'>;

/** The check ends with `cmd &`: the range covers `cmd &`; the fix removes the `&` and the blanks before it. */
function backgrounded(lists: ShellList[], check: JsonString): Structural | null {
  const last = lists[lists.length - 1];
  const amp = last?.background;
  if (!last || !amp) return null;
  const text = check.value.slice(last.start, amp.end);
  const fix: QuickFix = { title: 'Remove the trailing `&`', range: check.rangeOf(last.end, amp.end), newText: '' };
  return {
    message: `\`${text}\` runs in the background: bash does not wait for it, so the check exits 0 at once whatever it ends with, and the task PASSes. Remove the trailing \`&\`.`,
    range: check.rangeOf(last.start, amp.end),
    fix,
  };
}

/** The check's status is that of a closing `if ... fi` none of whose branches can fail: the range covers the `if`. */
function lastIf(lists: ShellList[], check: JsonString): Structural | null {
  const last = lists[lists.length - 1];
  const pipeline = last?.ops.length === 0 && last.pipelines.length === 1 ? last.pipelines[0] : undefined;
  const command: ShellCommand | undefined = pipeline && !pipeline.negated && pipeline.commands.length === 1 ? pipeline.commands[0] : undefined;
  const parts = command?.ifParts;
  if (!command || !parts) return null;
  const condition = parts.clauses[0]?.condition ?? [];
  const conditionText = condition.length ? check.value.slice(condition[0]?.start, condition[condition.length - 1]?.end) : '...';
  const why = parts.elseBody ? 'none of its branches can fail' : 'its branch cannot fail, and with no `else` a false condition exits 0 too';
  return {
    message: `\`if ${conditionText}; then ... fi\` exits 0 whichever way it goes (${why}), so the task PASSes whatever the worker did. End the branch for the bad case with \`exit 1\` (e.g. \`else echo 'why it failed'; exit 1; fi\`), or make the condition itself the check.`,
    range: check.rangeOf(command.start, command.end),
  };
}

function describe(names: (string | null)[]): string {
  const real = names.filter((n): n is string => n !== null);
  if (!real.length) return 'it runs nothing';
  if (real.every((n) => n === 'echo' || n === 'printf')) return 'it only prints';
  return `it only runs ${[...new Set(real)].map((n) => `\`${n}\``).join(', ')}`;
}

/** Decoded offsets of the operator and command that end the check and always succeed, e.g. `|| true`. */
function swallowingTail(lists: ShellList[]): { start: number; end: number } | null {
  const last = lists[lists.length - 1];
  if (!last) return null;
  const op = last.ops[last.ops.length - 1];
  if (op) return { start: op.start, end: last.end };
  const pipeline = last.pipelines[last.pipelines.length - 1];
  const pipe = pipeline?.pipeOps[pipeline.pipeOps.length - 1];
  if (pipe) return { start: pipe.start, end: last.end };
  const separator = last.separatorBefore;
  if (separator) return { start: separator.op === '\n' ? last.start : separator.start, end: last.end };
  return null;
}
