import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { addWorktree, inspectRepo, restoreWorktreeLinks, sealWorktree, type WorktreeLinks } from '../../extension/core/git/worktree';
import { markTopDir } from '../../extension/core/process/top-dir';
import { git, makeRepo, tempDir } from '../helpers/fixtures';
import { execFileSync, spawnSync } from 'node:child_process';

// The indexes the orchestrator's own git keeps for a task (docs/trees.md): never split on a base in the
// admin dir a worker can write (git reads a shared index without checking its checksum), an overlay's shared base put
// back when its entry was replaced, and a sparse tree's sparse index whose pattern file is put back before the seal.

/**
 * What a worker could do to a shared index it can write: mark its own change as unchanged. Rewrites the entry of `name`
 * in the index file `file` (version 2, gitformat-index(5) "Index entry": ctime, mtime, dev, ino, mode, uid, gid, size,
 * object id, flags, name) with the stat data the file has now, keeping the old object id.
 */
function forgeEntry(file: string, name: string, worktreeFile: string): void {
  const st = fs.statSync(worktreeFile, { bigint: true });
  const buf = fs.readFileSync(file);
  const at = buf.indexOf(Buffer.from(`${name}\0`));
  assert.ok(at > 62, `${name} is in ${file}`);
  const e = at - 62;
  buf.writeUInt32BE(Number(st.ctimeNs / 1_000_000_000n), e);
  buf.writeUInt32BE(Number(st.ctimeNs % 1_000_000_000n), e + 4);
  buf.writeUInt32BE(Number(st.mtimeNs / 1_000_000_000n), e + 8);
  buf.writeUInt32BE(Number(st.mtimeNs % 1_000_000_000n), e + 12);
  buf.writeUInt32BE(Number(st.ino % 2n ** 32n), e + 20);
  buf.writeUInt32BE(Number(st.size), e + 36);
  fs.writeFileSync(file, buf);
}

/** The `sharedindex.*` files in a worktree's admin dir. */
function sharedIndexes(adminDir: string): string[] {
  return fs.readdirSync(adminDir).filter((f) => f.startsWith('sharedindex.'));
}

describe('tree indexes', function () {
  this.timeout(60000);

  it('a repository set to core.splitIndex: no index of the seal rests on a base in the admin dir, so a forged base hides nothing', async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'), { 'a.txt': 'a\n', 'b.txt': 'b\n' });
    git(root, 'config', 'core.splitIndex', 'true');
    const repo = await inspectRepo(root, 'HEAD');
    const wt = path.join(dir, 'wt', 't');
    const branch = 'verdict/r1/t';
    const links = await addWorktree(repo, wt, branch);
    assert.deepEqual(sharedIndexes(links.adminDir), [], 'the checkout wrote its index whole');
    // The worker: the same size, the old mtime put back; its own git splits its own index (the repository says so).
    fs.writeFileSync(path.join(wt, 'a.txt'), 'A\n');
    const old = new Date(Date.now() - 3600_000);
    fs.utimesSync(path.join(wt, 'a.txt'), old, old);
    git(wt, 'add', 'b.txt');
    assert.ok(sharedIndexes(links.adminDir).length > 0, "the worker's git wrote a shared index into the admin dir");
    for (const f of sharedIndexes(links.adminDir)) forgeEntry(path.join(links.adminDir, f), 'a.txt', path.join(wt, 'a.txt'));
    const seal = await sealWorktree(links, branch, path.join(dir, 'seal.index'), 'seal', repo.identityArgs);
    assert.equal(seal.changed, true);
    assert.equal(git(root, 'show', `${seal.sha}:a.txt`), 'A');
    assert.deepEqual(sharedIndexes(path.dirname(path.join(dir, 'seal.index'))), [], 'nor did the seal split its own index');
  });

  it("an overlay's shared base: an entry the worker replaced is put back as the same file; the link files as always", () => {
    const dir = tempDir();
    const adminDir = path.join(dir, 'admin');
    const taskDir = path.join(dir, 'task');
    fs.mkdirSync(adminDir);
    fs.mkdirSync(taskDir);
    const base = path.join(dir, 'lower.git', 'sharedindex.0123abcd');
    fs.mkdirSync(path.dirname(base));
    fs.writeFileSync(base, 'the shared base');
    const at = path.join(adminDir, 'sharedindex.0123abcd');
    fs.linkSync(base, at);
    const links: WorktreeLinks = {
      dir: taskDir,
      adminDir,
      commonDir: dir,
      dotGit: `gitdir: ${adminDir}\n`,
      commondirFile: '../..\n',
      gitdirFile: `${taskDir}/.git\n`,
      worktreeConfig: false,
      baseIndex: null,
      baseSha: null,
      hasSubmodules: false,
      sharedIndex: { file: base, name: 'sharedindex.0123abcd', ino: fs.statSync(at).ino },
    };
    restoreWorktreeLinks(links);
    assert.equal(fs.statSync(at).ino, fs.statSync(base).ino, 'an intact entry is left as it is');
    for (const replace of [() => fs.writeFileSync(`${at}.new`, 'forged'), () => fs.mkdirSync(`${at}.new`), () => fs.symlinkSync('/etc/passwd', `${at}.new`)]) {
      fs.rmSync(at, { recursive: true, force: true });
      replace();
      fs.renameSync(`${at}.new`, at);
      restoreWorktreeLinks(links);
      assert.ok(fs.lstatSync(at).isFile());
      assert.equal(fs.statSync(at).ino, fs.statSync(base).ino);
      assert.equal(fs.readFileSync(base, 'utf8'), 'the shared base');
    }
    fs.rmSync(at);
    restoreWorktreeLinks(links);
    assert.equal(fs.statSync(at).ino, fs.statSync(base).ino, 'a removed entry is made again');
    assert.equal(fs.readFileSync(path.join(taskDir, '.git'), 'utf8'), links.dotGit);
  });

  it("sparse: git's sparse index (out-of-cone folders one entry each); the seal puts the pattern file back and commits exactly the cone's changes", async () => {
    const dir = tempDir();
    const files: Record<string, string> = { 'root.txt': 'r\n', 'src/a/x.txt': 'x\n', 'src/a/gone.txt': 'g\n', 'lib/z.txt': 'z\n' };
    for (let i = 0; i < 50; i++) files[`src/b/f${i}.txt`] = `${i}\n`;
    const root = makeRepo(path.join(dir, 'repo'), files);
    const repo = await inspectRepo(root, 'HEAD');
    const wt = path.join(dir, 'wt', 't');
    const branch = 'verdict/r1/t';
    const links = await addWorktree(repo, wt, branch, { tree: { kind: 'sparse', cone: ['src/a'] } });
    const env = { ...process.env, GIT_DIR: links.adminDir, GIT_COMMON_DIR: links.commonDir, GIT_WORK_TREE: wt, GIT_INDEX_FILE: links.baseIndex as string };
    const sparseEntries = execFileSync(
      'git',
      ['-c', 'core.sparseCheckout=true', '-c', 'core.sparseCheckoutCone=true', '-c', 'index.sparse=true', 'ls-files', '--sparse'],
      { cwd: wt, env, encoding: 'utf8' },
    )
      .split('\n')
      .filter(Boolean);
    assert.deepEqual(
      sparseEntries,
      ['lib/', 'root.txt', 'src/a/gone.txt', 'src/a/x.txt', 'src/b/'],
      'the index holds the cone and one entry per folder outside it',
    );
    assert.equal(git(wt, 'status', '--porcelain'), '', "the worker's git (no sparse settings) reads it");
    assert.equal(fs.existsSync(path.join(wt, 'src', 'b')), false);
    // The worker's work, and its attempt to steer the seal's sparse git: a pattern file that leaves its cone out.
    fs.writeFileSync(path.join(wt, 'src/a/x.txt'), 'changed\n');
    fs.writeFileSync(path.join(wt, 'src/a/new.txt'), 'new\n');
    fs.rmSync(path.join(wt, 'src/a/gone.txt'));
    fs.mkdirSync(path.join(wt, 'lib'));
    fs.writeFileSync(path.join(wt, 'lib/z.txt'), 'outside\n');
    fs.writeFileSync(path.join(links.adminDir, 'info', 'sparse-checkout'), '/*\n!/*/\n');
    // (lib/z.txt is skip-worktree: git reports nothing there, and the seal takes nothing from there)
    assert.equal(git(wt, 'status', '--porcelain', '--untracked-files=all'), 'D src/a/gone.txt\n M src/a/x.txt\n?? src/a/new.txt');
    const seal = await sealWorktree(links, branch, path.join(dir, 'seal.index'), 'seal', repo.identityArgs);
    assert.deepEqual(git(root, 'diff', '--name-status', repo.baseSha, seal.sha).split('\n'), ['D\tsrc/a/gone.txt', 'A\tsrc/a/new.txt', 'M\tsrc/a/x.txt']);
    assert.equal(git(root, 'show', `${seal.sha}:lib/z.txt`), 'z', "outside the cone the commit is the base's");
    assert.ok(fs.statSync(path.join(dir, 'seal.index')).size < fs.statSync(path.join(root, '.git', 'index')).size, "the seal's index stayed sparse");
  });

  it("the folder of a run's trees is marked a top directory for ext4 (chattr +T): its task dirs spread over block groups", async function () {
    const dir = tempDir();
    const probe = path.join(dir, 'probe');
    fs.mkdirSync(probe);
    if (spawnSync('chattr', ['+T', probe]).status !== 0) {
      console.log('      skipped: this file system (or machine) takes no chattr +T');
      this.skip();
    }
    const root = makeRepo(path.join(dir, 'repo'), { 'a.txt': 'a\n' });
    const repo = await inspectRepo(root, 'HEAD');
    await addWorktree(repo, path.join(dir, 'worktrees', 'run1', 't'), 'verdict/run1/t');
    assert.match(execFileSync('lsattr', ['-d', path.join(dir, 'worktrees', 'run1')], { encoding: 'utf8' }).split(' ')[0] as string, /T/);
    assert.equal(await markTopDir(path.join(dir, 'no-such-folder')), false, 'a folder that is not there: false, no throw');
  });
});
