import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { labOf, tailBytes } from '../../extension/core/store/eval-row';
import { resolveIdentity } from '../../extension/core/host/identity';
import { StateFile, type RunState } from '../../extension/core/live/state';
import { newRunId } from '../../extension/core/run/runner';
import { tempDir } from '../helpers/fixtures';

describe('records', () => {
  it('labOf reads a lab only from lab/model ids', () => {
    assert.equal(labOf('openai/gpt-5-mini'), 'openai');
    assert.equal(labOf('gpt-5-mini'), null);
    assert.equal(labOf(null), null);
  });

  it('tailBytes cuts on a UTF-8 boundary and keeps short text whole', () => {
    assert.equal(tailBytes('héllo', 100), 'héllo');
    const t = tailBytes('aé'.repeat(10), 5);
    assert.ok(Buffer.byteLength(t) <= 5);
    assert.ok(!t.includes('\uFFFD'));
    assert.ok(t.endsWith('aé'));
  });

  it('run ids sort by time and differ', () => {
    const a = newRunId(new Date('2026-01-02T03:04:05Z'));
    assert.match(a, /^20260102-030405-[0-9a-f]{4}$/);
    assert.notEqual(newRunId(), newRunId());
  });

  it('identity: flag > env > .fleet-agent > config > hostname', () => {
    const dir = tempDir();
    const deep = path.join(dir, 'a', 'b');
    fs.mkdirSync(deep, { recursive: true });
    fs.writeFileSync(path.join(dir, '.fleet-agent'), 'from-file\nignored\n');
    assert.deepEqual(resolveIdentity({ flag: 'f', cwd: deep, env: { VERDICT_IDENTITY: 'e' } }), { identity: 'f', source: 'flag' });
    assert.deepEqual(resolveIdentity({ cwd: deep, env: { RINGER_IDENTITY: 'r' } }), { identity: 'r', source: 'env' });
    assert.deepEqual(resolveIdentity({ cwd: deep, env: {}, configDefault: 'c' }), { identity: 'from-file', source: 'file' });
    const bare = tempDir();
    assert.deepEqual(resolveIdentity({ cwd: bare, env: {}, configDefault: 'c' }), { identity: 'c', source: 'config' });
    assert.equal(resolveIdentity({ cwd: bare, env: {} }).source, 'hostname');
  });

  it('state file writes are atomic renames of whole files, in order', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.json');
    const state = { version: 1, tasks: [] as unknown[], runId: 'r' } as unknown as RunState;
    const sf = new StateFile(file, state);
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 50; i++) {
      (state.tasks as unknown[]).push(i);
      writes.push(sf.save());
    }
    await Promise.all(writes);
    const final = JSON.parse(fs.readFileSync(file, 'utf8')) as RunState;
    assert.equal(final.tasks.length, 50);
    assert.deepEqual(fs.readdirSync(dir), ['state.json']);
  });

  it('a burst of saves coalesces into at most two writes, the last holding every change', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.json');
    const state = { version: 1, tasks: [] as unknown[], runId: 'r' } as unknown as RunState;
    const sf = new StateFile(file, state);
    let renames = 0;
    const watcher = fs.watch(dir, (event, name) => {
      if (event === 'rename' && name === 'state.json') renames++;
    });
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 200; i++) {
      (state.tasks as unknown[]).push(i);
      writes.push(sf.save());
    }
    await Promise.all(writes);
    await new Promise((r) => setTimeout(r, 50));
    watcher.close();
    assert.equal((JSON.parse(fs.readFileSync(file, 'utf8')) as RunState).tasks.length, 200);
    assert.ok(renames >= 1 && renames <= 2, `${renames} writes for 200 saves`);
  });

  it('a save soon after a write waits for its turn (the gap between writes), and close() writes it at once', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.json');
    const state = { version: 1, tasks: [] as unknown[], runId: 'r' } as unknown as RunState;
    // A gap no test run reaches: the second save can only be written by close().
    const sf = new StateFile(file, state, 3_600_000);
    (state.tasks as unknown[]).push('first');
    await sf.save();
    assert.deepEqual((JSON.parse(fs.readFileSync(file, 'utf8')) as RunState).tasks, ['first']);
    (state.tasks as unknown[]).push('second');
    let written = false;
    const second = sf.save().then(() => (written = true));
    (state.tasks as unknown[]).push('third');
    const third = sf.save();
    await new Promise((r) => setImmediate(r));
    assert.equal(written, false, 'the second write waits for the gap');
    assert.deepEqual((JSON.parse(fs.readFileSync(file, 'utf8')) as RunState).tasks, ['first']);
    await sf.close();
    await Promise.all([second, third]);
    assert.deepEqual((JSON.parse(fs.readFileSync(file, 'utf8')) as RunState).tasks, ['first', 'second', 'third']);
    assert.deepEqual(fs.readdirSync(dir), ['state.json']);
  });

  it("an urgent save (a worker's pid) does not wait for the gap, even behind a save that waits", async () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.json');
    const state = { version: 1, tasks: [] as unknown[], runId: 'r' } as unknown as RunState;
    const sf = new StateFile(file, state, 3_600_000);
    await sf.save();
    (state.tasks as unknown[]).push('queued');
    const waiting = sf.save();
    (state.tasks as unknown[]).push('pid');
    await sf.save(true);
    await waiting;
    assert.deepEqual((JSON.parse(fs.readFileSync(file, 'utf8')) as RunState).tasks, ['queued', 'pid']);
    await sf.close();
  });
});
