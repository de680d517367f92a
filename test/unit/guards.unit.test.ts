import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { findSecrets } from '../../extension/core/run/guards/secrets';
import { findStubs } from '../../extension/core/run/guards/stubs';
import { declaredDependencies, findNewDependencies } from '../../extension/core/run/guards/deps';
import { allowedPathMatcher, findPathViolations } from '../../extension/core/run/guards/paths';
import { addedLines, type Change } from '../../extension/core/run/guards/types';
import { guardReason, runGuards, type GuardSettings } from '../../extension/core/run/guards';
import { dirChanges, commitChanges } from '../../extension/core/run/guards/changes';
import { restoreSnapshot, takeSnapshot } from '../../extension/core/run/dir-snapshot';
import { git, makeRepo, tempDir } from '../helpers/fixtures';

// The built-in guards: each detector against lines that must and must not be flagged, then the
// change collectors (git and plain dir) and the whole set over hostile changes.

const line = (text: string) => [{ line: 7, text }];
// Built from parts so this file itself holds no token shape a scanner would flag.
const fake = {
  aws: 'AKIA' + 'Z7Q2MXW4RT5UJ3KB',
  github: 'ghp_' + 'aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5',
  openai: 'sk-proj-' + 'Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12',
  anthropic: 'sk-ant-api03-' + 'x'.repeat(10) + 'Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12Wx34Yz56Ab12Cd34Ef56Gh78Ij90Kl',
  slack: 'xoxb-' + '123456789012-1234567890123-' + 'AbCdEfGhIjKlMnOpQrStUvWx',
  pem: '-----BEGIN ' + 'RSA PRIVATE KEY-----',
  generic: 'Q9v' + 'X2mL7pK4tR8wZ1nB6cY3hJ5s',
};

describe('guards: secrets in added lines', () => {
  const flagged: [string, string, RegExp][] = [
    ['an AWS access key id', `const id = "${fake.aws}";`, /AWS access key id \(AKIA/],
    ['a PEM private key block', fake.pem, /a private key/],
    ['a GitHub token', `token: ${fake.github}`, /GitHub token/],
    ['an OpenAI project key', `OPENAI_API_KEY=${fake.openai}`, /OpenAI API key/],
    ['an Anthropic key', `key = "${fake.anthropic}"`, /Anthropic API key/],
    ['a Slack bot token', `SLACK=${fake.slack}`, /Slack token/],
    ['a generic secret with a secret-like name', `const apiKey = "${fake.generic}";`, /hard-coded secret/],
  ];
  for (const [name, text, re] of flagged) {
    it(`flags ${name}, naming file and line, without repeating the secret`, () => {
      const [f, ...rest] = findSecrets('src/a.ts', line(text));
      assert.equal(rest.length, 0);
      assert.equal(f?.file, 'src/a.ts');
      assert.equal(f?.line, 7);
      assert.match(String(f?.message), re);
      const secret = text.match(/[A-Za-z0-9_+/-]{20,}/)?.[0] ?? '';
      if (secret) assert.ok(!String(f?.message).includes(secret), f?.message);
    });
  }
  const clean: [string, string][] = [
    ["AWS's documented example key", 'aws_access_key_id = AKIAIOSFODNN7EXAMPLE'],
    ['a public key block', '-----BEGIN PUBLIC KEY-----'],
    ['a key read from the environment', 'const key = process.env.OPENAI_API_KEY;'],
    ['a placeholder value', 'api_key = "YOUR_API_KEY_GOES_HERE_1234567"'],
    ['a sha-256 hex digest assigned to a token name', 'token_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"'],
    ['a short password in a test', 'password: "hunter2"'],
    ['an interpolated value', 'secret = "${VAULT_SECRET_VALUE_FROM_ENV_ABC123}"'],
    ['a token prefix alone', 'if (t.startsWith("ghp_")) return "github";'],
    ['a words-only value', 'token = "thisIsNotASecretButAVeryLongVariableName"'],
  ];
  for (const [name, text] of clean) {
    it(`does not flag ${name}`, () => assert.deepEqual(findSecrets('a.ts', line(text)), []));
  }
});

describe('guards: placeholders and stubs in added lines', () => {
  const flagged: [string, string][] = [
    ['a TODO comment', '  // TODO: handle the empty case'],
    ['a FIXME in a Python comment', 'x = 1  # FIXME later'],
    ['a TODO in a block comment', '/* TODO */'],
    ['Kotlin TODO()', 'fun parse(): Int = TODO()'],
    ['raise NotImplementedError', '    raise NotImplementedError'],
    ['NotImplementedException', 'throw new NotImplementedException();'],
    ['throw new Error("not implemented")', "  throw new Error('not implemented');"],
    ['a Go panic', '\tpanic("TODO")'],
    ['raise with "not yet implemented"', '    raise RuntimeError("Not yet implemented")'],
    ['unimplemented!()', '    unimplemented!()'],
    ['todo!()', '    todo!("later")'],
    ['pass  # stub', '    pass  # stub'],
    ['... # placeholder', '    ...  # placeholder'],
    ['a stub comment', '  // stub'],
  ];
  for (const [name, text] of flagged) {
    it(`flags ${name}`, () => {
      const found = findStubs('src/a.py', line(text));
      assert.equal(found.length, 1, name);
      assert.equal(found[0]?.line, 7);
    });
  }
  const clean: [string, string][] = [
    ['a todo-list status value', "status: 'TODO',"],
    ['a TODO_LIST constant', 'const TODO_LIST = [];'],
    ["Python's NotImplemented protocol value", '        return NotImplemented'],
    ['a plain pass', '    pass'],
    ['a comment about stubbing', '  // stub the network in this test'],
    ["a todo app's word", 'function addTodo(todo) { todos.push(todo); }'],
    ['an error that mentions implementation', "throw new Error('implemented twice');"],
  ];
  for (const [name, text] of clean) {
    it(`does not flag ${name}`, () => assert.deepEqual(findStubs('src/a.py', line(text)), []));
  }
  it('reads no generated lock file', () => assert.deepEqual(findStubs('package-lock.json', line('// TODO: x')), []));
});

describe('guards: added lines', () => {
  it('a line already in the base is not added; a moved line is not added; a second copy is', () => {
    const before = '// TODO: old\na\nb\n';
    const after = 'b\n// TODO: old\na\n// TODO: old\nc\n';
    assert.deepEqual(addedLines(before, after), [
      { line: 4, text: '// TODO: old' },
      { line: 5, text: 'c' },
    ]);
  });
  it('a new file: every line', () =>
    assert.deepEqual(
      addedLines(null, 'x\r\ny\n').map((l) => l.line),
      [1, 2],
    ));
});

describe('guards: new dependencies', () => {
  const change = (p: string, before: string | null, after: string | null, status: Change['status'] = before === null ? 'added' : 'modified'): Change => ({
    path: p,
    status,
    kind: 'file',
    before,
    after,
  });
  const pkg = (deps: Record<string, string>, dev: Record<string, string> = {}) =>
    JSON.stringify({ name: 'x', dependencies: deps, devDependencies: dev }, null, 2) + '\n';

  it('package.json: a new runtime and a new dev dependency, each on its line; an existing one with a new version is not new', () => {
    const found = findNewDependencies([change('package.json', pkg({ a: '1' }), pkg({ a: '2', lodash: '4' }, { vitest: '1' }))], []);
    assert.deepEqual(
      found.map((f) => [f.file, f.line, f.message.match(/"(.+?)"/)?.[1]]),
      [
        ['package.json', 5, 'lodash'],
        ['package.json', 8, 'vitest'],
      ],
    );
  });
  it('a nested package.json the worker adds is read like the root one; node_modules is not', () => {
    const found = findNewDependencies(
      [change('packages/util/package.json', null, pkg({ 'left-pad': '1' })), change('node_modules/x/package.json', null, pkg({ evil: '1' }))],
      [],
    );
    assert.deepEqual(
      found.map((f) => f.file),
      ['packages/util/package.json'],
    );
  });
  it('allow_deps names and globs, compared normalized', () => {
    const found = findNewDependencies([change('package.json', pkg({}), pkg({ Zod: '3', '@types/node': '20', express: '4' }))], ['zod', '@types/*']);
    assert.deepEqual(
      found.map((f) => f.message.match(/"(.+?)"/)?.[1]),
      ['express'],
    );
  });
  it('hostile package.json: a duplicated dependencies key, an alias to another package, a git source, an override', () => {
    const before = '{\n  "dependencies": {\n    "lodash": "4"\n  }\n}\n';
    const after =
      '{\n  "dependencies": {\n    "lodash": "npm:evil-lodash@4"\n  },\n  "dependencies": {\n    "lodash": "4",\n    "chalk": "github:someone/chalk"\n  },\n  "overrides": {\n    "minimist": "1.2.0"\n  }\n}\n';
    const found = findNewDependencies([change('package.json', before, after)], []);
    assert.deepEqual(
      found.map((f) => [f.line, f.message.match(/"(.+?)"/)?.[1]]),
      [
        [3, 'evil-lodash'],
        [7, 'chalk'],
        [7, 'chalk from github:someone/chalk'],
        [10, 'override minimist'],
      ],
    );
  });
  it('hostile requirements.txt: an include of another file and an extra index are declarations too', () => {
    const found = findNewDependencies(
      [change('requirements.txt', 'requests\n', 'requests\n-r more.txt\n--extra-index-url https://pypi.evil.example/simple\n')],
      [],
    );
    assert.deepEqual(
      found.map((f) => [f.line, f.message.match(/"(.+?)"/)?.[1]]),
      [
        [2, '-r more.txt'],
        [3, '--extra-index-url https://pypi.evil.example/simple'],
      ],
    );
  });
  it('requirements.txt: names with extras, markers, pins, -e #egg=, includes; other options and comments skipped; PEP 503 names', () => {
    const text = '# deps\n-r base.txt\nrequests[socks]>=2 ; python_version>"3"\nZope.Interface==5\n-e git+https://x/y.git#egg=mylib\n--hash=sha256:abc\n';
    assert.deepEqual(
      [...declaredDependencies('pip', text)],
      [
        ['-r base.txt', 2],
        ['requests', 3],
        ['zope-interface', 4],
        ['mylib', 5],
      ],
    );
    assert.deepEqual(
      findNewDependencies([change('requirements-dev.txt', 'requests==2\n', 'requests==3\nflask\n')], []).map((f) => [f.line, f.message.match(/"(.+?)"/)?.[1]]),
      [[2, 'flask']],
    );
  });
  it('pyproject.toml: PEP 621 dependencies and extras, poetry groups, build requires', () => {
    const text =
      '[build-system]\nrequires = ["hatchling"]\n\n[project]\nname = "x"\ndependencies = [\n  "httpx>=0.27",\n]\n[project.optional-dependencies]\ncli = ["rich"]\n[tool.poetry.group.dev.dependencies]\npytest = "^8"\n';
    assert.deepEqual(
      [...declaredDependencies('pyproject', text)],
      [
        ['httpx', 7],
        ['rich', 10],
        ['hatchling', 2],
        ['pytest', 12],
      ],
    );
  });
  it('go.mod: require lines and blocks, replace targets', () => {
    const text =
      'module m\n\ngo 1.22\n\nrequire github.com/a/b v1.0.0\nrequire (\n\tgolang.org/x/text v0.3.0 // indirect\n)\nreplace github.com/a/b => github.com/evil/b v1.0.1\n';
    assert.deepEqual(
      [...declaredDependencies('go', text)].map(([n, l]) => [n, l]),
      [
        ['github-com/a/b', 5],
        ['golang-org/x/text', 7],
        ['github-com/evil/b', 9],
      ],
    );
  });
  it('Cargo.toml: dependency tables, target tables, renamed entries by their package', () => {
    const text =
      '[package]\nname = "x"\n[dependencies]\nserde = "1"\nmy_rand = { package = "rand", version = "0.8" }\n[target.\'cfg(unix)\'.dependencies]\nlibc = "0.2"\n[dev-dependencies]\nproptest = "1"\n';
    assert.deepEqual([...declaredDependencies('cargo', text).keys()], ['serde', 'rand', 'proptest', 'libc']);
  });
  it('a manifest that no longer parses is a finding (its dependencies cannot be ruled out); a deleted one is not', () => {
    const found = findNewDependencies(
      [change('Cargo.toml', '[dependencies]\n', '[dependencies\nserde = "1"\n'), change('go.mod', 'module m\n', null, 'deleted')],
      [],
    );
    assert.equal(found.length, 1);
    assert.match(String(found[0]?.message), /no longer parses/);
  });
  it('a manifest replaced by a symlink (to a file of another name) is a finding', () => {
    const found = findNewDependencies([{ path: 'package.json', status: 'modified', kind: 'symlink', target: 'deps.json', before: pkg({}), after: null }], []);
    assert.deepEqual(
      found.map((f) => f.message),
      ['a dependency manifest that is a symlink (to deps.json), so its new dependencies cannot be ruled out'],
    );
  });
  it('a renamed manifest is compared with what it was', () => {
    assert.deepEqual(
      findNewDependencies([{ ...change('app/package.json', pkg({ a: '1' }), pkg({ a: '1' })), status: 'renamed', from: 'package.json' }], []),
      [],
    );
  });
});

describe('guards: allowed paths', () => {
  const c = (p: string, extra: Partial<Change> = {}): Change => ({ path: p, status: 'added', kind: 'file', before: null, after: 'x\n', ...extra });
  it('globs, and a plain path as a folder', () => {
    const ok = allowedPathMatcher(['src/parser/**', 'docs/parser.md', 'test/parser/']);
    assert.deepEqual(
      ['src/parser/a.ts', 'src/parser/deep/b.ts', 'docs/parser.md', 'test/parser/x.test.ts', 'src/lexer.ts', 'docs/other.md', 'src/parserx/a.ts'].map(ok),
      [true, true, true, true, false, false, false],
    );
  });
  it('changes, deletions and both sides of a rename outside the paths are named', () => {
    const found = findPathViolations(
      [
        c('src/parser/a.ts'),
        c('config/app.json'),
        c('README.md', { status: 'deleted', after: null }),
        c('src/parser/moved.ts', { status: 'renamed', from: 'src/lexer.ts' }),
      ],
      ['src/parser/**'],
    );
    assert.deepEqual(
      found.map((f) => [f.file, f.line]),
      [
        ['config/app.json', 1],
        ['README.md', null],
        ['src/lexer.ts', null],
      ],
    );
    assert.match(String(found[2]?.message), /renamed to src\/parser\/moved\.ts/);
  });
  it('a symlink under the paths that points outside them, or outside the task dir, is named', () => {
    const found = findPathViolations(
      [
        c('src/parser/cfg', { kind: 'symlink', target: '../../config/app.json' }),
        c('src/parser/etc', { kind: 'symlink', target: '/etc' }),
        c('src/parser/up', { kind: 'symlink', target: '../../../x' }),
        c('src/parser/ok', { kind: 'symlink', target: 'a.ts' }),
      ],
      ['src/parser/**'],
    );
    assert.deepEqual(
      found.map((f) => f.message.replace(/,.*$/, '')),
      ['a symlink to config/app.json', 'a symlink to /etc', 'a symlink to ../../../x'],
    );
  });
});

describe('guards: changes as the guards read them', () => {
  it('worktree mode: the commit diff — a secret in a deleted line and a TODO already in the base are not flagged; a rename is followed', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'r'), {
      'old.ts': `// TODO: from the base\nconst k = "${fake.aws}";\n`,
      'lib.ts': '// TODO: old one\nexport const a = 1;\n',
    });
    const base = git(repo, 'rev-parse', 'HEAD');
    fs.writeFileSync(path.join(repo, 'old.ts'), '// TODO: from the base\n');
    git(repo, 'mv', 'lib.ts', 'lib2.ts');
    fs.appendFileSync(path.join(repo, 'lib2.ts'), 'export const b = 2; // TODO: new\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'w');
    const changes = await commitChanges(path.join(repo, '.git'), base, git(repo, 'rev-parse', 'HEAD'));
    assert.deepEqual(
      changes.map((x) => [x.status, x.path, x.from ?? null]),
      [
        ['renamed', 'lib2.ts', 'lib.ts'],
        ['modified', 'old.ts', null],
      ],
    );
    const findings = runGuards(changes, allOn);
    assert.deepEqual(
      findings.map((f) => `${f.guard} ${f.file}:${f.line}`),
      ['stubs lib2.ts:3'],
    );
  });
  it('plain mode: against the snapshot after setup — same rules, symlinks as links, deletions seen', () => {
    const dir = tempDir();
    const task = path.join(dir, 'task');
    fs.mkdirSync(task);
    fs.writeFileSync(path.join(task, 'a.py'), 'def f():\n    # TODO: from setup\n    return 1\n');
    fs.writeFileSync(path.join(task, 'gone.txt'), `k = "${fake.github}"\n`);
    const base = takeSnapshot(task, path.join(dir, 'store'));
    fs.writeFileSync(path.join(task, 'a.py'), 'def f():\n    # TODO: from setup\n    return 1\n\ndef g():\n    pass  # stub\n');
    fs.rmSync(path.join(task, 'gone.txt'));
    fs.symlinkSync('/etc/passwd', path.join(task, 'link'));
    const changes = dirChanges(base, task);
    assert.deepEqual(
      changes.map((x) => [x.status, x.path, x.kind]),
      [
        ['modified', 'a.py', 'file'],
        ['deleted', 'gone.txt', 'file'],
        ['added', 'link', 'symlink'],
      ],
    );
    const findings = runGuards(changes, { ...allOn, allowPaths: ['*.py'] });
    assert.deepEqual(
      findings.map((f) => `${f.guard} ${f.file}:${f.line ?? '-'}`),
      ['stubs a.py:6', 'paths gone.txt:-', 'paths link:-'],
    );
    assert.match(guardReason(findings), /^the guard refused the work \(stubs, paths\): a\.py:6: a stub body/);
  });
  it('a snapshot puts a dir back: new entries removed, changed and deleted ones restored', () => {
    const dir = tempDir();
    const task = path.join(dir, 'task');
    fs.mkdirSync(path.join(task, 'src'), { recursive: true });
    fs.writeFileSync(path.join(task, 'src', 'a.txt'), 'a\n');
    fs.writeFileSync(path.join(task, 'keep.txt'), 'k\n');
    const snap = takeSnapshot(task, path.join(dir, 'store'));
    fs.writeFileSync(path.join(task, 'src', 'a.txt'), 'changed\n');
    fs.rmSync(path.join(task, 'keep.txt'));
    fs.mkdirSync(path.join(task, 'build', 'deep'), { recursive: true });
    fs.writeFileSync(path.join(task, 'build', 'deep', 'x'), 'x');
    fs.writeFileSync(path.join(task, 'junk.txt'), 'j');
    const report = restoreSnapshot(task, snap);
    assert.deepEqual(report, { removed: ['build', 'junk.txt'], restored: ['keep.txt', 'src/a.txt'], lost: [] });
    assert.deepEqual(fs.readdirSync(task).sort(), ['keep.txt', 'src']);
    assert.equal(fs.readFileSync(path.join(task, 'src', 'a.txt'), 'utf8'), 'a\n');
  });
});

const allOn: GuardSettings = { switches: { secrets: true, stubs: true, deps: true, paths: true }, allowDeps: [], allowPaths: null };
