import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeFreshDir } from '../../extension/core/process/top-dir';
import { tempDir } from '../helpers/fixtures';

// makeFreshDir (process/top-dir.ts): a folder made under a random name, then renamed into place.
describe('makeFreshDir', () => {
  it('makes the folder, empty, and leaves no folder under its temporary name', () => {
    const root = tempDir();
    const dir = path.join(root, 't0');
    makeFreshDir(dir);
    assert.ok(fs.statSync(dir).isDirectory());
    assert.deepEqual(fs.readdirSync(dir), []);
    assert.deepEqual(fs.readdirSync(root), ['t0']);
  });

  it('never replaces what is there, an empty folder included (rename(2) would): EEXIST, nothing left beside it', () => {
    const root = tempDir();
    const empty = path.join(root, 'empty');
    fs.mkdirSync(empty);
    const inode = fs.statSync(empty).ino;
    assert.throws(
      () => makeFreshDir(empty),
      (e: NodeJS.ErrnoException) => e.code === 'EEXIST',
    );
    assert.equal(fs.statSync(empty).ino, inode);
    const file = path.join(root, 'file');
    fs.writeFileSync(file, 'kept');
    assert.throws(
      () => makeFreshDir(file),
      (e: NodeJS.ErrnoException) => e.code === 'EEXIST',
    );
    assert.equal(fs.readFileSync(file, 'utf8'), 'kept');
    assert.deepEqual(fs.readdirSync(root).sort(), ['empty', 'file']);
  });

  it('a missing parent: ENOENT, nothing made', () => {
    const root = tempDir();
    assert.throws(
      () => makeFreshDir(path.join(root, 'no', 'such')),
      (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
    );
    assert.deepEqual(fs.readdirSync(root), []);
  });
});
