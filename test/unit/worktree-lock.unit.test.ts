import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runGit } from '../../extension/core/git/safe-git';
import {
  addBranchWorktree,
  addDetachedWorktree,
  addUnderLock,
  registerWorktree,
  removeWorktreeLocked,
  worktreeLockPath,
} from '../../extension/core/git/worktree-lock';
import { git, makeRepo, tempDir } from '../helpers/fixtures';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A repository with a registration as another `git worktree add` leaves it mid-write: gitdir, HEAD, locked, commondir empty. */
function halfWritten(): { dir: string; root: string; commondir: string; sha: string } {
  const dir = tempDir();
  const root = makeRepo(path.join(dir, 'repo'));
  const sha = git(root, 'rev-parse', 'HEAD');
  const admin = path.join(root, '.git', 'worktrees', 'other');
  fs.mkdirSync(admin, { recursive: true });
  fs.writeFileSync(path.join(admin, 'gitdir'), `${path.join(dir, 'other', '.git')}\n`);
  fs.writeFileSync(path.join(admin, 'HEAD'), `${sha}\n`);
  fs.writeFileSync(path.join(admin, 'locked'), 'initializing\n');
  fs.writeFileSync(path.join(admin, 'commondir'), '');
  // What every caller met before: a plain `worktree add` beside it dies.
  assert.throws(
    () => execFileSync('git', ['worktree', 'add', '--detach', path.join(dir, 'plain'), sha], { cwd: root, stdio: 'pipe' }),
    /worktrees\/other\/commondir/,
  );
  return { dir, root, commondir: path.join(admin, 'commondir'), sha };
}

function registered(root: string): string[] {
  return git(root, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice('worktree '.length));
}

describe("the repository lock's worktree commands (git/worktree-lock.ts)", function () {
  this.timeout(60_000);

  it('addDetachedWorktree beside a half-written registration: refused, tried again, lands checked out once the other add has written it', async () => {
    const { dir, root, commondir, sha } = halfWritten();
    const wt = path.join(dir, 'wt', 'a');
    const fixedAt = Date.now() + 300;
    setTimeout(() => fs.writeFileSync(commondir, '../..\n'), 300); // the other add finishes its write
    await addDetachedWorktree(root, wt, sha);
    assert.ok(Date.now() >= fixedAt, 'it landed only after the other registration was written');
    assert.equal(fs.readFileSync(path.join(wt, 'README.md'), 'utf8'), '# fixture\n');
    assert.equal(git(wt, 'status', '--porcelain'), '');
    assert.equal(git(wt, 'rev-parse', 'HEAD'), sha);
    assert.ok(registered(root).includes(wt));
  });

  it('addBranchWorktree with force beside a half-written registration: the branch checked out in the main worktree too, HEAD on it', async () => {
    const { dir, root, commondir, sha } = halfWritten();
    const wt = path.join(dir, 'wt', 'b');
    setTimeout(() => fs.writeFileSync(commondir, '../..\n'), 300);
    await addBranchWorktree(root, wt, 'main', { force: true });
    assert.equal(git(wt, 'symbolic-ref', 'HEAD'), 'refs/heads/main');
    assert.equal(git(wt, 'rev-parse', 'HEAD'), sha);
    assert.equal(git(wt, 'status', '--porcelain'), '');
  });

  it("a refusal other than half-written is not tried again: git's explained message at once, nothing registered", async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'));
    let tries = 0;
    const raw = (args: string[]) => {
      tries++;
      return runGit(root, args, { noDrivers: true });
    };
    const lock = worktreeLockPath(path.join(root, '.git'));
    assert.ok(await addUnderLock({ raw }, lock, ['worktree', 'add', '--quiet', '--no-checkout', path.join(dir, 'wt', 'x'), 'no-such-branch']));
    assert.equal(tries, 1);
    const wt = path.join(dir, 'wt', 'y');
    await assert.rejects(addBranchWorktree(root, wt, 'no-such-branch', { force: true }), new RegExp(`^Error: git worktree add ${wt} failed: .*no-such-branch`));
    await assert.rejects(addDetachedWorktree(root, wt, 'f'.repeat(40)), /git worktree add .* failed: /);
    assert.deepEqual(registered(root), [root]);
  });

  it('removeWorktreeLocked waits for the adds that share the lock: the worktree is still there while one registers, gone after', async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'));
    const sha = git(root, 'rev-parse', 'HEAD');
    const victim = path.join(dir, 'wt', 'victim');
    await addDetachedWorktree(root, victim, sha);
    let entered = (): void => undefined;
    const inAdd = new Promise<void>((resolve) => (entered = resolve));
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const raw = async (args: string[]) => {
      entered();
      await gate; // a registration that takes its time
      return runGit(root, args, { noDrivers: true });
    };
    const added = registerWorktree({ raw }, worktreeLockPath(path.join(root, '.git')), path.join(dir, 'wt', 'new'), sha);
    await inAdd;
    const removed = removeWorktreeLocked(root, victim);
    await sleep(500);
    assert.ok(fs.existsSync(path.join(victim, 'README.md')), 'not removed beside the add');
    release();
    assert.equal(await added, null);
    assert.equal(await removed, null);
    assert.equal(fs.existsSync(victim), false);
    assert.deepEqual(registered(root), [root, path.join(dir, 'wt', 'new')]);
  });

  it('removeWorktreeLocked with a branch: worktree, folder and branch gone, the commit it held returned; a branch git keeps is left, or thrown with branchMustGo', async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'));
    const sha = git(root, 'rev-parse', 'HEAD');
    git(root, 'branch', 'verdict/r1/t1', sha);
    const wt = path.join(dir, 'wt', 't1');
    await addBranchWorktree(root, wt, 'verdict/r1/t1');
    assert.equal(await removeWorktreeLocked(root, wt, { branch: 'verdict/r1/t1' }), sha);
    assert.equal(fs.existsSync(wt), false);
    assert.deepEqual(registered(root), [root]);
    assert.equal(git(root, 'branch', '--list', 'verdict/r1/t1'), '');
    // `main` is the main worktree's branch: git refuses to delete it.
    const other = path.join(dir, 'wt', 't2');
    await addDetachedWorktree(root, other, sha);
    assert.equal(await removeWorktreeLocked(root, other, { branch: 'main' }), null);
    assert.equal(fs.existsSync(other), false);
    await assert.rejects(removeWorktreeLocked(root, other, { branch: 'main', branchMustGo: true }), /main/);
    assert.equal(git(root, 'rev-parse', 'main'), sha);
    assert.equal(await removeWorktreeLocked(root, other, { branch: 'gone' }), null);
  });

  it("another worktree's HEAD made a FIFO: the remove and the add are stopped at their time limit, the HEAD replaced; the remove is done, the add lands", async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'));
    const sha = git(root, 'rev-parse', 'HEAD');
    await addDetachedWorktree(root, path.join(dir, 'wt', 'evil'), sha);
    const victim = path.join(dir, 'wt', 'victim');
    await addDetachedWorktree(root, victim, sha);
    const head = path.join(root, '.git', 'worktrees', 'evil', 'HEAD');
    fs.rmSync(head);
    execFileSync('mkfifo', [head]);
    await removeWorktreeLocked(root, victim, { timeoutMs: 1000, branch: 'main' });
    assert.equal(fs.existsSync(victim), false);
    assert.equal(fs.existsSync(path.join(root, '.git', 'worktrees', 'victim')), false, "the victim's registration is pruned (prune opens no HEAD)");
    assert.ok(fs.lstatSync(head).isFile(), 'the FIFO is replaced after the stopped remove');
    assert.equal(fs.readFileSync(head, 'utf8'), `${sha}\n`, 'by a detached HEAD');
    // Again, for the add: stopped once, the HEAD replaced, then it lands.
    fs.rmSync(head);
    execFileSync('mkfifo', [head]);
    const next = path.join(dir, 'wt', 'next');
    await addDetachedWorktree(root, next, sha, { timeoutMs: 1000 });
    assert.ok(fs.existsSync(path.join(next, 'README.md')));
    assert.ok(fs.lstatSync(head).isFile(), 'the FIFO is replaced');
  });
});
