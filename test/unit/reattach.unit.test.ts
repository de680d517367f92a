import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { linksFile, saveLinks, trustedLinks } from '../../extension/core/run/reattach';
import { git, makeRepo, tempDir } from '../helpers/fixtures';

describe('taking a task dir over after its orchestrator ended (run/reattach.ts trustedLinks)', () => {
  function worktree(): { repo: string; dir: string; commonDir: string; admin: string } {
    const root = tempDir();
    const repo = makeRepo(path.join(root, 'repo'));
    const dir = path.join(root, 'wt', 't');
    git(repo, 'worktree', 'add', '--quiet', '--detach', dir, 'HEAD');
    const commonDir = path.join(repo, '.git');
    const admin = path.resolve(
      dir,
      fs
        .readFileSync(path.join(dir, '.git'), 'utf8')
        .replace(/^gitdir:\s*/, '')
        .trim(),
    );
    return { repo, dir, commonDir, admin };
  }

  it('the links saved when the worktree was made win over the files on disk, which a worker may have rewritten', () => {
    const { dir, commonDir, admin } = worktree();
    const file = path.join(tempDir(), 'worktree-links.json');
    saveLinks(file, trustedLinks('/nonexistent', dir, commonDir));
    fs.writeFileSync(path.join(admin, 'commondir'), '/tmp/evil-git\n');
    const links = trustedLinks(file, dir, commonDir);
    assert.equal(links.commondirFile.trim(), '../..');
    assert.equal(links.adminDir, admin);
  });

  it('without saved links (a run from before they were kept): accepted only as git wrote them, else an error naming the file', () => {
    const { dir, commonDir, admin } = worktree();
    const links = trustedLinks('/nonexistent', dir, commonDir);
    assert.equal(links.dir, dir);
    assert.equal(links.worktreeConfig, false);
    fs.writeFileSync(path.join(admin, 'gitdir'), '/somewhere/else/.git\n');
    assert.throws(
      () => trustedLinks('/nonexistent', dir, commonDir),
      new RegExp(`${path.join(admin, 'gitdir').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not as git wrote it`),
    );
    fs.writeFileSync(path.join(admin, 'gitdir'), `${path.join(dir, '.git')}\n`);
    fs.writeFileSync(path.join(admin, 'commondir'), '/tmp/evil-git\n');
    assert.throws(() => trustedLinks('/nonexistent', dir, commonDir), /commondir is not as git wrote it/);
    fs.writeFileSync(path.join(dir, '.git'), 'gitdir: /tmp/elsewhere\n');
    assert.throws(() => trustedLinks('/nonexistent', dir, commonDir), /not at a worktree admin dir/);
  });

  it('the saved file lives in the run folder, keyed by task', () => {
    assert.equal(linksFile('/h', 'r1', 'k'), path.join('/h', 'runs', 'r1', 'tasks', 'k', 'worktree-links.json'));
  });
});
