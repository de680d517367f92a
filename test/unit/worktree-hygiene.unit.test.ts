import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { addWorktree, inspectRepo, linkLeavesTree, pointHeadAt, sealWorktree, taskBranch } from '../../extension/core/git/worktree';
import { registerWorktree } from '../../extension/core/git/worktree-lock';
import { takeSnapshot } from '../../extension/core/run/dir-snapshot';
import { escapingPlainLinks, sealProblems } from '../../extension/core/run/steps/seal';
import { runGit } from '../../extension/core/git/safe-git';
import { relativeIncludes } from '../../extension/core/git/worktree-config';
import { runManifest } from '../../extension/core/run/runner';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { testSandboxMode } from '../helpers/sandbox-env';
import { loadManifest } from '../../extension/core/run/manifest';

/** Branch names under verdict/ in `repo`. */
function verdictBranches(repo: string): string[] {
  return git(repo, 'branch', '--list', 'verdict/*', '--format=%(refname:short)').split('\n').filter(Boolean);
}

describe('worktree hygiene', function () {
  this.timeout(120000);

  it('addWorktree refuses a copied config.worktree with a relative include (it resolves in the admin dir a worker can write) and leaves nothing; absolute, ~ and %(prefix)/ includes pass', async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'));
    git(root, 'config', 'core.repositoryformatversion', '1');
    git(root, 'config', 'extensions.worktreeConfig', 'true');
    git(root, 'config', '--worktree', 'include.path', path.join(dir, 'abs.inc'));
    git(root, 'config', '--worktree', 'includeIf.gitdir:/.path', '~/home.inc');
    git(root, 'config', '--worktree', '--add', 'include.path', '%(prefix)/etc/x.inc');
    const cfg = path.join(root, '.git', 'config.worktree');
    assert.deepEqual(relativeIncludes(cfg), []);
    const repo = await inspectRepo(root, 'HEAD');
    await addWorktree(repo, path.join(dir, 'wt', 'ok'), taskBranch('r1', 'ok'));
    // Without the preflight (a config changed after it, a recheck's checkout): readWorktreeLinks itself refuses.
    git(root, 'config', '--worktree', '--add', 'includeIf.onbranch:main.path', 'sub/../local.inc');
    assert.deepEqual(relativeIncludes(cfg), [{ key: 'includeif.onbranch:main.path', value: 'sub/../local.inc' }]);
    await assert.rejects(addWorktree(repo, path.join(dir, 'wt', 'bad'), taskBranch('r1', 'bad')), (e: Error) => {
      assert.match(e.message, /config\.worktree has includeif\.onbranch:main\.path = sub\/\.\.\/local\.inc, a relative path/);
      assert.match(e.message, /absolute path/);
      return true;
    });
    assert.deepEqual(verdictBranches(root), [taskBranch('r1', 'ok')]);
    assert.equal(fs.existsSync(path.join(dir, 'wt', 'bad')), false);
    assert.doesNotMatch(git(root, 'worktree', 'list', '--porcelain'), /wt\/bad/);
  });

  it('16 concurrent addWorktree calls on one repository all succeed (per-repo lock)', async () => {
    const dir = tempDir();
    const repo = await inspectRepo(makeRepo(path.join(dir, 'repo')), 'HEAD');
    const keys = Array.from({ length: 16 }, (_, i) => `t${i}`);
    const results = await Promise.allSettled(keys.map((k) => addWorktree(repo, path.join(dir, 'wt', k), taskBranch('r1', k))));
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected'),
      [],
    );
    assert.equal(verdictBranches(repo.root).length, 16);
    for (const k of keys) assert.ok(fs.existsSync(path.join(dir, 'wt', k, 'README.md')), k);
    assert.doesNotMatch(git(repo.root, 'worktree', 'list', '--porcelain'), /prunable/);
  });

  describe('a registration that reads another add half-written (an empty commondir: git dies reading it)', () => {
    /** A repository with a registration as another `git worktree add` leaves it mid-write: gitdir, HEAD, locked, commondir empty. */
    function halfWritten(): { dir: string; root: string; commondir: string; lock: string } {
      const dir = tempDir();
      const root = makeRepo(path.join(dir, 'repo'));
      const admin = path.join(root, '.git', 'worktrees', 'other');
      fs.mkdirSync(admin, { recursive: true });
      fs.writeFileSync(path.join(admin, 'gitdir'), `${path.join(dir, 'other', '.git')}\n`);
      fs.writeFileSync(path.join(admin, 'HEAD'), `${git(root, 'rev-parse', 'HEAD')}\n`);
      fs.writeFileSync(path.join(admin, 'locked'), 'initializing\n');
      fs.writeFileSync(path.join(admin, 'commondir'), '');
      return { dir, root, commondir: path.join(admin, 'commondir'), lock: path.join(root, '.git', 'verdict-worktree') };
    }

    it('is tried again once the other has written it, and lands', async () => {
      const { dir, root, commondir, lock } = halfWritten();
      const tries: string[] = [];
      const raw = async (args: string[]) => {
        try {
          const out = await runGit(root, args, { noDrivers: true });
          tries.push('ok');
          return out;
        } catch (e) {
          tries.push((e as Error).message);
          fs.writeFileSync(commondir, '../..\n'); // the other add finishes its write
          throw e;
        }
      };
      const wt = path.join(dir, 'wt', 'a');
      assert.equal(await registerWorktree({ raw }, lock, wt, git(root, 'rev-parse', 'HEAD')), null);
      assert.equal(tries.length, 2);
      assert.match(tries[0] as string, /failed to read \S*worktrees\/other\/commondir/);
      assert.equal(tries[1], 'ok');
      assert.match(git(root, 'worktree', 'list', '--porcelain'), new RegExp(`worktree ${wt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`));
    });

    it('is tried again when git says it in another language (LANGUAGE=de: "Fehler beim Lesen von …/commondir: Erfolg")', async () => {
      const { dir, root, commondir, lock } = halfWritten();
      const tries: string[] = [];
      const before = process.env.LANGUAGE;
      process.env.LANGUAGE = 'de';
      try {
        const raw = async (args: string[]) => {
          try {
            return await runGit(root, args, { noDrivers: true });
          } catch (e) {
            tries.push((e as Error).message);
            fs.writeFileSync(commondir, '../..\n');
            throw e;
          }
        };
        assert.equal(await registerWorktree({ raw }, lock, path.join(dir, 'wt', 'de'), git(root, 'rev-parse', 'HEAD')), null);
      } finally {
        if (before === undefined) delete process.env.LANGUAGE;
        else process.env.LANGUAGE = before;
      }
      assert.equal(tries.length, 1);
      assert.match(tries[0] as string, /Fehler beim Lesen von \S*worktrees\/other\/commondir: Erfolg/);
    });

    it("one that stays half-written: six tries, then git's refusal, and nothing of the add is left", async () => {
      const { dir, root, lock } = halfWritten();
      let tries = 0;
      const raw = (args: string[]) => {
        tries++;
        return runGit(root, args, { noDrivers: true });
      };
      const refused = await registerWorktree({ raw }, lock, path.join(dir, 'wt', 'b'), git(root, 'rev-parse', 'HEAD'));
      assert.match(refused?.message ?? '', /failed to read \S*worktrees\/other\/commondir/);
      assert.equal(tries, 6);
      assert.deepEqual(fs.readdirSync(path.join(root, '.git', 'worktrees')), ['other']);
    });

    it("another worktree's HEAD made a FIFO (a worker writes its own): the add is stopped at its time limit, the HEAD replaced by a detached one, and the add lands", async () => {
      const dir = tempDir();
      const repo = await inspectRepo(makeRepo(path.join(dir, 'repo')), 'HEAD');
      await addWorktree(repo, path.join(dir, 'wt', 'evil'), taskBranch('r1', 'evil'));
      const head = path.join(repo.commonDir, 'worktrees', 'evil', 'HEAD');
      fs.rmSync(head);
      execFileSync('mkfifo', [head]);
      const t0 = Date.now();
      await addWorktree(repo, path.join(dir, 'wt', 'next'), taskBranch('r1', 'next'), { registerTimeoutMs: 1500 });
      assert.ok(Date.now() - t0 >= 1500, 'the first add was stopped at its time limit');
      assert.ok(fs.existsSync(path.join(dir, 'wt', 'next', 'README.md')));
      assert.ok(fs.lstatSync(head).isFile(), 'the FIFO is replaced');
      assert.equal(fs.readFileSync(head, 'utf8'), `${repo.baseSha}\n`);
      assert.deepEqual(verdictBranches(repo.root).sort(), [taskBranch('r1', 'evil'), taskBranch('r1', 'next')].sort());
    });

    it('an add stopped at its time limit with no HEAD to blame is refused, saying so, and leaves nothing', async () => {
      const { dir, root, lock } = halfWritten();
      fs.writeFileSync(path.join(root, '.git', 'worktrees', 'other', 'commondir'), '../..\n');
      let tries = 0;
      const raw = (args: string[]) => {
        if (args.includes('worktree')) tries++;
        return args.includes('worktree')
          ? Promise.reject(new Error('git worktree timed out after 5 ms and was stopped'))
          : runGit(root, args, { noDrivers: true });
      };
      const refused = await registerWorktree({ raw }, lock, path.join(dir, 'wt', 'd'), git(root, 'rev-parse', 'HEAD'));
      assert.match(refused?.message ?? '', /timed out after 5 ms and was stopped; no registration's HEAD was found that git waits on/);
      assert.equal(tries, 1, 'not tried again');
    });

    it('any other refusal is not tried again', async () => {
      const { dir, root, lock } = halfWritten();
      fs.writeFileSync(path.join(root, '.git', 'worktrees', 'other', 'commondir'), '../..\n');
      let tries = 0;
      const raw = (args: string[]) => {
        tries++;
        return runGit(root, args, { noDrivers: true });
      };
      const refused = await registerWorktree({ raw }, lock, path.join(dir, 'wt', 'c'), 'f'.repeat(40));
      assert.ok(refused, 'a commit that does not exist is refused');
      assert.equal(tries, 1);
    });
  });

  it('the checkout made outside the lock: files, a clean index with stat data, kept as baseIndex', async () => {
    const dir = tempDir();
    const repo = await inspectRepo(makeRepo(path.join(dir, 'repo'), { 'a.txt': 'a\n', 'src/b.txt': 'b\n' }), 'HEAD');
    const wt = path.join(dir, 'wt', 'a');
    const links = await addWorktree(repo, wt, 'verdict/r1/a');
    assert.equal(fs.readFileSync(path.join(wt, 'src', 'b.txt'), 'utf8'), 'b\n');
    assert.equal(git(wt, 'rev-parse', 'HEAD'), repo.baseSha);
    assert.equal(git(wt, 'status', '--porcelain'), '');
    // the index git wrote for this checkout: every entry has real stat data (nothing left to refresh)
    assert.equal(git(wt, 'diff-files', '--name-only'), '');
    assert.ok(links.baseIndex && fs.readFileSync(links.baseIndex).equals(fs.readFileSync(path.join(links.adminDir, 'index'))));
    assert.equal(links.hasSubmodules, false);
  });

  it('a file rewritten (same size, mtime put back) in the second it was checked out is still sealed and seen by git diff', async () => {
    const dir = tempDir();
    const repo = await inspectRepo(makeRepo(path.join(dir, 'repo'), { 'test.sh': 'exit 1\n' }), 'HEAD');
    // git compares stat times in whole seconds: only the index's own timestamp (racy-git) makes it look at the content,
    // and only while the index copy keeps the checkout's timestamp (the seal and the check run in a later second)
    let exercised = 0;
    for (let i = 0; i < 5 && exercised < 2; i++) {
      const wt = path.join(dir, 'wt', `t${i}`);
      const branch = `verdict/r1/t${i}`;
      const links = await addWorktree(repo, wt, branch);
      const file = path.join(wt, 'test.sh');
      const { atime, mtime, ctimeMs } = fs.statSync(file);
      fs.writeFileSync(file, 'exit 0\n');
      fs.utimesSync(file, atime, mtime);
      if (Math.floor(fs.statSync(file).ctimeMs / 1000) !== Math.floor(ctimeMs / 1000)) continue; // crossed a second
      exercised++;
      while (Math.floor(Date.now() / 1000) === Math.floor(ctimeMs / 1000)) await new Promise((r) => setTimeout(r, 20));
      const seal = await sealWorktree(links, branch, path.join(dir, `t${i}.index`), 'seal', repo.identityArgs);
      assert.equal(seal.changed, true);
      assert.equal(git(repo.root, 'show', `${seal.sha}:test.sh`), 'exit 0');
      await pointHeadAt(links, seal.parent);
      assert.equal(git(wt, 'diff', '--name-only', 'HEAD'), 'test.sh');
    }
    assert.ok(exercised > 0, 'every rewrite crossed a second boundary');
  });

  it('the seal: nothing changed → the parent itself; a nested repository is found whatever the config hides', async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'), { 'a.txt': 'a\n' });
    git(root, 'config', 'diff.ignoreSubmodules', 'all');
    const repo = await inspectRepo(root, 'HEAD');
    const same = await addWorktree(repo, path.join(dir, 'wt', 'same'), 'verdict/r1/same');
    const kept = await sealWorktree(same, 'verdict/r1/same', path.join(dir, 'same.index'), 'seal', repo.identityArgs, { expectFiles: ['a.txt', 'b.txt'] });
    assert.deepEqual({ ...kept }, { sha: repo.baseSha, parent: repo.baseSha, changed: false, submodules: [], nested: [], unsealed: ['b.txt'] });
    const wt = path.join(dir, 'wt', 'nested');
    const links = await addWorktree(repo, wt, 'verdict/r1/nested');
    fs.mkdirSync(path.join(wt, 'lib'));
    git(path.join(wt, 'lib'), 'init', '-q');
    fs.writeFileSync(path.join(wt, 'lib', 'impl.txt'), 'SOLVED\n');
    git(path.join(wt, 'lib'), 'add', '.');
    git(path.join(wt, 'lib'), 'commit', '-q', '-m', 'x');
    const seal = await sealWorktree(links, 'verdict/r1/nested', path.join(dir, 'nested.index'), 'seal', repo.identityArgs);
    assert.equal(seal.changed, true);
    assert.deepEqual(seal.nested, ['lib']);
    assert.equal(git(root, 'cat-file', '-t', `${seal.sha}^{tree}`), 'tree');
  });

  it("the seal names the symlinks the worker added or changed that lead out of the tree, and FAILs on them (sealProblems); the start commit's and links inside are left alone", async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'), { 'a.txt': 'a\n' });
    fs.symlinkSync('/etc/hostname', path.join(root, 'users.txt'));
    fs.symlinkSync('a.txt', path.join(root, 'retarget.txt'));
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'links of the user');
    const repo = await inspectRepo(root, 'HEAD');
    const wt = path.join(dir, 'wt', 'links');
    const links = await addWorktree(repo, wt, 'verdict/r1/links');
    const admin = git(wt, 'rev-parse', '--absolute-git-dir');
    fs.writeFileSync(path.join(admin, 'answer'), '42\n');
    fs.symlinkSync(path.join(admin, 'answer'), path.join(wt, 'answer.txt'));
    fs.mkdirSync(path.join(wt, 'd'));
    fs.symlinkSync('../../outside', path.join(wt, 'd', 'up.txt'));
    fs.symlinkSync('../a.txt', path.join(wt, 'd', 'in.txt'));
    fs.rmSync(path.join(wt, 'retarget.txt'));
    fs.symlinkSync('../x', path.join(wt, 'retarget.txt'));
    const seal = await sealWorktree(links, 'verdict/r1/links', path.join(dir, 'links.index'), 'seal', repo.identityArgs);
    assert.deepEqual(seal.escapingLinks, [`answer.txt -> ${path.join(admin, 'answer')}`, 'd/up.txt -> ../../outside', 'retarget.txt -> ../x']);
    const problems = sealProblems(seal, wt);
    assert.equal(problems.length, 1);
    assert.match(problems[0] as string, /answer\.txt -> .*the check would read bytes the commit does not hold/);
    // Nothing leads out: no field, no problem.
    const clean = await addWorktree(repo, path.join(dir, 'wt', 'clean'), 'verdict/r1/clean');
    fs.symlinkSync('a.txt', path.join(dir, 'wt', 'clean', 'b.txt'));
    const ok = await sealWorktree(clean, 'verdict/r1/clean', path.join(dir, 'clean.index'), 'seal', repo.identityArgs);
    assert.equal(ok.changed, true);
    assert.equal(ok.escapingLinks, undefined);
    assert.deepEqual(sealProblems(ok, path.join(dir, 'wt', 'clean')), []);
  });

  it('linkLeavesTree: absolute, or climbing above the top; a link inside is not', () => {
    assert.equal(linkLeavesTree('a.txt', '/etc/hostname'), true);
    assert.equal(linkLeavesTree('a.txt', '../x'), true);
    assert.equal(linkLeavesTree('d/a.txt', '../x'), false);
    assert.equal(linkLeavesTree('d/a.txt', '../../x'), true);
    assert.equal(linkLeavesTree('d/a.txt', 'e/../../x'), false);
    assert.equal(linkLeavesTree('d/a.txt', './../..'), true);
    assert.equal(linkLeavesTree('a.txt', '..'), true);
    assert.equal(linkLeavesTree('a.txt', 'b/c.txt'), false);
    // Through other links, as the kernel resolves it: `e -> .` makes `e/e/../../x` climb out, though it reads as `x`.
    const tree: Record<string, string> = { e: '.', 'd/up': '..', loop: 'loop', abs: '/etc' };
    const readLink = (rel: string) => tree[rel] ?? null;
    assert.equal(linkLeavesTree('a.txt', 'e/e/../../x', readLink), true);
    assert.equal(linkLeavesTree('a.txt', 'e/e/x', readLink), false);
    assert.equal(linkLeavesTree('d/a.txt', 'up/../x', readLink), true, 'd/up is the top, so .. from it is above the tree');
    assert.equal(linkLeavesTree('d/a.txt', 'up/d/x', readLink), false);
    assert.equal(linkLeavesTree('a.txt', 'loop/x', readLink), true, 'a loop is taken to lead out');
    assert.equal(linkLeavesTree('a.txt', 'abs/hostname', readLink), true);
  });

  it('escapingPlainLinks (plain mode): the links that lead out and were not there so when prepared', () => {
    const snap = takeSnapshot(tempDir(), null);
    snap.entries.set('answer.txt', { kind: 'symlink', mode: 0o777, target: '/home/u/.codex/answer' });
    snap.entries.set('host.txt', { kind: 'symlink', mode: 0o777, target: '/etc/hostname' });
    snap.entries.set('moved.txt', { kind: 'symlink', mode: 0o777, target: '/etc/passwd' });
    snap.entries.set('in.txt', { kind: 'symlink', mode: 0o777, target: 'answer.txt' });
    const prepared = new Map([
      ['host.txt', '/etc/hostname'],
      ['moved.txt', '/etc/hostname'],
    ]);
    const readLink = (rel: string) => {
      const e = snap.entries.get(rel);
      return e?.kind === 'symlink' ? (e.target ?? null) : null;
    };
    // in.txt leads out through answer.txt.
    assert.deepEqual(escapingPlainLinks(snap, prepared, readLink), ['answer.txt -> /home/u/.codex/answer', 'in.txt -> answer.txt', 'moved.txt -> /etc/passwd']);
  });

  it('a checkout that fails (outside the lock): no worktree, registration or branch left', async () => {
    const dir = tempDir();
    const root = makeRepo(path.join(dir, 'repo'), { '.gitattributes': '*.bin filter=broken\n', 'x.bin': 'x\n' });
    git(root, 'config', 'filter.broken.smudge', 'false');
    git(root, 'config', 'filter.broken.required', 'true');
    const repo = await inspectRepo(root, 'HEAD');
    const wt = path.join(dir, 'wt', 'a');
    await assert.rejects(addWorktree(repo, wt, 'verdict/r1/a'), /checking out .*wt\/a failed/);
    assert.equal(fs.existsSync(wt), false);
    assert.deepEqual(verdictBranches(root), []);
    assert.equal(
      git(root, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length,
      1,
    );
  });

  it('16 worktree tasks at max_parallel 16 through runManifest: 16 PASS, 16 rows, 16 branches', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const tasks = Array.from({ length: 16 }, (_, i) => scriptTask(`t${i}`, `echo ${i} > out.txt`, 'test -s out.txt || { echo out.txt missing; exit 1; }'));
    const { manifest } = loadManifest(writeManifest(repo, { worktrees: true, max_parallel: 16, tasks }));
    const home = path.join(dir, 'home');
    const summary = await runManifest({ manifest, home, identity: 't', engines: resolveEngines(), sandbox: testSandboxMode() });
    assert.deepEqual(
      summary.tasks.filter((t) => t.verdict !== 'PASS').map((t) => [t.key, t.reason]),
      [],
    );
    assert.equal(readRows(home).length, 16);
    assert.equal(verdictBranches(repo).length, 16);
  });

  describe('leftovers get a precise message and the command that fixes it; nothing half-made remains', () => {
    it('a branch that already exists', async () => {
      const dir = tempDir();
      const repo = await inspectRepo(makeRepo(path.join(dir, 'repo')), 'HEAD');
      git(repo.root, 'branch', 'verdict/r1/a');
      await assert.rejects(addWorktree(repo, path.join(dir, 'wt', 'a'), 'verdict/r1/a'), (e: Error) => {
        assert.match(e.message, /branch verdict\/r1\/a already exists/);
        assert.match(e.message, new RegExp(`git -C ${repo.root} branch -D verdict/r1/a`));
        return true;
      });
      assert.deepEqual(verdictBranches(repo.root), ['verdict/r1/a'], 'the existing branch is untouched');
      assert.equal(fs.existsSync(path.join(dir, 'wt', 'a')), false);
      assert.equal(git(repo.root, 'worktree', 'list').split('\n').length, 1, 'the registration made meanwhile is gone too');
    });

    it('a folder that already exists: kept as it was, and the branch git made is removed', async () => {
      const dir = tempDir();
      const repo = await inspectRepo(makeRepo(path.join(dir, 'repo')), 'HEAD');
      const wt = path.join(dir, 'wt', 'a');
      fs.mkdirSync(wt, { recursive: true });
      fs.writeFileSync(path.join(wt, 'mine.txt'), 'keep me');
      await assert.rejects(addWorktree(repo, wt, 'verdict/r1/a'), (e: Error) => {
        assert.match(e.message, new RegExp(`${wt} already exists .*rm -rf ${wt} && git -C ${repo.root} worktree prune`));
        return true;
      });
      assert.equal(fs.readFileSync(path.join(wt, 'mine.txt'), 'utf8'), 'keep me');
      assert.deepEqual(verdictBranches(repo.root), []);
    });

    it('a path registered as a worktree whose folder is missing → git worktree prune', async () => {
      const dir = tempDir();
      const repo = await inspectRepo(makeRepo(path.join(dir, 'repo')), 'HEAD');
      const wt = path.join(dir, 'wt', 'a');
      git(repo.root, 'worktree', 'add', '-q', '-b', 'old', wt);
      fs.rmSync(wt, { recursive: true });
      await assert.rejects(addWorktree(repo, wt, 'verdict/r1/a'), (e: Error) => {
        assert.match(e.message, new RegExp(`${wt} is registered as a worktree of ${repo.root} but its folder is missing: git -C ${repo.root} worktree prune`));
        return true;
      });
      assert.deepEqual(verdictBranches(repo.root), []);
      // The empty folder addWorktree made for git (process/top-dir.ts makeFreshDir) is gone again, with no sibling left.
      assert.deepEqual(fs.readdirSync(path.dirname(wt)), []);
    });

    it('a leftover ref lock → its path and rm', async () => {
      const dir = tempDir();
      const repo = await inspectRepo(makeRepo(path.join(dir, 'repo')), 'HEAD');
      const lock = path.join(repo.commonDir, 'refs', 'heads', 'verdict', 'r1', 'a.lock');
      fs.mkdirSync(path.dirname(lock), { recursive: true });
      fs.writeFileSync(lock, '');
      await assert.rejects(addWorktree(repo, path.join(dir, 'wt', 'a'), 'verdict/r1/a'), (e: Error) => {
        assert.match(e.message, new RegExp(`${lock} exists: another git process is running, or one crashed; if none is running: rm ${lock}`));
        return true;
      });
      assert.equal(fs.existsSync(path.join(dir, 'wt', 'a')), false);
    });
  });

  it('submodules are initialised in the worktree from the main checkout (--reference)', async () => {
    const dir = tempDir();
    // git ≥ 2.38 refuses file-path submodule clones unless allowed; the user's repository would say the same.
    const saved = { ...process.env };
    Object.assign(process.env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'protocol.file.allow', GIT_CONFIG_VALUE_0: 'always' });
    try {
      const lib = makeRepo(path.join(dir, 'lib'), { 'lib.txt': 'from the submodule\n' });
      const main = makeRepo(path.join(dir, 'main'));
      git(main, 'submodule', 'add', '-q', lib, 'vendor/lib');
      git(main, 'commit', '-q', '-m', 'add submodule');
      const repo = await inspectRepo(main, 'HEAD');
      const wt = path.join(dir, 'wt', 'a');
      await addWorktree(repo, wt, 'verdict/r1/a');
      assert.equal(fs.readFileSync(path.join(wt, 'vendor', 'lib', 'lib.txt'), 'utf8'), 'from the submodule\n');
      // the objects come from the main repository's copy: the submodule's alternates point at it
      const gitDir = git(path.join(wt, 'vendor', 'lib'), 'rev-parse', '--absolute-git-dir');
      const alternates = fs.readFileSync(path.join(gitDir, 'objects', 'info', 'alternates'), 'utf8');
      assert.match(alternates, new RegExp(path.join(main, '.git', 'modules', 'vendor', 'lib')));
      assert.ok(fs.existsSync(`${wt}.submodules.log`));
    } finally {
      for (const k of ['GIT_CONFIG_COUNT', 'GIT_CONFIG_KEY_0', 'GIT_CONFIG_VALUE_0']) if (!(k in saved)) delete process.env[k];
    }
  });

  it('a submodule that cannot be initialised: clear error, no worktree or branch left', async () => {
    const dir = tempDir();
    const lib = makeRepo(path.join(dir, 'lib'));
    const main = makeRepo(path.join(dir, 'main'));
    git(main, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
    git(main, 'commit', '-q', '-m', 'add submodule');
    // the main checkout is gone and its URL no longer exists: nothing to initialise from
    fs.rmSync(path.join(main, 'vendor', 'lib'), { recursive: true });
    fs.rmSync(lib, { recursive: true });
    const repo = await inspectRepo(main, 'HEAD');
    const wt = path.join(dir, 'wt', 'a');
    await assert.rejects(
      addWorktree(repo, wt, 'verdict/r1/a'),
      /git submodule update --init --recursive -- vendor\/lib` in .* exited \d+; see .*a\.submodules\.log/,
    );
    assert.equal(fs.existsSync(wt), false);
    assert.deepEqual(verdictBranches(repo.root), []);
  });
});
