import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeRepo, tempDir } from '../helpers/fixtures';
import { execFileSync } from 'node:child_process';
import { keepParentEntries, parseRawZ, unchangedFromParent, workingBlobId, writeSealedBytes } from '../../extension/core/git/sealed-bytes';
import { gitRunner } from '../../extension/core/git/safe-git';

// git/sealed-bytes.ts: the check reads the files as the sealed commit holds them. Blob ids against git's own
// `hash-object --no-filters`, the raw diff parser against git's output, and the rewrite of what git converted.

describe('sealed bytes', () => {
  it("a working file's blob id is git's hash-object --no-filters (a file, an empty one, a large one, a symlink)", () => {
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
    assert.deepEqual(parsed.map((c) => [c.status, c.path]).sort(), [
      ['A', 'we\tird\nname.txt'],
      ['D', 'gone.txt'],
      ['M', 'keep.txt'],
    ]);
    assert.equal(parsed.find((c) => c.path === 'keep.txt')?.dstId, git(dir, 'rev-parse', ':keep.txt'));
  });

  it("writes again only what git converted (ident, text), as a checkout writes it; the index's stat data follows", async () => {
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

  // Before: the paths of the raw diff were decoded as UTF-8 and handed back to git and the file system, so a name that
  // is not valid UTF-8 (caf\xe9.txt) was hashed as a missing file and checkout-index failed "not in the cache": the
  // seal was an ERROR and the work lost.
  it('a name that is not valid UTF-8 is parsed, hashed and written again by its exact bytes', async () => {
    const dir = makeRepo(path.join(tempDir(), 'r'), { 'base.txt': 'b\n' });
    const name = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]);
    const abs = Buffer.concat([Buffer.from(`${dir}/`), name]);
    fs.writeFileSync(path.join(dir, '.gitattributes'), '*.txt text\n');
    fs.writeFileSync(abs, 'caf\xe9\r\n', 'latin1');
    fs.writeFileSync(path.join(dir, 'plain.txt'), 'p\n');
    git(dir, 'add', '-A');
    const changes = parseRawZ(execFileSync('git', ['diff-index', '--cached', '-z', 'HEAD'], { cwd: dir }));
    const odd = changes.find((c) => c.bytes.equals(name));
    assert.ok(odd, "the raw record keeps the name's bytes");
    assert.equal(odd.path, 'caf\ufffd.txt', 'its text form is for messages only');
    assert.deepEqual(await writeSealedBytes(gitRunner(dir), dir, changes), ['"caf\\351.txt"']);
    assert.deepEqual(fs.readFileSync(abs), Buffer.from('caf\xe9\n', 'latin1'), 'written again as the commit holds it (LF)');
    assert.equal(git(dir, 'diff-files', '--name-only'), '');
  });

  // Before: a file the start commit holds with CRLF, under a `text` attribute added later, was staged anew by the
  // seal's `add -A` (git's racy check converts it and sees a change), committed as LF and written again as LF, though
  // the worker never touched it: the PASS commit changed a file of the start commit, and a protected test FAILed.
  it("a file whose bytes are the parent's blob is kept as the parent has it, whatever git's conversion staged", async () => {
    const dir = makeRepo(path.join(tempDir(), 'r'), { 'crlf.txt': 'a\r\nb\r\n', 'mine.txt': 'm\r\n' });
    fs.writeFileSync(path.join(dir, '.gitattributes'), '*.txt text\n');
    git(dir, 'add', '.gitattributes');
    git(dir, 'commit', '-q', '-m', 'attributes');
    fs.writeFileSync(path.join(dir, 'mine.txt'), 'changed\r\n');
    git(dir, 'add', '--renormalize', '.');
    const changes = parseRawZ(execFileSync('git', ['diff-index', '--cached', '-z', 'HEAD'], { cwd: dir }));
    assert.deepEqual(changes.map((c) => c.path).sort(), ['crlf.txt', 'mine.txt'], 'git staged the untouched file converted');
    const kept = unchangedFromParent(dir, changes);
    assert.deepEqual(
      kept.map((c) => c.path),
      ['crlf.txt'],
    );
    await keepParentEntries(gitRunner(dir), kept);
    assert.equal(git(dir, 'diff-index', '--cached', '--name-only', 'HEAD'), 'mine.txt', 'the index holds crlf.txt as committed');
    assert.deepEqual(
      await writeSealedBytes(
        gitRunner(dir),
        dir,
        changes.filter((c) => !kept.includes(c)),
      ),
      ['mine.txt'],
    );
    assert.equal(fs.readFileSync(path.join(dir, 'crlf.txt'), 'utf8'), 'a\r\nb\r\n', 'its bytes are left alone');
    assert.equal(fs.readFileSync(path.join(dir, 'mine.txt'), 'utf8'), 'changed\n', "the worker's change is converted as before");
  });
});

/** git's blob id of the text `target` (what a symlink to it holds). */
function blobOfText(dir: string, target: string): string {
  fs.writeFileSync(path.join(dir, '.target'), target);
  return git(dir, 'hash-object', '--no-filters', '.target');
}
