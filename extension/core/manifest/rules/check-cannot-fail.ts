import type { Rule, RuleFinding } from './document';
import { simpleCommands, type ShellList } from './shell';
import { commandName, scriptOutcome } from './check-outcome';

const TRIVIAL = new Set(['true', ':', 'exit', 'echo', 'printf']);

/**
 * check-cannot-fail (error): the check exits 0 whatever the worker did, so every task PASSes and the verdict
 * proves nothing. Found by evaluating the check's structure (check-outcome.ts), not by matching text: `true`,
 * `:`, `exit 0`, only echo/printf, a chain ending in `|| true` / `|| echo ...` / `|| exit 0`, or a last command
 * after `;` that always succeeds (`; true`, `; exit 0`, `; echo done`), unless `set -e` makes earlier failures
 * count. The range is the part that swallows the failure (e.g. `|| true`), or the whole check when all of it is
 * trivial.
 */
export const checkCannotFail: Rule = (doc) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const check = task.check;
    const lists = task.checkScript;
    if (!check || !lists) continue;
    if (scriptOutcome(lists).canFail) continue;
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
