import assert from 'node:assert/strict';
import { failureLine } from '../../extension/core/run/failure-line';

describe('the line that says why a check failed (unit)', () => {
  it("picks the assertion, not the runner's summary at the end", () => {
    const nodeTest = [
      'TAP version 13',
      '# Subtest: adds',
      'not ok 1 - adds',
      '  ---',
      "  error: 'Expected values to be strictly equal:\\n\\n3 !== 4\\n'",
      '  code: ERR_ASSERTION',
      '  ...',
      '1..1',
      '# tests 1',
      '# pass 0',
      '# fail 1',
      '# duration_ms 1934.77',
    ].join('\n');
    assert.equal(failureLine(nodeTest), "error: 'Expected values to be strictly equal:\\n\\n3 !== 4\\n'");
    const mocha = [
      '  1 failing',
      '',
      '  1) sum',
      '       adds:',
      '     AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:',
      '  3 !== 4',
      '',
      '      at Context.<anonymous> (test.js:5:12)',
      '',
    ].join('\n');
    assert.equal(failureLine(mocha), 'AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:');
    const pytest = [
      'E       assert 3 == 4',
      'test_sum.py:3: AssertionError',
      '=========================== short test summary info ============================',
      'FAILED test_sum.py::test_sum - assert 3 == 4',
      '============================== 1 failed in 0.02s ===============================',
    ].join('\n');
    assert.equal(failureLine(pytest), 'E       assert 3 == 4');
    assert.equal(
      failureLine('--- FAIL: TestSum (0.00s)\n    sum_test.go:8: got 3, want 4\nFAIL\nexit status 1\nFAIL\texample\t0.002s'),
      '--- FAIL: TestSum (0.00s)',
    );
    assert.equal(failureLine('Traceback (most recent call last):\n  File "t.py", line 1\nValueError: bad input'), 'ValueError: bad input');
  });

  it('falls back to the last line that is not a summary, and says nothing for no output', () => {
    assert.equal(failureLine('building\nout.txt missing\n'), 'out.txt missing');
    assert.equal(failureLine('only this\n# duration_ms 3'), 'only this');
    assert.equal(failureLine('# tests 1'), '# tests 1');
    assert.equal(failureLine(''), '');
    assert.equal(failureLine(`${'x'.repeat(300)}`).length, 160);
  });
});
