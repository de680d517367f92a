import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { processesWith } from '../helpers/procs';

// Step `suite` end to end with the script engine: the full regression check after the check, its own log, time limit
// and row column, its failure in the retry, and the hostile workers that want its PASS: one that weakens the suite's
// tests or its script, one that leaves a process behind to fix the tree while the suite runs, and a suite that hangs.

async function run(file: string, home: string) {
  return cli(['run', file, '--home', home, '--no-dashboard'], { env: { HOME: path.join(path.dirname(home), 'user-home') } });
}

/**
 * A repository with a small library and its tests: `lib.sh` defines `double` and `triple`; tests/test_double.sh and
 * tests/test_triple.sh test them, tests/check_square.sh the `square` a task is to add; ci/suite.sh (a script at no conventional test place) runs every test.
 */
function libRepo(dir: string): string {
  return makeRepo(path.join(dir, 'repo'), {
    'lib.sh': 'double() { echo $(( $1 * 2 )); }\ntriple() { echo $(( $1 * 3 )); }\n',
    'tests/test_double.sh': 'source ./lib.sh; test "$(double 4)" = 8 || { echo "double 4 gave $(double 4), want 8"; exit 1; }\n',
    'tests/test_triple.sh': 'source ./lib.sh; test "$(triple 4)" = 12 || { echo "triple 4 gave $(triple 4), want 12"; exit 1; }\n',
    'tests/check_square.sh': 'source ./lib.sh; test "$(square 3)" = 9 || { echo "square 3 gave $(square 3)"; exit 1; }\n',
    'ci/suite.sh': 'set -e; for t in tests/test_*.sh; do bash "$t"; echo "ok $t"; done\n',
    '.gitignore': 'out/\n',
  });
}

/** The task's check: only the new function `square` (a script that sources lib.sh, so lib.sh is the worker's to change). */
const SQUARE_CHECK = 'bash tests/check_square.sh';
/** Good work: `square` added, the rest as the base has it (written whole: a retry starts from what attempt 1 left). */
const GOOD = "printf 'double() { echo $(( $1 * 2 )); }\\ntriple() { echo $(( $1 * 3 )); }\\nsquare() { echo $(( $1 * $1 )); }\\n' > lib.sh";
/** Work that passes the check and breaks `triple` (the check does not test it). */
const BREAKS_TRIPLE = "printf 'double() { echo $(( $1 * 2 )); }\\ntriple() { echo $(( $1 + 3 )); }\\nsquare() { echo $(( $1 * $1 )); }\\n' > lib.sh";

describe('suite: the full regression check after the check', function () {
  this.timeout(240000);

  it("work that passes its check and breaks another test FAILs at suite with the suite's output in the retry; the retry passes; a best-of-N candidate that breaks it cannot win", async () => {
    const dir = tempDir();
    const repo = libRepo(dir);
    const tasks = [
      scriptTask(
        'square',
        ['if [ "$VERDICT_ATTEMPT" = 1 ]; then', BREAKS_TRIPLE, 'else', '  echo "--- handed: $(cat "$VERDICT_FAILURE_FILE")"', GOOD, 'fi'].join('\n'),
        SQUARE_CHECK,
      ),
      // Candidate 1 breaks triple, candidate 2 does not: first-pass picks the lowest-numbered candidate that passed, and
      // a candidate passes only with its suite.
      scriptTask('pick', ['if [ "$VERDICT_CANDIDATE" = 1 ]; then', BREAKS_TRIPLE, 'else', GOOD, 'fi'].join('\n'), SQUARE_CHECK, { repeat: 2, max_attempts: 1 }),
    ];
    const file = writeManifest(dir, { worktrees: true, repo, max_parallel: 2, suite: 'bash ci/suite.sh', suite_timeout_s: 60, tasks });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all); // every task passed: a candidate that lost is not a task that failed
    const rows = readRows(home).filter((row) => row.step === 'work');
    const of = (key: string) => rows.filter((row) => row.task_key === key);
    const [fail, pass] = of('square');
    assert.deepEqual(
      of('square').map((row) => row.verdict),
      ['FAIL', 'PASS'],
    );
    assert.match(String(fail?.notes), /the check passed, but the suite `bash ci\/suite\.sh` exited 1: triple 4 gave 7, want 12/);
    assert.equal(fail?.check_exit_code, 0, 'the check itself passed');
    const suite = fail?.suite as { command: string; passed: boolean; exit_code: number | null; timed_out: boolean; duration_ms: number; log: string };
    assert.deepEqual(
      { ...suite, duration_ms: typeof suite.duration_ms, log: path.basename(suite.log) },
      { command: 'bash ci/suite.sh', passed: false, exit_code: 1, timed_out: false, duration_ms: 'number', log: 'suite.log' },
    );
    assert.match(fs.readFileSync(suite.log, 'utf8'), /ok tests\/test_double\.sh\ntriple 4 gave 7, want 12/);
    // The retry was handed the suite's command and output, not the check's.
    const handed = fs.readFileSync(String(pass?.worker_log), 'utf8');
    assert.match(handed, /passed the task's check, then the repository's full test suite ran on it and failed/);
    assert.match(
      handed,
      /The suite command[^\n]*\n```sh\nbash ci\/suite\.sh\n```\nIts exit code was 1\. The end of its output, verbatim:\n```\nok tests\/test_double\.sh\ntriple 4 gave 7, want 12/,
    );
    assert.equal((pass?.suite as { passed: boolean }).passed, true);
    assert.match(fs.readFileSync((pass?.suite as { log: string }).log, 'utf8'), /ok tests\/test_triple\.sh/);
    // Best-of-N: candidate 1 passed its check and failed the suite; candidate 2 won.
    assert.equal(of('pick--c1')[0]?.verdict, 'FAIL');
    assert.match(String(of('pick--c1')[0]?.notes), /the suite `bash ci\/suite\.sh` exited 1/);
    assert.equal(of('pick--c2')[0]?.verdict, 'PASS');
    const runId = String(fail?.run_id);
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as {
      tasks: { key: string; status: string; winner?: string; attempts: { step: string; verdict: string }[] }[];
    };
    const task = (key: string) => state.tasks.find((t) => t.key === key);
    assert.equal(task('pick')?.status, 'PASS');
    assert.equal(task('pick')?.winner, 'pick--c2');
    assert.equal(task('square')?.attempts[0]?.step, 'suite', 'the views show the step the attempt ended in');
    const listed = await cli(['runs', runId, '--home', home]);
    assert.match(listed.stdout, /FAIL at suite/, listed.all);
    assert.match(git(repo, 'show', `${String(pass?.branch)}:lib.sh`), /triple\(\) \{ echo \$\(\( \$1 \* 3 \)\); \}/);
  });

  it("a worker that weakens the suite — its script at no test place, or a test it runs — cannot: the files are read-only to it (sandboxed) or it FAILs at guard, and the suite that judges is the base's", async () => {
    const dir = tempDir();
    const repo = libRepo(dir);
    const retry = (cheat: string) => ['if [ "$VERDICT_ATTEMPT" = 1 ]; then', BREAKS_TRIPLE, cheat, 'else', GOOD, 'fi'].join('\n');
    const tasks = [
      scriptTask('script', retry('echo "echo all tests passed" > ci/suite.sh'), SQUARE_CHECK),
      scriptTask('test', retry('echo "exit 0" > tests/test_triple.sh'), SQUARE_CHECK),
      // A task's own suite instead of the run's: its script is what is protected.
      scriptTask('own', retry('rm ci/own-suite.sh'), SQUARE_CHECK, { suite: 'bash ci/own-suite.sh' }),
    ];
    fs.writeFileSync(path.join(repo, 'ci', 'own-suite.sh'), 'bash ci/suite.sh\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'own suite');
    const file = writeManifest(dir, { worktrees: true, repo, max_parallel: 3, suite: 'bash ci/suite.sh', tasks });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home).filter((row) => row.step === 'work');
    const of = (key: string) => rows.filter((row) => row.task_key === key);
    const expected: Record<string, RegExp> = {
      script: /the worker changed protected check inputs: ci\/suite\.sh \(changed\)/,
      test: /the worker changed protected check inputs: tests\/test_triple\.sh \(changed\)/,
      own: /the worker changed protected check inputs: ci\/own-suite\.sh \(deleted\)/,
    };
    const sandboxed = !process.env.VERDICT_TEST_UNSANDBOXED;
    for (const [key, re] of Object.entries(expected)) {
      const [fail, pass] = of(key);
      assert.deepEqual(
        of(key).map((row) => row.verdict),
        ['FAIL', 'PASS'],
        `${key}: ${String(fail?.notes)}`,
      );
      if (sandboxed) {
        // The suite's files are bound read-only into the worker's sandbox: the cheat failed, and the real suite judged.
        assert.match(fs.readFileSync(String(fail?.worker_log), 'utf8'), /Read-only file system|Device or resource busy/, key);
        assert.match(String(fail?.notes), /the check passed, but the suite `bash ci\/(own-)?suite\.sh` exited 1: triple 4 gave 7, want 12/, key);
        assert.match(
          fs.readFileSync((fail?.suite as { log: string }).log, 'utf8'),
          /ok tests\/test_double\.sh\ntriple 4 gave 7/,
          `${key}: the base's suite ran`,
        );
      } else {
        // Unsandboxed the worker can write them: the guard refuses the attempt before the check, naming the file.
        assert.match(String(fail?.notes), re, key);
        assert.equal(fail?.suite, undefined, `${key}: no suite ran on refused work`);
      }
      assert.equal((pass?.suite as { passed: boolean }).passed, true, `${key}: the retry passed the real suite`);
    }
    // The suite's files on every branch are the base's.
    for (const key of Object.keys(expected))
      for (const f of ['ci/suite.sh', 'ci/own-suite.sh', 'tests/test_triple.sh'])
        assert.equal(git(repo, 'show', `${String(of(key)[1]?.branch)}:${f}`), git(repo, 'show', `main:${f}`), `${key}: ${f}`);
  });

  it('a worker that rewrites the package.json script the suite runs (`npm test`) FAILs at guard naming it; one that only adds a dependency there passes', async () => {
    const dir = tempDir();
    const repo = libRepo(dir);
    fs.writeFileSync(path.join(repo, 'package.json'), JSON.stringify({ name: 'lib', version: '1.0.0', scripts: { test: 'bash ci/suite.sh' } }, null, 2) + '\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'npm test');
    const pkg = (scripts: Record<string, string>, deps: Record<string, string> = {}) =>
      `printf '%s\\n' '${JSON.stringify({ name: 'lib', version: '1.0.0', scripts, dependencies: deps })}' > package.json`;
    const tasks = [
      scriptTask('weaken', [BREAKS_TRIPLE, pkg({ test: 'echo all tests passed' })].join('\n'), SQUARE_CHECK, { max_attempts: 1 }),
      scriptTask('pretest', [BREAKS_TRIPLE, pkg({ test: 'bash ci/suite.sh', pretest: 'exit 0' })].join('\n'), SQUARE_CHECK, { max_attempts: 1 }),
      scriptTask('deps', [GOOD, pkg({ test: 'bash ci/suite.sh' }, { zod: '3' })].join('\n'), SQUARE_CHECK, { max_attempts: 1, allow_deps: true }),
    ];
    const file = writeManifest(dir, { worktrees: true, repo, max_parallel: 3, suite: 'npm test --silent', tasks });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    const rows = readRows(home).filter((row) => row.step === 'work');
    const of = (key: string) => rows.find((row) => row.task_key === key);
    assert.equal(of('weaken')?.verdict, 'FAIL', r.all);
    assert.match(String(of('weaken')?.notes), /the worker changed protected check inputs: package\.json scripts\.test \(changed\)/);
    assert.equal(of('weaken')?.suite, undefined, 'no suite ran on refused work');
    assert.match(String(of('pretest')?.notes), /the worker changed protected check inputs: package\.json scripts\.pretest \(added\)/);
    assert.equal(of('deps')?.verdict, 'PASS', `${r.all}\n${String(of('deps')?.notes)}`);
    assert.equal((of('deps')?.suite as { passed: boolean }).passed, true);
  });

  it('a worker that leaves a process behind to fix the tree while the suite runs: nothing of it is alive at the suite, which judges what was sealed', async () => {
    const dir = tempDir();
    const repo = libRepo(dir);
    // Attempt 1 seals a broken triple and leaves a detached loop that, from 1 s on (after the worker has exited), would
    // write the right lib.sh back every 20 ms: alive at the seal, the check or the suite, it would make the judged tree right.
    const fixer = `setsid nohup bash -c 'sleep 1; while :; do printf "double() { echo \\$(( \\$1 * 2 )); }\\ntriple() { echo \\$(( \\$1 * 3 )); }\\nsquare() { echo \\$(( \\$1 * \\$1 )); }\\n" > lib.sh.new && mv lib.sh.new lib.sh; sleep 0.02; done # suite-fixer-7731' >/dev/null 2>&1 < /dev/null &`;
    const spec = ['if [ "$VERDICT_ATTEMPT" = 1 ]; then', `  ${fixer}`, '  sleep 0.2', BREAKS_TRIPLE, '  exit 0', 'else', GOOD, 'fi'].join('\n');
    // The check sleeps so a surviving loop would have rewritten lib.sh long before the suite.
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      suite: 'sleep 0.5; bash ci/suite.sh',
      tasks: [scriptTask('leave', spec, `${SQUARE_CHECK}; sleep 0.3`)],
    });
    const home = path.join(dir, 'home');
    const r = await run(file, home);
    const rows = readRows(home).filter((row) => row.step === 'work');
    // The worker exited 0 while its loop still ran; whether Verdict calls that a FAIL of its own or lets the check and
    // suite judge, attempt 1 must not pass.
    assert.equal(rows[0]?.verdict, 'FAIL', String(rows[0]?.notes));
    // What was sealed and judged is the worker's broken triple: nothing rewrote the tree after the worker.
    assert.match(git(repo, 'show', `${String(rows[0]?.sealed)}:lib.sh`), /triple\(\) \{ echo \$\(\( \$1 \+ 3 \)\); \}/);
    assert.notEqual((rows[0]?.suite as { passed?: boolean } | undefined)?.passed, true, 'the suite did not pass on the sealed broken triple');
    assert.equal(rows[1]?.verdict, 'PASS', r.all);
    assert.deepEqual(processesWith('suite-fixer-7731'), [], 'no loop of the worker is alive after the run');
  });

  it('a suite that hangs is stopped at suite_timeout_s, its process group killed, and the attempt FAILs saying so', async () => {
    const dir = tempDir();
    const repo = libRepo(dir);
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [scriptTask('hang', GOOD, SQUARE_CHECK, { max_attempts: 1, suite: 'sleep 4242 & sleep 4243; echo never', suite_timeout_s: 2 })],
    });
    const home = path.join(dir, 'home');
    const started = Date.now();
    const r = await run(file, home);
    assert.equal(r.exitCode, 1, r.all);
    const [row] = readRows(home).filter((x) => x.step === 'work');
    assert.equal(row?.verdict, 'FAIL');
    assert.match(String(row?.notes), /the check passed, but the suite `sleep 4242 & sleep 4243; echo never` timed out after 2 s/);
    assert.deepEqual(
      { ...(row?.suite as object), duration_ms: 0, log: '' },
      { command: 'sleep 4242 & sleep 4243; echo never', passed: false, exit_code: null, timed_out: true, duration_ms: 0, log: '' },
    );
    assert.match(fs.readFileSync((row?.suite as { log: string }).log, 'utf8'), /\[verdict\] the check timed out after 2 s and was killed/);
    assert.deepEqual([...processesWith('sleep 4242'), ...processesWith('sleep 4243')], [], 'nothing of the suite is alive');
    assert.ok(Date.now() - started < 120000);
  });

  it('bad input: a suite on a council task or a planner, a blank suite, a limit out of range or limiting nothing — each an error naming file:line:column and the field', async () => {
    const dir = tempDir();
    const cases: [string, string, RegExp][] = [
      [
        'council',
        '{\n  "tasks": [\n    { "key": "c", "engine": "script", "spec": "echo a > answer.md", "check": "test -s answer.md",\n      "suite": "npm test",\n      "council": { "members": [{ "engine": "script", "model": "a" }, { "engine": "script", "model": "b" }], "chair": { "check": "test -s synthesis.md" } } }\n  ]\n}\n',
        /:4:16: error: tasks\[0\]\.suite: a council task \(its answers, reviews and synthesis are documents\) has nothing a test suite judges/,
      ],
      [
        'planner',
        '{\n  "tasks": [\n    { "key": "p", "engine": "script", "spec": "echo [] > t.json",\n      "generate": { "file": "t.json", "max_tasks": 3 }, "suite": "npm test" }\n  ]\n}\n',
        /:4:66: error: tasks\[0\]\.suite: a planner \("generate": its work is a plan of tasks\) has nothing a test suite judges/,
      ],
      ['blank', '{\n  "suite": "   ",\n  "tasks": [{ "key": "a", "engine": "script", "spec": "true", "check": "true" }]\n}\n', /:2:12: error: suite: /],
      [
        'range',
        '{\n  "suite": "npm test",\n  "tasks": [{ "key": "a", "engine": "script", "spec": "true", "check": "true", "suite_timeout_s": 0 }]\n}\n',
        /:3:99: error: tasks\[0\]\.suite_timeout_s: must be >= 0\.001, got 0/,
      ],
      [
        'nothing',
        '{\n  "suite_timeout_s": 30,\n  "tasks": [{ "key": "a", "engine": "script", "spec": "true", "check": "true" }]\n}\n',
        /:2:22: error: suite_timeout_s: suite_timeout_s limits the suite, but neither the run nor any task has a "suite"/,
      ],
    ];
    for (const [name, text, re] of cases) {
      const file = path.join(dir, `${name}.swarm.json`);
      fs.writeFileSync(file, text);
      const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard']);
      assert.equal(r.exitCode, 2, `${name}: ${r.all}`);
      assert.match(r.all, re, `${name}: ${r.all}`);
    }
    assert.equal(fs.existsSync(path.join(dir, 'home', 'runs')) ? fs.readdirSync(path.join(dir, 'home', 'runs')).length : 0, 0, 'no run was started');
  });
});
