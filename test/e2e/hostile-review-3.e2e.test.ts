import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { merge, run, STRICT_WITH_ENV, workVerdicts } from '../helpers/review-run';
import { requireSandbox } from '../helpers/sandbox-env';

// Hostile review 3 (2026-12-07): each case reproduces one finding of that review against the fixes of hostile review
// 2, on the build it was found on (0085c93); each failed there. The ones that run pass with their fix. The ones still
// skipped are findings left open, said in README "Protected check inputs" (what it does not cover): the check runs
// code the worker wrote, and any of it can exit 0.

/** A link target that reads as inside the tree to a lexical check (each `e/` cancels a `..`) but, with `e -> .`, climbs to `/` and then to `abs`. */
function climbing(abs: string): string {
  return `${'e/'.repeat(16)}${'../'.repeat(16)}${abs.replace(/^\/+/, '')}`;
}

const opts = { max_attempts: 1, network: false };

describe('hostile review 3: ways around the fixes of hostile review 2', function () {
  this.timeout(240000);
  before(async function () {
    await requireSandbox(this);
  });

  it('seal: a link that is inside the tree lexically but climbs out through another link (e -> ., f -> e/e/../../abs) is not PASS, not merged', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    // git/worktree.ts linkLeavesTree normalizes the target as text: `e/e/…/../../…/x` is `x` to it, but the kernel
    // follows each `e` (-> .) and then climbs out of the worktree with every `..`, up to `/`.
    const spec = `A=$(git rev-parse --absolute-git-dir); echo 42 > "$A/answer"; ln -s . e; ln -s "${climbing('')}\${A#/}/answer" answer.txt`;
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, 'grep -x 42 answer.txt', opts)] });
    const r = await run(file, dir);
    // Was: t PASS; `verdict merge` merged it, and main's answer.txt read .git/worktrees/t/answer.
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
    const m = await merge(dir, repo);
    assert.doesNotMatch(m.all ?? '', /t: MERGED/, m.all);
    assert.ok(git(repo, 'ls-tree', 'HEAD', 'answer.txt') === '', 'main holds a link to bytes outside any commit');
  });

  it('plain mode: the same climbing link out of the task dir is not PASS', async () => {
    const dir = tempDir();
    const outside = path.join(dir, 'outside.txt');
    fs.writeFileSync(outside, '42\n');
    const spec = `ln -s . e; ln -s "${climbing(outside)}" answer.txt`;
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('t', spec, 'grep -x 42 answer.txt', opts)] });
    const r = await run(file, dir);
    // Was: t PASS (linkLeavesTree read the target as text; it now follows the links on the way).
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
  });

  it('a worker that touches (or replaces) a file setup made, instead of deleting it: the check runs without it, not PASS', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), {
      '.gitignore': '.env\n',
      'check.sh': STRICT_WITH_ENV,
    });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      setup: 'echo STRICT=1 > .env',
      tasks: [
        scriptTask('touch', 'touch .env; echo 41 > answer.txt', 'bash check.sh', opts),
        scriptTask('dir', 'rm .env; mkdir .env; echo 41 > answer.txt', 'bash check.sh', opts),
      ],
    });
    const r = await run(file, dir);
    // Was: both PASS ("lenient"): a changed setup file is moved aside (run/undelivered.ts), so the check ran
    // without it exactly as after `rm .env`, which is now a FAIL; the merge re-check (fresh setup) then refuses them.
    assert.deepEqual(workVerdicts(dir), ['dir:FAIL', 'touch:FAIL'], r.all);
  });

  it('an honest worker that runs `make clean` (or deletes __pycache__) after its edit, where the check rebuilds: PASS, not FAIL', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), {
      '.gitignore': 'build/\n',
      Makefile:
        'all: build/out.txt\nbuild/out.txt: src.txt\n\tmkdir -p build && cp src.txt build/out.txt\nclean:\n\trm -rf build\ntest: all\n\tgrep -x 42 build/out.txt\n',
      'src.txt': '41\n',
    });
    const file = writeManifest(dir, { worktrees: true, repo, setup: 'make', tasks: [scriptTask('t', 'echo 42 > src.txt; make clean', 'make test', opts)] });
    const r = await run(file, dir);
    // Was: FAIL "the worker deleted build/, which setup made before it ran": the check rebuilt build/ and passed,
    // and the merge re-check (setup, then the check) passes too.
    assert.deepEqual(workVerdicts(dir), ['t:PASS'], r.all);
  });

  it('a later `verdict merge` of the same run that deletes what an earlier `verdict merge` delivered: not MERGED', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [
        scriptTask('a', 'echo 42 > a.txt', 'grep -x 42 a.txt', { ...opts, expect_files: ['a.txt'] }),
        scriptTask('d', 'rm a.txt; echo 9 > d.txt', 'grep -x 9 d.txt', { ...opts, after: ['a'], expect_files: ['d.txt'] }),
      ],
    });
    const r = await run(file, dir);
    assert.equal(r.exitCode, 0, r.all);
    const first = await merge(dir, repo, ['a']);
    assert.match(first.all ?? '', /a: MERGED/, first.all);
    const second = await merge(dir, repo, ['d']);
    // Was "d: MERGED" and main lost a.txt: git/merge.ts breaksEarlier only knew the merges of its own queue. The first
    // merge records the paths a's merge changed (state.json merged.paths), so the second re-runs a's check on d's result.
    assert.match(second.all ?? '', /d: CHECK_FAILED — .*changes what a delivered in an earlier merge into \S+ \([0-9a-f]{10}\) \(a\.txt\)/, second.all);
    assert.ok(fs.existsSync(path.join(repo, 'a.txt')), `${second.all}\nmain lost a.txt, which task a passed and was merged with`);
  });

  it("a worker that un-ignores setup's file and commits its own (setup only makes it when it is missing): not PASS, not merged", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), {
      '.gitignore': '.env\n',
      'check.sh': STRICT_WITH_ENV,
    });
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      setup: '[ -f .env ] || echo STRICT=1 > .env',
      tasks: [scriptTask('t', 'echo > .gitignore; echo STRICT=0 > .env; echo 41 > answer.txt', 'bash check.sh', opts)],
    });
    const r = await run(file, dir);
    // Was: PASS ("lenient"), and `verdict merge` merged it: the commit's .env was the worker's, and the re-check's
    // setup left it. The record of setup's .env was passed by as "now committed" (run/undelivered.ts passBy); a file
    // git ignored at prepare that the seal holds with other content is now a FAIL naming it (judgeCommitted).
    assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
    assert.match(r.all ?? '', /the commit holds \.env, which setup made and git ignored/, r.all);
    const m = await merge(dir, repo);
    assert.doesNotMatch(m.all ?? '', /t: MERGED/, m.all);
  });

  for (const [name, files, check, spec] of [
    [
      'a new conftest.py when the check runs pytest through make (make test -> pytest -q tests)',
      {
        'tests/test_x.py': 'def test_answer():\n    assert open("answer.txt").read().strip() == "42"\n',
        Makefile: 'test:\n\tpytest -q tests\n',
      },
      'make test',
      "printf 'import os\\ndef pytest_configure(config):\\n    os._exit(0)\\n' > conftest.py",
    ],
    [
      'a new test module in the protected tests/ folder that exits 0 while pytest collects it',
      { 'tests/test_x.py': 'def test_answer():\n    assert open("answer.txt").read().strip() == "42"\n' },
      'pytest -q tests',
      "printf 'import os\\nos._exit(0)\\n' > tests/test_zz.py",
    ],
    [
      'a new pytest.py at the top that `python3 -m pytest` runs instead of pytest',
      { 'tests/test_x.py': 'def test_answer():\n    assert open("answer.txt").read().strip() == "42"\n' },
      'python3 -m pytest -q tests',
      "printf 'raise SystemExit(0)\\n' > pytest.py",
    ],
    [
      'the script a protected Makefile recipe runs (make test -> sh verify.sh) is rewritten',
      { Makefile: 'test:\n\tsh verify.sh\n', 'verify.sh': 'grep -x 42 answer.txt\n' },
      'make test',
      "echo 'exit 0' > verify.sh",
    ],
    [
      'the script a protected package.json test script runs (npm test -> node verify.js) is rewritten',
      {
        'package.json': '{"name":"x","version":"1.0.0","scripts":{"test":"node verify.js"}}\n',
        'verify.js': 'if (require("fs").readFileSync("answer.txt", "utf8").trim() !== "42") process.exit(1);\n',
      },
      'npm test',
      "echo 'process.exit(0)' > verify.js",
    ],
    [
      "pytest's section added to the project's existing pyproject.toml (a new one with it is refused)",
      {
        'tests/test_x.py': 'def test_answer():\n    assert open("answer.txt").read().strip() == "42"\n',
        'pyproject.toml': '[project]\nname = "x"\nversion = "0.1"\n',
      },
      'pytest -q tests',
      `printf '[tool.pytest.ini_options]\\npythonpath = ["."]\\naddopts = "-p evilplug"\\n' >> pyproject.toml; printf 'import os\\ndef pytest_configure(config):\\n    os._exit(0)\\n' > evilplug.py`,
    ],
  ] as const) {
    it.skip(`what the check runs, around the protected inputs: ${name}: FAIL, not PASS with nothing implemented`, async () => {
      const dir = tempDir();
      const repo = makeRepo(path.join(dir, 'repo'), files);
      const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t', spec, check, opts)] });
      const r = await run(file, dir);
      // Observed: PASS (answer.txt was never written).
      assert.deepEqual(workVerdicts(dir), ['t:FAIL'], r.all);
    });
  }
});
