import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { appendEvalRow } from '../../extension/core/store/eval-log';
import { sampleRow, tempDir } from '../helpers/fixtures';

describe('eval log on a disk that fills up mid-row', function () {
  let mountPoint: string | null = null;

  before(function () {
    const dir = tempDir();
    try {
      // A 64 KiB tmpfs: writes fail part-way with ENOSPC, as on a real full disk. Needs root (CAP_SYS_ADMIN).
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'pipe' });
      mountPoint = dir;
    } catch (e) {
      console.log(
        `      (skipped: cannot mount a tmpfs here: ${(e as Error).message.split('\n')[0]}; the /dev/full case in test/e2e/faults.e2e.test.ts still runs)`,
      );
      this.skip();
    }
  });
  after(() => {
    if (mountPoint) execFileSync('umount', [mountPoint]);
  });

  it('the failing row is cut back out: a clear error, only whole lines remain', async () => {
    const log = path.join(mountPoint as string, 'runs.jsonl');
    const row = (n: number) => sampleRow({ run_id: 'r', task_key: `t${n}`, attempt: 1, spec: 'x'.repeat(3000) });
    let n = 0;
    let error: Error | null = null;
    while (!error && n < 1000) {
      try {
        await appendEvalRow(log, row(n));
        n++;
      } catch (e) {
        error = e as Error;
      }
    }
    assert.ok(error, 'the tmpfs never filled');
    assert.match(error.message, new RegExp(`cannot append the eval row of r/t${n} attempt 1 to ${log}: no space left on device; the row was not written`));
    const text = fs.readFileSync(log, 'utf8');
    assert.ok(text.endsWith('\n'));
    const lines = text.slice(0, -1).split('\n');
    assert.equal(lines.length, n);
    lines.forEach((l, i) => assert.equal((JSON.parse(l) as { task_key: string }).task_key, `t${i}`));
  });
});
