import assert from 'node:assert/strict';
import { attemptNotice, mergeNotice } from '../../extension/core/run/notices';
import { duration, who } from '../../webview/format';

describe('notices: a notification names the task, its branch and what comes next', () => {
  it('a failed attempt with attempts left says a retry is coming, and why it failed', () => {
    const text = attemptNotice({ key: 'flaky', attempt: 1, verdict: 'FAIL', reason: 'check exited 1\nmore', willRetry: true, branch: 'verdict/r1/flaky' });
    assert.equal(text, 'flaky, attempt 1: FAIL (check exited 1) — retrying (attempt 2)');
  });

  it('the last failed attempt says none is left; a PASS names the branch holding the work', () => {
    assert.equal(
      attemptNotice({ key: 'flaky', attempt: 2, verdict: 'FAIL', reason: '', willRetry: false, branch: null }),
      'flaky, attempt 2: FAIL — no attempt left',
    );
    assert.equal(
      attemptNotice({ key: 'greet', attempt: 2, verdict: 'PASS', reason: 'ok', willRetry: false, branch: 'verdict/r1/greet' }),
      'greet, attempt 2: PASS — work on branch verdict/r1/greet',
    );
  });

  it('a merge names each merged task with its branch and the target, and each one not merged with why', () => {
    const branches = new Map([
      ['a', 'verdict/r1/a'],
      ['b', 'verdict/r1/b'],
      ['c', 'verdict/r1/c'],
    ]);
    const text = mergeNotice(
      [
        { key: 'a', status: 'MERGED', sha: 'x', paths: [] },
        { key: 'b', status: 'BLOCKED', conflicts: ['src/x.ts'], reason: 'rebase conflict' },
        { key: 'c', status: 'CHECK_FAILED', output: '', reason: 'check exited 1' },
      ],
      branches,
      'main',
    );
    assert.equal(
      text,
      'merged a (verdict/r1/a) into main; not merged: b (verdict/r1/b) BLOCKED (conflicts in src/x.ts); c (verdict/r1/c) CHECK_FAILED (check exited 1)',
    );
    assert.equal(
      mergeNotice([{ key: 'a', status: 'MISSING', reason: 'branch gone' }], branches, null),
      'nothing merged; not merged: a (verdict/r1/a) MISSING (branch gone)',
    );
  });

  it('a queue the suite stopped ends with the merge that broke it, where the branch was left and the branches kept', () => {
    const branches = new Map([
      ['a', 'verdict/r1/a'],
      ['b', 'verdict/r1/b'],
      ['c', 'verdict/r1/c'],
    ]);
    const text = mergeNotice(
      [
        { key: 'a', status: 'MERGED', sha: 'f'.repeat(40), paths: [] },
        {
          key: 'b',
          status: 'SUITE_FAILED',
          output: '',
          command: 'npm test',
          head: 'f'.repeat(40),
          lastGood: 'a',
          reason: 'its check passed after the rebase, but main with this merge fails the suite `npm test` (it exited 1)',
        },
        { key: 'c', status: 'NOT_TRIED', reason: 'not tried: the queue stopped at b' },
      ],
      branches,
      'main',
    );
    assert.equal(
      text,
      'merged a (verdict/r1/a) into main; not merged: b (verdict/r1/b) SUITE_FAILED (its check passed after the rebase, but main with this merge fails the suite `npm test` (it exited 1)); c (verdict/r1/c) NOT_TRIED (not tried: the queue stopped at b); the suite `npm test` broke at b: main is at ffffffffff, the last good merge (a); not merged, branches kept: b, c',
    );
    assert.match(
      mergeNotice([{ key: 'a', status: 'NOT_TRIED', reason: 'not merged: the suite `x` already fails on main' }], branches, 'main'),
      /; the suite already fails on main before any merge: nothing was judged by it, branches kept: a$/,
    );
  });
});

describe('dashboard formatting (webview/format.ts)', () => {
  it('a run of about a second never shows as 0s', () => {
    assert.equal(duration(950), '0.9s');
    assert.equal(duration(1_000), '1.0s');
    assert.equal(duration(9_999), '9.9s');
    assert.equal(duration(10_000), '10s');
    assert.equal(duration(65_000), '1m 05s');
    assert.equal(duration(null), '—');
  });

  it('the default identity (the host name) is shown once, not as vm@vm', () => {
    assert.equal(who('vm', 'vm'), 'vm');
    assert.equal(who('alice', 'vm'), 'alice@vm');
  });
});
