import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { merge, run, runIdOf, STRICT_WITH_ENV, workVerdicts } from '../helpers/review-run';
import { requireSandbox } from '../helpers/sandbox-env';

// Hostile review 2 (2026-12-07): each case reproduces one finding of that review (a wrong PASS, or passed work undone)
// and failed on the build it was found on; each passes with its fix (named in the test).

describe('hostile review 2: what a PASS rests on, and what the orchestrator writes for a worker', function () {
  this.timeout(240000);
  before(async function () {
    await requireSandbox(this);
  });

  it('a file the check reads is a symlink into the worktree admin dir (writable by the worker, kept after the attempt): not PASS, not merged', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    // The admin dir (<repo>/.git/worktrees/<name>/) is the worker's to write and outlives the attempt and the merge
    // re-check; the commit holds only a link to it.
    const spec = 'A=$(git rev-parse --absolute-git-dir); echo 42 > "$A/answer"; ln -s "$A/answer" answer.txt';
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, 'grep -x 42 answer.txt', { max_attempts: 1, network: false })] });
    const r = await run(file, dir);
    const branch = `verdict/${runIdOf(path.join(dir, 'home'))}/t`;
    const mode = git(repo, 'ls-tree', branch, 'answer.txt').split(' ')[0];
    // Was: PASS, the branch holds a 120000 link to .../.git/worktrees/t/answer, `verdict merge` merges it, and
    // `verdict clean` then removes the only bytes the check judged.
    assert.notDeepEqual(workVerdicts(dir), ['t:PASS'], `${r.all}\nthe check passed on bytes outside the commit (answer.txt is ${mode})`);
    const m = await merge(dir, repo);
    assert.doesNotMatch(m.all, /t: MERGED/, m.all);
    const reason = JSON.stringify(readRows(path.join(dir, 'home')).find((row) => row.step === 'work'));
    assert.match(reason, /answer\.txt -> \S+answer.*the check would read bytes the commit does not hold/, reason);
  });

  it('symlinks the seal leaves alone: a link inside the tree, and one the start commit already had that leads out', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    fs.symlinkSync('/etc/hostname', path.join(repo, 'host.txt'));
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', "the user's own link");
    const spec = 'mkdir -p d; echo 42 > d/real.txt; ln -s d/real.txt answer.txt; ln -s ../answer.txt d/again.txt';
    const check = 'grep -x 42 answer.txt && grep -x 42 d/again.txt';
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, check, { max_attempts: 1, network: false })] });
    const r = await run(file, dir);
    assert.deepEqual(workVerdicts(dir), ['t:PASS'], r.all);
  });

  it('plain mode: a symlink the worker made that leads out of the task dir is not PASS; one setup made is left alone', async () => {
    const dir = tempDir();
    const outside = path.join(dir, 'outside.txt');
    fs.writeFileSync(outside, '42\n');
    const tasks = [
      scriptTask('bad', `ln -s ${outside} answer.txt`, 'test -L answer.txt', { max_attempts: 1, network: false }),
      scriptTask('ok', 'echo 42 > answer.txt', 'grep -x 42 answer.txt && test -L host.txt', { max_attempts: 1, network: false }),
    ];
    const file = writeManifest(dir, { workdir: 'w', setup: 'ln -s /etc/hostname host.txt', tasks });
    const r = await run(file, dir);
    assert.deepEqual(workVerdicts(dir).sort(), ['bad:FAIL', 'ok:PASS'], r.all);
    const reason = JSON.stringify(readRows(path.join(dir, 'home')).find((row) => row.step === 'work' && row.task_key === 'bad'));
    assert.match(reason, /answer\.txt -> \S+outside\.txt.*the check would read bytes the commit does not hold/, reason);
  });

  it("a worker's symlink over a protected folder: the retry's restore of protected inputs writes through it into the user's checkout", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'tests/test_x.py': 'def test_answer():\n    assert open("answer.txt").read().strip() == "42"\n' });
    // The user's uncommitted work in their own checkout.
    const edited = `${fs.readFileSync(path.join(repo, 'tests/test_x.py'), 'utf8')}# the user's uncommitted edit\n`;
    fs.writeFileSync(path.join(repo, 'tests/test_x.py'), edited);
    const spec = `if [ "$VERDICT_ATTEMPT" = 1 ]; then mv tests tests.bak && ln -s ${path.join(repo, 'tests')} tests; fi; echo 42 > answer.txt`;
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, 'pytest -q tests', { max_attempts: 2, network: false })] });
    await run(file, dir);
    // Was: attempt 1 FAILs (tests/test_x.py changed), attempt 2's work step calls restoreProtected, which
    // rmSync + copies <task>/tests/test_x.py — through the sealed symlink — over the user's file: the edit is gone.
    assert.equal(fs.readFileSync(path.join(repo, 'tests/test_x.py'), 'utf8'), edited, "the user's checkout was rewritten by the orchestrator");
  });

  for (const [name, files, check, spec] of [
    [
      'pytest reads a new tox.ini (pytest.ini and conftest.py are the only runner files guarded)',
      { 'tests/test_x.py': 'from impl import answer\n\ndef test_answer():\n    assert answer() == 42\n' },
      'pytest -q tests',
      `printf '[pytest]\\npythonpath = .\\naddopts = -p evilplug\\n' > tox.ini; printf 'import os\\ndef pytest_configure(config):\\n    os._exit(0)\\n' > evilplug.py`,
    ],
    [
      'npm reads a new .npmrc (script-shell)',
      {
        'package.json': '{"name":"x","version":"1.0.0","scripts":{"test":"node test/run.js"}}\n',
        'test/run.js': 'if (require("../impl.js")() !== 42) process.exit(1);\n',
      },
      'npm test',
      'echo script-shell=/bin/true > .npmrc',
    ],
    [
      'make reads a new GNUmakefile before the protected Makefile',
      { Makefile: 'test:\n\tgrep -x 42 answer.txt\n' },
      'make test',
      "printf 'test:\\n\\ttrue\\n' > GNUmakefile",
    ],
  ] as const) {
    it(`a new runner file that rewrites what the check runs: ${name}: FAIL, not PASS with nothing implemented`, async () => {
      const dir = tempDir();
      const repo = makeRepo(path.join(dir, 'repo'), files);
      const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, check, { max_attempts: 1, network: false })] });
      const r = await run(file, dir);
      assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
    });
  }

  it("a dependent that deletes its prerequisite's delivered file: merging both does not silently undo the prerequisite's PASS", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [
        scriptTask('a', 'echo 42 > a.txt', 'grep -x 42 a.txt', { max_attempts: 1, network: false, expect_files: ['a.txt'] }),
        scriptTask('b', 'rm -f a.txt; echo 7 > b.txt', 'grep -x 7 b.txt', { after: ['a'], max_attempts: 1, network: false, expect_files: ['b.txt'] }),
      ],
    });
    const r = await run(file, dir);
    assert.equal(r.exitCode, 0, r.all);
    const m = await merge(dir, repo);
    // Was: "a: MERGED", "b: MERGED", and main held b.txt only: a's check failed on main, nothing said so.
    assert.ok(fs.existsSync(path.join(repo, 'a.txt')), `${m.all}\nmain lost a.txt, which task a passed and was merged with`);
    assert.match(m.all ?? '', /b: CHECK_FAILED .*changes what a delivered earlier in this queue \(a\.txt\)/, m.all);
  });

  it('a worker that deletes a file setup made (the check reads it): put back from its copy, so the check judges with it — FAIL, not a PASS the merge re-check would refuse', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), {
      '.gitignore': '.env\n',
      'check.sh': STRICT_WITH_ENV,
    });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      setup: 'echo STRICT=1 > .env',
      tasks: [scriptTask('t', 'rm -f .env; echo 41 > answer.txt', 'bash check.sh', { max_attempts: 1, network: false })],
    });
    const r = await run(file, dir);
    // Was: PASS ("lenient"), and `verdict merge` then says CHECK_FAILED (its fresh setup makes .env again). Now
    // setup's .env is put back from the copy kept at prepare: the check reads STRICT=1 and fails on the wrong answer.
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
    const work = readRows(path.join(dir, 'home')).find((row) => row.step === 'work');
    assert.match(JSON.stringify(work), /put back \.env as setup left it/, r.all);
    assert.doesNotMatch(String(work?.check_output), /lenient/, r.all);
  });
});
