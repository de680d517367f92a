import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runCheck, SILENT_CHECK_MARKER } from '../../extension/core/run/check';
import { failureText, retryPrompt, RETRY_CHECK_BYTES } from '../../extension/core/run/prompt';
import { tempDir } from '../helpers/fixtures';

describe('check judging', function () {
  this.timeout(15000);
  let dir: string;
  let log: string;
  beforeEach(() => {
    dir = tempDir();
    log = path.join(tempDir(), 'check.log');
  });
  const check = (cmd: string, expectFiles: string[] = [], timeoutMs = 5000) =>
    runCheck({ check: cmd, taskDir: dir, logFile: log, timeoutMs, env: { PORT: '4321' }, expectFiles });

  it('passes only on exit 0, runs in the task dir with the task env, keeps output verbatim', async () => {
    const r = await check('pwd; echo "port=$PORT"; printf "no newline"');
    assert.equal(r.passed, true);
    assert.equal(r.output, `${dir}\nport=4321\nno newline`);
    assert.equal(fs.readFileSync(log, 'utf8'), r.output);
  });

  it('fails on a non-zero exit and says so', async () => {
    const r = await check('echo "2 tests failed"; exit 4');
    assert.equal(r.passed, false);
    assert.equal(r.reason, 'the check exited 4: 2 tests failed');
    assert.equal(r.output, '2 tests failed\n');
  });

  it('adds a marker when a failing check printed nothing', async () => {
    const r = await check('grep -q needle /dev/null');
    assert.equal(r.passed, false);
    assert.equal(r.output, SILENT_CHECK_MARKER + '\n');
    assert.ok(fs.readFileSync(log, 'utf8').includes(SILENT_CHECK_MARKER));
  });

  it('judges expect_files after the check: a file the check creates counts, an empty one fails', async () => {
    fs.writeFileSync(path.join(dir, 'empty.txt'), '');
    const ok = await check('echo data > made-by-check.txt', ['made-by-check.txt']);
    assert.equal(ok.passed, true);
    const bad = await check('true', ['empty.txt', 'absent.txt', '../outside.txt']);
    assert.equal(bad.passed, false);
    assert.deepEqual(bad.missingFiles, ['empty.txt', 'absent.txt', '../outside.txt']);
    assert.equal(
      bad.reason,
      'expected files missing or not real files in the task dir: empty.txt (empty), absent.txt (missing), ../outside.txt (outside the task dir)',
    );
  });

  it('a symlinked deliverable is not a deliverable: a link out, a link through a folder, even a link inside', async () => {
    fs.symlinkSync('/etc/passwd', path.join(dir, 'out.txt'));
    fs.symlinkSync('/etc', path.join(dir, 'etc'));
    fs.writeFileSync(path.join(dir, 'real.txt'), 'real\n');
    fs.symlinkSync('real.txt', path.join(dir, 'alias.txt'));
    const r = await check('true', ['out.txt', 'etc/passwd', 'alias.txt', 'real.txt']);
    assert.equal(r.passed, false);
    assert.deepEqual(r.missingFiles, ['out.txt', 'etc/passwd', 'alias.txt']);
    assert.match(r.reason, /out\.txt \(a symlink to \/etc\/passwd, outside the task dir\)/);
    assert.match(r.reason, /etc\/passwd \(reached through the symlinked folder etc to \/etc, outside the task dir\)/);
    assert.match(r.reason, /alias\.txt \(a symlink to .*real\.txt\)/);
  });

  it('runs with pipefail: a failing command piped into tee or tail fails the check', async () => {
    assert.equal((await check('false | tee t.log')).passed, false);
    assert.equal((await check('(echo 3 tests failed; exit 1) | tail -5')).passed, false);
    assert.equal((await check('echo ok | tail -1')).passed, true);
  });

  it('times out a check that never ends and notes it in the output', async () => {
    const r = await check('echo started; sleep 300', [], 300);
    assert.equal(r.passed, false);
    assert.equal(r.receipt.timedOut, true);
    assert.match(r.output, /^started\n\[verdict\] the check timed out after 0 s and was killed\n$/);
  });
});

describe('retry prompt', () => {
  it('carries the spec, the check, its exit code and bounded verbatim output tails', () => {
    const big = 'x'.repeat(RETRY_CHECK_BYTES * 3) + '\nLAST LINE';
    const text = failureText({
      attempt: 1,
      verdict: 'FAIL',
      check: 'npm test',
      checkExitCode: 1,
      checkOutput: big,
      workerTail: 'I am done',
      reason: 'the check exited 1',
    });
    const prompt = retryPrompt('Write parse()', text);
    assert.ok(prompt.startsWith('Write parse()\n\n---\n'));
    assert.ok(prompt.includes('Attempt 1 was judged FAIL: the check exited 1.'));
    assert.ok(prompt.includes('```sh\nnpm test\n```'));
    assert.ok(prompt.includes('Its exit code was 1.'));
    assert.ok(prompt.includes('LAST LINE'));
    assert.ok(prompt.includes('I am done'));
    assert.ok(prompt.length < RETRY_CHECK_BYTES + 6000, `prompt is ${prompt.length} chars`);
  });
});
