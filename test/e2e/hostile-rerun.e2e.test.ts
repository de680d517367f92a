import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// A validator's PASS is a judgement of its workers' sealed work as it was then. `verdict rerun` of a worker after the
// validator passed replaces that work: the validator runs again with it (run/resume.ts tasksToRunAgain), so the run
// never shows the validation PASS over a worker that FAILed.

interface StateJson {
  runId: string;
  tasks: { key: string; status: string; reason?: string }[];
}

function stateOf(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}

describe('hostile: rerun of a worker under a validator that passed', function () {
  this.timeout(240000);

  it('a worker rerun that FAILs does not leave the validation PASS', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const broken = path.join(dir, 'w2-broken');
    // Worker 2 is right until the marker exists; worker 1 always is.
    const spec = `if [ "$VERDICT_TASK_KEY" = sort--w2 ] && [ -e ${broken} ]; then echo 'cat' > sort.sh; else echo 'sort' > sort.sh; fi`;
    const validator =
      'for d in "$VERDICT_INPUTS"/*/; do n=$(basename "$d"); out=$(printf "b\\na\\n" | bash "$d/sort.sh" | tr "\\n" " "); if [ "$out" = "a b " ]; then echo "$n: keep"; else echo "$n: reject"; fi; done > report.md';
    const task = scriptTask(
      'sort',
      spec,
      'out=$(printf "b\\na\\n" | bash sort.sh | tr "\\n" " "); test "$out" = "a b " || { echo "sort.sh printed \'$out\'"; exit 1; }',
      {
        max_attempts: 1,
        validate: { workers: 2, spec: validator, report: 'report.md', check: 'test "$(grep -c \': keep$\' report.md)" = 2 || { cat report.md; exit 1; }' },
      },
    );
    const file = writeManifest(repo, { worktrees: true, max_parallel: 2, tasks: [task] });
    const first = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(first.exitCode, 0, first.all);
    let state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['sort--w1', 'PASS'],
        ['sort--w2', 'PASS'],
        ['sort', 'PASS'],
      ],
    );

    fs.writeFileSync(broken, '');
    const rerun = await cli(['rerun', state.runId, 'sort--w2', '--home', home, '--no-dashboard']);
    state = stateOf(home);
    const status = Object.fromEntries(state.tasks.map((t) => [t.key, t.status]));
    assert.equal(status['sort--w2'], 'FAIL', rerun.all);
    assert.notEqual(status.sort, 'PASS', `the validator still says PASS over a worker that now FAILed:\n${rerun.all}`);
    // It was queued again with the worker, and is BLOCKED by it as in any run.
    assert.match(rerun.all, /running again 2 task\(s\)[^\n]*sort--w2, sort/);
    assert.equal(status.sort, 'BLOCKED');
    assert.match(state.tasks.find((t) => t.key === 'sort')?.reason ?? '', /sort--w2/);
    // Nothing passed is lost: the validation's report stays on its branch.
    assert.match(git(repo, 'show', `verdict/${state.runId}/sort:report.md`), /: keep\n.*: keep/s);
  });

  it('live run: a worker rerun through the control channel after the validator passed runs the validator again (BLOCKED when the worker FAILs)', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const broken = path.join(dir, 'w2-broken');
    const release = path.join(dir, 'release');
    const spec = `if [ "$VERDICT_TASK_KEY" = sort--w2 ] && [ -e ${broken} ]; then echo 'cat' > sort.sh; else echo 'sort' > sort.sh; fi`;
    const validator =
      'for d in "$VERDICT_INPUTS"/*/; do n=$(basename "$d"); out=$(printf "b\\na\\n" | bash "$d/sort.sh" | tr "\\n" " "); if [ "$out" = "a b " ]; then echo "$n: keep"; else echo "$n: reject"; fi; done > report.md';
    const task = scriptTask(
      'sort',
      spec,
      'out=$(printf "b\\na\\n" | bash sort.sh | tr "\\n" " "); test "$out" = "a b " || { echo "sort.sh printed \'$out\'"; exit 1; }',
      {
        max_attempts: 1,
        validate: { workers: 2, spec: validator, report: 'report.md', check: 'test "$(grep -c \': keep$\' report.md)" = 2 || { cat report.md; exit 1; }' },
      },
    );
    // Keeps the run live until the test releases it.
    const hold = scriptTask('hold', `while [ ! -e ${release} ]; do sleep 0.2; done; echo held > held.txt`, 'test -s held.txt');
    const file = writeManifest(repo, { worktrees: true, max_parallel: 4, tasks: [task, hold] });
    const run = cli(['run', file, '--home', home, '--no-dashboard']);
    const runsDir = path.join(home, 'runs');
    for (;;) {
      const id = fs.existsSync(runsDir) ? fs.readdirSync(runsDir)[0] : undefined;
      const st = id && fs.existsSync(path.join(runsDir, id, 'state.json')) ? stateOf(home) : null;
      if (st?.tasks.find((t) => t.key === 'sort')?.status === 'PASS') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    fs.writeFileSync(broken, '');
    const rerun = await cli(['rerun', stateOf(home).runId, 'sort--w2', '--home', home]);
    assert.equal(rerun.exitCode, 0, rerun.all);
    assert.match(rerun.all, /then sort\b/);
    fs.writeFileSync(release, '');
    const r = await run;
    const state = stateOf(home);
    const status = Object.fromEntries(state.tasks.map((t) => [t.key, t.status]));
    assert.equal(status['sort--w2'], 'FAIL', r.all);
    assert.equal(status.sort, 'BLOCKED', `the validator still says ${status.sort} over a worker that now FAILed:\n${r.all}`);
    assert.equal(status.hold, 'PASS');
  });
});
