import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { builtinEngines } from '../../engines';
import { lintCommand } from '../../extension/cli/lint-command';
import { cleanRuns } from '../../extension/core/run/clean';
import { mergeTask } from '../../extension/core/git/merge';
import {
  GIT_ENV_KEYS,
  gitFor,
  gitRunner,
  NO_DIFF_PROGRAMS,
  readDriverNames,
  runGit,
  safeGitConfigArgs,
  UnsafeRepositoryConfigError,
} from '../../extension/core/git/safe-git';
import { readWorktreeLinks, sealGit, worktreeDrivers } from '../../extension/core/git/worktree';
import { changedFiles } from '../../extension/vscode/changed-files';
import { git, makeRepo, tempDir } from '../helpers/fixtures';
import { lintManifestFile } from '../../extension/core/run/manifest';

/** Every hook githooks(5) lists that a local command can run. */
const HOOKS = [
  'applypatch-msg',
  'pre-applypatch',
  'post-applypatch',
  'pre-commit',
  'pre-merge-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-rebase',
  'post-checkout',
  'post-merge',
  'pre-push',
  'pre-auto-gc',
  'post-rewrite',
  'reference-transaction',
  'post-index-change',
  'push-to-checkout',
];

/** The filter markers: allowed in a trusted workspace only. */
const FILTERS = new Set(['clean', 'smudge']);

interface Hostile {
  repo: string;
  /** Marker names written so far (one per program that ran), sorted. */
  seen(): string[];
  clear(): void;
}

/**
 * A repository whose config names a program for everything git-config(1) lets a repository run on local commands;
 * each program touches `<markers>/<name>` and otherwise behaves (identity filter and textconv, passing hooks). The
 * history is made first with plain git, then the config is written, then the markers are cleared.
 */
function hostileRepo(dir: string): Hostile {
  const markers = path.join(dir, 'markers');
  const bin = path.join(dir, 'bin');
  const hooks = path.join(dir, 'hooks');
  fs.mkdirSync(markers, { recursive: true });
  fs.mkdirSync(bin);
  fs.mkdirSync(hooks);
  const script = (file: string, body: string) => {
    fs.writeFileSync(file, `#!/bin/sh\n${body}\n`);
    fs.chmodSync(file, 0o755);
    return file;
  };
  const mark = (name: string, rest = 'exit 0') => script(path.join(bin, name), `touch '${markers}/${name}'\n${rest}`);
  for (const h of HOOKS) script(path.join(hooks, h), `touch '${markers}/hook-${h}'\ncat >/dev/null\nexit 0`);
  const repo = makeRepo(path.join(dir, 'repo'), {
    '.gitattributes': '*.tc diff=tc merge=md\n*.ext diff=ext\n*.fl filter=fl\n',
    'README.md': '# hostile\n',
    'data.tc': 'one\ntwo\nthree\nfour\nfive\n',
    'page.ext': 'page\n',
    'big.fl': 'stored\n',
    '.gitignore': 'ignored/\n',
  });
  const config: [string, string][] = [
    ['core.fsmonitor', mark('fsmonitor')],
    ['core.hooksPath', hooks],
    ['diff.external', mark('external-diff')],
    ['diff.tc.textconv', mark('textconv', 'cat "$1"')],
    ['diff.ext.command', mark('diff-command')],
    ['merge.md.driver', `${mark('merge-driver', 'exit 1')} %O %A %B`],
    ['filter.fl.clean', mark('clean', 'cat')],
    ['filter.fl.smudge', mark('smudge', 'cat')],
    ['filter.fl.required', 'true'],
    ['commit.gpgSign', 'true'],
    ['gpg.program', mark('gpg', 'exit 1')],
    ['log.showSignature', 'true'],
    ['core.pager', mark('pager')],
    ['pager.log', mark('pager-log')],
    ['core.editor', mark('editor')],
    ['sequence.editor', mark('sequence-editor')],
  ];
  for (const [k, v] of config) git(repo, 'config', k, v);
  const seen = () => fs.readdirSync(markers).sort();
  const clear = () => {
    for (const m of fs.readdirSync(markers)) fs.rmSync(path.join(markers, m));
  };
  clear();
  return { repo, seen, clear };
}

/** Plain git, without Verdict's overrides (the positive controls); output ignored, failures allowed. */
function plainGit(cwd: string, ...args: string[]): void {
  spawnSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@t.invalid', ...args], { cwd, stdio: 'ignore' });
}

/** Makes `file` stat-dirty (same content, new mtime), so status and add must run its clean filter again. */
function touch(file: string): void {
  const t = new Date(Date.now() + 5000);
  fs.utimesSync(file, t, t);
}

describe('safe git: a repository cannot make Verdict run its programs', function () {
  this.timeout(60000);
  let dir: string;
  let h: Hostile;
  beforeEach(() => {
    dir = tempDir();
    h = hostileRepo(dir);
  });

  it('status: plain git runs fsmonitor, a hook and the clean filter; gitFor runs none untrusted and only the filter trusted', async () => {
    touch(path.join(h.repo, 'big.fl'));
    plainGit(h.repo, 'status', '--porcelain');
    assert.deepEqual(h.seen(), ['clean', 'fsmonitor', 'hook-post-index-change']);
    h.clear();
    touch(path.join(h.repo, 'big.fl'));
    assert.equal(await gitFor(h.repo, { trusted: false }).raw(['status', '--porcelain']), '');
    assert.deepEqual(h.seen(), []);
    touch(path.join(h.repo, 'big.fl'));
    await gitFor(h.repo, { trusted: true }).raw(['status', '--porcelain']);
    assert.deepEqual(h.seen(), ['clean'], 'in a trusted workspace the clean filter runs (git-lfs needs it)');
  });

  it('raw spawns with safeGitConfigArgs({ repo }) are as safe as gitFor', () => {
    touch(path.join(h.repo, 'big.fl'));
    plainGit(h.repo, 'add', 'big.fl');
    assert.ok(h.seen().includes('fsmonitor') && h.seen().includes('clean'));
    h.clear();
    touch(path.join(h.repo, 'big.fl'));
    execFileSync('git', [...safeGitConfigArgs({ trusted: false, repo: h.repo }), 'add', 'big.fl'], { cwd: h.repo });
    assert.deepEqual(h.seen(), []);
    // without `repo` the driver names are unknown: the filter stays, everything name-independent is still off
    touch(path.join(h.repo, 'big.fl'));
    execFileSync('git', [...safeGitConfigArgs({ trusted: false }), 'add', 'big.fl'], { cwd: h.repo });
    assert.deepEqual(h.seen(), ['clean']);
  });

  it('commit: plain git runs the commit hooks and the signing program; gitFor runs neither and commits', async () => {
    fs.writeFileSync(path.join(h.repo, 'new.txt'), 'x\n');
    plainGit(h.repo, 'add', 'new.txt');
    plainGit(h.repo, 'commit', '-q', '-m', 'control');
    for (const m of ['hook-pre-commit', 'gpg']) assert.ok(h.seen().includes(m), `control ran ${m}: ${h.seen()}`);
    assert.equal(git(h.repo, 'log', '-1', '--format=%s'), 'fixture', 'the control commit failed on the signing program');
    h.clear();
    const g = gitFor(h.repo, { trusted: false });
    await g.raw(['add', 'new.txt']);
    await g.raw(['-c', 'user.name=T', '-c', 'user.email=t@t.invalid', 'commit', '-q', '-m', 'safe']);
    await g.raw(['-c', 'user.name=T', '-c', 'user.email=t@t.invalid', 'commit', '-q', '--amend', '--no-edit']);
    await g.raw(['log', '-1', '-p']);
    assert.deepEqual(h.seen(), []);
    assert.equal(git(h.repo, 'log', '-1', '--format=%s'), 'safe');
  });

  it('worktree add and branch updates: plain git runs post-checkout and reference-transaction; gitFor does not (smudge only when trusted)', async () => {
    git(h.repo, 'branch', 'gone');
    h.clear();
    plainGit(h.repo, 'worktree', 'add', '-q', path.join(dir, 'wt0'), '-b', 'control');
    for (const m of ['hook-post-checkout', 'hook-reference-transaction', 'smudge']) assert.ok(h.seen().includes(m), `control ran ${m}: ${h.seen()}`);
    h.clear();
    await gitFor(h.repo, { trusted: false }).raw(['worktree', 'add', '-q', path.join(dir, 'wt1'), '-b', 'untrusted']);
    await gitFor(h.repo, { trusted: false }).raw(['branch', '-D', 'gone']);
    assert.deepEqual(h.seen(), []);
    await gitFor(h.repo, { trusted: true }).raw(['worktree', 'add', '-q', path.join(dir, 'wt2'), '-b', 'trusted']);
    assert.deepEqual(h.seen(), ['smudge']);
    assert.equal(fs.readFileSync(path.join(dir, 'wt2', 'big.fl'), 'utf8'), 'stored\n');
  });

  it('diff: plain git runs the external diff, the diff driver and textconv; with NO_DIFF_PROGRAMS none, and a forgotten flag fails instead', async () => {
    for (const f of ['README.md', 'data.tc', 'page.ext']) fs.appendFileSync(path.join(h.repo, f), 'more\n');
    plainGit(h.repo, 'diff');
    for (const m of ['external-diff', 'diff-command']) assert.ok(h.seen().includes(m), `control ran ${m}: ${h.seen()}`);
    h.clear();
    plainGit(h.repo, '-c', 'diff.external=', 'diff', '--no-ext-diff');
    assert.ok(h.seen().includes('textconv'));
    h.clear();
    const g = gitFor(h.repo, { trusted: true });
    const out = await g.raw(['diff', ...NO_DIFF_PROGRAMS]);
    assert.match(out, /\+more/);
    await assert.rejects(g.raw(['diff']), /external diff died/);
    await g.raw(['log', '-p', '-1']); // textconv on by default in log: overridden to cat
    assert.deepEqual(
      h.seen().filter((m) => !FILTERS.has(m)),
      [],
    );
  });

  it('rebase with a merge driver: plain git runs it and the rebase hooks; mergeTask merges as text, runs none, and the re-check still runs', async () => {
    // task branch changes line one, main changes line five: a 3-way merge of data.tc, which names driver md
    git(h.repo, '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'commit.gpgSign=false', 'checkout', '-q', '-b', 'verdict/r1/a');
    fs.writeFileSync(path.join(h.repo, 'data.tc'), 'ONE\ntwo\nthree\nfour\nfive\n');
    git(h.repo, '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'commit.gpgSign=false', 'commit', '-qam', 'task');
    git(h.repo, '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', 'checkout', '-q', 'main');
    fs.writeFileSync(path.join(h.repo, 'data.tc'), 'one\ntwo\nthree\nfour\nFIVE\n');
    git(h.repo, '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'commit.gpgSign=false', 'commit', '-qam', 'main');
    const control = path.join(dir, 'control');
    fs.cpSync(h.repo, control, { recursive: true });
    h.clear();
    plainGit(control, 'rebase', 'verdict/r1/a');
    for (const m of ['merge-driver', 'hook-pre-rebase', 'hook-post-checkout']) assert.ok(h.seen().includes(m), `control ran ${m}: ${h.seen()}`);
    h.clear();
    const recheck = async (d: string) => {
      const ok = spawnSync('bash', ['-c', 'grep -x ONE data.tc && grep -x FIVE data.tc'], { cwd: d }).status === 0;
      return { passed: ok, output: '', reason: ok ? '' : 'data.tc lacks ONE or FIVE' };
    };
    const outcome = await mergeTask({ key: 'a', repo: h.repo, branch: 'verdict/r1/a', recheck });
    assert.equal(outcome.status, 'MERGED', JSON.stringify(outcome));
    assert.equal(fs.readFileSync(path.join(h.repo, 'data.tc'), 'utf8'), 'ONE\ntwo\nthree\nfour\nFIVE\n');
    assert.deepEqual(
      h.seen().filter((m) => !FILTERS.has(m)),
      [],
    );
  });

  it('verdict clean: plain branch -D runs reference-transaction; cleanRuns removes worktree and branches running nothing', async () => {
    const home = path.join(dir, 'home');
    const wt = path.join(home, 'worktrees', 'r1', 'a');
    git(
      h.repo,
      '-c',
      'core.hooksPath=/dev/null',
      '-c',
      'core.fsmonitor=false',
      '-c',
      'filter.fl.smudge=cat',
      'worktree',
      'add',
      '-q',
      '-b',
      'verdict/r1/a',
      wt,
    );
    git(h.repo, 'branch', 'throwaway');
    h.clear();
    plainGit(h.repo, 'branch', '-D', 'throwaway');
    assert.ok(h.seen().includes('hook-reference-transaction'));
    h.clear();
    touch(path.join(wt, 'big.fl'));
    const report = await cleanRuns({ home, branches: true, dryRun: false });
    assert.deepEqual(
      report.actions.map((a) => a.kind),
      ['worktree-removed', 'branch-deleted'],
    );
    assert.deepEqual(
      h.seen().filter((m) => !FILTERS.has(m)),
      [],
    );
  });

  it('changed files between two commits: plain diff runs textconv; changedFiles runs nothing', async () => {
    fs.appendFileSync(path.join(h.repo, 'data.tc'), 'six\n');
    git(h.repo, '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', '-c', 'commit.gpgSign=false', 'commit', '-qam', 'six');
    h.clear();
    plainGit(h.repo, 'diff', '--no-ext-diff', 'HEAD~1', 'HEAD');
    assert.deepEqual(h.seen(), ['textconv']);
    h.clear();
    assert.deepEqual(await changedFiles(h.repo, 'HEAD~1', 'HEAD'), [{ status: 'M', path: 'data.tc' }]);
    assert.deepEqual(h.seen(), []);
  });

  describe('lint of a worktree-mode manifest in the repository', () => {
    const manifest = (repo: string) => {
      const file = path.join(repo, 'm.swarm.json');
      fs.writeFileSync(
        file,
        JSON.stringify({
          worktrees: true,
          tasks: [
            {
              key: 'a',
              engine: 'script',
              spec: 'echo hi > ignored/out.txt',
              check: 'test -s ignored/out.txt',
              expect_files: ['ignored/out.txt'],
              task_type: 't',
              verified: 'out.txt is written',
            },
          ],
        }),
      );
      return file;
    };

    it('plain check-ignore runs fsmonitor; untrusted lint runs no git and says so; trusted lint asks git safely', async () => {
      const file = manifest(h.repo);
      plainGit(h.repo, 'check-ignore', '-q', 'ignored/out.txt');
      assert.deepEqual(h.seen(), ['fsmonitor']);
      h.clear();
      const engines = builtinEngines();
      const untrusted = await lintManifestFile(file, { engines, trusted: false });
      assert.deepEqual(h.seen(), []);
      const skipped = untrusted.filter((f) => f.rule === 'deliverable-lost');
      assert.equal(skipped.length, 1);
      assert.equal(skipped[0]?.severity, 'info');
      assert.match(skipped[0]?.message ?? '', /untrusted/);
      const trusted = await lintManifestFile(file, { engines, trusted: true });
      assert.deepEqual(h.seen(), []);
      assert.match(trusted.find((f) => f.rule === 'deliverable-lost')?.message ?? '', /ignored by the repository's \.gitignore/, 'git was asked, and answered');
    });

    it("verdict lint (the CLI, trusted by default) runs none of the repository's programs", async () => {
      const file = manifest(h.repo);
      const lines: string[] = [];
      const io = { out: (s: string) => lines.push(s), err: (s: string) => lines.push(s) };
      await lintCommand([file], false, builtinEngines(), false, io as Parameters<typeof lintCommand>[4]);
      assert.match(lines.join('\n'), /deliverable-lost/);
      assert.deepEqual(h.seen(), []);
    });
  });

  it('a driver name that -c cannot address is refused; env outside GIT_ENV_KEYS is refused; GIT_DIR works', async () => {
    git(h.repo, 'config', 'diff.a=b.textconv', 'evil');
    assert.throws(() => gitFor(h.repo), UnsafeRepositoryConfigError);
    assert.throws(() => safeGitConfigArgs({ repo: h.repo }), UnsafeRepositoryConfigError);
    git(h.repo, 'config', '--remove-section', 'diff.a=b');
    assert.throws(() => gitFor(h.repo, { env: { GIT_EXEC_PATH: '/tmp' } as Record<string, string> }), /GIT_EXEC_PATH is not allowed/);
    assert.ok(GIT_ENV_KEYS.includes('GIT_DIR'));
    const elsewhere = tempDir();
    const g = gitFor(elsewhere, { trusted: false, env: { GIT_DIR: path.join(h.repo, '.git'), GIT_WORK_TREE: h.repo } });
    assert.equal((await g.raw(['rev-parse', 'HEAD'])).trim(), git(h.repo, 'rev-parse', 'HEAD'));
    await g.raw(['status', '--porcelain']);
    assert.deepEqual(h.seen(), []);
  });
});

describe("runGit: gitFor's git without simple-git", function () {
  this.timeout(60000);

  it("runs none of a hostile repository's programs: registration and refs without driver names, a checkout with them (smudge only when trusted)", async () => {
    const dir = tempDir();
    const h = hostileRepo(dir);
    git(h.repo, 'branch', 'gone');
    h.clear();
    await runGit(h.repo, ['branch', '--no-track', 'quick', 'HEAD'], { noDrivers: true });
    await runGit(h.repo, ['worktree', 'add', '--quiet', '--no-checkout', '--detach', path.join(dir, 'wt1'), 'HEAD'], { noDrivers: true });
    await runGit(h.repo, ['branch', '-D', 'gone'], { noDrivers: true });
    assert.deepEqual(h.seen(), []);
    const env = {
      GIT_DIR: path.join(h.repo, '.git', 'worktrees', 'wt1'),
      GIT_COMMON_DIR: path.join(h.repo, '.git'),
      GIT_WORK_TREE: path.join(dir, 'wt1'),
      GIT_INDEX_FILE: path.join(dir, 'wt1.index'),
    };
    await runGit(path.join(dir, 'wt1'), ['read-tree', '-u', '--reset', 'HEAD'], { env, trusted: false });
    assert.equal(await runGit(path.join(dir, 'wt1'), ['status', '--porcelain'], { env, trusted: false }), '');
    assert.deepEqual(h.seen(), [], 'untrusted: not even the smudge filter');
    await runGit(path.join(dir, 'wt1'), ['read-tree', '-u', '--reset', 'HEAD'], {
      env: { ...env, GIT_INDEX_FILE: path.join(dir, 'wt1.trusted') },
      trusted: true,
    });
    fs.rmSync(path.join(dir, 'wt1', 'big.fl'));
    await runGit(path.join(dir, 'wt1'), ['checkout-index', '-f', 'big.fl'], { env: { ...env, GIT_INDEX_FILE: path.join(dir, 'wt1.trusted') }, trusted: true });
    assert.deepEqual(h.seen(), ['smudge'], 'trusted: the smudge filter, nothing else');
    assert.equal(fs.readFileSync(path.join(dir, 'wt1', 'big.fl'), 'utf8'), 'stored\n');
  });

  it("resolves to stdout as printed; rejects with git's message, on a disallowed variable, and when its time limit ends it", async () => {
    const repo = makeRepo(path.join(tempDir(), 'repo'));
    assert.equal(await runGit(repo, ['rev-parse', 'HEAD']), `${git(repo, 'rev-parse', 'HEAD')}\n`);
    await assert.rejects(runGit(repo, ['rev-parse', '--verify', 'no-such-ref']), /Needed a single revision/);
    await assert.rejects(runGit(repo, ['rev-parse', 'HEAD'], { env: { GIT_EXEC_PATH: '/tmp' } as Record<string, string> }), /GIT_EXEC_PATH is not allowed/);
    assert.throws(() => gitRunner(repo, { env: { GIT_CONFIG_GLOBAL: '/tmp/x' } as Record<string, string> }), /GIT_CONFIG_GLOBAL is not allowed/);
    // cat-file --batch waits on its stdin, which runGit closes: it ends at once.
    assert.equal(await runGit(repo, ['cat-file', '--batch']), '');
    // A command that outlives its limit: hash-object of a FIFO nobody writes to blocks in open(2).
    const fifo = path.join(tempDir(), 'fifo');
    execFileSync('mkfifo', [fifo]);
    await assert.rejects(runGit(repo, ['hash-object', fifo], { timeoutMs: 300 }), /git hash-object timed out after 300 ms/);
  });
});

describe('gitFor: a git that did not finish is never a result', () => {
  it('a git killed by a signal rejects (simple-git alone resolves it with empty output)', async () => {
    const repo = makeRepo(path.join(tempDir(), 'repo'));
    // cat-file --batch waits on its stdin, so it is alive until killed.
    const pending = gitFor(repo).raw(['cat-file', '--batch']);
    let child: number | null = null;
    for (let i = 0; i < 200 && child === null; i++) {
      await new Promise((r) => setTimeout(r, 25));
      for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
          const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
          const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          if (Number(fields[1]) === process.pid && stat.includes('(git)')) child = Number(entry);
        } catch {
          // gone meanwhile
        }
      }
    }
    assert.ok(child, 'the git child was found');
    process.kill(child, 'SIGKILL');
    await assert.rejects(pending, /killed by a signal/);
  });
});

describe('driver names read once per phase (readDriverNames, worktreeDrivers)', function () {
  this.timeout(60000);

  /** A worktree of a repository whose `*.tc` files name diff driver `tc` and merge driver `md`, none configured yet. */
  function worktree() {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { '.gitattributes': '*.tc diff=tc merge=md\n', 'data.tc': 'one\n' });
    const wt = path.join(dir, 'wt');
    git(repo, 'worktree', 'add', '-q', '--detach', wt, 'HEAD');
    const links = readWorktreeLinks(wt, path.join(repo, '.git'));
    const marker = path.join(dir, 'ran');
    const program = path.join(dir, 'program.sh');
    fs.writeFileSync(program, `#!/bin/sh\ntouch '${marker}'\ncat "$1"\n`, { mode: 0o755 });
    return { repo, wt, links, marker, program };
  }

  it('a read taken before an untrusted process wrote a driver into the config lets git run it; the read taken after does not', async () => {
    const { repo, wt, links, marker, program } = worktree();
    // The phase read before the "worker" ran (what one read per task, at prepare, would be).
    const before = await worktreeDrivers(links);
    // The worker (unsandboxed: --no-sandbox, full_access) names programs in the repository's own config.
    git(repo, 'config', 'diff.tc.textconv', program);
    git(repo, 'config', 'merge.md.driver', `${program} %A`);
    fs.writeFileSync(path.join(wt, 'data.tc'), 'two\n');
    const after = await worktreeDrivers(links);
    const named = (read: typeof after) => read.entries.map(([k]) => k).filter((k) => /^(diff|merge)\.(tc|md)\./.test(k));
    assert.deepEqual(named(before), []);
    assert.deepEqual(named(after), ['diff.tc.textconv', 'merge.md.driver']);
    const index = path.join(links.adminDir, 'index');
    // `git diff` converts with textconv unless told not to (--no-textconv): the stale read leaves the worker's program named.
    await sealGit(links, index, undefined, before).raw(['diff', '--no-ext-diff', 'HEAD']);
    assert.equal(fs.existsSync(marker), true, 'control: with the read from before the worker, git ran its textconv');
    fs.rmSync(marker);
    const out = await sealGit(links, index, undefined, after).raw(['diff', '--no-ext-diff', 'HEAD']);
    assert.match(out, /\+two/);
    assert.equal(fs.existsSync(marker), false, "with the read from after the worker, its textconv is `cat`: the worker's program never ran");
  });

  it('a runner refuses a read taken for another folder or git dir; readDriverNames refuses a variable outside GIT_ENV_KEYS', async () => {
    const { repo, wt, links } = worktree();
    const read = await worktreeDrivers(links);
    assert.throws(() => sealGit({ ...links, dir: repo }, path.join(links.adminDir, 'index'), undefined, read), /driver names read for/);
    assert.throws(() => gitRunner(wt, { drivers: read }), /driver names read for/);
    const withGitDir = await readDriverNames(repo, { GIT_DIR: path.join(repo, '.git') });
    assert.throws(() => gitRunner(repo, { drivers: withGitDir }), /driver names read for/);
    await assert.rejects(readDriverNames(repo, { GIT_CONFIG_GLOBAL: '/tmp/x' } as Record<string, string>), /GIT_CONFIG_GLOBAL is not allowed/);
    // The same folder and git dirs with another index file: accepted.
    assert.equal(await sealGit(links, path.join(path.dirname(wt), 'other.index'), undefined, read).raw(['rev-parse', '--is-inside-work-tree']), 'true\n');
  });
});
