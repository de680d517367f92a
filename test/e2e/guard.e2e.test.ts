import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// The built-in guards end to end with the script engine: each fires on a worker's first attempt
// with file and line in the row's notes and in the failure handed to the retry; the retry, clean, passes.

async function run(file: string, home: string, flags: string[] = []) {
  return cli(['run', file, '--home', home, '--no-dashboard', ...flags], { env: { HOME: path.join(path.dirname(home), 'user-home') } });
}

/** A worker that cheats on attempt 1 and, on attempt 2, prints the failure it was handed and does `fix`. */
function twoAttempts(cheat: string, fix: string): string {
  return ['if [ "$VERDICT_ATTEMPT" = 1 ]; then', cheat, 'else', '  echo "--- handed: $(cat "$VERDICT_FAILURE_FILE")"', fix, 'fi'].join('\n');
}

describe("guard: built-in checks of the worker's output", function () {
  this.timeout(180000);

  it('worktree mode: secrets, stubs, a dependency hidden in a nested package.json and writes outside allow_paths (via a symlink and a rename) each FAIL naming file:line; the retry is told and passes', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), {
      'package.json': '{\n  "name": "app",\n  "dependencies": {\n    "zod": "3"\n  }\n}\n',
      'src/config.js': 'module.exports = {};\n',
      'src/parser/index.js': '// TODO: the base had this one\nmodule.exports = () => 1;\n',
      'config/app.json': '{}\n',
      'README.md': '# app\n',
    });
    const tasks = [
      // A key built at run time, so no file of this repository holds one.
      scriptTask(
        'secrets',
        twoAttempts(
          '  k=AKIA; printf "module.exports = {\\n  id: \\"%sZ7Q2MXW4RT5UJ3KB\\",\\n};\\n" "$k" > src/config.js',
          '  printf "module.exports = { id: process.env.AWS_ACCESS_KEY_ID };\\n" > src/config.js',
        ),
        'node -e "require(\'./src/config.js\')"',
      ),
      scriptTask(
        'stubs',
        twoAttempts(
          '  printf "def parse(s):\\n    \\"\\"\\"Parse.\\"\\"\\"\\n    raise NotImplementedError\\n" > parse.py',
          '  printf "def parse(s):\\n    return s.split(\\",\\")\\n" > parse.py',
        ),
        'test -s parse.py',
      ),
      scriptTask(
        'deps',
        twoAttempts(
          '  mkdir -p packages/util && printf "{\\n  \\"name\\": \\"util\\",\\n  \\"dependencies\\": {\\n    \\"left-pad\\": \\"1\\"\\n  }\\n}\\n" > packages/util/package.json',
          '  rm -rf packages; printf "{\\n  \\"name\\": \\"app\\",\\n  \\"dependencies\\": {\\n    \\"zod\\": \\"3\\",\\n    \\"@types/node\\": \\"20\\"\\n  }\\n}\\n" > package.json',
        ),
        'test -s package.json',
        { allow_deps: ['@types/*'] },
      ),
      scriptTask(
        'paths',
        twoAttempts(
          '  echo "module.exports = () => 2;" > src/parser/index.js; ln -s ../../config src/parser/cfg; echo "{\\"debug\\": true}" > src/parser/cfg/app.json; git mv README.md src/parser/README.md',
          '  git checkout -q -- config README.md 2>/dev/null; rm -f src/parser/cfg src/parser/README.md; git checkout -q -- README.md; echo "module.exports = () => 2;" > src/parser/index.js',
        ),
        'node -e "process.exit(require(\'./src/parser/index.js\')() === 2 ? 0 : 1)"',
        { allow_paths: ['src/parser/**'] },
      ),
    ];
    const file = writeManifest(dir, { worktrees: true, repo, max_parallel: 4, tasks });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    const of = (key: string) => rows.filter((row) => row.task_key === key);
    for (const key of ['secrets', 'stubs', 'deps', 'paths'])
      assert.deepEqual(
        of(key).map((row) => row.verdict),
        ['FAIL', 'PASS'],
        `${key}: ${String(of(key)[0]?.notes)}`,
      );
    const expected: Record<string, RegExp> = {
      secrets: /the guard refused the work \(secrets\): src\/config\.js:2: an AWS access key id \(AKIAZ… 20 characters\)/,
      stubs: /\(stubs\): parse\.py:3: a not-implemented error: `raise NotImplementedError`/,
      deps: /\(deps\): packages\/util\/package\.json:4: new dependency "left-pad", not in the task's allow_deps \(@types\/\*\)/,
      paths:
        /\(paths\): README\.md: renamed to src\/parser\/README\.md; it is outside allow_paths \(src\/parser\/\*\*\); config\/app\.json:1: modified outside allow_paths \(src\/parser\/\*\*\); src\/parser\/cfg: a symlink to config, outside allow_paths/,
    };
    for (const [key, re] of Object.entries(expected)) {
      const [fail, pass] = of(key);
      assert.match(String(fail?.notes), re, `${key}: ${String(fail?.notes)}`);
      assert.equal(fail?.check_exit_code, null, `${key}: the check did not run on refused work`);
      // The retry was handed the same finding, file and line included.
      assert.match(fs.readFileSync(String(pass?.worker_log), 'utf8'), re, `${key}: the retry's failure file`);
    }
    assert.doesNotMatch(JSON.stringify(rows), /AKIAZ7Q2MXW4RT5UJ3KB/, 'the secret itself is in no row');
    // The TODO the base already had was never flagged; the PASS commits hold the clean work.
    assert.equal(git(repo, 'show', `${String(of('paths')[1]?.branch)}:src/parser/index.js`), 'module.exports = () => 2;');
    assert.match(git(repo, 'show', `${String(of('deps')[1]?.branch)}:package.json`), /@types\/node/);
  });

  it("plain mode: judged against the dir after setup — a TODO setup wrote is not the worker's; a new one is, at its line", async () => {
    const dir = tempDir();
    const setup = 'printf "# TODO: written by setup\\nVALUE = 1\\n" > lib.py';
    const file = writeManifest(dir, {
      workdir: 'w',
      setup,
      max_parallel: 2,
      tasks: [
        scriptTask('keeps', 'echo "def f():\\n    return VALUE" >> lib.py', 'grep -q "return VALUE" lib.py'),
        scriptTask(
          'adds',
          twoAttempts('  printf "def g():\\n    pass  # stub\\n" >> lib.py', "  sed -i 's/pass  # stub/return 2/' lib.py"),
          'grep -q "def g" lib.py',
        ),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.filter((row) => row.task_key === 'keeps').map((row) => row.verdict),
      ['PASS'],
    );
    const adds = rows.filter((row) => row.task_key === 'adds');
    assert.deepEqual(
      adds.map((row) => row.verdict),
      ['FAIL', 'PASS'],
    );
    assert.match(String(adds[0]?.notes), /\(stubs\): lib\.py:4: a stub body: `pass  # stub`/);
    assert.match(fs.readFileSync(String(adds[1]?.worker_log), 'utf8'), /lib\.py:4: a stub body/);
  });

  it('"guard": false (or one guard off) lets the same work pass', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 2,
      tasks: [
        scriptTask('off', 'echo "// TODO: later" > a.js', 'test -s a.js', { guard: false, max_attempts: 1 }),
        scriptTask('stubs-off', 'echo "// TODO: later" > a.js', 'test -s a.js', { guard: { stubs: false }, max_attempts: 1 }),
        scriptTask('on', 'echo "// TODO: later" > a.js', 'test -s a.js', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const byKey = Object.fromEntries(readRows(home).map((row) => [row.task_key, row]));
    assert.equal(byKey.off?.verdict, 'PASS');
    assert.equal(byKey['stubs-off']?.verdict, 'PASS');
    assert.equal(byKey.on?.verdict, 'FAIL');
    assert.match(String(byKey.on?.notes), /a\.js:1: a TODO\/FIXME marker/);
  });
});
