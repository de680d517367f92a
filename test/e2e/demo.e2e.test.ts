import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { requireSandbox } from '../helpers/sandbox-env';
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
    // The greeting's retry shows what the README says: the check's diff, injected through the failure file.
    const retry = rows.find((row) => row.task_key === 'greeting' && row.attempt === 2);
    const retryLog = fs.readFileSync(String(retry?.worker_log), 'utf8');
    assert.match(retryLog, /worker: the check said:\n```\n--- /, retryLog);
    assert.match(retryLog, /^\+Helo, world$/m, retryLog);
    assert.match(git(repo, 'show', `verdict/${runId}/fizzbuzz:fizzbuzz.sh`), /FizzBuzz/);
  });

  it('where no sandbox can run, the demo says so in one line and still shows what Verdict does (its own scripts)', async () => {
    const dir = tempDir();
    const r = await cli(['demo', '--home', path.join(dir, 'home')], { env: { VERDICT_BWRAP: path.join(dir, 'no-bwrap') } });
    assert.equal(r.exitCode, 0, r.all);
    assert.equal((r.stderr.match(/^demo: no sandbox here/gm) ?? []).length, 1, r.stderr);
    assert.match(r.stderr, /no-bwrap is not an executable file/);
    assert.deepEqual([...new Set(readRows(path.join(dir, 'home')).map((row) => row.sandbox))], ['none']);
  });

  it('sandboxed where bubblewrap runs: every row says bwrap', async function () {
    await requireSandbox(this);
    const home = path.join(tempDir(), 'home');
    const r = await cli(['demo', '--home', home]);
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual([...new Set(readRows(home).map((row) => row.sandbox))], ['bwrap']);
  });
});
