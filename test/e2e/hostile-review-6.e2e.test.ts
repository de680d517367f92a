import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { checkAgain, run, selfRewriting, workVerdicts, writeFileCmd } from '../helpers/review-run';
import { requireSandbox } from '../helpers/sandbox-env';

// Hostile review 6 (2026-12-08), against 8d5275b: plain mode's put-back after a passing check and suite
// (run/check-writes.ts putBackJudged, run/dir-snapshot.ts) and plain mode's record of what setup installed
// (run/setup-deps.ts). Each case states the correct outcome and fails on that build because of the finding it names.

const opts = { max_attempts: 1, network: false };

/** setup installing a test runner (as `npm ci` would) at `runnerDir/runner/run.sh`, linked as `<bin>/runtests`, that runs every tests/*.sh. */
function runnerSetup(depsDir: string, tests: Record<string, string>, extra: string[] = []): string {
  const runner = 'for t in tests/*.sh; do bash "$t" || { echo "FAILED $t"; exit 1; }; done; echo all passed\n';
  return [
    `mkdir -p tests ${depsDir}/runner ${depsDir}/.bin`,
    ...Object.entries(tests).map(([f, body]) => `[ -f tests/${f} ] || ${writeFileCmd(`tests/${f}`, body)}`),
    writeFileCmd(`${depsDir}/runner/run.sh`, runner),
    `ln -sf ../runner/run.sh ${depsDir}/.bin/runtests`,
    ...extra,
  ].join(' && ');
}

describe('hostile review 6: plain mode put-back and setup dependencies', function () {
  this.timeout(240000);
  before(async function () {
    await requireSandbox(this);
  });

  it("plain mode, suite: code the check runs rewrites setup's test runner in node_modules, and the suite it runs next passes with a regression in place", async () => {
    const dir = tempDir();
    // The suite (the repository's whole test suite) runs setup's runner over tests/*.sh; tests/keep.sh guards
    // config.txt, which the worker breaks. The task's own check runs the worker's answer.sh, which prints 42 — and, as
    // code the check ran, rewrites setup's runner to say "all passed".
    const setup = runnerSetup('node_modules', { 'keep.sh': 'grep -qx kept config.txt\n' }, ['echo kept > config.txt']);
    const answer = `echo 42\necho 'echo all passed' > node_modules/runner/run.sh\n`;
    const spec = `echo broken > config.txt; ${writeFileCmd('answer.sh', answer)}`;
    const file = writeManifest(dir, {
      workdir: 'w',
      setup,
      tasks: [
        {
          ...scriptTask('t', spec, 'bash answer.sh | grep -x 42', { ...opts, expect_files: ['answer.sh'] }),
          suite: 'PATH=$PWD/node_modules/.bin:$PATH; bash runtests',
        },
      ],
    });
    const r = await run(file, dir);
    // Was: t PASS. The seal judged setup's node_modules (run/setup-deps.ts judgeSetupDeps) before the check; the check's
    // write into it is seen by nothing: steps/suite.ts discardCheckWrites puts the dir back from the seal's snapshot,
    // which does not walk node_modules (run/dir-snapshot.ts SNAPSHOT_OPAQUE_DIRS), and setup's record is compared at a
    // seal only. So the suite ran the runner the worker's code had rewritten, and config.txt's regression landed.
    assert.deepEqual(
      workVerdicts(dir),
      ['t:FAIL'],
      `${r.all}\nnode_modules/runner/run.sh is now ${JSON.stringify(fs.readFileSync(path.join(dir, 'w', 't', 'node_modules/runner/run.sh'), 'utf8'))}`,
    );
  });

  it("plain mode, no setup: the worker's own node_modules is its work, and code the check runs rewrites it after the PASS — the delivered task dir fails the check", async () => {
    const dir = tempDir();
    const check = 'bash answer.sh | grep -x 42';
    // The deliverable calls a vendored helper the worker wrote under node_modules/ (a task without setup: setup-deps.ts
    // says such a node_modules is the worker's own work). The helper rewrites itself once the check has run it.
    const spec = `mkdir -p node_modules/lib && ${writeFileCmd('node_modules/lib/a.sh', selfRewriting('42', '41'))} && echo 'bash node_modules/lib/a.sh' > answer.sh`;
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('t', spec, check, { ...opts, expect_files: ['answer.sh'] })] });
    const r = await run(file, dir);
    const delivered = path.join(dir, 'w', 't');
    // Was: t PASS, and w/t/node_modules/lib/a.sh says `echo 41`: putBackJudged (run/check-writes.ts) restores from the
    // seal's snapshot, which records node_modules (and .git) as a folder and never walks into it, so whatever the check
    // changed there stays — hostile review 5's first case again, one folder down. Now the work's own node_modules is
    // recorded at the seal and judged after the check (run/setup-deps.ts, through putBackJudged): the seal keeps no copy
    // to put back, so the PASS is refused, naming the file. Either way no PASS may deliver what fails its check.
    if (workVerdicts(dir).includes('t:PASS'))
      assert.equal(
        checkAgain(delivered, check),
        0,
        `${r.all}\nt PASSED, but its delivered task dir fails the check: node_modules/lib/a.sh is now ${JSON.stringify(fs.readFileSync(path.join(delivered, 'node_modules/lib/a.sh'), 'utf8'))}`,
      );
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
    assert.match(r.all, /the check passed, but it changed node_modules\/lib\/a\.sh in the work's own dependency folders/);
  });

  it("plain mode: a symlink named node_modules is not a new dependency folder — tests/node_modules -> ../shadow shadows setup's package and a wrong answer PASSes", async () => {
    const dir = tempDir();
    // setup installs verify-answer (as `npm ci` would); the test (protected: tests/**) requires it and reads answer.txt.
    const test = "const verify = require('verify-answer');\nverify(require('fs').readFileSync('answer.txt', 'utf8').trim());\n";
    const lib = "module.exports = (v) => { if (v !== '42') { console.error('wrong answer: ' + v); process.exit(1); } };\n";
    const setup = [
      'mkdir -p tests node_modules/verify-answer',
      `[ -f tests/answer.test.js ] || ${writeFileCmd('tests/answer.test.js', test)}`,
      writeFileCmd('node_modules/verify-answer/index.js', lib),
    ].join(' && ');
    // The same shadow as a folder (mkdir tests/node_modules) is moved out of the check's sight; as a link it is not.
    const spec =
      "echo 41 > answer.txt; mkdir -p shadow/verify-answer; echo 'module.exports = () => {};' > shadow/verify-answer/index.js; ln -s ../shadow tests/node_modules";
    const file = writeManifest(dir, {
      workdir: 'w',
      setup,
      tasks: [scriptTask('t', spec, 'node tests/answer.test.js', { ...opts, expect_files: ['answer.txt'] })],
    });
    const r = await run(file, dir);
    // Was: t PASS with answer.txt saying 41. run/setup-deps.ts dependencyRoots takes a new root only when lstat says it
    // is a folder, so a link named node_modules is neither moved nor judged, and Node resolves require() through it
    // (tests/node_modules comes before the root's). The link stays in the tree, so escapingPlainLinks passes it too.
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
  });

  it("plain mode: a package.json naming itself after setup's package shadows it with no file under node_modules — a wrong answer PASSes", async () => {
    const dir = tempDir();
    const test = "const verify = require('verify-answer');\nverify(require('fs').readFileSync('answer.txt', 'utf8').trim());\n";
    const lib = "module.exports = (v) => { if (v !== '42') { console.error('wrong answer: ' + v); process.exit(1); } };\n";
    const setup = [
      'mkdir -p tests node_modules/verify-answer',
      `[ -f tests/answer.test.js ] || ${writeFileCmd('tests/answer.test.js', test)}`,
      writeFileCmd('node_modules/verify-answer/index.js', lib),
    ].join(' && ');
    // Node's self-reference (LOAD_PACKAGE_SELF) resolves a package's own name through its package.json "exports"
    // before it looks in any node_modules.
    const spec = `echo 41 > answer.txt; echo '{"name": "verify-answer", "exports": "./ok.js"}' > package.json; echo 'module.exports = () => {};' > ok.js`;
    const file = writeManifest(dir, {
      workdir: 'w',
      setup,
      tasks: [scriptTask('t', spec, 'node tests/answer.test.js', { ...opts, expect_files: ['answer.txt'] })],
    });
    const r = await run(file, dir);
    // Was: t PASS with answer.txt saying 41: what setup installed is untouched (setup-deps.ts sees nothing), but the
    // runner never reaches it. package.json is not among the files a Node check's configuration is protected by
    // (run/protect.ts: .npmrc, .yarnrc… under npm; here the check is plain `node`), and a new one is allowed.
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
  });

  it('plain mode: a pytest/ package at the task root shadows the pytest setup installed in .venv (`python -m pytest` puts the task dir first) — a wrong answer PASSes', async () => {
    const dir = tempDir();
    // setup makes a virtual environment and installs a (tiny) pytest in it; the test is protected (tests/**).
    const pytest = "import glob, runpy, sys\nfor t in sorted(glob.glob(sys.argv[1] + '/test_*.py')):\n    runpy.run_path(t)\nprint('passed')\n";
    const setup = [
      '/usr/bin/python3 -m venv --without-pip .venv',
      'site=$(echo .venv/lib/python3*/site-packages)',
      'mkdir -p "$site/pytest" tests',
      'touch "$site/pytest/__init__.py"',
      writeFileCmd('"$site/pytest/__main__.py"', pytest),
      `[ -f tests/test_answer.py ] || ${writeFileCmd('tests/test_answer.py', "assert open('answer.txt').read().strip() == '42', 'wrong answer'\n")}`,
    ].join(' && ');
    const spec = 'echo 41 > answer.txt; mkdir -p pytest; touch pytest/__init__.py; echo \'print("1 passed")\' > pytest/__main__.py';
    const file = writeManifest(dir, {
      workdir: 'w',
      setup,
      tasks: [scriptTask('t', spec, 'PATH=$PWD/.venv/bin:$PATH python -m pytest tests', { ...opts, expect_files: ['answer.txt'] })],
    });
    const r = await run(file, dir);
    // Was: t PASS with answer.txt saying 41. What setup installed is untouched, so run/setup-deps.ts sees nothing, but
    // `python -m` puts the working directory first on sys.path and the worker's pytest/ wins. run/protect.ts refuses a
    // new conftest.py or pytest.ini under pytest, not a new pytest/ or pytest.py (nor `_pytest/`, `pluggy/`…).
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
  });

  it("a check that runs the virtual environment's python (`.venv/bin/python`, a symlink) fails every step: an honest run can never PASS", async () => {
    const dir = tempDir();
    const setup = '/usr/bin/python3 -m venv --without-pip .venv';
    const check = `.venv/bin/python -c "import sys; sys.exit(open('answer.txt').read().strip() != '42')"`;
    const file = writeManifest(dir, {
      workdir: 'w',
      setup,
      tasks: [scriptTask('t', 'echo 42 > answer.txt', check, { ...opts, expect_files: ['answer.txt'] })],
    });
    const r = await run(file, dir);
    // Was: t FAIL, "bwrap: Can't create file at <task>/.venv/bin/python: No such file or directory" for the worker and
    // the check alike: run/protect.ts protects what the check executes, .venv/bin/python is a link (python -> python3
    // -> /usr/bin/python3), and the read-only bind of a protected path (steps/check.ts readOnly: protectedPaths) is
    // made onto the link itself, which bwrap cannot do. The canonical Python check cannot pass in plain mode.
    assert.deepEqual(workVerdicts(dir), ['t:PASS'], r.all);
  });

  it("plain mode: setup's vendor/ (composer, bundler, go mod vendor) is not setup's — a worker rewrites vendor/bin's runner and PASSes with nothing done; worktree mode puts it back", async () => {
    const tests = { 'answer.sh': 'grep -qx 42 answer.txt\n' };
    const setup = runnerSetup('vendor', tests);
    const spec = "echo 41 > answer.txt; echo 'echo all passed' > vendor/runner/run.sh";
    const check = 'PATH=$PWD/vendor/.bin:$PATH; bash runtests';
    // The same task in worktree mode (vendor/ ignored, the test committed) FAILs: setup's runner is put back.
    const wdir = tempDir();
    const repo = makeRepo(path.join(wdir, 'repo'), { '.gitignore': 'vendor/\n', 'tests/answer.sh': tests['answer.sh'] });
    const wfile = writeManifest(wdir, { worktrees: true, repo, setup, tasks: [scriptTask('t', spec, check, { ...opts, expect_files: ['answer.txt'] })] });
    const w = await run(wfile, wdir);
    assert.deepEqual(workVerdicts(wdir), ['t:FAIL'], w.all);
    const dir = tempDir();
    const file = writeManifest(dir, { workdir: 'w', setup, tasks: [scriptTask('t', spec, check, { ...opts, expect_files: ['answer.txt'] })] });
    const r = await run(file, dir);
    // Was: t PASS ("all passed") with answer.txt saying 41. run/setup-deps.ts DEPENDENCY_DIRS names node_modules, .venv
    // and venv only; composer and bundler install into vendor/ (vendor/bin/phpunit), Go vendors there, PEP 582 uses
    // __pypackages__, Yarn PnP resolves through .pnp.cjs and .yarn/ — all setup's, all the worker's to rewrite.
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
  });

  it("plain mode: a failing check that updates a file setup left in node_modules (a tool's cache) fails every retry as the worker's change — an honest run loses its passing work", async () => {
    const dir = tempDir();
    // setup leaves a cache file in node_modules (as a build tool's warm-up does); the check's tool updates it on every
    // run. The worker is honest: wrong on attempt 1, right on attempt 2, never touching node_modules.
    const setup = 'mkdir -p node_modules/.cache && echo 0 > node_modules/.cache/runs';
    const check =
      'echo $(( $(cat node_modules/.cache/runs) + 1 )) > node_modules/.cache/runs.new && mv node_modules/.cache/runs.new node_modules/.cache/runs; grep -x 42 answer.txt';
    const spec = 'if [ "$VERDICT_ATTEMPT" = 1 ]; then echo 41 > answer.txt; else echo 42 > answer.txt; fi';
    const file = writeManifest(dir, { workdir: 'w', setup, tasks: [scriptTask('t', spec, check, { ...opts, max_attempts: 2, expect_files: ['answer.txt'] })] });
    const r = await run(file, dir);
    // Was: t FAIL on attempt 2, "the worker changed or deleted what setup installed (node_modules/.cache/runs)": the
    // check's own write is never put back (discardCheckWrites restores from a snapshot that does not walk node_modules)
    // and the next seal (judgeSetupDeps) blames the worker for it.
    assert.deepEqual(workVerdicts(dir), ['t:FAIL', 't:PASS'], r.all);
  });
});
