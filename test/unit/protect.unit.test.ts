import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { newFileRefused, protectedChanges, protectedSet, protectedSetFromSnapshot, restoreProtected } from '../../extension/core/run/protect';
import { git, makeRepo, tempDir } from '../helpers/fixtures';
import { baseCheckInputs } from '../../extension/core/run/merge-plan';
import type { TaskSpec } from '../../extension/core/manifest/types';

function tree(files: Record<string, string>): string {
  const dir = tempDir();
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

const FILES = {
  'run-tests.sh': 'x',
  'check.py': 'x',
  'out.txt': 'old',
  'src/lib.ts': 'x',
  'src/lib.test.ts': 'x',
  'pkg/a_test.go': 'x',
  'tests/t1.sh': 'x',
  'tests/fixtures/expected.txt': 'x',
  'spec/s.rb': 'x',
  'golden/expected.txt': 'x',
  'web/__tests__/x.js': 'x',
};

/** Narrows away every conventional test place, leaving what the check itself names. */
const NOT_CONVENTIONAL = ['!tests/**', '!**/*.test.*', '!**/*_test.*', '!spec/**', '!**/__tests__/**'];

describe('protected check inputs: the default set and the protect setting', () => {
  const cases: { name: string; check: string; protect?: string[] | null; deliverables?: string[]; want: string[] }[] = [
    {
      name: 'the script bash runs, and every conventional test file',
      check: 'bash run-tests.sh',
      want: ['pkg/a_test.go', 'run-tests.sh', 'spec/s.rb', 'src/lib.test.ts', 'tests/fixtures/expected.txt', 'tests/t1.sh', 'web/__tests__/x.js'],
    },
    {
      name: 'a script run as a command word and by python; a data file grep reads is not taken',
      check: './run-tests.sh && python3 -u check.py && grep -x new out.txt',
      protect: NOT_CONVENTIONAL,
      want: ['check.py', 'run-tests.sh'],
    },
    { name: 'a folder the check names: every file under it', check: 'diff -r golden/ out', protect: NOT_CONVENTIONAL, want: ['golden/expected.txt'] },
    {
      name: 'protect widens',
      check: 'true',
      protect: ['src/lib.ts'],
      want: ['pkg/a_test.go', 'spec/s.rb', 'src/lib.test.ts', 'src/lib.ts', 'tests/fixtures/expected.txt', 'tests/t1.sh', 'web/__tests__/x.js'],
    },
    {
      name: 'protect narrows with !',
      check: 'bash run-tests.sh',
      protect: ['!tests/fixtures/**', '!**/*_test.*', '!spec/**', '!**/__tests__/**', '!**/*.test.*'],
      want: ['run-tests.sh', 'tests/t1.sh'],
    },
    { name: '"protect": [] turns it off', check: 'bash run-tests.sh', protect: [], want: [] },
    {
      name: 'a deliverable is never protected',
      check: 'bash run-tests.sh',
      deliverables: ['tests/t1.sh'],
      want: ['pkg/a_test.go', 'run-tests.sh', 'spec/s.rb', 'src/lib.test.ts', 'tests/fixtures/expected.txt', 'web/__tests__/x.js'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const dir = tree(FILES);
      const set = protectedSet(dir, c.check, c.protect ?? null, null, c.deliverables ?? []);
      assert.deepEqual([...set.files.keys()].sort(), c.want);
    });
  }

  it('names a changed and a deleted file (adding files is fine), and restores both from the snapshot', () => {
    const dir = tree(FILES);
    const snap = path.join(tempDir(), 'snap');
    const set = protectedSet(dir, 'bash run-tests.sh', null, snap);
    fs.writeFileSync(path.join(dir, 'run-tests.sh'), 'exit 0');
    fs.rmSync(path.join(dir, 'tests/t1.sh'));
    fs.writeFileSync(path.join(dir, 'tests/t2.sh'), 'new test');
    fs.chmodSync(path.join(dir, 'spec/s.rb'), 0o755);
    assert.deepEqual(protectedChanges(dir, set), ['run-tests.sh (changed)', 'spec/s.rb (changed)', 'tests/t1.sh (deleted)']);
    assert.deepEqual(restoreProtected(dir, set).sort(), ['run-tests.sh', 'spec/s.rb', 'tests/t1.sh']);
    assert.deepEqual(protectedChanges(dir, set), []);
    assert.equal(fs.readFileSync(path.join(dir, 'tests/t2.sh'), 'utf8'), 'new test');
  });

  it("a worker's symlink in place of a protected folder: named as a change, and the restore replaces the link, never writing through it", () => {
    const dir = tree(FILES);
    const snap = path.join(tempDir(), 'snap');
    const set = protectedSet(dir, 'bash run-tests.sh', null, snap);
    // The user's checkout elsewhere: one file edited, one the same as the task's (a link to it would read the same).
    const outside = tree({ 't1.sh': "the user's edit", 'fixtures/expected.txt': 'x' });
    fs.renameSync(path.join(dir, 'tests'), path.join(dir, 'tests.bak'));
    fs.symlinkSync(outside, path.join(dir, 'tests'));
    assert.deepEqual(protectedChanges(dir, set), ['tests/fixtures/expected.txt (changed)', 'tests/t1.sh (changed)']);
    assert.deepEqual(restoreProtected(dir, set).sort(), ['tests/fixtures/expected.txt', 'tests/t1.sh']);
    // Outside: untouched. Inside: a real folder again, with the files as prepared.
    assert.equal(fs.readFileSync(path.join(outside, 't1.sh'), 'utf8'), "the user's edit");
    assert.equal(fs.readFileSync(path.join(outside, 'fixtures/expected.txt'), 'utf8'), 'x');
    assert.equal(fs.lstatSync(path.join(dir, 'tests')).isDirectory(), true);
    assert.equal(fs.readFileSync(path.join(dir, 'tests/t1.sh'), 'utf8'), 'x');
    assert.deepEqual(protectedChanges(dir, set), []);
  });

  it('a symlink in place of a deeper folder, or a file in place of one: removed itself, the target left as it was', () => {
    const dir = tree({ 'tests/unit/a/t.sh': 'x', 'tests/unit/b/u.sh': 'y' });
    const snap = path.join(tempDir(), 'snap');
    const set = protectedSet(dir, 'true', null, snap);
    const outside = tree({ 't.sh': 'theirs' });
    fs.rmSync(path.join(dir, 'tests/unit/a'), { recursive: true });
    fs.symlinkSync(outside, path.join(dir, 'tests/unit/a'));
    fs.rmSync(path.join(dir, 'tests/unit/b'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'tests/unit/b'), 'a file now');
    assert.deepEqual(restoreProtected(dir, set).sort(), ['tests/unit/a/t.sh', 'tests/unit/b/u.sh']);
    assert.deepEqual(fs.readdirSync(outside), ['t.sh']);
    assert.equal(fs.readFileSync(path.join(outside, 't.sh'), 'utf8'), 'theirs');
    assert.equal(fs.readFileSync(path.join(dir, 'tests/unit/a/t.sh'), 'utf8'), 'x');
    assert.equal(fs.readFileSync(path.join(dir, 'tests/unit/b/u.sh'), 'utf8'), 'y');
  });
});

describe("protected check inputs: the runner's own files", () => {
  it('`make test` protects the Makefile; `pytest` forbids a new conftest.py (it rewrites what pytest reports)', () => {
    const dir = tree({ Makefile: 'test:\n\tbash t.sh\n', 't.sh': 'exit 1\n', 'src/a.py': 'x = 1\n' });
    assert.deepEqual([...protectedSet(dir, 'make test', null).files.keys()], ['Makefile']);
    const set = protectedSet(dir, 'python3 -m pytest -q', null);
    fs.writeFileSync(path.join(dir, 'src', 'conftest.py'), 'def pytest_runtest_makereport(): pass\n');
    assert.deepEqual(protectedChanges(dir, set), ['src/conftest.py (new: it changes what the test runner reports)']);
    assert.deepEqual(restoreProtected(dir, set), ['src/conftest.py']);
    assert.equal(fs.existsSync(path.join(dir, 'src', 'conftest.py')), false);
  });
});

describe('protected check inputs: a new file the runner reads as its configuration', () => {
  // Before: only pytest's conftest.py and pytest.ini were refused as new; a new tox.ini with `addopts = -p evilplug`,
  // a new .npmrc with `script-shell=/bin/true`, a new GNUmakefile over the protected Makefile each made the check exit 0.
  it('pytest: a new tox.ini / setup.cfg / pyproject.toml holding its section is refused; one without it, or one the tree had, is not', () => {
    const dir = tree({ 'pyproject.toml': '[project]\nname = "x"\n', 'tests/test_x.py': 'def test_x(): pass\n' });
    const snap = path.join(tempDir(), 'snap');
    const set = protectedSet(dir, 'pytest -q tests', null, snap);
    assert.ok(!set.files.has('pyproject.toml'), "an existing pyproject.toml stays the worker's (dependencies)");
    fs.writeFileSync(path.join(dir, 'pyproject.toml'), '[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = "-p evil"\n');
    fs.writeFileSync(path.join(dir, 'tox.ini'), '[pytest]\naddopts = -p evilplug\n');
    fs.mkdirSync(path.join(dir, 'sub'));
    fs.writeFileSync(path.join(dir, 'sub/setup.cfg'), '[metadata]\nname = x\n\n[tool:pytest]\naddopts = -p evil\n');
    fs.writeFileSync(path.join(dir, 'setup.cfg'), '[metadata]\nname = x\n');
    fs.writeFileSync(path.join(dir, 'pytest.toml'), '[pytest]\n');
    fs.writeFileSync(path.join(dir, '.pytest.ini'), '[pytest]\n');
    const why = '(new: it changes what the test runner reports)';
    const expected = ['.pytest.ini', 'pytest.toml', 'sub/setup.cfg', 'tox.ini'].map((f) => `${f} ${why}`);
    assert.deepEqual(protectedChanges(dir, set), expected);
    // A later orchestrator of the run (resume) knows the pyproject.toml was there.
    assert.deepEqual(protectedChanges(dir, protectedSetFromSnapshot(snap, 'pytest -q tests', null)), expected);
    assert.deepEqual(restoreProtected(dir, set).sort(), ['.pytest.ini', 'pytest.toml', 'sub/setup.cfg', 'tox.ini']);
    assert.ok(fs.existsSync(path.join(dir, 'pyproject.toml')) && fs.existsSync(path.join(dir, 'setup.cfg')));
    // The merge re-check's form: the content is read only when a reader is given (readConfigText: null for what is no regular file: refused).
    const text: Record<string, string | null> = {
      'tox.ini': '[tox]\nenvlist = py3\n',
      'a/tox.ini': '[pytest]\n',
      'pyproject.toml': '[project]\ndependencies = ["pytest==8.0", "pytest-cov"]\n',
      'b/pyproject.toml': '[tool]\npytest.ini_options.addopts = "-p evil"\n',
      'setup.cfg': null,
      // pytest as a dependency (poetry's table) is not its configuration; an inline tool.pytest table, or no TOML at all, may be.
      'c/pyproject.toml': '[tool.poetry.group.dev.dependencies]\npytest = "^8.0"\n',
      'd/pyproject.toml': 'tool = { pytest = { ini_options = { addopts = "-p evil" } } }\n',
      'e/pyproject.toml': '[tool.pytest.ini_options\n',
    };
    const refused = newFileRefused('python -m pytest', null, (rel) => text[rel] ?? null);
    assert.deepEqual(Object.keys(text).map(refused), [false, true, false, true, true, false, true, true]);
    assert.equal(newFileRefused('make test', null, () => '[pytest]\n')('tox.ini'), false, 'only under pytest');
    assert.equal(newFileRefused('pytest', ['!tox.ini'], () => '[pytest]\n')('tox.ini'), false, 'a ! glob allows it');
  });

  it('npm, yarn, pnpm: a new .npmrc, .yarnrc, .yarnrc.yml is refused, and one the tree had is protected; make: a new GNUmakefile or makefile', () => {
    const dir = tree({ 'package.json': '{"scripts":{"test":"node t.js"}}\n', '.yarnrc.yml': 'nodeLinker: node-modules\n', Makefile: 'test:\n\tfalse\n' });
    const npm = protectedSet(dir, 'npm test', null);
    assert.deepEqual([...npm.files.keys()], ['.yarnrc.yml']);
    const yarn = protectedSet(dir, 'yarn test', null);
    const pnpm = protectedSet(dir, 'cd app && pnpm run e2e', null);
    const make = protectedSet(dir, 'make test', null);
    assert.deepEqual([...make.files.keys()], ['Makefile']);
    fs.writeFileSync(path.join(dir, '.npmrc'), 'script-shell=/bin/true\n');
    fs.writeFileSync(path.join(dir, '.yarnrc'), 'yarn-path "./evil.js"\n');
    fs.writeFileSync(path.join(dir, '.yarnrc.yml'), 'yarnPath: ./evil.cjs\n');
    fs.writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), 'scriptShell: /bin/true\n');
    fs.writeFileSync(path.join(dir, 'GNUmakefile'), 'test:\n\ttrue\n');
    fs.writeFileSync(path.join(dir, 'makefile'), 'test:\n\ttrue\n');
    const why = '(new: it changes what the test runner reports)';
    const rc = ['.npmrc', '.yarnrc'].map((f) => `${f} ${why}`);
    assert.deepEqual(protectedChanges(dir, npm), ['.yarnrc.yml (changed)', ...rc].sort());
    assert.deepEqual(protectedChanges(dir, yarn), ['.yarnrc.yml (changed)', ...rc].sort());
    assert.deepEqual(protectedChanges(dir, pnpm), ['.yarnrc.yml (changed)', ...rc, `pnpm-workspace.yaml ${why}`].sort());
    assert.deepEqual(
      protectedChanges(dir, make),
      ['GNUmakefile', 'makefile'].map((f) => `${f} ${why}`),
    );
    assert.deepEqual(protectedChanges(dir, protectedSet(tree({}), 'grep -x 42 answer.txt', null)), []);
    // Words that only contain a runner's name are not that runner.
    assert.equal(newFileRefused('cmake --build . && ./npm-check', null)('.npmrc'), false);
    assert.equal(newFileRefused('cmake --build .', null)('GNUmakefile'), false);
    assert.equal(newFileRefused('/usr/bin/make -C sub test', null)('sub/GNUmakefile'), true);
    assert.equal(newFileRefused('npx jest', null)('.npmrc'), true);
  });
});

describe('protected check inputs: compared with the tree as prepared', () => {
  // Before: a pytest.ini or conftest.py the tree already had counted as "new" at every guard (a correct worker FAILed),
  // and the restore before the retry deleted it (the PASS commit then deleted a file of the start commit).
  it('the test runner\'s files the tree has are protected, not "new": unchanged they are no finding; changed or deleted they are put back, never deleted', () => {
    const dir = tree({ 'pytest.ini': '[pytest]\n', 'conftest.py': '# root\n', 'pkg/conftest.py': '# pkg\n', 'calc.py': 'x = 1\n' });
    const snap = path.join(tempDir(), 'snap');
    const set = protectedSet(dir, 'python3 -m pytest -q', null, snap);
    assert.deepEqual([...set.files.keys()].sort(), ['conftest.py', 'pkg/conftest.py', 'pytest.ini']);
    fs.writeFileSync(path.join(dir, 'calc.py'), 'x = 2\n');
    assert.deepEqual(protectedChanges(dir, set), [], 'the worker changed only calc.py');
    fs.writeFileSync(path.join(dir, 'pkg/conftest.py'), 'def pytest_runtest_makereport(): pass\n');
    fs.rmSync(path.join(dir, 'pytest.ini'));
    fs.mkdirSync(path.join(dir, 'sub'));
    fs.writeFileSync(path.join(dir, 'sub/conftest.py'), '# new\n');
    assert.deepEqual(protectedChanges(dir, set), [
      'pkg/conftest.py (changed)',
      'pytest.ini (deleted)',
      'sub/conftest.py (new: it changes what the test runner reports)',
    ]);
    assert.deepEqual(restoreProtected(dir, set).sort(), ['pkg/conftest.py', 'pytest.ini', 'sub/conftest.py']);
    assert.equal(fs.readFileSync(path.join(dir, 'pkg/conftest.py'), 'utf8'), '# pkg\n');
    assert.equal(fs.readFileSync(path.join(dir, 'pytest.ini'), 'utf8'), '[pytest]\n');
    assert.equal(fs.readFileSync(path.join(dir, 'conftest.py'), 'utf8'), '# root\n');
    assert.equal(fs.existsSync(path.join(dir, 'sub/conftest.py')), false, 'only the new one goes');
    assert.deepEqual(protectedChanges(dir, set), []);
    // A later orchestrator of the run (resume) rebuilds the same set from the snapshot alone.
    const again = protectedSetFromSnapshot(snap, 'python3 -m pytest -q', null);
    assert.deepEqual([...again.files.keys()].sort(), ['conftest.py', 'pkg/conftest.py', 'pytest.ini']);
    assert.deepEqual(protectedChanges(dir, again), []);
  });

  it('a `!` glob leaves an existing runner file unprotected and allows a new one there; "protect": [] allows all', () => {
    const dir = tree({ 'conftest.py': '# root\n', 'pytest.ini': '[pytest]\n' });
    const set = protectedSet(dir, 'pytest', ['!conftest.py', '!fixtures/**'], null);
    assert.deepEqual([...set.files.keys()], ['pytest.ini']);
    fs.writeFileSync(path.join(dir, 'conftest.py'), '# changed\n');
    fs.mkdirSync(path.join(dir, 'fixtures'));
    fs.writeFileSync(path.join(dir, 'fixtures/conftest.py'), '# new, allowed\n');
    fs.mkdirSync(path.join(dir, 'other'));
    fs.writeFileSync(path.join(dir, 'other/conftest.py'), '# new, refused\n');
    assert.deepEqual(protectedChanges(dir, set), ['other/conftest.py (new: it changes what the test runner reports)']);
    const refused = newFileRefused('pytest', ['!fixtures/**']);
    assert.deepEqual(['conftest.py', 'fixtures/conftest.py', 'x/pytest.ini', 'x/setup.cfg'].map(refused), [true, false, true, false]);
    assert.equal(newFileRefused('pytest', [])('conftest.py'), false);
    assert.equal(newFileRefused('make test', null)('conftest.py'), false, 'only under pytest');
  });
});

describe("the merge queue's re-check: the base's check inputs", () => {
  it("a branch that leaves the base's conftest.py and pytest.ini alone has nothing put back; one that changes them has", async () => {
    const repo = makeRepo(path.join(tempDir(), 'r'), { 'pytest.ini': '[pytest]\n', 'pkg/conftest.py': '# pkg\n', 'calc.py': 'x = 1\n' });
    const spec = { check: 'python3 -m pytest -q', protect: null, expectFiles: [] } as unknown as TaskSpec;
    git(repo, 'checkout', '-q', '-b', 'work');
    fs.writeFileSync(path.join(repo, 'calc.py'), 'x = 2\n');
    git(repo, 'commit', '-q', '-am', 'work');
    assert.deepEqual(await baseCheckInputs(repo, 'main', spec), []);
    fs.writeFileSync(path.join(repo, 'pkg/conftest.py'), '# hooked\n');
    fs.writeFileSync(path.join(repo, 'conftest.py'), '# new\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'hook');
    assert.deepEqual(await baseCheckInputs(repo, 'main', spec), ['conftest.py (new)', 'pkg/conftest.py']);
    assert.equal(fs.readFileSync(path.join(repo, 'pkg/conftest.py'), 'utf8'), '# pkg\n');
    assert.equal(fs.existsSync(path.join(repo, 'conftest.py')), false);
  });

  it("a branch that adds a tox.ini holding [pytest] has it removed; a new pyproject.toml without pytest's section is kept", async () => {
    const repo = makeRepo(path.join(tempDir(), 'r'), { 'tests/test_x.py': 'def test_x(): pass\n' });
    const spec = { check: 'pytest -q tests', protect: null, expectFiles: [] } as unknown as TaskSpec;
    git(repo, 'checkout', '-q', '-b', 'work');
    fs.writeFileSync(path.join(repo, 'tox.ini'), '[pytest]\naddopts = -p evilplug\n');
    fs.writeFileSync(path.join(repo, 'pyproject.toml'), '[project]\nname = "x"\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'work');
    assert.deepEqual(await baseCheckInputs(repo, 'main', spec), ['tox.ini (new)']);
    assert.equal(fs.existsSync(path.join(repo, 'tox.ini')), false);
    assert.equal(fs.existsSync(path.join(repo, 'pyproject.toml')), true);
  });
});
