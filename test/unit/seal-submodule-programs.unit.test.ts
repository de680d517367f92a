import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { addWorktree, inspectRepo, sealWorktree, taskBranch } from '../../extension/core/git/worktree';
import { git, makeRepo, tempDir } from '../helpers/fixtures';

// The seal asks git which submodules hold work (`status --ignore-submodules=none`), and git answers by running
// `git status` inside each submodule, with that submodule's own config. A worker writes its tree, so it can make a
// submodule's `.git` a git dir of its own, or make a folder a repository that `add -A` records as a gitlink: that
// config could name a clean filter, which git runs (outside every sandbox) to compare a file whose stat changed.

/** A repository with a submodule at vendor/lib and a worktree of it as addWorktree makes one. */
async function withSubmodule(dir: string, deep = false) {
  const lib = makeRepo(path.join(dir, 'lib'), { 'lib.txt': 'v1\n' });
  if (deep) {
    const lib2 = makeRepo(path.join(dir, 'lib2'), { 'deep.txt': 'd\n' });
    git(lib, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib2, 'deep');
    git(lib, 'commit', '-q', '-m', 'add deep');
  }
  const root = makeRepo(path.join(dir, 'repo'), { 'a.txt': 'a\n' });
  git(root, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
  git(root, 'commit', '-q', '-m', 'add submodule');
  const repo = await inspectRepo(root, 'HEAD');
  const wt = path.join(dir, 'wt', 't');
  const branch = taskBranch('r1', 't');
  // A local clone needs file:// allowed (git 2.38.1+), as the integrity e2e's environment does.
  const saved = { ...process.env };
  Object.assign(process.env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'protocol.file.allow', GIT_CONFIG_VALUE_0: 'always' });
  let links;
  try {
    links = await addWorktree(repo, wt, branch);
  } finally {
    for (const k of ['GIT_CONFIG_COUNT', 'GIT_CONFIG_KEY_0', 'GIT_CONFIG_VALUE_0'])
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
  }
  assert.ok(links.hasSubmodules);
  return { repo, wt, branch, links };
}

/** Makes `repoDir` (a folder of the worker's) a repository whose config names a clean filter that leaves `marker`. */
function plantFilter(repoDir: string, marker: string): void {
  const g = (...args: string[]) => execFileSync('git', ['-c', 'user.name=w', '-c', 'user.email=w@x', ...args], { cwd: repoDir, encoding: 'utf8' });
  fs.mkdirSync(repoDir, { recursive: true });
  fs.writeFileSync(path.join(repoDir, 'f.txt'), 'f\n');
  fs.writeFileSync(path.join(repoDir, '.gitattributes'), '* filter=evil\n');
  g('init', '-q');
  g('add', '.');
  g('commit', '-q', '-m', 'mine');
  g('config', 'filter.evil.clean', `sh -c 'echo ran > ${marker}; cat'`);
  // A stat change git must check by content (through the filter).
  const old = new Date(Date.now() - 86400_000);
  fs.utimesSync(path.join(repoDir, 'f.txt'), old, old);
}

describe("the seal runs no program a submodule's config names, unless that config is the one Verdict made", function () {
  this.timeout(60000);

  it('a folder the worker made a repository (a new gitlink): its filter does not run; the seal names it', async () => {
    const dir = tempDir();
    const { repo, wt, branch, links } = await withSubmodule(dir);
    const marker = path.join(dir, 'PWNED-new');
    plantFilter(path.join(wt, 'mine'), marker);
    const seal = await sealWorktree(links, branch, path.join(dir, 'seal.index'), 'seal', repo.identityArgs);
    assert.equal(fs.existsSync(marker), false, "the worker's clean filter ran in the orchestrator");
    assert.deepEqual(seal.nested, ['mine']);
  });

  it('a submodule whose .git the worker replaced with a git dir of its own: its filter does not run; the seal names it', async () => {
    const dir = tempDir();
    const { repo, wt, branch, links } = await withSubmodule(dir);
    const marker = path.join(dir, 'PWNED-sub');
    const sub = path.join(wt, 'vendor', 'lib');
    fs.rmSync(path.join(sub, '.git'));
    fs.rmSync(path.join(sub, 'lib.txt'));
    plantFilter(sub, marker);
    const seal = await sealWorktree(links, branch, path.join(dir, 'seal.index'), 'seal', repo.identityArgs);
    assert.equal(fs.existsSync(marker), false, "the worker's clean filter ran in the orchestrator");
    assert.deepEqual(seal.submodules, ['vendor/lib']);
  });

  it('a submodule whose .git the worker replaced with a clone at the same commit (add -A would look inside): no filter runs', async () => {
    const dir = tempDir();
    const { repo, wt, branch, links } = await withSubmodule(dir);
    const marker = path.join(dir, 'PWNED-same');
    const sub = path.join(wt, 'vendor', 'lib');
    execFileSync('git', ['clone', '-q', path.join(dir, 'lib'), path.join(dir, 'copy')]);
    fs.rmSync(path.join(sub, '.git'));
    fs.renameSync(path.join(dir, 'copy', '.git'), path.join(sub, '.git'));
    fs.writeFileSync(path.join(sub, '.gitattributes'), '* filter=evil\n');
    execFileSync('git', ['config', 'filter.evil.clean', `sh -c 'echo ran > ${marker}; cat'`], { cwd: sub });
    const old = new Date(Date.now() - 86400_000);
    fs.utimesSync(path.join(sub, 'lib.txt'), old, old);
    const seal = await sealWorktree(links, branch, path.join(dir, 'seal.index'), 'seal', repo.identityArgs);
    assert.equal(fs.existsSync(marker), false, "the worker's clean filter ran in the orchestrator");
    assert.deepEqual(seal.submodules, ['vendor/lib']);
  });

  it('a submodule of a submodule whose .git the worker replaced: its filter does not run; the top submodule is named', async () => {
    const dir = tempDir();
    const { repo, wt, branch, links } = await withSubmodule(dir, true);
    const clean = await sealWorktree(links, branch, path.join(dir, 'seal0.index'), 'seal', repo.identityArgs);
    assert.deepEqual(clean.submodules, [], 'untouched nested submodules are trusted');
    const marker = path.join(dir, 'PWNED-deep');
    const deep = path.join(wt, 'vendor', 'lib', 'deep');
    assert.ok(fs.statSync(path.join(deep, '.git')).isFile(), 'the nested submodule was checked out');
    fs.rmSync(path.join(deep, '.git'));
    fs.rmSync(path.join(deep, 'deep.txt'));
    plantFilter(deep, marker);
    const seal = await sealWorktree(links, branch, path.join(dir, 'seal.index'), 'seal', repo.identityArgs);
    assert.equal(fs.existsSync(marker), false, "the worker's clean filter ran in the orchestrator");
    assert.deepEqual(seal.submodules, ['vendor/lib']);
  });

  it('an untouched submodule and one with a changed file: judged as before', async () => {
    const dir = tempDir();
    const { repo, wt, branch, links } = await withSubmodule(dir);
    const clean = await sealWorktree(links, branch, path.join(dir, 'seal1.index'), 'seal', repo.identityArgs);
    assert.deepEqual(clean.submodules, []);
    fs.writeFileSync(path.join(wt, 'vendor', 'lib', 'lib.txt'), 'v2\n');
    const changed = await sealWorktree(links, branch, path.join(dir, 'seal2.index'), 'seal', repo.identityArgs);
    assert.deepEqual(changed.submodules, ['vendor/lib']);
  });
});
