import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { withLock, withSharedLock } from '../../extension/core/fs/lock';
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

  const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

  it('shared callers run side by side under one hold of the lock, and it is let go after the last', async () => {
    const file = path.join(tempDir(), 'verdict-worktree');
    let inside = 0;
    let most = 0;
    const seen: boolean[] = [];
    await Promise.all(
      [0, 1, 2, 3].map((i) =>
        withSharedLock(file, async () => {
          most = Math.max(most, ++inside);
          seen.push(fs.existsSync(`${file}.lock`));
          await tick(10 + i);
          inside--;
        }),
      ),
    );
    assert.equal(most, 4, 'the shared callers did not overlap');
    assert.deepEqual(seen, [true, true, true, true], 'a shared caller ran without the lock held');
    assert.equal(fs.existsSync(`${file}.lock`), false);
  });

  it('an exclusive caller waits for the running batch, and shared callers after it wait for it', async () => {
    const file = path.join(tempDir(), 'verdict-worktree');
    const order: string[] = [];
    const shared = (name: string) =>
      withSharedLock(file, async () => {
        order.push(`start ${name}`);
        await tick(15);
        order.push(`end ${name}`);
      });
    const first = [shared('a'), shared('b')];
    await tick(1);
    const exclusive = withLock(file, async () => {
      order.push('start x');
      await tick(5);
      order.push('end x');
    });
    const later = shared('c');
    await Promise.all([...first, exclusive, later]);
    assert.deepEqual(order.slice(0, 2).sort(), ['start a', 'start b']);
    const x = order.indexOf('start x');
    assert.ok(order.indexOf('end a') < x && order.indexOf('end b') < x, `x ran beside a shared caller: ${order.join(', ')}`);
    assert.equal(order[x + 1], 'end x');
    assert.equal(order[x + 2], 'start c', `c did not wait for x: ${order.join(', ')}`);
  });

  it('a batch waits for a holder in another process, and an error in one member leaves the others and the lock right', async () => {
    const file = path.join(tempDir(), 'verdict-worktree');
    const other = await lockfile.lock(file, { realpath: false, stale: 30_000 });
    let ran = 0;
    const ok = withSharedLock(file, async () => {
      ran++;
      await tick(10);
      return 'ok';
    });
    const bad = withSharedLock(file, async () => {
      ran++;
      throw new Error('boom');
    });
    for (let i = 0; i < 4; i++) await tick(30);
    assert.equal(ran, 0, 'a shared caller ran while another holder had the lock');
    await other();
    await assert.rejects(bad, /boom/);
    assert.equal(await ok, 'ok');
    assert.equal(ran, 2);
    assert.equal(fs.existsSync(`${file}.lock`), false);
    assert.equal(await withLock(file, async () => 'free again'), 'free again');
  });
});
