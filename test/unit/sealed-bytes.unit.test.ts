import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeRepo, tempDir } from '../helpers/fixtures';
import { parseRawZ, workingBlobId, writeSealedBytes } from '../../extension/core/git/sealed-bytes';
import { gitRunner } from '../../extension/core/git/safe-git';

// git/sealed-bytes.ts: the check reads the files as the sealed commit holds them. Blob ids against git's own
// `hash-object --no-filters`, the raw diff parser against git's output, and the rewrite of what git converted.

describe('sealed bytes', () => {
  it('a working file\'s blob id is git\'s hash-object --no-filters (a file, an empty one, a large one, a symlink)', () => {
    const dir = makeRepo(path.join(tempDir(), 'r'));
    fs.writeFileSync(path.join(dir, 'a.txt'), 'a\r\n$Id: x $\n');
    fs.writeFileSync(path.join(dir, 'empty'), '');
    fs.writeFileSync(path.join(dir, 'big'), Buffer.alloc(3 * (1 << 20) + 7, 1));
    fs.symlinkSync('a.txt', path.join(dir, 'link'));
    for (const f of ['a.txt', 'empty', 'big']) assert.equal(workingBlobId(path.join(dir, f), 40), git(dir, 'hash-object', '--no-filters', f), f);
    assert.equal(workingBlobId(path.join(dir, 'link'), 40), blobOfText(dir, 'a.txt'), 'a symlink: the blob of its target text');
    assert.equal(workingBlobId(path.join(dir, 'missing'), 40), null);
    assert.equal(workingBlobId(dir, 40), null, 'a folder has no blob');
    assert.match(workingBlobId(path.join(dir, 'a.txt'), 64) ?? '', /^[0-9a-f]{64}$/);
  });

  it('parses diff-index -z records, names with tabs and newlines included', () => {
    const dir = makeRepo(path.join(tempDir(), 'r'), { 'keep.txt': 'k\n', 'gone.txt': 'g\n' });
    fs.writeFileSync(path.join(dir, 'we\tird\nname.txt'), 'w\n');
    fs.writeFileSync(path.join(dir, 'keep.txt'), 'changed\n');
    fs.rmSync(path.join(dir, 'gone.txt'));
    git(dir, 'add', '-A');
    const out = git(dir, 'diff-index', '--cached', '-z', 'HEAD');
    const parsed = parseRawZ(`${out}\0`);
    assert.deepEqual(parsed.map((c) => [c.status, c.path]).sort(), [['A', 'we\tird\nname.txt'], ['D', 'gone.txt'], ['M', 'keep.txt']]);
    assert.equal(parsed.find((c) => c.path === 'keep.txt')?.dstId, git(dir, 'rev-parse', ':keep.txt'));
  });

  it('writes again only what git converted (ident, text), as a checkout writes it; the index\'s stat data follows', async () => {
    const dir = makeRepo(path.join(tempDir(), 'r'), { 'base.txt': 'b\n' });
    fs.writeFileSync(path.join(dir, '.gitattributes'), 'id.txt ident\ncr.txt text\n');
    fs.writeFileSync(path.join(dir, 'id.txt'), '$Id: the answer is 42 $\n');
    fs.writeFileSync(path.join(dir, 'cr.txt'), 'a\r\n');
    fs.writeFileSync(path.join(dir, 'plain.txt'), 'p\r\n');
    git(dir, 'add', '-A');
    const before = fs.statSync(path.join(dir, 'plain.txt')).mtimeMs;
    const rewritten = await writeSealedBytes(gitRunner(dir), dir, parseRawZ(git(dir, 'diff-index', '--cached', '-z', 'HEAD')));
    assert.deepEqual(rewritten, ['cr.txt', 'id.txt']);
    assert.match(fs.readFileSync(path.join(dir, 'id.txt'), 'utf8'), /^\$Id: [0-9a-f]{40} \$\n$/);
    assert.equal(fs.readFileSync(path.join(dir, 'cr.txt'), 'utf8'), 'a\n');
    assert.equal(fs.readFileSync(path.join(dir, 'plain.txt'), 'utf8'), 'p\r\n', 'a file git took as it is stays as it is');
    assert.equal(fs.statSync(path.join(dir, 'plain.txt')).mtimeMs, before);
    assert.equal(git(dir, 'diff-files', '--name-only'), '', 'the index matches the files written again');
  });
});

/** git's blob id of the text `target` (what a symlink to it holds). */
function blobOfText(dir: string, target: string): string {
  fs.writeFileSync(path.join(dir, '.target'), target);
  return git(dir, 'hash-object', '--no-filters', '.target');
}
