import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// Memory and output caps, tried as a hostile worker would: a step that allocates past its cap, one that floods its
// stdout, one that leaves a huge sparse file for the orchestrator to snapshot. None of them may take the orchestrator,
// a sibling task or VERDICT_HOME's disk with it.

/** The peak-RSS preload (test/helpers/peak-rss.cjs): the CLI writes its VmHWM (kB) to a file when it exits. */
const PEAK_RSS = path.resolve('test/helpers/peak-rss.cjs');

/** The most the orchestrator may hold resident whatever a worker writes, kB. */
const ORCHESTRATOR_PEAK_KB = 300 * 1024;

/** `verdict ARGS` with the peak-RSS preload; resolves with the result and the peak (kB). */
async function runMeasured(args: string[], dir: string, env: Record<string, string> = {}) {
  const hwm = path.join(dir, 'peak-rss');
  const r = await execa('node', ['--require', PEAK_RSS, CLI, ...args], { env: { ...env, VERDICT_TEST_PEAK_RSS_FILE: hwm }, reject: false, all: true, stdin: 'ignore' });
  const text = fs.existsSync(hwm) ? fs.readFileSync(hwm, 'utf8') : '';
  assert.match(text, /^\d+$/, `no peak RSS recorded (${hwm}): ${r.all}`);
  return { r, peakKb: Number(text) };
}

describe('caps: memory, output, and what the orchestrator holds of a worker\'s files', function () {
  this.timeout(600000);

  before(async function () {
    await requireSandbox(this);
  });

  it('plain mode: a 3 GiB sparse file (and a 1.9 GiB one) is snapshotted without entering the orchestrator\'s memory', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask('huge', 'truncate -s 3G big.bin && echo ok > out.txt', 'test -f big.bin && test -s out.txt', { max_attempts: 1 }),
        scriptTask('large', 'truncate -s 1900M big.bin && echo ok > out.txt', 'test -f big.bin && test -s out.txt', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const { r, peakKb } = await runMeasured(['run', file, '--home', home, '--no-dashboard'], dir, { HOME: path.join(dir, 'user-home') });
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(readRows(home).map((row) => row.verdict), ['PASS', 'PASS'], r.all);
    assert.ok(peakKb < ORCHESTRATOR_PEAK_KB, `the orchestrator's peak RSS was ${Math.round(peakKb / 1024)} MB (bound ${ORCHESTRATOR_PEAK_KB / 1024} MB)`);
  });
});
