import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { treeHash } from '../../extension/core/run/tree-hash';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// Hostile and careless workers against the integrity rules: the committed work is exactly what the check
// passed, and a worker cannot pass by rewriting what the check runs.

/** A repository whose tests fail until `feature.txt` says "done": run-tests.sh runs every tests/*.sh. */
function repoWithTests(dir: string): string {
  return makeRepo(path.join(dir, 'repo'), {
    'run-tests.sh': 'n=0; for t in tests/*.sh; do n=$((n+1)); bash "$t" || { echo "FAIL $t"; exit 1; }; done; echo "ran $n tests"\n',
    'tests/t1.sh': 'grep -qx done feature.txt\n',
    'README.md': '# repo\n',
  });
}

async function run(file: string, home: string, flags: string[] = []) {
  return cli(['run', file, '--home', home, '--no-dashboard', ...flags], { env: { HOME: path.join(path.dirname(home), 'user-home') } });
}

describe('integrity: a PASS only for the work the check judged, on the check inputs as they were', function () {
  this.timeout(120000);

  for (const mode of [
    { name: 'sandboxed', flags: [] as string[] },
    { name: 'unsandboxed', flags: ['--no-sandbox'] },
  ]) {
    it(`${mode.name}: a worker that rewrites the test runner and a test to pass FAILs, naming them; the retry starts from the real tests`, async function () {
      if (!mode.flags.length) await requireSandbox(this);
      const dir = tempDir();
      const repo = repoWithTests(dir);
      // Attempt 1 cheats; attempt 2 does the work (it finds the tests as they were).
      const spec = [
        'if [ "$VERDICT_ATTEMPT" = 1 ]; then',
        '  echo "exit 0" > run-tests.sh 2>/dev/null; echo "exit 0" > tests/t1.sh 2>/dev/null; echo cheated',
        'else',
        '  cat tests/t1.sh; echo done > feature.txt',
        'fi',
      ].join('\n');
      const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('feature', spec, 'bash run-tests.sh')] });
      const home = path.join(dir, 'home');
      const r = await run(file, home, mode.flags);
      assert.equal(r.exitCode, 0, r.all);
      const rows = readRows(home);
      assert.deepEqual(
        rows.map((row) => row.verdict),
        ['FAIL', 'PASS'],
      );
      if (mode.flags.length) {
        // Unsandboxed the rewrite lands; the guard names both files.
        assert.match(String(rows[0]?.notes), /changed protected check inputs: run-tests\.sh \(changed\), tests\/t1\.sh \(changed\)/);
      } else {
        // Sandboxed the rewrite never lands (read-only); the real tests fail instead.
        assert.match(String(rows[0]?.notes), /the check exited 1: FAIL tests\/t1\.sh/);
        assert.match(fs.readFileSync(String(rows[0]?.worker_log), 'utf8'), /Read-only file system/);
      }
      // The retry saw the real test, and the branch holds the real tests plus the work.
      assert.match(fs.readFileSync(String(rows[1]?.worker_log), 'utf8'), /grep -qx done feature\.txt/);
      const branch = String(rows[1]?.branch);
      assert.equal(git(repo, 'show', `${branch}:tests/t1.sh`), 'grep -qx done feature.txt');
      assert.equal(git(repo, 'show', `${branch}:feature.txt`), 'done');
    });
  }

  it('a worker that deletes the tests ("ran 0 tests") FAILs naming them; adding new tests is allowed', async () => {
    const dir = tempDir();
    const repo = repoWithTests(dir);
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 2,
      tasks: [
        scriptTask('delete', 'git rm -q tests/t1.sh', 'bash run-tests.sh', { max_attempts: 1 }),
        scriptTask('add', 'echo done > feature.txt; echo "test -s feature.txt" > tests/t2.sh', 'bash run-tests.sh', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home, ['--no-sandbox']);
    assert.equal(r.exitCode, 1, r.all);
    const byKey = Object.fromEntries(readRows(home).map((row) => [row.task_key, row]));
    assert.equal(byKey.delete?.verdict, 'FAIL');
    assert.match(String(byKey.delete?.notes), /tests\/t1\.sh \(deleted\)/);
    assert.equal(byKey.add?.verdict, 'PASS');
    assert.match(String(byKey.add?.check_output), /ran 2 tests/);
  });

  it('"protect": [] lets a test-hardening task change the tests', async () => {
    const dir = tempDir();
    const repo = repoWithTests(dir);
    const spec = 'echo done > feature.txt; printf "grep -qx done feature.txt\\ntest -s README.md\\n" > tests/t1.sh';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [scriptTask('harden', spec, 'bash run-tests.sh', { protect: [], task_type: 'test-hardening' })],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(git(repo, 'show', `${String(readRows(home)[0]?.branch)}:tests/t1.sh`), /test -s README\.md/);
  });

  it('a worker that moves HEAD (its own branch, a detached main, its own commits): the PASS lands on the task branch', async () => {
    const dir = tempDir();
    const repo = repoWithTests(dir);
    const spec = [
      'git checkout -q -b mine 2>&1 || git checkout -q --detach 2>&1',
      'echo done > feature.txt',
      'git add feature.txt && git -c user.name=w -c user.email=w@x commit -q -m "my own commit"',
      'git checkout -q --detach HEAD~1 2>&1 || true',
      'echo done > feature.txt',
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('wander', spec, 'bash run-tests.sh')] });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const [row] = readRows(home);
    const branch = String(row?.branch);
    assert.equal(git(repo, 'rev-parse', branch), row?.commit, 'the branch holds the commit the run reported');
    assert.equal(git(repo, 'show', `${branch}:feature.txt`), 'done');
    assert.equal(git(repo, 'rev-parse', `${branch}^`), git(repo, 'rev-parse', 'main'), "sealed on base, not on the worker's commit");
    // verdict clean (worktrees and all) cannot lose it: the branch still holds it.
    const clean = await cli(['clean', '--home', home]);
    assert.equal(clean.exitCode, 0, clean.all);
    assert.equal(git(repo, 'show', `${branch}:feature.txt`), 'done');
  });

  it('a symlinked deliverable and a test piped into tee both FAIL', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 2,
      tasks: [
        scriptTask('link', 'ln -s /etc/passwd out.txt', 'test -s out.txt && echo "out.txt is there"', { expect_files: ['out.txt'], max_attempts: 1 }),
        scriptTask('tee', 'echo "exit 1" > tests.sh', 'bash tests.sh | tee test.log', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const byKey = Object.fromEntries(readRows(home).map((row) => [row.task_key, row]));
    assert.equal(byKey.link?.verdict, 'FAIL');
    assert.match(String(byKey.link?.notes), /out\.txt \(a symlink to \/etc\/passwd, outside the task dir\)/);
    assert.equal(byKey.tee?.verdict, 'FAIL');
  });

  it('`verdict demo | head -3`: a closed pipe does not crash the run; it finishes with every row', async () => {
    const home = path.join(tempDir(), 'home');
    // Paths as arguments, never pasted into the command: the clone may live under a folder whose name has a space.
    const r = await execa('bash', ['-c', 'node "$1" demo --home "$2" | head -3', 'bash', CLI, home], { reject: false, all: true });
    assert.equal(r.exitCode, 0, r.all);
    assert.doesNotMatch(r.all ?? '', /EPIPE|Error:/);
    for (let i = 0; i < 100 && readRows(home).length < 6; i++) await new Promise((res) => setTimeout(res, 100));
    assert.equal(readRows(home).length, 6);
    const [runId] = fs.readdirSync(path.join(home, 'runs'));
    for (let i = 0; i < 100 && JSON.parse(fs.readFileSync(path.join(home, 'runs', String(runId), 'state.json'), 'utf8')).status === 'running'; i++)
      await new Promise((res) => setTimeout(res, 100));
    assert.equal(JSON.parse(fs.readFileSync(path.join(home, 'runs', String(runId), 'state.json'), 'utf8')).status, 'finished');
  });

  it('two plain-mode runs on one workdir: the second is refused naming the first; nothing of the first is touched', async () => {
    const dir = tempDir();
    const first = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('slow', 'sleep 3; echo mine > out.txt', 'grep -x mine out.txt')] }, 'first.swarm.json');
    const lazy = writeManifest(
      dir,
      { workdir: 'w', tasks: [scriptTask('slow', 'echo All done!', 'grep -x mine out.txt', { max_attempts: 1 })] },
      'second.swarm.json',
    );
    const home = path.join(dir, 'home');
    const a = execa('node', [CLI, 'run', first, '--home', home, '--no-dashboard'], { reject: false, all: true, stdin: 'ignore' });
    for (let i = 0; i < 100 && !fs.existsSync(path.join(dir, 'w', '.verdict-run.json')); i++) await new Promise((res) => setTimeout(res, 50));
    const holder = JSON.parse(fs.readFileSync(path.join(dir, 'w', '.verdict-run.json'), 'utf8')) as { runId: string; pid: number };
    const b = await cli(['run', lazy, '--home', home, '--no-dashboard']);
    assert.equal(b.exitCode, 2, b.all);
    assert.match(b.all ?? '', new RegExp(`in use by run ${holder.runId} \\(pid ${holder.pid}, identity`));
    const ra = await a;
    assert.equal(ra.exitCode, 0, ra.all);
    assert.deepEqual(
      readRows(home).map((row) => [row.task_key, row.verdict]),
      [['slow', 'PASS']],
      'the refused run started nothing',
    );
    assert.equal(fs.existsSync(path.join(dir, 'w', '.verdict-previous')), false, 'nothing of the first run was moved aside');
    // Once the first run is over the workdir is free again (and its leftovers are moved aside, as before).
    const later = await cli(['run', lazy, '--home', home, '--no-dashboard']);
    assert.equal(later.exitCode, 1, later.all);
  });

  it('a repository with uncommitted changes: one line says which base the worktrees start from and that N changes are not in them', async () => {
    const dir = tempDir();
    const repo = repoWithTests(dir);
    fs.writeFileSync(path.join(repo, 'README.md'), '# changed, not committed\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('feature', 'echo done > feature.txt', 'bash run-tests.sh')] });
    const r = await run(file, path.join(dir, 'home'));
    assert.equal(r.exitCode, 0, r.all);
    assert.match(
      r.all ?? '',
      new RegExp(
        `worktrees start from ${git(repo, 'rev-parse', 'HEAD').slice(0, 10)} \\(base_ref HEAD\\); 1 uncommitted change\\(s\\) in ${repo} are not in them`,
      ),
    );
  });

  it('a submodule with a local path as its URL, where git refuses the file transport: prepare ends ERROR saying why and how to allow it', async () => {
    const dir = tempDir();
    const lib = makeRepo(path.join(dir, 'lib'), { 'lib.txt': 'v1\n' });
    const repo = makeRepo(path.join(dir, 'repo'));
    git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
    git(repo, 'commit', '-q', '-m', 'add submodule');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('edit', 'echo v2 > out.txt', 'test -s out.txt', { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard'], { env: { HOME: path.join(dir, 'user-home') } });
    assert.equal(r.exitCode, 1, r.all);
    const row = readRows(home)[0] as Record<string, unknown>;
    assert.equal(row.verdict, 'ERROR');
    assert.match(String(row.notes), /Submodule vendor\/lib has a local path as its URL.*git config --global protocol\.file\.allow always/);
  });

  it('work inside a submodule is never reported PASS with nothing kept: changed, new and committed files there FAIL naming it', async () => {
    const dir = tempDir();
    const lib = makeRepo(path.join(dir, 'lib'), { 'lib.txt': 'v1\n' });
    const repo = makeRepo(path.join(dir, 'repo'));
    git(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', lib, 'vendor/lib');
    git(repo, 'commit', '-q', '-m', 'add submodule');
    const check = 'test -s vendor/lib/lib.txt';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 3,
      tasks: [
        scriptTask('edit', 'echo v2 > vendor/lib/lib.txt', check, { max_attempts: 1 }),
        scriptTask('add', 'echo new > vendor/lib/new.txt', check, { max_attempts: 1 }),
        scriptTask('commit', 'cd vendor/lib && echo v3 > lib.txt && git -c user.name=w -c user.email=w@x commit -qam v3', check, { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard'], {
      env: { HOME: path.join(dir, 'user-home'), GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'protocol.file.allow', GIT_CONFIG_VALUE_0: 'always' },
    });
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    assert.equal(rows.length, 3, r.all);
    for (const row of rows) {
      assert.equal(row.verdict, 'FAIL', `${String(row.task_key)}: ${String(row.notes)}`);
      assert.match(String(row.notes), /inside submodule\(s\) vendor\/lib/);
    }
  });

  it('a worker that leaves a file too big to seal: the seal stops at check_timeout_s (ERROR), the run does not hang', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [scriptTask('huge', 'truncate -s 8G big.bin', 'true', { check_timeout_s: 2, max_attempts: 1 })],
    });
    const home = path.join(dir, 'home');
    const started = Date.now();
    // --force: the check `true` is a lint error; the seal is what is tested, and it ERRORs before the check.
    const r = await run(file, home, ['--force']);
    assert.equal(r.exitCode, 1, r.all);
    const [row] = readRows(home);
    assert.equal(row?.verdict, 'ERROR');
    assert.match(String(row?.notes), /sealing the worktree took longer than 2 s/);
    assert.ok(Date.now() - started < 30000, `the run took ${Date.now() - started} ms`);
  });

  it('a change that keeps size and mtime (touch -r) is still sealed: the commit holds what the check saw', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'value.txt': 'old\n' });
    const spec = 'touch -r value.txt "$TMPDIR/stamp"; printf "new\\n" > value.txt; touch -r "$TMPDIR/stamp" value.txt';
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('same-stat', spec, 'grep -x new value.txt', { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(git(repo, 'show', `${String(readRows(home)[0]?.branch)}:value.txt`), 'new');
  });

  it('verdict clean never removes a worktree a live process works in, and reconciles a dead run first', async () => {
    const dir = tempDir();
    const repo = repoWithTests(dir);
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('feature', 'echo done > feature.txt', 'bash run-tests.sh')] });
    const home = path.join(dir, 'home');
    assert.equal((await run(file, home)).exitCode, 0);
    const [row] = readRows(home);
    const worktree = path.join(home, 'worktrees', String(row?.run_id), 'feature');
    // Someone's shell (here: a sleep) works in the finished run's worktree.
    const shell = execa('sleep', ['30'], { cwd: worktree, reject: false });
    try {
      const c = await cli(['clean', '--home', home]);
      assert.equal(c.exitCode, 1, c.all);
      assert.match(c.all ?? '', /kept: a live process works in it \(pid \d+ sleep\)/);
      assert.ok(fs.existsSync(path.join(worktree, 'feature.txt')), 'the worktree is still there');
    } finally {
      shell.kill('SIGKILL');
      await shell;
    }
    const again = await cli(['clean', '--home', home]);
    assert.equal(again.exitCode, 0, again.all);
    assert.equal(fs.existsSync(worktree), false);
  });

  it('VERDICT_HOME fills up mid-run (a small tmpfs; root only): no crash, no stack trace, one line per task saying so', async function () {
    if (process.getuid?.() !== 0) return this.skip();
    const dir = tempDir();
    const home = path.join(dir, 'small-home');
    fs.mkdirSync(home);
    const mounted = await execa('mount', ['-t', 'tmpfs', '-o', 'size=120k', 'tmpfs', home], { reject: false });
    if (mounted.exitCode !== 0) return this.skip();
    try {
      const spec = 'head -c 20000 /dev/urandom | base64; echo ok > out.txt';
      const file = writeManifest(dir, { workdir: 'w', max_parallel: 2, tasks: Array.from({ length: 8 }, (_, i) => scriptTask(`t${i}`, spec, 'cat out.txt')) });
      const r = await cli(['run', file, '--home', path.join(home, 'h'), '--no-dashboard']);
      assert.equal(r.exitCode, 1, r.all);
      assert.doesNotMatch(r.all ?? '', /\n\s+at |Node\.js v/, 'a stack trace was printed');
      assert.match(r.all ?? '', /no space left on the device of/);
      assert.match(r.all ?? '', /passed in/, 'the run printed its table');
    } finally {
      await execa('umount', [home], { reject: false });
    }
  });

  it("every row names what its check judged: the sealed commit, or the plain task dir's tree hash (before the check wrote)", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const wt = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('w', 'echo a > a.txt', 'cat a.txt')] }, 'wt.swarm.json');
    const plain = writeManifest(
      dir,
      { workdir: 'p', tasks: [scriptTask('p', 'echo a > a.txt', 'cat a.txt && echo by-check > check-wrote.txt')] },
      'plain.swarm.json',
    );
    const home = path.join(dir, 'home');
    assert.equal((await run(wt, home)).exitCode, 0);
    assert.equal((await run(plain, home)).exitCode, 0);
    const [w, p] = readRows(home);
    assert.equal(w?.sealed, w?.commit);
    assert.match(String(p?.sealed), /^sha256:[0-9a-f]{64}$/);
    // The hash is of the dir the check saw, and the delivered dir is that dir: what the check wrote was discarded
    // once it passed (run/check-writes.ts putBackJudged).
    assert.equal(fs.existsSync(path.join(dir, 'p', 'p', 'check-wrote.txt')), false, 'the check wrote check-wrote.txt into the delivered dir');
    assert.equal(p?.sealed, treeHash(path.join(dir, 'p', 'p')));
  });
});
