import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { eventLine, printable } from '../../extension/cli/format';
import { treeHash, TREE_HASH_CONTENT_BYTES } from '../../extension/core/run/tree-hash';
import { tempDir } from '../helpers/fixtures';

describe('hardening against hostile output and trees', () => {
  it("an attempt's line shows its cost, and under a budget the run's spend just after it (spent · reserved · budget)", () => {
    const base = { type: 'attempt-finished', key: 't', attempt: 1, verdict: 'PASS', durationMs: 1200, tokens: 2580, reason: '', willRetry: false } as const;
    const spend = { spentMicroUsd: 2360, reservedMicroUsd: 1200, budgetMicroUsd: 5000, tokens: { spent: 2580, reserved: 0, budget: null }, byTask: {} };
    const line = eventLine({ ...base, costMicroUsd: 2360, spend }) as string;
    assert.match(
      line,
      /✓ t {2}attempt 1 {2}PASS {2}1\.2s {2}2580 tokens {2}\$0\.002360 {2}\[spent \$0\.0024 · reserved \$0\.0012 · budget \$0\.0050 \(71 %\)\]$/,
      line,
    );
    // Unknown cost and no budget: neither is shown (an unknown cost is never printed as $0).
    assert.doesNotMatch(eventLine({ ...base, costMicroUsd: null }) as string, /\$|\[/);
  });

  it('a run event prints as one line: a reason naming a file a worker called "x\\n… ✓ t  attempt 9  PASS" forges no line', () => {
    const reason = 'the guard refused the work (paths): x\n12:00:00  \u2713 t  attempt 9  PASS:1: added outside allow_paths (out.txt)';
    const line = eventLine({
      type: 'attempt-finished',
      key: 't',
      attempt: 1,
      verdict: 'FAIL',
      durationMs: 200,
      tokens: null,
      reason,
      willRetry: false,
    } as Parameters<typeof eventLine>[0]) as string;
    assert.equal(line.split('\n').length, 1, line);
    assert.match(line, /x\?12:00:00/);
    const note = eventLine({ type: 'task-note', key: 't', note: 'inputs: a\nb\u001b[2K' }) as string;
    assert.equal(note.split('\n').length, 1, note);
    // The run's own first event keeps its two lines.
    assert.equal(
      (eventLine({ type: 'run-started', runId: 'r', tasks: 1, maxParallel: 1, stateFile: '/s' } as Parameters<typeof eventLine>[0]) as string).split('\n')
        .length,
      2,
    );
  });

  it("terminal control characters in a check's output are shown as ?, never sent to the terminal", () => {
    assert.equal(printable('ok\u001b[2K\rall good\u0007\u009b'), 'ok?[2K?all good??');
    assert.equal(printable('tabs\tstay'), 'tabs\tstay');
  });

  it('the plain-mode tree hash reads small files whole and huge ones by size and mtime (no minutes-long stall)', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'a.txt'), 'one\n');
    const big = path.join(dir, 'big.bin');
    fs.writeFileSync(big, '');
    fs.truncateSync(big, TREE_HASH_CONTENT_BYTES * 64);
    const before = treeHash(dir);
    fs.writeFileSync(path.join(dir, 'a.txt'), 'two\n');
    assert.notEqual(treeHash(dir), before, 'a changed small file changes the hash');
    const again = treeHash(dir);
    fs.truncateSync(big, TREE_HASH_CONTENT_BYTES * 64 + 1);
    assert.notEqual(treeHash(dir), again, 'a huge file that changed size changes the hash');
  });
});
