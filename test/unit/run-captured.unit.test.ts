import assert from 'node:assert/strict';
import { runCaptured } from '../../extension/core/process/run-captured';

// A short command's output and end, without execa: every way it can end is said, none throws.
describe('runCaptured', () => {
  it('exit code, stdout and stderr as printed; stdin is closed', async () => {
    const r = await runCaptured('sh', ['-c', 'printf "out\\n"; printf err >&2; cat; exit 3'], { env: process.env });
    assert.deepEqual({ ...r }, { exitCode: 3, signal: null, stdout: 'out\n', stderr: 'err', timedOut: false, error: null });
  });

  it('a command that cannot start, one killed by its time limit, one past maxBuffer, one killed by a signal', async () => {
    const missing = await runCaptured('/no/such/binary', []);
    assert.equal(missing.exitCode, null);
    assert.match(String(missing.error?.message), /ENOENT/);
    const slow = await runCaptured('sleep', ['30'], { env: process.env, timeoutMs: 200 });
    assert.equal(slow.timedOut, true);
    assert.equal(slow.signal, 'SIGKILL');
    const loud = await runCaptured('sh', ['-c', 'yes | head -c 100000; sleep 30'], { env: process.env, maxBuffer: 1000 });
    assert.match(String(loud.error?.message), /printed more than 1000 bytes/);
    assert.equal(loud.signal, 'SIGKILL');
    const killed = await runCaptured('sh', ['-c', 'kill -TERM $$'], { env: process.env });
    assert.deepEqual([killed.exitCode, killed.signal, killed.error], [null, 'SIGTERM', null]);
  });
  it('a time limit holds even when a child of the command keeps its output open (it does not wait for the child)', async () => {
    const held = await runCaptured('bash', ['-c', 'sleep 60 & echo $!; wait'], { env: process.env, timeoutMs: 300 });
    assert.equal(held.timedOut, true);
    assert.equal(held.signal, 'SIGKILL');
    const pid = Number(held.stdout.trim());
    assert.ok(pid > 0, held.stdout);
    process.kill(pid, 'SIGKILL'); // the left child, which the test owns
  });
});
