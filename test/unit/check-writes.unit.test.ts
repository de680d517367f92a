import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { discardCheckWrites, loadSealedState, putBackJudged, saveSealedState, sealedDir } from '../../extension/core/run/check-writes';
import { loadSnapshot, saveSnapshot, SNAPSHOT_FILE_BYTES, takeSnapshot } from '../../extension/core/run/dir-snapshot';
import { tempDir } from '../helpers/fixtures';

// What a later orchestrator of the same run (verdict resume) reads back: the guards' base and the last sealed tree.

describe('check writes: kept for a resumed run', () => {
  it('a plain sealed state survives save and load, and still puts the dir back', async () => {
    const dir = tempDir();
    const task = path.join(dir, 'task');
    fs.mkdirSync(task);
    fs.writeFileSync(path.join(task, 'work.txt'), "the worker's\n");
    const file = path.join(dir, 'sealed.json');
    saveSealedState(file, sealedDir(task, path.join(dir, 'run')));
    fs.writeFileSync(path.join(task, 'work.txt'), "the check's\n");
    fs.writeFileSync(path.join(task, 'token'), '');
    const loaded = loadSealedState(file);
    assert.ok(loaded);
    assert.match(String(await discardCheckWrites(task, null, loaded)), /removed token; put back work\.txt/);
    assert.deepEqual(fs.readdirSync(task), ['work.txt']);
    assert.equal(fs.readFileSync(path.join(task, 'work.txt'), 'utf8'), "the worker's\n");
    saveSealedState(file, null);
    assert.equal(fs.existsSync(file), false, 'consumed: a later resume does not put back a stale tree');
  });

  it('a worktree sealed state and a snapshot round-trip; a missing or garbled file reads as none', () => {
    const dir = tempDir();
    const file = path.join(dir, 'sealed.json');
    const state = { kind: 'commit' as const, tree: { sha: 'a'.repeat(40), index: '/x/sealed.index', ignored: ['node_modules/'] } };
    saveSealedState(file, state);
    assert.deepEqual(loadSealedState(file), state);
    fs.writeFileSync(file, '{"kind":');
    assert.equal(loadSealedState(file), null);
    assert.equal(loadSealedState(path.join(dir, 'none.json')), null);
    const task = path.join(dir, 'task');
    fs.mkdirSync(task);
    fs.writeFileSync(path.join(task, 'a.txt'), 'a');
    const snap = takeSnapshot(task, path.join(dir, 'store'));
    saveSnapshot(snap, path.join(dir, 'base.json'));
    assert.deepEqual(loadSnapshot(path.join(dir, 'base.json')), snap);
  });
});

describe('check writes: plain mode after a passing judge (putBackJudged)', () => {
  it('puts the task dir back to the sealed tree and says what it did; a file it cannot put back fails the PASS; worktree mode is left alone', () => {
    const dir = tempDir();
    const task = path.join(dir, 'task');
    fs.mkdirSync(task);
    fs.writeFileSync(path.join(task, 'answer.sh'), 'echo 42\n');
    // Over the copies' limit: hashed at the seal, never copied.
    fs.writeFileSync(path.join(task, 'big.bin'), Buffer.alloc(SNAPSHOT_FILE_BYTES + 1, 1));
    const sealed = sealedDir(task, path.join(dir, 'run'));
    fs.writeFileSync(path.join(task, 'answer.sh'), 'echo 41\n');
    fs.writeFileSync(path.join(task, 'cache'), 'x');
    const back = putBackJudged(task, sealed, 'the check');
    assert.equal(back.failure, null);
    assert.match(String(back.note), /what the check wrote in the task dir was discarded .*removed cache; put back answer\.sh/);
    assert.equal(fs.readFileSync(path.join(task, 'answer.sh'), 'utf8'), 'echo 42\n');
    assert.deepEqual(putBackJudged(task, sealed, 'the check'), { note: null, failure: null }, 'nothing to put back the second time');
    fs.writeFileSync(path.join(task, 'big.bin'), Buffer.alloc(SNAPSHOT_FILE_BYTES + 1, 2));
    assert.match(String(putBackJudged(task, sealed, 'the suite').failure), /^the suite passed, but it changed big\.bin and the seal kept no copy/);
    assert.deepEqual(putBackJudged(task, { kind: 'commit', tree: { sha: 'a'.repeat(40), index: '/x', ignored: [] } }, 'the check'), {
      note: null,
      failure: null,
    });
    assert.deepEqual(putBackJudged(task, null, 'the check'), { note: null, failure: null });
  });
});
