import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { walkBounded } from '../../extension/core/fs/bounded-walk';
import { tempDir } from '../helpers/fixtures';

describe('walkBounded: a walk in this process, within a budget of entries', () => {
  const names = (found: Buffer[] | null) => (found ?? []).map((b) => path.basename(b.toString())).sort();

  it('offers every entry once, never follows a link, and gives up (null) past its budget', () => {
    const dir = tempDir();
    const outside = tempDir();
    fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
    for (const f of ['x', 'a/y', 'a/b/z']) fs.writeFileSync(path.join(dir, f), '');
    fs.writeFileSync(path.join(outside, 'beyond'), '');
    fs.symlinkSync(outside, path.join(dir, 'link'));
    const files = (_abs: Buffer, kind: { isFile(): boolean }) => kind.isFile();
    assert.deepEqual(names(walkBounded([Buffer.from(dir)], 100, files)), ['x', 'y', 'z']);
    // Entries: x, a, link, y, b, z: six.
    assert.deepEqual(names(walkBounded([Buffer.from(dir)], 6, files)), ['x', 'y', 'z']);
    assert.equal(walkBounded([Buffer.from(dir)], 5, files), null);
  });

  it('an entry whose look-up throws (gone, or EACCES in a folder listed but not searched) is passed over, and the walk goes on', () => {
    const dir = tempDir();
    for (const f of ['one', 'two', 'three']) fs.writeFileSync(path.join(dir, f), '');
    const found = walkBounded([Buffer.from(dir), Buffer.from(path.join(dir, 'missing'))], 100, (abs) => {
      if (abs.toString().endsWith('two')) throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
      return fs.lstatSync(abs).isFile();
    });
    assert.deepEqual(names(found), ['one', 'three']);
  });
});
