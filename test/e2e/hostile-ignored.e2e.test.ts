import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { overlayHere } from '../helpers/overlay';

// The check judges what is delivered: a file the check reads in the task dir is in the sealed
// commit or was there before the worker ran (the start commit's tree, `include`, what `setup` made). A worker that
// writes what the check reads under a path git ignores — its own .gitignore entry, a path the repository already
// ignores, a folder a committed script sources — got a PASS whose commit lacks the file; only `verdict merge`'s
// re-check on a fresh checkout noticed. Those files are now moved aside into the attempt's record before the check.

async function run(file: string, home: string, extra: string[] = [], env: Record<string, string> = {}) {
  return cli(['run', file, '--home', home, '--no-dashboard', ...extra], { env: { HOME: path.join(path.dirname(home), 'user-home'), ...env } });
}

function runIdOf(home: string): string {
  return fs.readdirSync(path.join(home, 'runs')).filter((f) => !f.startsWith('.'))[0] as string;
}

/** `runs/<id>/tasks/<key>/attempt-<n>/`. */
function attemptDir(home: string, key: string, attempt: number): string {
  return path.join(home, 'runs', runIdOf(home), 'tasks', key, `attempt-${attempt}`);
}

/** The task dir of `key` (worktree mode): `<home>/worktrees/<run>/<key>`. */
function taskDir(home: string, key: string): string {
  return path.join(home, 'worktrees', runIdOf(home), key);
}

/** The run (of several in `home`) that has task `key`. */
function runOf(home: string, key: string): string {
  return fs.readdirSync(path.join(home, 'runs')).find((id) => fs.existsSync(path.join(home, 'runs', id, 'tasks', key))) as string;
}

function byKey(home: string): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    readRows(home)
      .filter((r) => r.step === 'work')
      .map((r) => [r.task_key, r]),
  );
}

describe('hostile: files git ignores are judged only when the worker did not make them', function () {
  this.timeout(240000);
  before(async function () {
    await requireSandbox(this);
  });

  it("a worker's own .gitignore entry: FAIL, the file kept in the attempt's record; the honest retry PASSes and merges", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'));
    const spec = [
      'echo "--- answer at start: $(cat answer.txt 2>/dev/null || echo absent)"',
      // Attempt 1 hides its answer from the commit; attempt 2 delivers it.
      'if [ "$VERDICT_ATTEMPT" = 1 ]; then printf "answer.txt\\n" >> .gitignore; else sed -i "/answer.txt/d" .gitignore; fi',
      'echo 42 > answer.txt',
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, 'grep -qx 42 answer.txt', { max_attempts: 2 })] });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home).filter((row) => row.step === 'work');
    assert.deepEqual(
      rows.map((row) => row.verdict),
      ['FAIL', 'PASS'],
      'attempt 1 passed on a file its commit does not hold',
    );
    assert.match(String(rows[0]?.notes), /answer\.txt/);
    assert.match(String(rows[0]?.notes), /moved out of the check's sight/);
    assert.match(r.all, /· t {2}the sealed commit does not hold answer\.txt .*moved out of the check.s sight/);
    // Not deleted: the attempt's record holds it, and lists it.
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 't', 1), 'undelivered', 'answer.txt'), 'utf8'), '42\n');
    assert.match(fs.readFileSync(path.join(attemptDir(home, 't', 1), 'undelivered.txt'), 'utf8'), /^answer\.txt$/m);
    // The retry starts without it (the worker's undelivered file is in the record, not in the tree).
    assert.match(fs.readFileSync(String(rows[1]?.worker_log), 'utf8'), /--- answer at start: absent/);
    const branch = String(rows[1]?.branch);
    assert.equal(git(repo, 'show', `${branch}:answer.txt`), '42');
    // The merge queue's re-check, on a fresh checkout, agrees with the PASS.
    const merge = await cli(['merge', runIdOf(home), 't', '--home', home], { env: { HOME: path.join(dir, 'user-home') } });
    assert.equal(merge.exitCode, 0, merge.all);
    assert.equal(git(repo, 'show', 'HEAD:answer.txt'), '42');
  });

  it('a path the repository already ignores (build.log): FAIL naming it, and the task branch never moves', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), { '.gitignore': '*.log\n', 'README.md': '# app\n' });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [scriptTask('t', 'echo "all tests passed" > build.log; echo wip > work.txt', 'grep -q "all tests passed" build.log', { max_attempts: 1 })],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const row = byKey(home).t;
    assert.equal(row?.verdict, 'FAIL', 'a PASS judged build.log, which the commit does not hold');
    assert.match(String(row?.notes), /build\.log/);
    assert.equal(fs.existsSync(path.join(taskDir(home, 't'), 'build.log')), false);
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 't', 1), 'undelivered', 'build.log'), 'utf8'), 'all tests passed\n');
    // The branch still points at the start commit.
    assert.equal(git(repo, 'rev-parse', String(row?.branch)), git(repo, 'rev-parse', 'main'));
  });

  it("overlay and sparse trees: the worker's ignored file is moved out (across file systems from an overlay) and the check FAILs", async function () {
    const overlayToo = await overlayHere();
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), { '.gitignore': '*.log\n', 'pkg/README.md': '# pkg\n', 'other/README.md': '# other\n' });
    const task = (key: string) =>
      scriptTask(
        key,
        'mkdir -p pkg/out && echo "all tests passed" > pkg/out/build.log && echo wip > pkg/work.txt',
        'grep "all tests passed" pkg/out/build.log',
        { max_attempts: 1 },
      );
    const overlay = writeManifest(dir, { worktrees: true, repo, tree: 'overlay', tasks: [task('over')] }, 'overlay.swarm.json');
    const sparse = writeManifest(dir, { worktrees: true, repo, tree: 'sparse', sparse: ['pkg'], tasks: [task('cone')] }, 'sparse.swarm.json');
    for (const [file, key] of [...(overlayToo ? ([[overlay, 'over']] as const) : []), [sparse, 'cone']] as const) {
      const r = await run(file, home);
      assert.equal(r.exitCode, 1, r.all);
      assert.equal(byKey(home)[key]?.verdict, 'FAIL', `${key}: a PASS judged pkg/out/build.log, which the commit does not hold`);
      const attempt = path.join(home, 'runs', runOf(home, key), 'tasks', key, 'attempt-1');
      assert.equal(fs.readFileSync(path.join(attempt, 'undelivered', 'pkg', 'out', 'build.log'), 'utf8'), 'all tests passed\n');
    }
  });

  it("an ignored folder a committed script sources: new, inside setup's ignored folder, or setup's file changed — each FAILs; setup's own files stay", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), {
      '.gitignore': 'build/\n.venv/\n',
      // Each script trusts a file in an ignored folder to say the work is done.
      'check-venv.sh': '. ./.venv/activate && test "$READY" = yes\n',
      'check-extra.sh': '. ./build/extra.sh && test "$READY" = yes\n',
      'check-env.sh': '. ./build/env.sh && test "$READY" = yes\n',
    });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 3,
      // A build folder from setup: a cache and an env file saying "not ready".
      setup: 'mkdir -p build && echo cached > build/cache.txt && echo READY=no > build/env.sh',
      tasks: [
        scriptTask('venv', 'mkdir -p .venv && echo READY=yes > .venv/activate', 'bash check-venv.sh', { max_attempts: 1 }),
        scriptTask('extra', 'echo READY=yes > build/extra.sh', 'bash check-extra.sh', { max_attempts: 1 }),
        scriptTask('env', 'echo READY=yes > build/env.sh', 'test -s build/cache.txt && bash check-env.sh', { max_attempts: 1 }),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const rows = byKey(home);
    for (const key of ['venv', 'extra', 'env']) assert.equal(rows[key]?.verdict, 'FAIL', `${key}: the check sourced a file its commit does not hold\n${r.all}`);
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 'venv', 1), 'undelivered', '.venv', 'activate'), 'utf8'), 'READY=yes\n');
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 'extra', 1), 'undelivered', 'build', 'extra.sh'), 'utf8'), 'READY=yes\n');
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 'env', 1), 'undelivered', 'build', 'env.sh'), 'utf8'), 'READY=yes\n');
    // Setup's files the worker did not touch are still there for the check (env's check read build/cache.txt first).
    for (const key of ['extra', 'env']) assert.equal(fs.readFileSync(path.join(taskDir(home, key), 'build', 'cache.txt'), 'utf8'), 'cached\n');
    // Setup's build/env.sh, which the worker rewrote, was put back for the check: it read READY=no.
    assert.equal(fs.readFileSync(path.join(taskDir(home, 'env'), 'build', 'env.sh'), 'utf8'), 'READY=no\n');
    assert.match(String(rows.env?.notes), /put back build\/env\.sh as setup left it/);
  });

  it("legitimate ignored files: setup's node_modules and dist/ stay visible; a worker's rebuild of dist/ is moved aside and a check that rebuilds PASSes; the merge re-check agrees", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), {
      '.gitignore': 'node_modules/\ndist/\n*.log\n',
      'build.sh': 'mkdir -p dist && cat src/*.txt > dist/lib.js\n',
      'src/a.txt': 'part-a\n',
    });
    const { config, env } = reviewer(dir);
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 3,
      // What setup makes (dependencies, a build) is there before any worker: the check may read it.
      setup: 'mkdir -p node_modules/dep && echo "module.exports = 1" > node_modules/dep/index.js && sh build.sh',
      tasks: [
        // Reads setup's dist/ and node_modules; its own scratch log (ignored) is moved aside, so the reviewer does not see it.
        scriptTask(
          'reads-setup',
          'echo done > feature.txt; echo scratch > notes.log',
          'test -s node_modules/dep/index.js && grep -qx part-a dist/lib.js && grep -qx done feature.txt',
          { review: { engines: ['looker'] } },
        ),
        // Rebuilds dist/ (npm run build would): its dist/lib.js is moved aside; the check builds it again from the commit.
        scriptTask('rebuilds', 'echo part-b > src/b.txt && sh build.sh', 'sh build.sh && grep -qx part-b dist/lib.js && test -s node_modules/dep/index.js'),
        // The same worker with a check that trusts the worker's build: FAIL (the delivered commit holds no dist/).
        scriptTask('trusts-build', 'echo part-c > src/c.txt && sh build.sh', 'grep -qx part-c dist/lib.js', { max_attempts: 1 }),
      ],
    });
    const r = await run(file, home, ['--config', config], env);
    if (process.env.SHOW) console.log(r.all);
    const rows = byKey(home);
    assert.equal(rows['reads-setup']?.verdict, 'PASS', r.all);
    assert.equal(rows.rebuilds?.verdict, 'PASS', r.all);
    assert.equal(rows['trusts-build']?.verdict, 'FAIL', r.all);
    assert.match(String(rows['trusts-build']?.notes), /dist\/lib\.js/);
    const review = readRows(home).find((row) => row.step === 'review' && row.task_key === 'reads-setup');
    assert.equal((review?.review as { verdict?: string } | undefined)?.verdict, 'approve', 'the reviewer saw notes.log, which the commit does not hold');
    // Setup's files untouched by the worker are where setup left them.
    assert.equal(fs.readFileSync(path.join(taskDir(home, 'reads-setup'), 'dist', 'lib.js'), 'utf8'), 'part-a\n');
    assert.equal(fs.existsSync(path.join(taskDir(home, 'reads-setup'), 'node_modules', 'dep', 'index.js')), true);
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 'reads-setup', 1), 'undelivered', 'notes.log'), 'utf8'), 'scratch\n');
    assert.equal(fs.existsSync(path.join(attemptDir(home, 'reads-setup', 1), 'undelivered', 'dist')), false, "setup's dist/ was moved aside");
    // The worker's own build output is in the record, setup's node_modules untouched.
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 'rebuilds', 1), 'undelivered', 'dist', 'lib.js'), 'utf8'), 'part-a\npart-b\n');
    assert.equal(fs.existsSync(path.join(taskDir(home, 'rebuilds'), 'node_modules', 'dep', 'index.js')), true);
    // The merge queue runs setup in its fresh checkout too, then the check: both PASSes merge.
    const merge = await cli(['merge', runIdOf(home), 'reads-setup', 'rebuilds', '--home', home], { env: { HOME: path.join(dir, 'user-home') } });
    assert.equal(merge.exitCode, 0, merge.all);
    assert.equal(git(repo, 'show', 'HEAD:feature.txt'), 'done');
    assert.equal(git(repo, 'show', 'HEAD:src/b.txt'), 'part-b');
  });
});

/** A reviewer engine `looker` that approves only when the task dir holds no notes.log. */
function reviewer(dir: string): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  const body = `if [ -e "$VERDICT_TASK_DIR/notes.log" ]; then echo '{"verdict":"reject","concerns":["notes.log is in the task dir but not in the commit"]}'; else echo '{"verdict":"approve","concerns":[]}'; fi`;
  fs.writeFileSync(path.join(bin, 'looker'), `#!/bin/bash\n${body}\n`, { mode: 0o755 });
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({ engines: { looker: { binary: 'looker', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'looker-1' } } }),
  );
  return { config, env: { PATH: `${bin}:${process.env.PATH}` } };
}

describe("hostile: files git never lists, and setup's files changed behind their times", function () {
  this.timeout(300000);
  before(async function () {
    await requireSandbox(this);
  });

  it("setup's file rewritten with its mtime put back (touch -d), or written through a hard link: each FAILs, setup's untouched files stay", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), {
      '.gitignore': 'build/\n',
      'check.sh': '. ./build/env.sh && test "$READY" = go\n',
      'lib/README.md': '# lib\n',
    });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 2,
      setup: 'mkdir -p build && echo cached > build/cache.txt && echo READY=no > build/env.sh',
      tasks: [
        // Same size, mtime put back: only the ctime (which no step can set) tells.
        scriptTask(
          'touched',
          't=$(stat -c %y build/env.sh | cut -d" " -f1,2) && echo READY=go > build/env.sh && touch -d "$t" build/env.sh && echo "mtime $t kept $(stat -c %y build/env.sh | cut -d" " -f1,2)"',
          'bash check.sh',
          { max_attempts: 1 },
        ),
        // A delivered file hard-linked to setup's, written through the link: setup's file changed (its ctime too).
        scriptTask('linked', 'ln build/env.sh env.sh && echo READY=go > env.sh', 'bash check.sh', { max_attempts: 1 }),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const rows = byKey(home);
    for (const key of ['touched', 'linked']) assert.equal(rows[key]?.verdict, 'FAIL', `${key}: the check sourced a file its commit does not hold\n${r.all}`);
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 'touched', 1), 'undelivered', 'build', 'env.sh'), 'utf8'), 'READY=go\n');
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 'linked', 1), 'undelivered', 'build', 'env.sh'), 'utf8'), 'READY=go\n');
    for (const key of ['touched', 'linked']) assert.equal(fs.readFileSync(path.join(taskDir(home, key), 'build', 'cache.txt'), 'utf8'), 'cached\n');
    // The worker did what it meant to (the FAIL is the check's, on setup's build/env.sh put back from its copy), and
    // the mtime was put back.
    for (const key of ['touched', 'linked']) {
      assert.equal(fs.readFileSync(path.join(taskDir(home, key), 'build', 'env.sh'), 'utf8'), 'READY=no\n');
      assert.match(String(rows[key]?.notes), /put back build\/env\.sh as setup left it/);
    }
    assert.match(fs.readFileSync(String(rows.touched?.worker_log), 'utf8'), /mtime (\S+ \S+) kept \1\n/);
  });

  it('a .git folder inside a tracked folder (git never lists nor commits it) that a delivered script sources: FAIL, moved aside', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), {
      'check.sh': '. ./lib/impl.sh && test "$READY" = go\n',
      'lib/impl.sh': 'READY=no\n',
    });
    const spec =
      'mkdir -p lib/.git sub/.git && echo READY=go > lib/.git/real.sh && echo READY=go > sub/.git/real.sh && echo ". ./lib/.git/real.sh" > lib/impl.sh';
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, 'bash check.sh', { max_attempts: 1 })] });
    const r = await run(file, home);
    const row = byKey(home).t;
    assert.equal(row?.verdict, 'FAIL', `the check sourced lib/.git/real.sh, which the commit does not hold\n${r.all}`);
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 't', 1), 'undelivered', 'lib', '.git', 'real.sh'), 'utf8'), 'READY=go\n');
    assert.equal(fs.existsSync(path.join(taskDir(home, 't'), 'lib', '.git')), false);
    // A .git folder in a new (untracked) folder is moved with it.
    assert.equal(fs.readFileSync(path.join(attemptDir(home, 't', 1), 'undelivered', 'sub', '.git', 'real.sh'), 'utf8'), 'READY=go\n');
  });
});

describe('hostile: odd files in ignored places (regression)', function () {
  this.timeout(300000);
  before(async function () {
    await requireSandbox(this);
  });

  it('a FIFO, a name with a newline and a folder whose name is not UTF-8, all where git ignores: moved aside byte-exact and listed one per line, the delivered work PASSes', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), { '.gitignore': 'build/\n*.log\n', 'README.md': '# r\n' });
    const spec = [
      'mkdir -p build && mkfifo build/pipe',
      "printf 'forged\\n' > $'build/new\\nline.txt' && printf 'x\\n' > $'top\\nname.log'",
      "mkdir $'build/odd\\x80dir' && echo kept > $'build/odd\\x80dir/in.txt'",
      'echo ok > out.txt',
    ].join('\n');
    // The check sees none of them: they are not in the commit.
    const check = "grep -qx ok out.txt && test ! -e build && test ! -e $'top\\nname.log'";
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, check, { max_attempts: 1, check_timeout_s: 120 })] });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(byKey(home).t?.verdict, 'PASS', r.all);
    const aside = path.join(attemptDir(home, 't', 1), 'undelivered');
    assert.equal(fs.readFileSync(path.join(aside, 'build', 'new\nline.txt'), 'utf8'), 'forged\n');
    assert.equal(fs.readFileSync(path.join(aside, 'top\nname.log'), 'utf8'), 'x\n');
    const odd = Buffer.concat([Buffer.from(`${aside}/build/odd`), Buffer.from([0x80]), Buffer.from('dir/in.txt')]);
    assert.equal(fs.readFileSync(odd, 'utf8'), 'kept\n');
    // One line per moved entry (the worker's new build/ whole, and the log), names that would break a line quoted.
    const listed = fs
      .readFileSync(path.join(attemptDir(home, 't', 1), 'undelivered.txt'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .sort();
    assert.deepEqual(listed, ['"top\\nname.log"', 'build/'].sort());
    assert.equal(git(repo, 'show', `${String(byKey(home).t?.branch)}:out.txt`), 'ok');
  });
});
