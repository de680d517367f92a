import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { withLock } from '../../extension/core/fs/lock';
import { tempDir } from '../helpers/fixtures';

describe('withLock (fs/lock.ts)', () => {
  it('a free lock is taken at once and released after fn, even when fn throws', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    assert.equal(await withLock(file, async () => (fs.existsSync(`${file}.lock`) ? 'held' : 'not held')), 'held');
    assert.equal(fs.existsSync(`${file}.lock`), false);
    await assert.rejects(
      withLock(file, async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(fs.existsSync(`${file}.lock`), false);
  });

  it('a lock held by another holder is waited for: fn runs only after it is released', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    const other = await lockfile.lock(file, { realpath: false, stale: 30_000 });
    let ran = false;
    const waiting = withLock(file, async () => {
      ran = true;
      return fs.existsSync(`${file}.lock`);
    });
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 30));
    assert.equal(ran, false, 'fn ran while another holder had the lock');
    await other();
    assert.equal(await waiting, true);
    assert.equal(ran, true);
    assert.equal(fs.existsSync(`${file}.lock`), false);
  });

  it('a stale lock (its holder died long ago) is taken over', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    fs.mkdirSync(`${file}.lock`);
    const old = new Date(Date.now() - 120_000);
    fs.utimesSync(`${file}.lock`, old, old);
    assert.equal(await withLock(file, async () => 'ran'), 'ran');
    assert.equal(fs.existsSync(`${file}.lock`), false);
  });

  it('callers in one process run one at a time, in order', async () => {
    const file = path.join(tempDir(), 'runs.jsonl');
    const order: string[] = [];
    await Promise.all(
      [0, 1, 2].map((i) =>
        withLock(file, async () => {
          order.push(`start ${i}`);
          await new Promise((r) => setTimeout(r, 5));
          order.push(`end ${i}`);
        }),
      ),
    );
    assert.deepEqual(order, ['start 0', 'end 0', 'start 1', 'end 1', 'start 2', 'end 2']);
  });
});
