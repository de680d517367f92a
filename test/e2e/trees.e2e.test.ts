import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { overlayMountsUnder, readMountInfo } from '../../extension/core/git/overlay';
import { requireOverlay } from '../helpers/overlay';

// `tree`: sparse and overlay end to end (docs/manifest.md "Trees"): PASS, FAIL then a retry that never sees what the
// check wrote, the sealed commit holding exactly the task's tree, a passed task merged, and no mount left behind by
// the run, by `verdict clean`, or after a crash. Hostile workers try to write outside their cone, to the shared lower
// layer and through symlinks.

function repoFiles(dir: string): string {
  return makeRepo(path.join(dir, 'repo'), {
    'root.txt': 'root\n',
    'shared.txt': 'shared\n',
    'src/a/x.txt': 'x\n',
    'src/b/y.txt': 'y\n',
    'lib/z.txt': 'z\n',
    'checks/ok.sh': 'test ! -e shared.txt || { echo shared.txt still there; exit 1; }\ntest -s out.txt || { echo out.txt missing; exit 1; }\n',
  });
}

async function run(file: string, home: string) {
  return cli(['run', file, '--home', home, '--no-dashboard'], { env: { HOME: path.join(path.dirname(home), 'user-home') } });
}

/** The files a commit holds, with their mode for symlinks. */
function treeOf(repo: string, ref: string): string[] {
  return git(repo, 'ls-tree', '-r', '--name-only', ref).split('\n').filter(Boolean).sort();
}

function mountsUnder(dir: string): string[] {
  return overlayMountsUnder(readMountInfo(), dir);
}

/** A worker that changes files, fails its first check (whose own writes must not reach the retry), then passes. */
const RETRY_SPEC =
  'if [ -e DIR/check-junk.txt ]; then echo leaked > DIR/leak.txt; fi; if [ "$VERDICT_ATTEMPT" = 1 ]; then echo bad > DIR/out.txt; else echo good > DIR/out.txt; fi';
const RETRY_CHECK = 'echo junk > DIR/check-junk.txt; grep -qx good DIR/out.txt || { echo "out.txt is not good"; exit 1; }';

describe('trees: sparse', function () {
  this.timeout(180000);

  it("a cone task passes with only its cone changed; a retry never sees the check's writes; merge and clean", async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = repoFiles(dir);
    const home = path.join(dir, 'home');
    // The hostile part: writes outside the cone (a root file, a folder that is not checked out, through a symlink
    // out of the cone) all fail; the work inside the cone (a new file, a deletion) is sealed.
    const cone = [
      'echo new > src/a/new.txt; rm src/a/x.txt',
      'echo hacked > root.txt || echo "root.txt refused"',
      'mkdir -p lib && echo hacked > lib/z.txt || echo "lib refused"',
      'ln -s ../../src/b src/a/out-link; echo hacked > src/a/out-link/y.txt || echo "link refused"',
      // The pattern file the seal's own sparse git reads: one that leaves the cone out would make it skip the work.
      'printf "/*\\n!/*/\\n" > "$(git rev-parse --git-dir)/info/sparse-checkout" && echo "patterns rewritten"',
      'git status --porcelain --untracked-files=all | sed "s/^/status: /"',
      'ls src; true',
    ].join('\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tree: 'sparse',
      max_parallel: 2,
      tasks: [
        scriptTask('cone', cone, 'test -s src/a/new.txt && test ! -e src/a/x.txt && grep -qx root root.txt || { echo wrong; exit 1; }', {
          sparse: ['src/a/**'],
          expect_files: ['src/a/new.txt'],
        }),
        scriptTask('retry', RETRY_SPEC.replace(/DIR/g, 'src/b'), RETRY_CHECK.replace(/DIR/g, 'src/b'), { sparse: ['src/b'] }),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    const runId = String(rows[0]?.run_id);
    const byKey = (k: string) => rows.filter((x) => x.task_key === k).map((x) => x.verdict);
    assert.deepEqual(byKey('cone'), ['PASS']);
    assert.deepEqual(byKey('retry'), ['FAIL', 'PASS']);

    // The worker saw only its cone (plus root files) and every write outside it failed.
    const log = fs.readFileSync(String(rows.find((x) => x.task_key === 'cone')?.worker_log), 'utf8');
    assert.match(log, /root\.txt refused/);
    assert.match(log, /lib refused/);
    assert.match(log, /link refused/);
    assert.match(log, /patterns rewritten/);
    // Its own git, on the sparse index: exactly its changes (the link it made too).
    assert.deepEqual(
      log
        .split('\n')
        .filter((l) => l.startsWith('status: '))
        .sort(),
      ['status:  D src/a/x.txt', 'status: ?? src/a/new.txt', 'status: ?? src/a/out-link'],
    );
    assert.match(log, /^a$/m, 'src/ holds only the cone folder');
    assert.doesNotMatch(log, /^b$/m);
    const wt = path.join(home, 'worktrees', runId, 'cone');
    assert.equal(fs.existsSync(path.join(wt, 'lib')), false, 'lib/ is not checked out');
    assert.equal(fs.existsSync(path.join(wt, 'src', 'b')), false);

    // The sealed commit: the cone's changes, the rest exactly as the base had it.
    const cBranch = `verdict/${runId}/cone`;
    assert.deepEqual(git(repo, 'diff', '--name-status', 'main', cBranch).split('\n').sort(), ['A\tsrc/a/new.txt', 'A\tsrc/a/out-link', 'D\tsrc/a/x.txt']);
    assert.deepEqual(treeOf(repo, cBranch), ['checks/ok.sh', 'lib/z.txt', 'root.txt', 'shared.txt', 'src/a/new.txt', 'src/a/out-link', 'src/b/y.txt']);
    assert.equal(git(repo, 'show', `${cBranch}:root.txt`), 'root');
    assert.equal(git(repo, 'show', `${cBranch}:src/b/y.txt`), 'y');
    // The retry: the check's own file never reached attempt 2 nor any commit.
    const rBranch = `verdict/${runId}/retry`;
    assert.deepEqual(git(repo, 'diff', '--name-status', 'main', rBranch).split('\n'), ['A\tsrc/b/out.txt']);
    assert.equal(git(repo, 'show', `${rBranch}:src/b/out.txt`), 'good');

    const merged = await cli(['merge', runId, 'cone', '--home', home]);
    assert.equal(merged.exitCode, 0, merged.all);
    assert.equal(git(repo, 'show', 'main:src/a/new.txt'), 'new');
    assert.equal(git(repo, 'show', 'main:lib/z.txt'), 'z', 'what was outside the cone is untouched by the merge');

    const cleaned = await cli(['clean', '--run', runId, '--home', home]);
    assert.equal(cleaned.exitCode, 0, cleaned.all);
    assert.equal(fs.existsSync(path.join(home, 'worktrees', runId)), false);
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);
  });
});

describe('trees: overlay', function () {
  this.timeout(180000);

  it('PASS, FAIL then retry, deletions sealed; a hostile worker reaches neither the lower layer nor another task; nothing stays mounted', async function () {
    await requireSandbox(this);
    await requireOverlay(this);
    const dir = tempDir();
    const repo = repoFiles(dir);
    const home = path.join(dir, 'home');
    const evil = [
      // The shared lower layer, found in mountinfo: hidden from the step (VERDICT_HOME is a tmpfs there).
      'L=$(sed -n "s/.*lowerdir=\\([^,]*\\).*/\\1/p" /proc/self/mountinfo | head -1); echo "lower: $L"',
      'echo pwned > "$L/shared.txt" || echo "lower write refused"',
      'rm "$L/root.txt" || echo "lower delete refused"',
      'ln -s "$L" lower-link; echo pwned > lower-link/shared.txt || echo "lower link refused"',
      'ln -s ../other other-link; echo pwned > other-link/root.txt || echo "other link refused"',
      // A whiteout by hand, and deletions in its own tree (a lower file, a lower folder).
      'mknod fake-whiteout c 0 0 || echo "mknod refused"',
      // The shared base of every task's split index: in its own admin dir (read-only there) and in the lower layer.
      'G=$(git rev-parse --git-dir); S=$(cd "$G" && ls | grep "^sharedindex\\." | head -1); echo "shared base: $S"',
      'echo garbage > "$G/$S" || echo "base write refused"',
      'truncate -s 0 "$G/$S" || echo "base truncate refused"',
      'rm -f "$G/$S" || echo "base delete refused"',
      'cp "$G/index" "$G/forged" && mv -f "$G/forged" "$G/$S" || echo "base replace refused"',
      'ln "$G/$S" base-link || echo "base link refused"',
      'echo garbage > "$L.git/$S" || echo "lower base write refused"',
      'rm shared.txt; rm -r lib',
      // Its protected check input.
      'echo "exit 0" > checks/ok.sh || echo "check input refused"',
      'echo done > out.txt',
    ].join('\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tree: 'overlay',
      max_parallel: 1,
      tasks: [
        scriptTask('evil', evil, 'bash checks/ok.sh', { expect_files: ['out.txt'], max_attempts: 1 }),
        scriptTask(
          'other',
          'cat shared.txt root.txt lib/z.txt > seen.txt; test -e lower-link && echo "lower-link leaked"; echo done > out.txt; git status --porcelain --untracked-files=all | sed "s/^/status: /"',
          'grep -qx shared shared.txt && grep -qx root root.txt && test -s out.txt || { echo "the lower layer changed"; exit 1; }',
        ),
        scriptTask('retry', RETRY_SPEC.replace(/DIR\//g, ''), RETRY_CHECK.replace(/DIR\//g, '')),
      ],
    });
    const r = await run(file, home);
    // The evil task's links lead out of its tree (the lower layer, the other task's): a FAIL naming them (the seal's rule).
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    const runId = String(rows[0]?.run_id);
    const byKey = (k: string) => rows.filter((x) => x.task_key === k).map((x) => x.verdict);
    assert.deepEqual(byKey('evil'), ['FAIL']);
    const evilRow = rows.find((x) => x.task_key === 'evil');
    assert.match(JSON.stringify(evilRow), /lower-link -> \S+, other-link -> \.\.\/other; the check would read bytes the commit does not hold/);
    assert.deepEqual(byKey('other'), ['PASS']);
    assert.deepEqual(byKey('retry'), ['FAIL', 'PASS']);

    const log = fs.readFileSync(String(rows.find((x) => x.task_key === 'evil')?.worker_log), 'utf8');
    for (const refused of ['lower write refused', 'lower delete refused', 'lower link refused', 'other link refused', 'mknod refused', 'check input refused'])
      assert.match(log, new RegExp(refused));
    assert.match(log, /shared base: sharedindex\.[0-9a-f]{40}/);
    for (const refused of [
      'base write refused',
      'base truncate refused',
      'base delete refused',
      'base replace refused',
      'base link refused',
      'lower base write refused',
    ])
      assert.match(log, new RegExp(refused));
    // The other task's git saw its own changes only, through the split index on that same base.
    const otherLog = fs.readFileSync(String(rows.find((x) => x.task_key === 'other')?.worker_log), 'utf8');
    assert.deepEqual(
      otherLog
        .split('\n')
        .filter((l) => l.startsWith('status: '))
        .sort(),
      ['status: ?? out.txt', 'status: ?? seen.txt'],
    );
    // The other task saw the base exactly, and none of the evil task's links.
    const oBranch = `verdict/${runId}/other`;
    assert.equal(git(repo, 'show', `${oBranch}:seen.txt`), 'shared\nroot\nz');
    assert.deepEqual(git(repo, 'diff', '--name-status', 'main', oBranch).split('\n').sort(), ['A\tout.txt', 'A\tseen.txt']);

    // The evil task's seal (the branch did not move: FAIL): its deletions as deletions, its own links, the protected input as it was.
    const receipt = JSON.parse(fs.readFileSync(path.join(path.dirname(String(evilRow?.worker_log)), 'receipt.json'), 'utf8')) as { seal: { sha: string } };
    const eBranch = receipt.seal.sha;
    assert.deepEqual(git(repo, 'diff', '--name-status', 'main', eBranch).split('\n').sort(), [
      'A\tlower-link',
      'A\tother-link',
      'A\tout.txt',
      'D\tlib/z.txt',
      'D\tshared.txt',
    ]);
    assert.equal(git(repo, 'show', `${eBranch}:checks/ok.sh`), fs.readFileSync(path.join(repo, 'checks/ok.sh'), 'utf8').trim());
    // The retry: the check's junk never reached attempt 2 nor the commit.
    assert.deepEqual(git(repo, 'diff', '--name-status', 'main', `verdict/${runId}/retry`).split('\n'), ['A\tout.txt']);
    assert.equal(git(repo, 'show', `verdict/${runId}/retry:out.txt`), 'good');

    // The run unmounted and removed its trees; the branches hold the work.
    assert.deepEqual(mountsUnder(home), []);
    assert.equal(fs.existsSync(path.join(home, 'worktrees', runId, '.lower')), false);
    assert.equal(fs.existsSync(path.join(home, 'worktrees', runId, 'evil')), false);
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);

    const merged = await cli(['merge', runId, 'other', '--home', home]);
    assert.equal(merged.exitCode, 0, merged.all);
    assert.equal(git(repo, 'show', 'main:seen.txt'), 'shared\nroot\nz');

    const cleaned = await cli(['clean', '--run', runId, '--home', home]);
    assert.equal(cleaned.exitCode, 0, cleaned.all);
    assert.deepEqual(mountsUnder(home), []);
  });

  it("a crashed run's mounts are found and removed by verdict clean", async function () {
    await requireSandbox(this);
    await requireOverlay(this);
    const dir = tempDir();
    const repo = repoFiles(dir);
    const home = path.join(dir, 'home');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tree: 'overlay',
      max_parallel: 2,
      tasks: ['a', 'b'].map((k) => scriptTask(k, 'echo work > out.txt; sleep 300', 'test -s out.txt')),
    });
    const child = execa('node', [CLI, 'run', file, '--home', home, '--no-dashboard'], {
      reject: false,
      stdin: 'ignore',
      env: { HOME: path.join(dir, 'user-home') },
    });
    for (let i = 0; i < 600 && mountsUnder(home).length < 2; i++) await sleep(50);
    assert.equal(mountsUnder(home).length, 2, 'both tasks are mounted');
    child.kill('SIGKILL');
    await child;
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    assert.equal(mountsUnder(home).length, 2, 'a crash leaves the mounts');

    const cleaned = await cli(['clean', '--run', runId, '--home', home]);
    assert.equal(cleaned.exitCode, 0, cleaned.all);
    assert.match(cleaned.stdout, /unmounted overlay .*\/a/);
    assert.deepEqual(mountsUnder(home), []);
    assert.equal(fs.existsSync(path.join(home, 'worktrees', runId)), false);
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);
  });
});
