import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { addWorktree, inspectRepo, sealWorktree } from '../../extension/core/git/worktree';
import { commitDiff } from '../../extension/core/git/diff';
import { diffMaterial, filesMaterial, REVIEW_MATERIAL_BYTES } from '../../extension/core/run/review-material';
import { reviewPrompt, REVIEW_PROMPT_MATERIAL_BYTES } from '../../extension/core/run/review-prompt';
import { git, makeRepo, tempDir } from '../helpers/fixtures';

describe('review material: what reviewers are given', function () {
  this.timeout(60000);

  it('plain mode: every file with its size, then the text ones shown; binaries and .git left out', () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'src'));
    fs.writeFileSync(path.join(dir, 'src', 'add.py'), 'def add(a, b):\n    return a + b\n');
    fs.writeFileSync(path.join(dir, 'blob.bin'), Buffer.from([1, 0, 2]));
    fs.mkdirSync(path.join(dir, '.git'));
    fs.writeFileSync(path.join(dir, '.git', 'config'), 'secret');
    fs.symlinkSync('/etc/passwd', path.join(dir, 'link'));
    const m = filesMaterial(dir);
    assert.equal(m.truncated, false);
    assert.equal(
      m.text,
      '3 file(s):\n  blob.bin (3 bytes)\n  link -> /etc/passwd (0 bytes)\n  src/add.py (32 bytes)\n\n=== src/add.py\ndef add(a, b):\n    return a + b\n',
    );
  });

  it('plain mode: cut at REVIEW_MATERIAL_BYTES, and says so', () => {
    const dir = tempDir();
    for (let i = 0; i < 8; i++) fs.writeFileSync(path.join(dir, `f${i}.txt`), 'x'.repeat(200 * 1024));
    const m = filesMaterial(dir);
    assert.equal(m.truncated, true);
    assert.ok(Buffer.byteLength(m.text) <= REVIEW_MATERIAL_BYTES);
    assert.match(m.text, /^8 file\(s\):/);
  });

  it("worktree mode: the sealed commit against its parent, read by our own git; a hostile repository's diff programs never run", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'a.txt': 'one\n', '.gitattributes': '*.txt diff=evil\n' });
    const pwned = path.join(dir, 'pwned');
    git(repo, 'config', 'diff.external', `touch ${pwned}-external`);
    git(repo, 'config', 'diff.evil.textconv', `touch ${pwned}-textconv; cat`);
    git(repo, 'config', 'diff.evil.command', `touch ${pwned}-command`);
    const info = await inspectRepo(repo, 'HEAD');
    const wt = path.join(dir, 'wt');
    const links = await addWorktree(info, wt, 'verdict/r/t');
    fs.writeFileSync(path.join(wt, 'a.txt'), 'one\ntwo\n');
    const seal = await sealWorktree(links, 'verdict/r/t', path.join(dir, 'seal.index'), 'seal', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid']);
    const m = await diffMaterial(links, seal, 30000);
    assert.match(m.text, /a\.txt \| 1 \+/);
    assert.match(m.text, /^\+two$/m);
    assert.match(m.kind, new RegExp(`${seal.parent.slice(0, 12)} ${seal.sha.slice(0, 12)}`));
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f.startsWith('pwned')),
      [],
    );
    // Cut at the byte limit, on a line.
    const cut = await commitDiff(links, seal.parent, seal.sha, 40, 30000);
    assert.equal(cut.truncated, true);
    assert.ok(cut.text.length <= 40 && cut.text.endsWith('\n'));
    // Nothing changed: no git call, a plain note.
    assert.match((await diffMaterial(links, { ...seal, sha: seal.parent, changed: false }, 30000)).text, /no changes/);
    await assert.rejects(commitDiff(links, seal.parent, 'f'.repeat(40), 1000, 30000), /git diff .* failed/);
  });

  it('the prompt: spec, check, its output and the material; material over 64 KiB is cut there and the file named', () => {
    const base = {
      spec: 'Make add() add.',
      check: 'pytest -q',
      verified: 'add works',
      checkOutput: '1 passed',
      materialFile: '/scratch/review-material.txt',
      taskDir: '/work/t',
    };
    const small = reviewPrompt({ ...base, material: { kind: 'the diff', text: '+return a + b\n', truncated: false } });
    assert.match(small, /in \/work\/t \(read it there/);
    assert.match(small, /<task>\nMake add\(\) add\.\n<\/task>/);
    assert.match(small, /\(it proves: add works\)/);
    assert.match(small, /<(check-output-[0-9a-f]{16})>\n1 passed\n<\/\1>/);
    assert.match(small, /Below is the diff \(also in \/scratch\/review-material\.txt\)/);
    assert.match(small, /<(work-[0-9a-f]{16})>\n\+return a \+ b\n<\/\1>/);
    assert.match(small, /\{"verdict": "approve" \| "changes" \| "reject", "concerns": \["…"\]\}/);
    const big = reviewPrompt({ ...base, material: { kind: 'the diff', text: `${'+line\n'.repeat(30000)}`, truncated: false } });
    assert.match(big, /it is cut here, the whole of it is in the file \/scratch\/review-material\.txt/);
    assert.ok(Buffer.byteLength(big) < REVIEW_PROMPT_MATERIAL_BYTES + 16 * 1024, 'bounded: one argv element');
  });
});
