import { quote } from 'shell-quote';
import type { Rule, RuleFinding } from './document';
import { jsonEscape, type JsonString } from './json-string';
import type { QuickFix } from '../findings';
import { commandWords, unquote, type ShellCommand, type ShellList, type ShellPipeline, type ShellWord } from './shell';
import { VERDICT_CHECK_FLAGS, commandName, updateFlags, type ShellFlags } from './check-outcome';

/** `test`/`[` operators that ask about a file. */
const FILE_TESTS = new Set(['-e', '-f', '-s', '-d', '-r', '-w', '-x', '-L', '-h', '-p', '-S', '-b', '-c']);
/** grep options that take the next word as their argument. */
const GREP_ARG_OPTIONS = new Set(['-e', '-f', '-m', '-A', '-B', '-C', '-d', '-D', '--regexp', '--file', '--max-count']);

/** A quiet command found in a check: what to call it, why its silence hurts, and the louder command. */
interface Quiet {
  what: string;
  why: string;
  /** The replacement for the command's text (decoded shell), or null when there is no mechanical fix. */
  louder: string | null;
  /** Whether `louder` adds `|| { ...; }` (then it is braced when not first in its chain). */
  addsFallback: boolean;
}

/**
 * check-silent (warning): a command whose failure prints nothing decides the check's status, so a FAIL comes
 * with empty output: the retry prompt (which quotes the check output) and the reviewer get nothing to go on.
 * Flags `test -f`/`[ -f ]` (any file test), `grep -q`, `cmp -s`, `diff -q`, `git diff --quiet` when the command
 * is what fails the check: in the last chain (or any chain under `set -e`), anywhere in its pipeline (checks run
 * with pipefail; only last after `set +o pipefail`), not negated, and with no later `||` fallback that prints something. Commands inside
 * if/while/case are left alone (they are conditions); `{ ...; }` and `( ... )` groups are looked into.
 * Quick fixes: `diff -q` → `diff`, `cmp -s` → `cmp`, `git diff --quiet` → `git diff --exit-code --stat`,
 * `grep -q P F` → `grep P F || { echo 'missing P in F'; exit 1; }`, `test -f F` → `test -f F || { echo 'F is
 * missing'; exit 1; }`.
 */
export const checkSilent: Rule = (doc) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const check = task.check;
    if (!check || !task.checkScript) continue;
    for (const { command, braced } of silentFailures(task.checkScript, check.value, VERDICT_CHECK_FLAGS)) {
      const quiet = quietCommand(command, check.value);
      if (!quiet) continue;
      const finding: RuleFinding = {
        rule: 'check-silent',
        severity: 'warning',
        message: quiet.why,
        range: check.rangeOf(command.start, command.end),
        taskKey: task.key,
      };
      if (quiet.louder !== null) finding.fix = louderFix(check, command, quiet, braced);
      out.push(finding);
    }
  }
  return out;
};

function louderFix(check: JsonString, command: ShellCommand, quiet: Quiet, braced: boolean): QuickFix {
  const text = quiet.addsFallback && braced ? `{ ${quiet.louder}; }` : (quiet.louder as string);
  return {
    title: `Make \`${quiet.what}\` say why it failed`,
    range: check.rangeOf(command.start, command.end),
    newText: jsonEscape(text),
  };
}

/**
 * The simple commands whose failure becomes the check's failure with nothing printed by a fallback. `braced`:
 * the command is not first in its chain, so a fix adding `|| ...` must be wrapped to keep the chain's meaning.
 */
function* silentFailures(lists: ShellList[], src: string, flags: ShellFlags): Generator<{ command: ShellCommand; braced: boolean }> {
  for (const [i, list] of lists.entries()) {
    flags = updateFlags(flags, list);
    if (i !== lists.length - 1 && !flags.errexit) continue;
    for (const [j, pipeline] of list.pipelines.entries()) {
      if (pipeline.negated || printingFallbackAfter(list, j, src)) continue;
      const deciding = flags.pipefail ? pipeline.commands : pipeline.commands.slice(-1);
      for (const command of deciding) {
        if (command.kind === 'simple') yield { command, braced: j > 0 };
        else if (command.kind === 'group') yield* silentFailures(command.inner, src, flags);
      }
    }
  }
}

/** Whether some `||` after pipeline `j` of `list` leads to a pipeline that prints. */
function printingFallbackAfter(list: ShellList, j: number, src: string): boolean {
  return list.ops.some((op, m) => m >= j && op.op === '||' && prints(list.pipelines[m + 1], src));
}

/** Whether a fallback says anything: not only exit/false/true and quiet tests. */
function prints(pipeline: ShellPipeline | undefined, src: string): boolean {
  return (pipeline?.commands ?? []).some((command) => {
    if (command.kind === 'group') return command.inner.some((l) => l.pipelines.some((p) => prints(p, src)));
    if (command.kind === 'compound') return true;
    const name = commandName(command);
    if (name === null || ['exit', 'false', 'true', ':', 'return', 'test', '[', '[['].includes(name)) return false;
    return quietCommand(command, src) === null;
  });
}

/** Recognises a quiet command; `src` (the decoded check) is needed only to build its louder replacement. */
function quietCommand(command: ShellCommand, src: string): Quiet | null {
  const words = commandWords(command);
  const values = words.map((w) => unquote(w.raw));
  const name = values[0];
  const text = src.slice(command.start, command.end);
  const withFallback = (message: string) => `${text} || { echo ${quote([message])}; exit 1; }`;
  if (name === 'test' || name === '[' || name === '[[') {
    const op = values[1];
    const file = values[2];
    if (!op || !FILE_TESTS.has(op) || file === undefined) return null;
    const what = name === 'test' ? `test ${op}` : `${name} ${op} ... ${name === '[' ? ']' : ']]'}`;
    const message =
      op === '-s'
        ? `${file} is missing or empty`
        : op === '-d'
          ? `directory ${file} is missing`
          : op === '-e' || op === '-f'
            ? `${file} is missing`
            : `${file} fails test ${op}`;
    return {
      what,
      why: `\`${what}\` prints nothing when ${file} is not there, so a FAIL gives the retry and the reviewer nothing to go on. Add \`|| { echo '${message}'; exit 1; }\`.`,
      louder: withFallback(message),
      addsFallback: true,
    };
  }
  if (name === 'grep' || name === 'egrep' || name === 'fgrep') {
    const q = words.findIndex((w, i) => i > 0 && isQuietFlag(unquote(w.raw), 'q', ['--quiet', '--silent']));
    if (q < 0) return null;
    const { pattern, files } = grepOperands(values);
    const message = pattern === null ? 'grep found no match' : files.length ? `missing ${pattern} in ${files.join(' ')}` : `no line matches ${pattern}`;
    return {
      what: 'grep -q',
      why: '`grep -q` prints nothing when the pattern is missing, so a FAIL gives the retry and the reviewer nothing to go on. Drop -q and echo what is missing.',
      louder: `${dropFlag(text, command, words[q] as ShellWord, 'q')} || { echo ${quote([message])}; exit 1; }`,
      addsFallback: true,
    };
  }
  if (name === 'cmp') {
    const s = words.findIndex((w, i) => i > 0 && isQuietFlag(unquote(w.raw), 's', ['--silent', '--quiet']));
    if (s < 0) return null;
    return {
      what: 'cmp -s',
      why: '`cmp -s` prints nothing when the files differ, so a FAIL gives the retry nothing to go on; without -s it names the first difference.',
      louder: dropFlag(text, command, words[s] as ShellWord, 's'),
      addsFallback: false,
    };
  }
  if (name === 'diff') {
    const q = words.findIndex((w, i) => i > 0 && isQuietFlag(unquote(w.raw), 'q', ['--brief']));
    if (q < 0) return null;
    return {
      what: 'diff -q',
      why: '`diff -q` says only that the files differ, not how, so the retry cannot see what to fix; plain `diff` (or `diff -u`) shows the lines.',
      louder: dropFlag(text, command, words[q] as ShellWord, 'q'),
      addsFallback: false,
    };
  }
  if (name === 'git' && gitSubcommand(values) === 'diff') {
    const quiet = words.findIndex((w) => unquote(w.raw) === '--quiet');
    if (quiet < 0) return null;
    const replacement = values.includes('--exit-code') ? '--stat' : '--exit-code --stat';
    return {
      what: 'git diff --quiet',
      why: '`git diff --quiet` prints nothing when it finds changes, so a FAIL gives the retry nothing to go on; `git diff --exit-code --stat` fails the same way and names the files.',
      louder: replaceWord(text, command, words[quiet] as ShellWord, replacement),
      addsFallback: false,
    };
  }
  return null;
}

/** `-q`, a cluster holding q (`-qE`), or one of the long forms. */
function isQuietFlag(value: string, letter: string, long: string[]): boolean {
  return long.includes(value) || (/^-[A-Za-z]+$/.test(value) && value.includes(letter));
}

/** The command's text without `letter` in `word`: `-q` disappears, `-qE` becomes `-E`, `--quiet` disappears. */
function dropFlag(text: string, command: ShellCommand, word: ShellWord, letter: string): string {
  const value = unquote(word.raw);
  const rest = value.startsWith('--') ? '' : value.replace(letter, '');
  return replaceWord(text, command, word, rest === '-' ? '' : rest);
}

/** Replaces one word of the command's text; an empty replacement also removes the blank before it. */
function replaceWord(text: string, command: ShellCommand, word: ShellWord, replacement: string): string {
  let start = word.start - command.start;
  const end = word.end - command.start;
  if (!replacement) while (start > 0 && /[ \t]/.test(text[start - 1] ?? '')) start--;
  return text.slice(0, start) + replacement + text.slice(end);
}

/** grep's pattern (first operand, or the -e argument) and the files after it. */
function grepOperands(values: string[]): { pattern: string | null; files: string[] } {
  let pattern: string | null = null;
  const operands: string[] = [];
  for (let i = 1; i < values.length; i++) {
    const v = values[i] as string;
    if (v === '-e' || v === '--regexp') pattern = values[++i] ?? null;
    else if (v.startsWith('--regexp=')) pattern = v.slice('--regexp='.length);
    else if (GREP_ARG_OPTIONS.has(v)) i++;
    else if (/^[0-9]*[<>]/.test(v))
      continue; // a redirection
    else if (!v.startsWith('-') || v === '-') operands.push(v);
  }
  if (pattern === null) pattern = operands.shift() ?? null;
  return { pattern, files: operands };
}

/** The git subcommand: the first word after `git` and its global options (`-C dir`, `-c k=v`). */
function gitSubcommand(values: string[]): string | null {
  for (let i = 1; i < values.length; i++) {
    const v = values[i] as string;
    if (v === '-C' || v === '-c') i++;
    else if (!v.startsWith('-')) return v;
  }
  return null;
}
