/**
 * When a criticism's command counts as pointing at the proposal (docs/workflows.md "Critique loop", "What a command
 * must show"). Failing on the proposal is not enough: `false`, `exit 1`, `test -f /nonexistent` or `grep -q x
 * /dev/null` fail on anything, so they point at nothing in it. A command that failed on the proposal counts when
 * - it can exit 0 at all (read statically with lint's shell reading, manifest/rules/check-outcome.ts, the other way
 *   round from check-cannot-fail: there a check that can never fail, here a command that can never pass), and
 * - its failure depends on the proposal: it names a file of the proposal (`bash tests/edge.sh`, `grep -q x src/a.ts`),
 *   or it passes on an empty read-only tree (the control: `! grep -rq TODO .` passes there, `false` does not).
 * The step (run/workflows/critique/step.ts) runs the commands; this module decides. No I/O.
 */
import { scriptOutcome } from '../../../manifest/rules/check-outcome';
import { parseShell } from '../../../manifest/rules/shell';
import { proposalPath } from './verdict';

/**
 * Why `command` can never exit 0 whatever tree it runs on (as Verdict runs it: `bash -o pipefail -c`), or null when it
 * can. Read with lint's shell reader (the outcome check-cannot-fail uses): `false`, `exit N` (N ≠ 0), `! true`, a
 * chain or list whose last step always fails (`echo x; false`, `true && exit 1`). Commands whose status depends on
 * what they run (`grep`, `test`, `npm test`) can pass, so they go on to be run.
 */
export function cannotPass(command: string): string | null {
  const outcome = scriptOutcome(parseShell(command));
  if (outcome.canSucceed) return null;
  return 'the command can never exit 0 (its last step always fails, whatever the proposal holds), so it points at nothing in the proposal';
}

/** At most this many paths are taken from one command (each is looked up in the proposal). */
export const MAX_NAMED_PATHS = 64;

/**
 * The relative paths a command may name, in order, to be looked up in the proposal: in the command's text outside
 * comments (`test -f /x # slug.sh` names no slug.sh; read with lint's shell reader), every run of path characters
 * (`[A-Za-z0-9._+@~/-]`) holding a letter, and each tail after one of its `/` (so `$VERDICT_TASK_DIR/slug.sh` and
 * `./tests/edge.sh` yield `slug.sh` and `tests/edge.sh`); those proposalPath refuses (absolute, `..`, `.git`) are
 * left out. At most MAX_NAMED_PATHS, no duplicates. A loose reading on purpose: a path it finds that is not in the
 * proposal costs one lookup; one it missed makes the command depend on the control run.
 */
export function namedPaths(command: string): string[] {
  const out = new Set<string>();
  const text = parseShell(command)
    .map((l) => command.slice(l.start, l.end))
    .join('\n');
  for (const m of text.matchAll(/[A-Za-z0-9._+@~/-]+/g)) {
    const token = m[0];
    const tails = [token, ...[...token.matchAll(/\//g)].map((s) => token.slice((s.index ?? 0) + 1))];
    for (const t of tails) {
      if (!/[A-Za-z]/.test(t) || t.startsWith('-')) continue;
      const p = proposalPath(t);
      if (p.ok) out.add(p.rel);
      if (out.size >= MAX_NAMED_PATHS) return [...out];
    }
  }
  return [...out];
}

/** How a command ended on the empty control tree: it passed, or how it did not (`exited 1`, `ran out of time`). */
export type ControlRun = { passed: true } | { passed: false; how: string };

/**
 * Whether a command that failed on the proposal counts (verified), and why: it names `named`, a file of the proposal;
 * else it passed on the empty control tree; else it is dropped (it fails on an empty tree too and names no file of the
 * proposal). `control` null: not run (only when `named` is set).
 */
export function commandCounts(named: string | null, control: ControlRun | null): { verified: boolean; why: string } {
  if (named !== null) return { verified: true, why: `it reads ${named}, a file of the proposal` };
  if (control?.passed) return { verified: true, why: 'it passes on an empty tree' };
  return {
    verified: false,
    why: `the command fails on an empty tree too (${control ? control.how : 'not run'}) and names no file of the proposal, so it points at nothing in the proposal (name the file it is about, e.g. the test file it runs)`,
  };
}
