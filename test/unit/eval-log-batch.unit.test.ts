import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { appendEvalRow } from '../../extension/core/store/eval-log';
import { rowHash } from '../../extension/core/store/chain';
import { verifyEvalLog } from '../../extension/core/store/verify-log';
import { sampleRow, tempDir } from '../helpers/fixtures';

describe('eval log: rows handed in together are written under one lock (group commit)', () => {
  it('50 appends at once: each resolves with its own row, the lines are in call order, the chain is intact', async () => {
    const log = path.join(tempDir(), 'runs.jsonl');
    await appendEvalRow(log, sampleRow({ run_id: 'r', task_key: 'first', attempt: 1 }));
    const written = await Promise.all(Array.from({ length: 50 }, (_, n) => appendEvalRow(log, sampleRow({ run_id: 'r', task_key: `t${n}`, attempt: 1 }))));
    written.forEach((row, n) => assert.equal(row.task_key, `t${n}`));
    const lines = fs
      .readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { task_key: string; prev_hash: string | null });
    assert.deepEqual(
      lines.map((l) => l.task_key),
      ['first', ...written.map((r) => r.task_key)],
    );
    // Each row links to the one before it, and what each caller got is exactly its line.
    lines.slice(1).forEach((l, i) => {
      assert.equal(l.prev_hash, rowHash(lines[i]));
      assert.deepEqual(l, written[i]);
    });
    const v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings.slice(0, 3)));
    assert.deepEqual(v.notes, []);
  });

  it('on a disk that fills up mid-batch: every row that failed says so by name, only whole lines remain, the chain is intact', async function () {
    const dir = tempDir();
    try {
      // A 64 KiB tmpfs: writes fail part-way with ENOSPC, as on a real full disk. Needs root (CAP_SYS_ADMIN).
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'pipe' });
    } catch (e) {
      console.log(`      (skipped: cannot mount a tmpfs here: ${(e as Error).message.split('\n')[0]})`);
      this.skip();
    }
    try {
      const log = path.join(dir, 'runs.jsonl');
      const results = await Promise.allSettled(
        Array.from({ length: 60 }, (_, n) => appendEvalRow(log, sampleRow({ run_id: 'r', task_key: `t${n}`, attempt: 1, spec: 'x'.repeat(3000) }))),
      );
      const failed = results.flatMap((r, n) => (r.status === 'rejected' ? [[n, (r.reason as Error).message] as const] : []));
      assert.ok(failed.length > 0, 'the tmpfs never filled');
      for (const [n, message] of failed)
        assert.match(message, new RegExp(`cannot append the eval row of r/t${n} attempt 1 to ${log}: no space left on device; the row was not written`));
      const text = fs.readFileSync(log, 'utf8');
      assert.ok(text.endsWith('\n'));
      const keys = text
        .slice(0, -1)
        .split('\n')
        .map((l) => (JSON.parse(l) as { task_key: string }).task_key);
      assert.deepEqual(
        keys,
        results.flatMap((r, n) => (r.status === 'fulfilled' ? [`t${n}`] : [])),
      );
      const v = await verifyEvalLog(log);
      assert.equal(v.intact, true, JSON.stringify(v.findings.slice(0, 3)));
    } finally {
      execFileSync('umount', [dir]);
    }
  });

  it('a last line left without its newline (a writer killed inside its write) swallows no later row: it stays a line of its own', async () => {
    const log = path.join(tempDir(), 'runs.jsonl');
    await appendEvalRow(log, sampleRow({ run_id: 'r', task_key: 'a', attempt: 1 }));
    // What a write(2) stopped by SIGKILL between pages leaves: the first bytes of a row, no newline.
    fs.appendFileSync(log, JSON.stringify(sampleRow({ run_id: 'r', task_key: 'torn', attempt: 1 })).slice(0, 100));
    await Promise.all(['b', 'c'].map((k) => appendEvalRow(log, sampleRow({ run_id: 'r', task_key: k, attempt: 1 }))));
    const keys = fs
      .readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        try {
          return (JSON.parse(l) as { task_key: string }).task_key;
        } catch {
          return '(torn)';
        }
      });
    assert.deepEqual(keys, ['a', '(torn)', 'b', 'c']);
    const v = await verifyEvalLog(log);
    assert.equal(v.intact, true, JSON.stringify(v.findings.slice(0, 3)));
    assert.deepEqual(v.corrupt, [2]);
  });

  it('a row cut just before its newline is whole again after the next append, and stays in its chain', async () => {
    const log = path.join(tempDir(), 'runs.jsonl');
    await appendEvalRow(log, sampleRow({ run_id: 'r', task_key: 'a', attempt: 1 }));
    const text = fs.readFileSync(log, 'utf8');
    fs.writeFileSync(log, text.slice(0, -1)); // the head file still says the longer size: as after a crash before the disk had it all
    await appendEvalRow(log, sampleRow({ run_id: 'r', task_key: 'b', attempt: 1 }));
    const lines = fs
      .readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { task_key: string; prev_hash: string | null });
    assert.deepEqual(
      lines.map((l) => l.task_key),
      ['a', 'b'],
    );
    assert.equal(lines[1]!.prev_hash, rowHash(lines[0]));
  });
});
