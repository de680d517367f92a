/**
 * How a check's exit status can turn out, read from its structure (rules/shell.ts): which commands always
 * succeed or fail, how `&&`/`||` chains combine them, and what `set -e` / `set -o pipefail` change.
 * Shared by check-cannot-fail and check-silent.
 */
import { commandWords, unquote, type ShellCommand, type ShellIf, type ShellList, type ShellPipeline } from './shell';

/** The exit statuses a command (or chain) can end with: zero, non-zero, or both when it depends. */
export interface Outcome {
  canSucceed: boolean;
  canFail: boolean;
}

/** The shell options that change how failures propagate, as set by `set` commands seen so far. */
export interface ShellFlags {
  /** `set -e` / `set -o errexit`: a failing chain ends the script. */
  errexit: boolean;
  /** `set -o pipefail`: a pipeline fails when any of its commands does. */
  pipefail: boolean;
}

/** How Verdict runs a check: `bash -o pipefail -c CHECK` (extension/core/run/check.ts). */
export const VERDICT_CHECK_FLAGS: ShellFlags = { errexit: false, pipefail: true };
/** How Ringer ran a check: plain `bash -c CHECK`. */
export const RINGER_CHECK_FLAGS: ShellFlags = { errexit: false, pipefail: false };

const UNKNOWN: Outcome = { canSucceed: true, canFail: true };
const SUCCEEDS: Outcome = { canSucceed: true, canFail: false };
const FAILS: Outcome = { canSucceed: false, canFail: true };

/** The command name of a simple command after quote removal, or null (a group, or only assignments). */
export function commandName(command: ShellCommand): string | null {
  const first = commandWords(command)[0];
  return first ? unquote(first.raw) : null;
}

/** Applies `list` to `flags` when it is a `set` command (`set -e`, `set -euo pipefail`, `set -o errexit`, `set +e`). */
export function updateFlags(flags: ShellFlags, list: ShellList): ShellFlags {
  const command = list.pipelines.length === 1 ? list.pipelines[0]?.commands[0] : undefined;
  if (!command || commandName(command) !== 'set') return flags;
  const args = commandWords(command)
    .slice(1)
    .map((w) => unquote(w.raw));
  const next = { ...flags };
  args.forEach((arg, i) => {
    const on = arg.startsWith('-');
    if (/^[-+][a-z]*e[a-z]*$/.test(arg)) next.errexit = on;
    if (/^[-+][a-z]*o$/.test(arg)) {
      const name = args[i + 1];
      if (name === 'errexit') next.errexit = on;
      if (name === 'pipefail') next.pipefail = on;
    }
  });
  return next;
}

/**
 * The outcome of a whole script (or a group's inside): the last chain decides, and under `set -e` every chain. A
 * chain ended by `&` runs in the background and its status is never seen: it counts as 0 (bash(1), Lists).
 * `flags` default to how Verdict runs a check (with pipefail).
 */
export function scriptOutcome(lists: ShellList[], flags: ShellFlags = VERDICT_CHECK_FLAGS): Outcome {
  if (!lists.length) return SUCCEEDS; // `bash -c ''` exits 0
  let canFail = false;
  let last: Outcome = SUCCEEDS;
  lists.forEach((list, i) => {
    flags = updateFlags(flags, list);
    last = list.background ? SUCCEEDS : listOutcome(list, flags);
    if (list.background) return;
    // Under errexit a chain's failure ends the script, except failures before its last && / || (bash(1), set -e).
    const tail = list.pipelines[list.pipelines.length - 1];
    if (flags.errexit && i < lists.length - 1 && tail && pipelineOutcome(tail, flags).canFail) canFail = true;
  });
  return { canSucceed: last.canSucceed, canFail: canFail || last.canFail };
}

/**
 * Left-to-right fold of `a && b || c`: && runs the next pipeline on success, || on failure. `failing`: the index of
 * a pipeline to take as failing whatever it is (to ask whether that pipeline's failure can fail the chain).
 */
export function listOutcome(list: ShellList, flags: ShellFlags, failing = -1): Outcome {
  const outcomeOf = (i: number, p: ShellPipeline) => (i === failing ? FAILS : pipelineOutcome(p, flags));
  let out = list.pipelines[0] ? outcomeOf(0, list.pipelines[0]) : SUCCEEDS;
  list.ops.forEach((op, i) => {
    const next = list.pipelines[i + 1];
    if (!next) return;
    const runs = op.op === '&&' ? out.canSucceed : out.canFail;
    if (!runs) return;
    const then = outcomeOf(i + 1, next);
    out =
      op.op === '&&'
        ? { canSucceed: then.canSucceed, canFail: out.canFail || then.canFail }
        : { canSucceed: out.canSucceed || then.canSucceed, canFail: then.canFail };
  });
  return out;
}

/** A pipeline's status is its last command's (any command's failure under pipefail); `!` swaps them. */
export function pipelineOutcome(pipeline: ShellPipeline, flags: ShellFlags): Outcome {
  const outcomes = pipeline.commands.map((c) => commandOutcome(c, flags));
  let out = outcomes[outcomes.length - 1] ?? SUCCEEDS;
  if (flags.pipefail) out = { canSucceed: outcomes.every((o) => o.canSucceed), canFail: outcomes.some((o) => o.canFail) };
  return pipeline.negated ? { canSucceed: out.canFail, canFail: out.canSucceed } : out;
}

/** `true`, `:`, `exit 0`, echo and printf succeed; `false` and `exit N` fail; a group is its inside; else either. */
export function commandOutcome(command: ShellCommand, flags: ShellFlags): Outcome {
  if (command.kind === 'group') return scriptOutcome(command.inner, flags);
  if (command.kind === 'compound') return command.ifParts ? ifOutcome(command.ifParts, flags) : UNKNOWN;
  const words = commandWords(command).map((w) => unquote(w.raw));
  const name = words[0];
  if (name === undefined) return command.words.length ? SUCCEEDS : UNKNOWN; // only assignments
  if (name === 'true' || name === ':' || name === 'echo' || name === 'printf') return SUCCEEDS;
  if (name === 'false') return FAILS;
  if (name === 'exit' && words[1] !== undefined && /^\d+$/.test(words[1])) return Number(words[1]) === 0 ? SUCCEEDS : FAILS;
  return UNKNOWN;
}

/**
 * An `if`'s outcome: the branch that runs decides; with no `else`, a false condition makes it exit 0 (bash(1):
 * "zero if no condition tested true"). Conditions are read without errexit, which bash ignores there.
 */
export function ifOutcome(parts: ShellIf, flags: ShellFlags): Outcome {
  if (!parts.closed || !parts.clauses.length) return UNKNOWN;
  let canSucceed = false;
  let canFail = false;
  let reached = true; // whether some run gets past every condition so far
  for (const clause of parts.clauses) {
    if (!reached) break;
    const condition = scriptOutcome(clause.condition, { ...flags, errexit: false });
    if (condition.canSucceed) {
      const body = scriptOutcome(clause.body, flags);
      canSucceed ||= body.canSucceed;
      canFail ||= body.canFail;
    }
    reached = condition.canFail;
  }
  if (reached) {
    const otherwise = parts.elseBody ? scriptOutcome(parts.elseBody, flags) : SUCCEEDS;
    canSucceed ||= otherwise.canSucceed;
    canFail ||= otherwise.canFail;
  }
  return { canSucceed, canFail };
}
