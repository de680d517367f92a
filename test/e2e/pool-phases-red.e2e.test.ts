import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { LEASE_MS, poolSuite, startPoolWorker, unsandboxed, workersUp } from '../helpers/pool-workers';

// Red before green over a worker pool (docs/workflows.md "Phases"): the orchestrator resolves each phase file's start
// commit and sends it in the payload (`red`); the worker runs the red check on its own copy, as a local run does.

const IMPLEMENT = `case {file} in upper.sh) echo 'tr a-z A-Z' > upper.sh ;; lower.sh) echo 'tr A-Z a-z' > lower.sh ;; esac`;
const REAL_TESTS = `mkdir -p tests && printf '%s\\n' 'test "$(echo aB | bash upper.sh)" = AB || { echo upper.sh is wrong; exit 1; }' 'test "$(echo aB | bash lower.sh)" = ab || { echo lower.sh is wrong; exit 1; }' > tests/test.sh`;

describe('phases over the worker pool: red before green', function () {
  this.timeout(300_000);
  const { url: poolUrl, workers } = poolSuite();

  async function runOnPool(testSpec: string) {
    const url = poolUrl();
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# pool\n' });
    const remote = path.join(dir, 'remote.git');
    git(dir, 'init', '-q', '--bare', remote);
    const w = startPoolWorker(url, 'w1', 'script');
    workers.push(w);
    await workersUp([w]);
    // The test phase is the script engine too, under another model: another writer than the implementers.
    const task = scriptTask('case', IMPLEMENT, 'bash -n {file} && test -s {file}', {
      max_attempts: 1,
      phases: {
        files: ['upper.sh', 'lower.sh'],
        test: { engine: 'script', model: 'tester', spec: testSpec, check: 'bash tests/test.sh', expect_files: ['tests/test.sh'] },
      },
    });
    const file = writeManifest(dir, { worktrees: true, repo, remote, tasks: [task] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--pool', url, '--no-dashboard', ...unsandboxed], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    return { r, rows: readRows(home).filter((row) => row.task_key === 'case' && row.step === 'work'), worker: w };
  }

  it('`exit 0` tests FAIL on the pool worker with the reason; real tests PASS with the red run on record', async () => {
    const lazy = await runOnPool('mkdir -p tests && echo "exit 0" > tests/test.sh');
    assert.equal(lazy.r.exitCode, 1, lazy.r.all);
    assert.equal(lazy.rows.at(-1)?.verdict, 'FAIL', lazy.r.all);
    assert.match(
      String(lazy.rows.at(-1)?.notes),
      /the tests pass without the implementation: `bash tests\/test\.sh` exited 0 on the tree without upper\.sh, lower\.sh/,
    );
    assert.equal((lazy.rows.at(-1)?.red as { exit_code: number } | undefined)?.exit_code, 0);
    for (const w of workers.splice(0)) {
      w.proc.kill('SIGKILL');
      await w.proc;
    }
    const real = await runOnPool(REAL_TESTS);
    assert.equal(real.r.exitCode, 0, real.r.all);
    assert.equal(real.rows.at(-1)?.verdict, 'PASS');
    const red = real.rows.at(-1)?.red as { files: string[]; exit_code: number; timed_out: boolean; check_log: string };
    assert.deepEqual([red.files, red.exit_code, red.timed_out], [['upper.sh', 'lower.sh'], 1, false]);
    // The red run's output is kept here too (the worker's tail), where the row says.
    assert.match(fs.readFileSync(red.check_log, 'utf8'), /upper\.sh/);
  });
});
