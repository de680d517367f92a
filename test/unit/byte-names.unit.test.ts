import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bytesOfName, fsPath, hasByteEscape, nameFromBytes, readNames, showName, showPath } from '../../extension/core/fs/byte-names';
import { restoreSnapshot, takeSnapshot } from '../../extension/core/run/dir-snapshot';
import { dirChanges } from '../../extension/core/run/guards/changes';
import { treeHash } from '../../extension/core/run/tree-hash';
import { tempDir } from '../helpers/fixtures';

// fs/byte-names.ts: file names as strings without losing a byte (PEP 383 surrogateescape), and the walks that use them
// (a name that is not valid UTF-8 was skipped, or taken for another file, by Verdict's own walks).

const LATIN1 = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]); // caf\xe9.txt

describe('byte names', () => {
  it('a valid UTF-8 name is the string Node gives; any other bytes round-trip exactly and never collide', () => {
    for (const plain of ['a.txt', 'src/café.txt', '日本/名前', 'emoji 😀', 'ends with \ufffd']) {
      assert.equal(nameFromBytes(Buffer.from(plain)), plain);
      assert.equal(hasByteEscape(plain), false);
      assert.deepEqual(bytesOfName(plain), Buffer.from(plain));
    }
    const seen = new Map<string, string>();
    for (let i = 0; i < 3000; i++) {
      const bytes = crypto.randomBytes(1 + (i % 12));
      const name = nameFromBytes(bytes);
      assert.deepEqual(bytesOfName(name), bytes, `round trip of ${bytes.toString('hex')}`);
      assert.deepEqual(bytesOfName(JSON.parse(JSON.stringify(name)) as string), bytes, 'kept through JSON');
      const other = seen.get(name);
      assert.ok(other === undefined || other === bytes.toString('hex'), `${bytes.toString('hex')} and ${other} share a name`);
      seen.set(name, bytes.toString('hex'));
    }
    // An astral character next to an escaped byte: the pair stays a character, the byte stays a byte.
    const mixed = Buffer.concat([Buffer.from('😀'), Buffer.from([0xff]), Buffer.from('x')]);
    assert.deepEqual(bytesOfName(nameFromBytes(mixed)), mixed);
    assert.equal(hasByteEscape(nameFromBytes(mixed)), true);
  });

  it('fsPath reaches the file by its exact bytes; showName quotes it as git does', () => {
    const dir = tempDir();
    fs.writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), LATIN1]), 'x');
    const [name] = readNames(dir);
    assert.ok(name);
    assert.equal(fs.readFileSync(fsPath(dir, name), 'utf8'), 'x');
    assert.equal(fsPath(dir, 'plain.txt'), path.join(dir, 'plain.txt'));
    assert.equal(showName(name), '"caf\\351.txt"');
    assert.equal(showPath(LATIN1), '"caf\\351.txt"');
    assert.equal(showName('src/café.txt'), 'src/café.txt');
  });

  it("plain mode's walks see such a name: the snapshot puts it back and removes a new one, the guard lists it, the tree hash reads it", () => {
    const dir = tempDir();
    const odd = Buffer.concat([Buffer.from(`${dir}/d`), Buffer.from([0x80])]);
    fs.mkdirSync(odd);
    const file = Buffer.concat([odd, Buffer.from('/'), LATIN1]);
    fs.writeFileSync(file, 'sealed\n');
    const store = path.join(tempDir(), 'store');
    const snap = takeSnapshot(dir, store);
    const before = treeHash(dir);
    fs.writeFileSync(file, 'changed by the check\n');
    assert.notEqual(treeHash(dir), before, 'its content is hashed, not "unreadable"');
    const junk = Buffer.concat([Buffer.from(`${dir}/junk`), Buffer.from([0xff])]);
    fs.writeFileSync(junk, 'junk');
    const changes = dirChanges(snap, dir).map((c) => `${c.status} ${showName(c.path)}`);
    assert.deepEqual(changes, ['modified "d\\200/caf\\351.txt"', 'added "junk\\377"']);
    const report = restoreSnapshot(dir, snap);
    assert.deepEqual(report.removed.map(showName), ['"junk\\377"']);
    assert.deepEqual(report.restored.map(showName), ['"d\\200/caf\\351.txt"']);
    assert.equal(fs.existsSync(junk), false);
    assert.equal(fs.readFileSync(file, 'utf8'), 'sealed\n');
    assert.equal(treeHash(dir), before);
  });
});
