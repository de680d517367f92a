import type { Rule, RuleFinding } from './document';
import { jsonEscape, type JsonString } from './json-string';
import { commandWords, unquote, type ShellCommand, type ShellList, type ShellPipeline } from './shell';
import { RINGER_CHECK_FLAGS, VERDICT_CHECK_FLAGS, commandOutcome, ifOutcome, listOutcome, scriptOutcome, updateFlags, type ShellFlags } from './check-outcome';

/** A pipeline whose failure can fail the check, with the shell options it runs under in Verdict and in Ringer. */
interface Deciding {
  pipeline: ShellPipeline;
  verdict: ShellFlags;
  ringer: ShellFlags;
}

/** A pipeline reader that may stop before its input ends, and how to say so. */
interface EarlyExit {
  /** When it stops reading, e.g. "exits after its first lines". */
  why: string;
  /** A replacement that reads all its input (decoded shell), or null when there is no mechanical one. */
  replacement: string | null;
}

/**
 * check-pipefail: where running checks with `bash -o pipefail -c` (extension/core/run/check.ts) changes what a
 * check does compared with Ringer's plain `bash -c`. Only pipelines whose failure can reach the check's status are
 * looked at (the last chain, every chain under `set -e`, inside `{ }`/`( )` and if-branches; not one followed by
 * `|| true`, not a backgrounded one); a check that sets `pipefail` itself behaves the same in both and is left alone.
 * - warning: a producer piped into a reader that can stop early (`head`, `grep -q`/`-m`/`-l`, `sed` with a `q`,
 *   `awk` with `exit`): once the reader has gone, the producer's next write kills it with SIGPIPE (status 141), and
 *   under pipefail that fails the check at random. Quick fix for `head [-n] N`: `sed -n 1,Np`, which reads all its
 *   input. Reported whenever pipefail is on, Ringer manifest or not.
 * - info: a pipeline with a command before the last that can fail (`bash run-tests.sh | tee log`): it now fails
 *   when that command fails; under Ringer only the last command decided. Usually wanted; `set +o pipefail` restores
 *   the old behaviour. Not for a manifest whose `$schema` names Verdict's manifest.schema.json: it was written for
 *   Verdict, and there is no Ringer behaviour to compare with.
 * Not reported: producers that cannot fail (`echo`, `printf`, `true`), pipes inside `$(...)` or `<(...)` (pipefail
 * does not reach them through a command substitution's status), and whether a given producer really writes enough
 * to meet SIGPIPE (lint cannot know; the warning says "at random").
 */
export const checkPipefail: Rule = (doc) => {
  const out: RuleFinding[] = [];
  const schema = doc.raw.$schema;
  const forVerdict = typeof schema === 'string' && /(^|[/\\])manifest\.schema\.json$/.test(schema);
  for (const task of doc.tasks) {
    const check = task.check;
    // Only a pipeline of two commands or more is reported, and it needs a `|`: most checks have none.
    if (!check || !task.checkScript || !check.value.includes('|')) continue;
    for (const { pipeline, verdict, ringer } of decidingPipelines(task.checkScript, VERDICT_CHECK_FLAGS, RINGER_CHECK_FLAGS)) {
      if (pipeline.commands.length < 2 || !verdict.pipefail) continue;
      const canFail = (c: ShellCommand) => commandOutcome(c, verdict).canFail;
      const reader = pipeline.commands.findIndex((c, i) => i > 0 && earlyExit(c) !== null && pipeline.commands.slice(0, i).some(canFail));
      if (reader > 0) {
        out.push(sigpipe(check, pipeline, reader, task.key));
        continue;
      }
      if (forVerdict || ringer.pipefail) continue;
      const producer = pipeline.commands.slice(0, -1).find(canFail);
      if (!producer) continue;
      const text = (c: { start: number; end: number }) => check.value.slice(c.start, c.end);
      const last = pipeline.commands[pipeline.commands.length - 1] as ShellCommand;
      out.push({
        rule: 'check-pipefail',
        severity: 'info',
        message: `Verdict runs checks with pipefail: \`${text(pipeline)}\` now fails when \`${text(producer)}\` fails; under Ringer (plain \`bash -c\`) only \`${text(last)}\` decided, so it passed. Usually what you want; to keep the old behaviour start the check with \`set +o pipefail;\`.`,
        range: check.rangeOf(pipeline.start, pipeline.end),
        taskKey: task.key,
      });
    }
  }
  return out;
};

function sigpipe(check: JsonString, pipeline: ShellPipeline, reader: number, taskKey: string | null): RuleFinding {
  const consumer = pipeline.commands[reader] as ShellCommand;
  const stop = earlyExit(consumer) as EarlyExit;
  const what = check.value.slice(consumer.start, consumer.end);
  const producers = check.value.slice(pipeline.start, (pipeline.pipeOps[reader - 1] ?? consumer).start).trim();
  const instead = stop.replacement ? `Use \`${stop.replacement}\` instead (it reads all its input), or write` : 'Write';
  const finding: RuleFinding = {
    rule: 'check-pipefail',
    severity: 'warning',
    message: `\`${what}\` ${stop.why}; \`${producers}\` is then killed by SIGPIPE (status 141) if it writes more, and Verdict runs checks with pipefail, so the check fails at random. ${instead} the output to a file first and read the file.`,
    range: check.rangeOf(consumer.start, consumer.end),
    taskKey,
  };
  if (stop.replacement)
    finding.fix = {
      title: `Replace \`${what}\` with \`${stop.replacement}\``,
      range: check.rangeOf(consumer.start, consumer.end),
      newText: jsonEscape(stop.replacement),
    };
  return finding;
}

/**
 * The pipelines of `lists` whose failure can fail the script: in the last chain (every chain under errexit) and not
 * followed by a fallback that always succeeds; looked for inside groups and the branches of an if, and in an if's
 * conditions when what runs instead can fail.
 */
function* decidingPipelines(lists: ShellList[], verdict: ShellFlags, ringer: ShellFlags): Generator<Deciding> {
  for (const [i, list] of lists.entries()) {
    verdict = updateFlags(verdict, list);
    ringer = updateFlags(ringer, list);
    if (list.background || (i !== lists.length - 1 && !verdict.errexit)) continue;
    for (const [j, pipeline] of list.pipelines.entries()) {
      if (!listOutcome(list, verdict, j).canFail) continue;
      yield { pipeline, verdict, ringer };
      for (const command of pipeline.commands) {
        if (command.kind === 'group') yield* decidingPipelines(command.inner, verdict, ringer);
        const parts = command.ifParts;
        if (!parts) continue;
        for (const [k, clause] of parts.clauses.entries()) {
          const rest = parts.clauses.slice(k + 1);
          const otherwise = rest.length
            ? ifOutcome({ ...parts, clauses: rest }, verdict)
            : parts.elseBody
              ? scriptOutcome(parts.elseBody, verdict)
              : { canFail: false };
          if (otherwise.canFail) yield* decidingPipelines(clause.condition, { ...verdict, errexit: false }, { ...ringer, errexit: false });
          yield* decidingPipelines(clause.body, verdict, ringer);
        }
        if (parts.elseBody) yield* decidingPipelines(parts.elseBody, verdict, ringer);
      }
    }
  }
}

/** Whether `command` may stop reading its input before it ends: head, grep -q/-m/-l/-L, sed …q, awk … exit. */
function earlyExit(command: ShellCommand): EarlyExit | null {
  const words = commandWords(command).map((w) => unquote(w.raw));
  const name = words[0];
  const args = words.slice(1).filter((w) => !/^[0-9]*(<|>|&>)/.test(w)); // redirections are not arguments
  if (name === 'head') return headExit(args, words.length === args.length + 1);
  if (name === 'grep' || name === 'egrep' || name === 'fgrep') {
    const flag = args.find((a) => /^--(quiet|silent|max-count(=.*)?|files-with(out)?-match(es)?)$/.test(a) || /^-[A-Za-z]*[qmlL]/.test(a));
    return flag
      ? { why: flag.includes('m') && !flag.startsWith('--f') ? 'stops reading after that many matches' : 'stops reading at the first match', replacement: null }
      : null;
  }
  if (name === 'sed') {
    const script = args.find((a, i) => !a.startsWith('-') && args[i - 1] !== '-f') ?? '';
    const scripts = [script, ...args.filter((_, i) => args[i - 1] === '-e' || args[i - 1] === '--expression')];
    return scripts.some((s) => /(^|[;\s}\d$/])[qQ]\s*\d*\s*($|[;}])/.test(s)) ? { why: 'quits at its `q` command', replacement: null } : null;
  }
  if (name === 'awk' || name === 'gawk' || name === 'mawk') {
    return args.some((a) => !a.startsWith('-') && /\bexit\b/.test(a)) ? { why: 'stops reading at its `exit`', replacement: null } : null;
  }
  return null;
}

/** head stops after N lines (or bytes); `-n -N` (all but the last N) reads everything. */
function headExit(args: string[], plain: boolean): EarlyExit | null {
  let lines: string | null = '10';
  let bytes = false;
  let files = 0;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    let m: RegExpExecArray | null;
    if ((m = /^(?:-n|--lines=?)(.*)$/.exec(a))) lines = m[1] || args[++i] || '10';
    else if ((m = /^(?:-c|--bytes=?)(.*)$/.exec(a))) {
      bytes = true;
      lines = m[1] || args[++i] || '';
    } else if ((m = /^-(\d+)$/.exec(a))) lines = m[1] as string;
    else if (!a.startsWith('-') || a === '-') files++;
  }
  if (lines?.startsWith('-')) return null;
  const n = /^\d+$/.test(lines ?? '') ? lines : null;
  const replacement = plain && !bytes && !files && n !== null ? `sed -n 1,${n}p` : null;
  return { why: bytes ? 'exits after its first bytes' : 'exits after its first lines', replacement };
}
