import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repairedWords, repairRegistrationHeads } from '../../extension/core/git/registration-heads';
import { runGit } from '../../extension/core/git/safe-git';
import { git, makeRepo, tempDir } from '../helpers/fixtures';

// git/registration-heads.ts: a registration HEAD a worker made into something git waits on or reads without end is
// replaced by a detached HEAD, so the repository's other adds go on.

describe('registration heads: what a worker put in place of its HEAD is replaced, a ref is left', function () {
  this.timeout(60000);

  /** A repository with registrations a…g (`git worktree add --detach`), its common dir and HEAD's commit. */
  function repoWithRegistrations() {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'));
    const sha = git(root, 'rev-parse', 'HEAD').trim();
    for (const n of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) git(root, 'worktree', 'add', '--quiet', '--detach', path.join(dir, n), sha);
    return { dir, root, sha, worktrees: path.join(root, '.git', 'worktrees') };
  }

  it('a FIFO, a symlink out (also one starting refs/../), a folder and a huge file are replaced; a detached HEAD, a branch and a refs/ symlink are left; the next add does not hang', async () => {
    const { dir, root, sha, worktrees } = repoWithRegistrations();
    const head = (n: string) => path.join(worktrees, n, 'HEAD');
    fs.rmSync(head('a'));
    execFileSync('mkfifo', [head('a')]);
    fs.rmSync(head('b'));
    fs.symlinkSync('/dev/zero', head('b'));
    fs.rmSync(head('c'));
    fs.mkdirSync(head('c'));
    fs.writeFileSync(head('d'), `${sha}\n${'x'.repeat(5000)}`);
    fs.writeFileSync(head('e'), 'ref: refs/heads/main\n');
    fs.rmSync(head('f'));
    fs.symlinkSync('refs/heads/main', head('f'));
    // A link that starts like a ref but climbs out (refs/ made by the worker in its admin dir): git follows it as a path.
    fs.mkdirSync(path.join(worktrees, 'g', 'refs'));
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    fs.rmSync(head('g'));
    fs.symlinkSync(`refs/../../../../../fifo`, head('g'));
    // Before: git's add opens a's FIFO and waits (stopped here after 1.5 s).
    const stuck = await runGit(root, ['worktree', 'add', '--quiet', '--detach', path.join(dir, 'x'), sha], {
      noDrivers: true,
      quiet: true,
      timeoutMs: 1500,
    }).then(
      () => null,
      (e: Error) => e,
    );
    assert.match(stuck?.message ?? '', /timed out after 1500 ms/);

    const repaired = repairRegistrationHeads(path.join(root, '.git'), sha);
    assert.deepEqual(
      repaired.map((r) => r.name),
      ['a', 'b', 'c', 'd', 'g'],
    );
    assert.equal(repairedWords(repaired), 'a (fifo), b (symlink -> /dev/zero), c (folder), d (5041 bytes), g (symlink -> refs/../../../../../fifo)');
    for (const n of ['a', 'b', 'c', 'd', 'g']) assert.equal(fs.readFileSync(head(n), 'utf8'), `${sha}\n`, n);
    assert.equal(fs.readFileSync(head('e'), 'utf8'), 'ref: refs/heads/main\n');
    assert.equal(fs.readlinkSync(head('f')), 'refs/heads/main');
    assert.deepEqual(
      fs.readdirSync(path.join(worktrees, 'a')).filter((f) => f.includes('verdict')),
      [],
      'no temporary file is left',
    );
    await runGit(root, ['worktree', 'add', '--quiet', '--detach', path.join(dir, 'y'), sha], { noDrivers: true, quiet: true, timeoutMs: 30000 });
    assert.ok(fs.existsSync(path.join(dir, 'y', 'README.md')));
    assert.deepEqual(repairRegistrationHeads(path.join(root, '.git'), sha), [], 'a second pass finds nothing');
  });

  it('a repository without registrations: nothing to repair', () => {
    const root = makeRepo(path.join(tempDir(), 'repo'));
    assert.deepEqual(repairRegistrationHeads(path.join(root, '.git'), git(root, 'rev-parse', 'HEAD').trim()), []);
  });
});
