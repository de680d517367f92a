import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { requireOverlay } from '../helpers/overlay';

// Odd files never cost good work, and Verdict never changes a file the start commit has unless the worker did (issue
// 26 items 3 and 4), with real `verdict run` processes of the script engine, written as a careless or hostile worker
// would leave its tree. Each of these ended wrong before the fix:
// - a FIFO named `.gitattributes` or `sub/.gitignore` held the seal's `git add` (git opens those files) until
//   check_timeout_s, then the attempt was an ERROR ("files too large for git"), never retried;
// - a file whose name is not valid UTF-8 made the seal an ERROR ("not in the cache": its name was decoded as UTF-8
//   and handed back to git);
// - a committed pytest.ini (or conftest.py) that a correct worker never touched FAILed the attempt as "new", and the
//   restore before the retry deleted it, so the PASS commit deleted it;
// - a committed CRLF file under a `text` attribute that a correct worker never touched was committed converted (LF)
//   by the seal, and FAILed the attempt when it was a protected test.

/** `git ls-tree -r -z <rev>` as raw bytes: each path (its exact bytes) with its blob id. */
function treeEntries(repo: string, rev: string): { path: Buffer; id: string }[] {
  const out = execFileSync('git', ['ls-tree', '-r', '-z', rev], { cwd: repo });
  const entries: { path: Buffer; id: string }[] = [];
  for (let at = 0; at < out.length;) {
    const nul = out.indexOf(0, at);
    const record = out.subarray(at, nul);
    const tab = record.indexOf(9);
    entries.push({ id: record.subarray(0, tab).toString('latin1').split(' ')[2] as string, path: record.subarray(tab + 1) });
    at = nul + 1;
  }
  return entries;
}

/** Every path of `<rev>`, as raw bytes. */
function treePaths(repo: string, rev: string): Buffer[] {
  return treeEntries(repo, rev).map((e) => e.path);
}

/** The bytes of `<rev>:<path>` (path as raw bytes: a name that is not UTF-8 cannot be an argument of ours). */
function blob(repo: string, rev: string, p: Buffer): Buffer {
  const entry = treeEntries(repo, rev).find((e) => e.path.equals(p));
  assert.ok(entry, `no blob ${p.toString('latin1')} in ${rev}`);
  return execFileSync('git', ['cat-file', 'blob', entry.id], { cwd: repo });
}

function verdicts(home: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const r of readRows(home)) if (r.step !== 'review') (out[String(r.task_key)] ??= []).push(String(r.verdict));
  return out;
}

/** `git diff --name-status main <branch>`, one `X\tpath` per change, sorted. */
function changes(repo: string, branch: string): string[] {
  return git(repo, 'diff', '--name-status', 'main', branch).split('\n').filter(Boolean).sort();
}

async function run(file: string, home: string) {
  return cli(['run', file, '--home', home, '--no-dashboard'], { env: { HOME: path.join(path.dirname(home), 'user-home') } });
}

/** A correct worker's fix of calc.py, and the check that runs the committed pytest tests. */
const FIX = "sed -i 's/return 0/return a + b/' calc.py";
const CHECK = 'python3 -m pytest -q tests';

// A name that is not valid UTF-8: "café" in Latin-1 (0xE9 alone), and a folder named by a lone continuation byte.
const LATIN1_NAME = Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74, 0x78, 0x74]); // caf\xe9.txt
const BASH_LATIN1 = "$'caf\\xe9.txt'";
const BASH_ODD_DIR = "$'odd\\x80dir'";

/**
 * The worker tasks of item 3. Each writes out.txt (its deliverable, which the check reads) and leaves odd files:
 * check_timeout_s is long (a seal held by a FIFO ends only with the test's own time limit), max_attempts 2.
 */
function oddTasks(at: string): Record<string, unknown>[] {
  const p = at ? `${at}/` : '';
  const task = (key: string, spec: string, check = `grep -qx ok ${p}out.txt || { echo "no ok in out.txt"; exit 1; }`) =>
    scriptTask(key, `${spec}\necho ok > ${p}out.txt`, check, { max_attempts: 2, check_timeout_s: 600 });
  return [
    task('fifo-attributes', `mkfifo ${p}.gitattributes && echo "fifo made"`),
    task('fifo-gitignore', `mkdir -p ${p}sub && mkfifo ${p}sub/.gitignore && echo "fifo made"`),
    // A socket and a FIFO under ordinary names, and a FIFO .gitignore inside a folder whose name is not UTF-8.
    task(
      'socket-fifo',
      [
        `python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('${p}app.sock')"`,
        `mkfifo ${p}pipe`,
        `mkdir ${p}${BASH_ODD_DIR} && mkfifo ${p}${BASH_ODD_DIR}/.gitignore && echo keep > ${p}${BASH_ODD_DIR}/kept.txt`,
        'echo "fifo made"',
      ].join('\n'),
    ),
    task(
      'latin1',
      `printf 'caf\\xe9\\n' > ${p}${BASH_LATIN1} && echo "fifo made"`,
      `test -s ${p}${BASH_LATIN1} && grep -qx ok ${p}out.txt || { echo "missing"; exit 1; }`,
    ),
  ];
}

/** Item 3's outcomes: each task PASSed on its first attempt, its odd files named, its work delivered byte-exact. */
function assertOddFilesDelivered(home: string, repo: string, all: string, at: string): void {
  const p = at ? `${at}/` : '';
  const v = verdicts(home);
  for (const key of ['fifo-attributes', 'fifo-gitignore', 'socket-fifo', 'latin1']) assert.deepEqual(v[key], ['PASS'], `${key}\n${all}`);
  const runId = String(readRows(home)[0]?.run_id);
  const branch = (key: string) => `verdict/${runId}/${key}`;
  assert.match(all, new RegExp(`fifo-attributes .*skipped .*FIFO ${p.replace('/', '\\/')}\\.gitattributes`));
  assert.match(all, new RegExp(`fifo-gitignore .*skipped .*FIFO ${p.replace('/', '\\/')}sub/\\.gitignore`));
  assert.match(all, /socket-fifo .*skipped .*socket \S*app\.sock/);
  assert.match(all, /socket-fifo .*skipped .*FIFO \S*pipe\b/);
  assert.match(all, /socket-fifo .*skipped .*FIFO "\S*odd\\200dir\/\.gitignore"/);
  assert.deepEqual(changes(repo, branch('fifo-attributes')), [`A\t${p}out.txt`]);
  assert.deepEqual(changes(repo, branch('fifo-gitignore')), [`A\t${p}out.txt`]);
  // The file beside the FIFO in the folder with the odd name is delivered, under its name's exact bytes.
  const oddKept = Buffer.concat([Buffer.from(p), Buffer.from('odd'), Buffer.from([0x80]), Buffer.from('dir/kept.txt')]);
  assert.ok(
    treePaths(repo, branch('socket-fifo')).some((x) => x.equals(oddKept)),
    'odd\\x80dir/kept.txt is in the PASS commit',
  );
  const latin1 = Buffer.concat([Buffer.from(p), LATIN1_NAME]);
  const delivered = treePaths(repo, branch('latin1'));
  assert.ok(
    delivered.some((x) => x.equals(latin1)),
    `caf\\xe9.txt is in the PASS commit under its exact bytes: ${delivered.map((x) => x.toString('latin1')).join(', ')}`,
  );
  assert.deepEqual(blob(repo, branch('latin1'), latin1), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
}

describe('hostile odd files: FIFOs, sockets and names that are not UTF-8', function () {
  this.timeout(300000);

  for (const tree of ['worktree', 'sparse', 'overlay'] as const) {
    it(`${tree}: the seal skips FIFOs (.gitattributes, sub/.gitignore) and sockets, naming them, and commits a non-UTF-8 name byte-exact: every task PASSes on its first attempt`, async function () {
      await requireSandbox(this);
      if (tree === 'overlay') await requireOverlay(this);
      const dir = tempDir();
      const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# r\n', 'src/a/x.txt': 'x\n' });
      const home = path.join(dir, 'home');
      const at = tree === 'sparse' ? 'src/a' : '';
      const file = writeManifest(dir, { worktrees: true, repo, tree, sparse: ['src/a/**'], max_parallel: 2, tasks: oddTasks(at) });
      const r = await run(file, home);
      assert.equal(r.exitCode, 0, r.all);
      assertOddFilesDelivered(home, repo, r.all ?? '', at);
    });
  }

  // Before: git refuses to record a path that names a `.git` folder another way (`.GIT/x`, `git~1/x`: core.protectNTFS,
  // on by default) and cannot read a repository the worker made with a config it garbled: the seal's `git add` failed,
  // the attempt was an ERROR (never retried), and the good work beside it was lost.
  it('a path git refuses (.GIT/x, git~1/x) or a nested repository git cannot read: FAIL naming it, retried, and the retry that removes it PASSes', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# r\n' });
    const home = path.join(dir, 'home');
    const first = (odd: string) => `if [ "$VERDICT_ATTEMPT" = 1 ]; then ${odd}; else rm -rf .GIT git~1 n2; fi; echo ok > out.txt`;
    const check = 'grep -qx ok out.txt || { echo "no ok"; exit 1; }';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 2,
      tasks: [
        scriptTask('refused', first('mkdir .GIT git~1 && echo x > .GIT/x && echo y > git~1/y'), check, { max_attempts: 2 }),
        scriptTask('garbled', first("git init -q n2 && echo f > n2/f && printf '\\0\\0garbage' > n2/.git/config"), check, { max_attempts: 2 }),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const v = verdicts(home);
    assert.deepEqual(
      [v.refused, v.garbled],
      [
        ['FAIL', 'PASS'],
        ['FAIL', 'PASS'],
      ],
      r.all,
    );
    const rows = readRows(home);
    const reason = (key: string) => String(rows.find((x) => x.task_key === key)?.notes);
    assert.match(reason('refused'), /git cannot record \.GIT\/x, git~1\/y/);
    assert.match(reason('garbled'), /git cannot read what the worker left in the task dir: .*bad config line 1 in file n2\/\.git\/config/);
    const runId = String(rows[0]?.run_id);
    for (const key of ['refused', 'garbled']) assert.deepEqual(changes(repo, `verdict/${runId}/${key}`), ['A\tout.txt'], key);
  });

  it('a check that leaves a FIFO .gitignore and a non-UTF-8 file: the retry starts from the sealed tree without them', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# r\n' });
    const home = path.join(dir, 'home');
    // The check (attempt 1) leaves a FIFO where git reads its ignore rules and a file under an odd name, then fails;
    // attempt 2's worker must see neither (else its seal commits the odd file, or hangs on the FIFO).
    const check = [
      `if [ "$VERDICT_ATTEMPT" = 1 ]; then mkdir -p sub && mkfifo sub/.gitignore && echo junk > ${BASH_LATIN1}; echo "first check fails"; exit 1; fi`,
      'grep -qx ok out.txt || { echo "no ok"; exit 1; }',
    ].join('\n');
    const spec = `if ls -b | grep -q 'caf'; then echo "leftover seen"; fi; test -p sub/.gitignore && echo "fifo seen"; echo ok > out.txt`;
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('retry', spec, check, { max_attempts: 2, check_timeout_s: 600 })] });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(verdicts(home).retry, ['FAIL', 'PASS'], r.all);
    const logs = readRows(home)
      .filter((x) => x.task_key === 'retry')
      .map((x) => fs.readFileSync(String(x.worker_log), 'utf8'));
    assert.doesNotMatch(logs[1] ?? '', /leftover seen|fifo seen/, "the check's odd files were discarded before the retry");
    const runId = String(readRows(home)[0]?.run_id);
    assert.deepEqual(changes(repo, `verdict/${runId}/retry`), ['A\tout.txt']);
  });
});

describe('hostile odd files: Verdict never changes a file the start commit has', function () {
  this.timeout(300000);

  /** A Python project with its test runner's config committed, and a bug in calc.py. */
  function pyRepo(dir: string): string {
    return makeRepo(path.join(dir, 'repo'), {
      'pytest.ini': '[pytest]\ntestpaths = tests\n',
      'conftest.py': 'import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n',
      'pkg/conftest.py': '# fixtures of pkg\n',
      'pkg/pytest.ini': '[pytest]\n',
      'package.json': '{\n  "name": "p",\n  "dependencies": { "left-pad": "1.3.0" }\n}\n',
      'requirements.txt': 'requests==2.31.0\n',
      'calc.py': 'def add(a, b):\n    return 0\n',
      'tests/test_calc.py': 'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n',
    });
  }
  const START = ['conftest.py', 'package.json', 'pkg/conftest.py', 'pkg/pytest.ini', 'pytest.ini', 'requirements.txt', 'tests/test_calc.py'];

  /** Every start file but calc.py is in `branch` exactly as in main. */
  function assertStartFilesKept(repo: string, branch: string): void {
    for (const f of START) assert.equal(git(repo, 'show', `${branch}:${f}`), git(repo, 'show', `main:${f}`), `${f} is delivered as the start commit has it`);
    assert.deepEqual(changes(repo, branch), ['M\tcalc.py']);
  }

  it('committed pytest.ini, conftest.py and package.json that a correct worker never touches: PASS on the first attempt, delivered unchanged', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = pyRepo(dir);
    const home = path.join(dir, 'home');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('fix', FIX, CHECK, { max_attempts: 2 })] });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(verdicts(home).fix, ['PASS'], r.all);
    assertStartFilesKept(repo, `verdict/${String(readRows(home)[0]?.run_id)}/fix`);
  });

  it('a worker that rewrites the committed conftest.py FAILs, and the retry gets it back as committed, not deleted: the PASS commit keeps it', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = pyRepo(dir);
    const home = path.join(dir, 'home');
    // Attempt 1 tries to rewrite what pytest reports (the file is read-only to it: then it deletes and writes it
    // anew, as a careless worker's `mv` would); attempt 2 does the work.
    const spec = [
      'if [ "$VERDICT_ATTEMPT" = 1 ]; then',
      "  { printf 'import pytest\\n@pytest.hookimpl(tryfirst=True)\\ndef pytest_runtest_makereport(item, call): pass\\n' > pkg/conftest.py; } 2>/dev/null || { rm -f pkg/conftest.py && printf '# mine\\n' > pkg/conftest.py; } || true",
      '  echo "attempt 1 done"; exit 0',
      'fi',
      'test -f pkg/conftest.py && echo "conftest back"',
      FIX,
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('hooked', spec, CHECK, { max_attempts: 2 })] });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(verdicts(home).hooked, ['FAIL', 'PASS'], r.all);
    const rows = readRows(home).filter((x) => x.task_key === 'hooked');
    assert.match(fs.readFileSync(String(rows[1]?.worker_log), 'utf8'), /conftest back/);
    assertStartFilesKept(repo, `verdict/${String(rows[0]?.run_id)}/hooked`);
  });

  it('a committed CRLF test under a `text` attribute that the worker never touches is delivered as committed, and its task PASSes', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    // Committed with CRLF before `*.py text` was added (git then shows it modified after every checkout).
    const repo = makeRepo(path.join(dir, 'repo'), {
      'calc.py': 'def add(a, b):\n    return 0\n',
      'tests/test_calc.py': 'import sys, os\r\nsys.path.insert(0, os.getcwd())\r\nfrom calc import add\r\n\r\ndef test_add():\r\n    assert add(2, 3) == 5\r\n',
      'notes.txt': 'line one\r\nline two\r\n',
    });
    fs.writeFileSync(path.join(repo, '.gitattributes'), '*.py text\n*.txt text\n');
    git(repo, 'add', '.gitattributes');
    git(repo, 'commit', '-q', '-m', 'attributes');
    const home = path.join(dir, 'home');
    // crlf-retry: its first check fails, so the tree is put back to the sealed one before attempt 2; the untouched
    // files are not "put back" (the check never wrote them).
    const retryCheck = `if [ "$VERDICT_ATTEMPT" = 1 ]; then echo "first check fails"; exit 1; fi; ${CHECK}`;
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 3,
      tasks: [
        scriptTask('crlf', FIX, CHECK, { max_attempts: 1 }),
        scriptTask('crlf-paths', FIX, CHECK, { max_attempts: 1, allow_paths: ['calc.py'] }),
        scriptTask('crlf-retry', FIX, retryCheck, { max_attempts: 2 }),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const v = verdicts(home);
    assert.deepEqual([v.crlf, v['crlf-paths'], v['crlf-retry']], [['PASS'], ['PASS'], ['FAIL', 'PASS']], r.all);
    assert.doesNotMatch(r.all ?? '', /crlf-retry .*put back .*(test_calc|notes)/, "the retry's reset reports only what the check changed");
    const runId = String(readRows(home)[0]?.run_id);
    for (const key of ['crlf', 'crlf-paths', 'crlf-retry']) {
      assert.deepEqual(changes(repo, `verdict/${runId}/${key}`), ['M\tcalc.py'], key);
      for (const f of ['tests/test_calc.py', 'notes.txt'])
        assert.deepEqual(blob(repo, `verdict/${runId}/${key}`, Buffer.from(f)), blob(repo, 'main', Buffer.from(f)), `${key}: ${f} as committed`);
    }
  });
});

describe('hostile odd files: names that are not UTF-8 where Verdict walks the tree itself', function () {
  this.timeout(300000);

  // Before: the protected set was listed with names decoded as UTF-8, so a start commit holding tests/caf\xe9.txt
  // made every task an ERROR at prepare (lstat of "caf\ufffd.txt": ENOENT), whatever its worker did.
  it('a start commit with a test whose name is not UTF-8: a correct worker PASSes and it is delivered as committed; one that rewrites it FAILs naming it and gets it back', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), {
      'calc.py': 'def add(a, b):\n    return 0\n',
      'tests/test_calc.py': 'import sys, os\nsys.path.insert(0, os.getcwd())\nfrom calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n',
    });
    // A fixture of the tests (pytest would not take a test module so named), written by bash: a name that is not UTF-8
    // cannot be one of our arguments.
    execFileSync('bash', ['-c', "printf 'expected\\n' > $'tests/caf\\xe9.txt' && git add -A && git -c user.name=t -c user.email=t@t commit -qm latin1"], {
      cwd: repo,
    });
    const odd = Buffer.concat([Buffer.from('tests/caf'), Buffer.from([0xe9]), Buffer.from('.txt')]);
    const home = path.join(dir, 'home');
    const tamper = [
      `if [ "$VERDICT_ATTEMPT" = 1 ]; then echo whatever > $'tests/caf\\xe9.txt'; echo tampered; exit 0; fi`,
      `grep -qx expected $'tests/caf\\xe9.txt' && echo "put back"`,
      FIX,
    ].join('\n');
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 2,
      tasks: [scriptTask('fix', FIX, CHECK, { max_attempts: 1 }), scriptTask('tamper', tamper, CHECK, { max_attempts: 2 })],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const v = verdicts(home);
    assert.deepEqual([v.fix, v.tamper], [['PASS'], ['FAIL', 'PASS']], r.all);
    const rows = readRows(home).filter((x) => x.task_key === 'tamper');
    assert.match(String(rows[0]?.notes), /protected check inputs: "tests\/caf\\351\.txt" \(changed\)/);
    assert.match(fs.readFileSync(String(rows[1]?.worker_log), 'utf8'), /put back/);
    const runId = String(rows[0]?.run_id);
    for (const key of ['fix', 'tamper']) {
      assert.deepEqual(changes(repo, `verdict/${runId}/${key}`), ['M\tcalc.py'], key);
      assert.deepEqual(blob(repo, `verdict/${runId}/${key}`, odd), blob(repo, 'main', odd), `${key}: the test is delivered as committed`);
    }
  });

  // Before: plain mode's walks (the guard's record, the seal's snapshot the retry is put back from) skipped every entry
  // whose name is not UTF-8: a worker wrote outside allow_paths, or a package.json with a dependency, under such a
  // folder and PASSed; a check's file under such a name reached the retry.
  it("plain mode: writes outside allow_paths and a new dependency under a folder whose name is not UTF-8 FAIL; a check's file under such a name is gone before the retry", async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const check = 'grep -qx ok src/ok.txt || { echo "no ok"; exit 1; }';
    const file = writeManifest(dir, {
      worktrees: false,
      workdir: path.join(dir, 'work'),
      max_parallel: 3,
      tasks: [
        scriptTask('outside', `mkdir -p src ${BASH_ODD_DIR} && echo ok > src/ok.txt && echo evil > ${BASH_ODD_DIR}/evil.txt`, check, {
          max_attempts: 1,
          allow_paths: ['src/**'],
        }),
        scriptTask(
          'deps',
          `mkdir -p src ${BASH_ODD_DIR} && echo ok > src/ok.txt && echo '{"dependencies": {"left-pad": "1.3.0"}}' > ${BASH_ODD_DIR}/package.json`,
          check,
          { max_attempts: 1 },
        ),
        scriptTask(
          'leftover',
          `if ls -b | grep -q junk; then echo "leftover seen"; fi; mkdir -p src && echo ok > src/ok.txt`,
          `if [ "$VERDICT_ATTEMPT" = 1 ]; then echo junk > $'junk\\xff'; echo "first check fails"; exit 1; fi\n${check}`,
          { max_attempts: 2 },
        ),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const v = verdicts(home);
    assert.deepEqual([v.outside, v.deps, v.leftover], [['FAIL'], ['FAIL'], ['FAIL', 'PASS']], r.all);
    const note = (key: string) => String(readRows(home).find((x) => x.task_key === key)?.notes);
    assert.match(note('outside'), /the guard refused the work \(paths\): "odd\\200dir\/evil\.txt":1: added outside allow_paths/);
    assert.match(note('deps'), /the guard refused the work \(deps\): "odd\\200dir\/package\.json":\d+: .*left-pad/);
    const logs = readRows(home)
      .filter((x) => x.task_key === 'leftover')
      .map((x) => fs.readFileSync(String(x.worker_log), 'utf8'));
    assert.doesNotMatch(logs[1] ?? '', /leftover seen/, "the check's file was removed before the retry");
  });
});

describe('hostile odd files: the guards over a folder whose name is not UTF-8, worktree mode', function () {
  this.timeout(120000);

  // Before: the seal was an ERROR (the paths of its diff decoded as UTF-8: lstat of "odd\ufffddir" failed), so the
  // guards never judged. Now the guards read git's diff of the sealed commit, names taken by their bytes: a write
  // outside allow_paths or a new dependency under such a folder FAILs, naming it.
  it('a write outside allow_paths and a package.json with a new dependency under such a folder FAIL, naming it', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'src/a/x.txt': 'x\n' });
    const home = path.join(dir, 'home');
    const check = 'grep -qx ok src/a/ok.txt || { echo "no ok"; exit 1; }';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      max_parallel: 2,
      tasks: [
        scriptTask('outside', "echo ok > src/a/ok.txt && mkdir $'odd\\x80dir' && echo evil > $'odd\\x80dir/evil.txt'", check, {
          max_attempts: 1,
          allow_paths: ['src/a/**'],
        }),
        scriptTask(
          'deps',
          `echo ok > src/a/ok.txt && mkdir $'odd\\x80dir' && echo '{"dependencies": {"left-pad": "1.3.0"}}' > $'odd\\x80dir/package.json'`,
          check,
          { max_attempts: 1 },
        ),
      ],
    });
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    assert.deepEqual([verdicts(home).outside, verdicts(home).deps], [['FAIL'], ['FAIL']], r.all);
    const note = (key: string) => String(readRows(home).find((x) => x.task_key === key)?.notes);
    assert.match(note('outside'), /the guard refused the work \(paths\): "odd\\200dir\/evil\.txt":1: added outside allow_paths/);
    assert.match(note('deps'), /the guard refused the work \(deps\): "odd\\200dir\/package\.json":\d+: .*left-pad/);
  });
});
