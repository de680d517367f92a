import assert from 'node:assert/strict';
import { cannotPass, commandCounts, MAX_NAMED_PATHS, namedPaths } from '../../extension/core/run/workflows/critique/command';

describe('critique: a command criticism must be about the proposal (run/workflows/critique/command.ts)', () => {
  it("a command that can never exit 0 is dropped before it runs (lint's shell reading, the other way round)", () => {
    for (const cmd of [
      'false',
      'exit 1',
      'exit 3',
      '! true',
      'echo x; false',
      'true && exit 1',
      'grep -q x a.txt; exit 2',
      '{ echo a; false; }',
      'false | cat',
      'if grep -q x f; then exit 1; else false; fi',
    ]) {
      assert.match(cannotPass(cmd) ?? '', /can never exit 0/, cmd);
    }
    // Anything whose status depends on what it runs is run, and judged by its runs.
    for (const cmd of [
      'test -f /nonexistent',
      'grep -q x /dev/null',
      'npm test',
      'false || grep -q x a.txt',
      'out=$(bash slug.sh); test "$out" = a-b',
      'exit 0',
      'true',
      '! grep -rq TODO .',
      'set -e; false; echo',
    ]) {
      assert.equal(cannotPass(cmd), null, cmd);
    }
  });

  it('names the relative paths a command may be about, tails after a slash included, never absolute, .. or .git ones', () => {
    assert.deepEqual(namedPaths('out=$(echo "a b" | bash slug.sh); test "$out" = a-b'), ['out', 'echo', 'a', 'b', 'bash', 'slug.sh', 'test', 'a-b']);
    assert.deepEqual(namedPaths('bash "$VERDICT_TASK_DIR/tests/edge.sh"'), ['bash', 'VERDICT_TASK_DIR/tests/edge.sh', 'tests/edge.sh', 'edge.sh']);
    assert.deepEqual(namedPaths('./run.sh -v ../x .git/config /dev/null'), ['run.sh', 'x', 'config', 'dev/null', 'null']);
    assert.deepEqual(namedPaths('grep -rq --include=x TODO 123 .'), ['grep', 'x', 'TODO']);
    // Comments name nothing: a file named there does not make the command about it.
    assert.deepEqual(namedPaths('test -f /nonexistent # slug.sh\n# tests/edge.sh'), ['test', 'nonexistent']);
    assert.deepEqual(namedPaths('for f in a.txt b.txt; do test -s "$f"; done'), ['for', 'f', 'in', 'a.txt', 'b.txt', 'do', 'test', 'done']);
    assert.equal(namedPaths(Array.from({ length: 100 }, (_, i) => `f${i}`).join(' ')).length, MAX_NAMED_PATHS);
  });

  it('counts a command that failed on the proposal only when it names a file of it or passes on the empty control', () => {
    assert.deepEqual(commandCounts('slug.sh', null), { verified: true, why: 'it reads slug.sh, a file of the proposal' });
    assert.deepEqual(commandCounts(null, { passed: true }), { verified: true, why: 'it passes on an empty tree' });
    const dropped = commandCounts(null, { passed: false, how: 'exited 1' });
    assert.equal(dropped.verified, false);
    assert.match(dropped.why, /fails on an empty tree too \(exited 1\) and names no file of the proposal, so it points at nothing in the proposal/);
  });
});
