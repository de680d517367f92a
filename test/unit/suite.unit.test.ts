import assert from 'node:assert/strict';
import { formatProblem } from '../../extension/core/manifest/types';
import { BadJobError, parseJob, type AttemptJob } from '../../extension/core/pool/payload';
import { failureText } from '../../extension/core/run/prompt';
import { changedScripts, judgedCommands, protectedPaths, runnerScripts } from '../../extension/core/run/protect';
import { suiteFailedReason } from '../../extension/core/run/steps/suite';
import { parseManifest } from '../../extension/core/run/manifest';

// The `suite` setting as the manifest states it: who gets the run's, who refuses one, what the pool carries, and what a
// retry is told when the suite failed (the step itself: test/e2e/suite.e2e.test.ts).

const FILE = '/work/x/suite.swarm.json';
const engines = new Set(['script', 'claude']);
const parse = (m: object) => parseManifest(JSON.stringify(m, null, 2), FILE, { engines });
const task = (key: string, extra: Record<string, unknown> = {}) => ({ key, engine: 'script', spec: 'true', check: 'true', ...extra });

describe('suite: the manifest, the protected files, the pool payload and the retry', () => {
  it("the run's suite goes to every task that changes code (best-of-N candidates, validate workers, phases tasks); a task's own replaces it; council members, validators and planners get none", () => {
    const { manifest, problems } = parse({
      suite: 'npm test',
      suite_timeout_s: 90,
      worktrees: true,
      tasks: [
        task('plain'),
        task('own', { suite: 'make check', suite_timeout_s: 5 }),
        task('best', { repeat: 2 }),
        task('checked', { validate: { workers: 2, check: 'test -s validation.md' } }),
        task('asked', {
          council: {
            members: [
              { engine: 'script', model: 'a' },
              { engine: 'script', model: 'b' },
            ],
            chair: { check: 'test -s synthesis.md' },
          },
        }),
        task('plan', { check: undefined, generate: { file: 'tasks.json', max_tasks: 3 } }),
      ],
    });
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    const suites = Object.fromEntries((manifest?.tasks ?? []).map((t) => [t.key, t.suite ? `${t.suite.command} ${t.suite.timeoutMs}` : null]));
    assert.deepEqual(suites, {
      plain: 'npm test 90000',
      own: 'make check 5000',
      best: 'npm test 90000',
      'best--c1': 'npm test 90000',
      'best--c2': 'npm test 90000',
      'checked--w1': 'npm test 90000',
      'checked--w2': 'npm test 90000',
      checked: null,
      'asked--a1': null,
      'asked--a2': null,
      'asked--r1': null,
      'asked--r2': null,
      asked: null,
      plan: null,
    });
    assert.equal(parse({ suite: 'npm test', tasks: [task('a')] }).manifest?.tasks[0]?.suite?.timeoutMs, 600000, 'the default limit is 600 s');
  });

  it('errors at the field: a suite on a council task or a planner, a blank one, a limit out of range or limiting nothing', () => {
    const cases: [object, RegExp][] = [
      [
        {
          tasks: [
            task('c', {
              suite: 'npm test',
              council: {
                members: [
                  { engine: 'script', model: 'a' },
                  { engine: 'script', model: 'b' },
                ],
                chair: { check: 'true' },
              },
            }),
          ],
        },
        /^\/work\/x\/suite\.swarm\.json:\d+:\d+: error: tasks\[0\]\.suite: a council task/,
      ],
      [{ tasks: [task('p', { check: undefined, suite: 'npm test', generate: { file: 't.json', max_tasks: 2 } })] }, /error: tasks\[0\]\.suite: a planner/],
      [{ suite: '', tasks: [task('a')] }, /error: suite: /],
      [{ tasks: [task('a', { suite: ' \t' })] }, /error: tasks\[0\]\.suite: /],
      [{ suite: 'x', suite_timeout_s: -1, tasks: [task('a')] }, /error: suite_timeout_s: must be >= 0\.001/],
      [{ suite: 'x', tasks: [task('a', { suite_timeout_s: 3000000 })] }, /error: tasks\[0\]\.suite_timeout_s: must be <= 2147483/],
      [{ suite_timeout_s: 5, tasks: [task('a')] }, /error: suite_timeout_s: suite_timeout_s limits the suite, but neither the run nor any task/],
      [
        { tasks: [task('a', { suite_timeout_s: 5 }), task('b', { suite: 'x' })] },
        /error: tasks\[0\]\.suite_timeout_s: suite_timeout_s limits the suite, but this task has none/,
      ],
      [
        {
          suite: 'x',
          tasks: [
            task('c', {
              suite_timeout_s: 5,
              council: {
                members: [
                  { engine: 'script', model: 'a' },
                  { engine: 'script', model: 'b' },
                ],
                chair: { check: 'true' },
              },
            }),
          ],
        },
        /error: tasks\[0\]\.suite_timeout_s: a council task runs no suite/,
      ],
    ];
    for (const [m, re] of cases) {
      const errors = parse(m)
        .problems.filter((p) => p.severity === 'error')
        .map(formatProblem);
      assert.ok(
        errors.some((e) => re.test(e)),
        `${JSON.stringify(m)}: ${errors.join('\n')}`,
      );
    }
  });

  it('what the suite runs is protected as what the check runs is: its script and the folders it names, each command read on its own', () => {
    const files = ['ci/suite.sh', 'ci/helper.txt', 'lib.sh', 'e2e/a.sh', 'README.md'];
    const kindOf = (rel: string) => (files.includes(rel) ? 'file' : ['ci', 'e2e'].includes(rel) ? 'dir' : null);
    assert.deepEqual(protectedPaths(files, kindOf, judgedCommands({ check: 'grep x lib.sh # just data', suite: { command: 'bash ci/suite.sh e2e/' } }), null), [
      'ci/suite.sh',
      'e2e/a.sh',
    ]);
    assert.deepEqual(protectedPaths(files, kindOf, judgedCommands({ check: 'grep x lib.sh' }), null), []);
  });

  it('the package.json scripts a command runs through npm, yarn or pnpm, with their pre and post; and which of them a change touched', () => {
    assert.deepEqual(runnerScripts(['npm test', 'npm run lint -- --fix && yarn build; pnpm run e2e', 'cd web && npm t']), [
      'build',
      'e2e',
      'lint',
      'postbuild',
      'poste2e',
      'postlint',
      'posttest',
      'prebuild',
      'pree2e',
      'prelint',
      'pretest',
      'test',
    ]);
    assert.deepEqual(runnerScripts(['npm ci', 'npm install', 'yarn', 'yarn install', 'pnpm add x', 'pytest -q', 'echo npm test']), []);
    assert.deepEqual(runnerScripts('yarn --silent jest'), ['jest', 'postjest', 'prejest']);
    const before = JSON.stringify({ scripts: { test: 'jest', build: 'tsc' }, dependencies: {} });
    assert.deepEqual(changedScripts(before, JSON.stringify({ scripts: { test: 'jest', build: 'tsc' }, dependencies: { zod: '3' } }), ['test', 'pretest']), []);
    assert.deepEqual(changedScripts(before, JSON.stringify({ scripts: { test: 'echo ok', pretest: 'x' } }), ['test', 'pretest', 'build']), [
      'package.json scripts.build (deleted)',
      'package.json scripts.pretest (added)',
      'package.json scripts.test (changed)',
    ]);
    assert.deepEqual(changedScripts(before, 'not json', ['test']), ['package.json scripts.test (deleted)']);
    assert.deepEqual(changedScripts(before, null, ['test']), ['package.json scripts.test (deleted)']);
  });

  it('the pool carries the suite; a worker refuses a malformed one', () => {
    const job: AttemptJob = {
      v: 6,
      runId: '20260101-120000-ab12',
      runName: 'r',
      identity: 'me',
      key: 't1',
      attempt: 1,
      retry: false,
      engine: 'codex',
      model: null,
      taskType: null,
      spec: 'do it',
      failure: null,
      check: 'npm test',
      expectFiles: [],
      timeoutMs: 1000,
      checkTimeoutMs: 1000,
      watchdogMs: null,
      engineArgs: [],
      verified: null,
      network: true,
      protect: null,
      setup: null,
      remote: '/srv/git/app.git',
      baseSha: 'a'.repeat(40),
      branch: 'verdict/20260101-120000-ab12/t1',
      startFrom: [],
      group: null,
      candidate: null,
      review: null,
      guard: { secrets: true, stubs: true, deps: true, paths: true },
      allowDeps: true,
      allowPaths: null,
      inputs: null,
      workflows: {},
      suite: { command: 'npm run test:all', timeoutMs: 600000 },
    };
    assert.deepEqual(parseJob(JSON.parse(JSON.stringify(job))).suite, job.suite);
    assert.equal(parseJob({ ...job, suite: undefined }).suite, undefined);
    for (const suite of [
      { command: ' ', timeoutMs: 1 },
      { command: 'x', timeoutMs: 0 },
      { command: 'x', timeoutMs: 2 ** 31 },
      { command: 'x' },
      { command: 'x', timeoutMs: 5, extra: 1 },
      'npm test',
    ]) {
      assert.throws(
        () => parseJob({ ...job, suite }),
        (e: Error) => e instanceof BadJobError && /field suite/.test(e.message),
        JSON.stringify(suite),
      );
    }
  });

  it("a retry after a failed suite is told it was the suite, with the suite's command and output", () => {
    const text = failureText({
      attempt: 1,
      verdict: 'FAIL',
      check: 'bash check.sh',
      checkExitCode: 2,
      checkOutput: 'FAILED test_other',
      workerTail: '',
      reason: suiteFailedReason('pytest -q', 'exited 2', 'FAILED test_other'),
      suite: 'pytest -q',
    });
    assert.match(text, /^Attempt 1 was judged FAIL: the check passed, but the suite `pytest -q` exited 2: FAILED test_other; the change must keep/);
    assert.match(
      text,
      /The suite command \(run with bash -c[^\n]*\n```sh\npytest -q\n```\nIts exit code was 2\. The end of its output, verbatim:\n```\nFAILED test_other\n```/,
    );
    assert.doesNotMatch(text, /bash check\.sh/);
    assert.equal(
      suiteFailedReason('npm test', 'timed out after 5 s', 'x'),
      "the check passed, but the suite `npm test` timed out after 5 s: x; the change must keep the repository's whole test suite passing",
    );
  });
});
