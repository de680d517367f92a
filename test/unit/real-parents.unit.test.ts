import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeParentsReal, parentsAreReal } from '../../extension/core/fs/real-parents';
import { tempDir } from '../helpers/fixtures';

// fs/real-parents.ts: the folders between a worker-writable tree's root and an entry the orchestrator writes are
// checked with lstat one by one; a link a worker put in place of one is removed, never followed.

describe('real parents: no write of the orchestrator goes through a link a worker made', () => {
  it('a symlink, a file and a missing folder on the way: the link and the file go (not what the link points at), real folders come', () => {
    const root = tempDir();
    const outside = tempDir();
    fs.writeFileSync(path.join(outside, 'keep.txt'), "the user's");
    fs.mkdirSync(path.join(root, 'a'));
    fs.symlinkSync(outside, path.join(root, 'a', 'b'));
    assert.equal(parentsAreReal(root, 'a/b/keep.txt'), false);
    assert.deepEqual(makeParentsReal(root, 'a/b/c/keep.txt'), ['a/b']);
    assert.equal(fs.lstatSync(path.join(root, 'a', 'b')).isDirectory(), true);
    assert.equal(fs.lstatSync(path.join(root, 'a', 'b', 'c')).isDirectory(), true);
    assert.deepEqual(fs.readdirSync(outside), ['keep.txt']);
    assert.equal(fs.readFileSync(path.join(outside, 'keep.txt'), 'utf8'), "the user's");
    assert.equal(parentsAreReal(root, 'a/b/c/keep.txt'), true);

    fs.writeFileSync(path.join(root, 'f'), 'a file where a folder was');
    assert.deepEqual(makeParentsReal(root, 'f/x'), ['f']);
    assert.equal(fs.lstatSync(path.join(root, 'f')).isDirectory(), true);
  });

  it('real folders are left as they are; the root itself is not checked; a path with .. is refused', () => {
    const base = tempDir();
    fs.mkdirSync(path.join(base, 'real', 'x'), { recursive: true });
    fs.writeFileSync(path.join(base, 'real', 'x', 'kept'), 'k');
    // The root may be reached through a link of the user's (a home under /usr/home).
    fs.symlinkSync(path.join(base, 'real'), path.join(base, 'root'));
    const root = path.join(base, 'root');
    assert.equal(parentsAreReal(root, 'x/file'), true);
    assert.deepEqual(makeParentsReal(root, 'x/file'), []);
    assert.equal(fs.readFileSync(path.join(root, 'x', 'kept'), 'utf8'), 'k');
    assert.deepEqual(makeParentsReal(root, 'top-level-file'), []);
    assert.equal(parentsAreReal(root, '../real/x/file'), false);
    assert.throws(() => makeParentsReal(root, '../real/x/file'), /cannot be confined/);
  });
});
