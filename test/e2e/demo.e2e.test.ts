import assert from 'node:assert/strict';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, readRows, tempDir } from '../helpers/fixtures';

describe('verdict demo', function () {
  this.timeout(60000);
  it('runs the bundled demo with the script engine and ends as designed, twice in the same home', async () => {
    const home = path.join(tempDir(), 'home');
    for (let round = 1; round <= 2; round++) {
      const r = await cli(['demo', '--home', home]);
      assert.equal(r.exitCode, 0, r.all);
      assert.match(r.stdout, /^fizzbuzz\s+PASS\s+1\s/m);
      assert.match(r.stdout, /^greeting\s+PASS\s+2\s/m);
      assert.match(r.stdout, /^port-echo\s+PASS\s+1\s/m);
      assert.match(r.stdout, /^lying-worker\s+FAIL\s+2\s.*report\.md is missing|^lying-worker\s+FAIL\s+2\s/m);
      assert.match(r.stdout, /demo finished as designed/);
    }
    const rows = readRows(home);
    assert.equal(rows.length, 2 * (1 + 2 + 1 + 2));
    const repo = path.join(home, 'demo', 'repo');
    const runId = String(rows[0]?.run_id);
    assert.match(git(repo, 'show', `verdict/${runId}/fizzbuzz:fizzbuzz.sh`), /FizzBuzz/);
  });
});
