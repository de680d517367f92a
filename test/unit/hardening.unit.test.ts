import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { printable } from '../../extension/cli/format';
import { treeHash, TREE_HASH_CONTENT_BYTES } from '../../extension/core/run/tree-hash';
import { tempDir } from '../helpers/fixtures';

describe('hardening against hostile output and trees', () => {
  it('terminal control characters in a check\'s output are shown as ?, never sent to the terminal', () => {
    assert.equal(printable('ok\u001b[2K\rall good\u0007\u009b'), 'ok?[2K?all good??');
    assert.equal(printable('tabs\tstay'), 'tabs\tstay');
  });

  it('the plain-mode tree hash reads small files whole and huge ones by size and mtime (no minutes-long stall)', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'a.txt'), 'one\n');
    const big = path.join(dir, 'big.bin');
    fs.writeFileSync(big, '');
    fs.truncateSync(big, TREE_HASH_CONTENT_BYTES * 64);
    const before = treeHash(dir);
    fs.writeFileSync(path.join(dir, 'a.txt'), 'two\n');
    assert.notEqual(treeHash(dir), before, 'a changed small file changes the hash');
    const again = treeHash(dir);
    fs.truncateSync(big, TREE_HASH_CONTENT_BYTES * 64 + 1);
    assert.notEqual(treeHash(dir), again, 'a huge file that changed size changes the hash');
  });
});
