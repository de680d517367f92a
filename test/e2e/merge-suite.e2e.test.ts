import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// `verdict merge` and the integrated result: each task passed its own suite alone, but merged together they break it
// (a budget that every task's share fits and their sum does not). The queue runs the suite on the integration branch
// after each merge and stops at the first merge that breaks it, naming it; `--batch` merges all first and bisects;
// nothing is lost either way (branches kept, the branch left at the last good merge, the report says so).

/**
 * A repository whose suite checks that the numbers in limits/*.txt add up to at most 10 (base: 3), and a run whose tasks
 * each add one file limits/<key>.txt with its number; every task passes its check and its suite alone (3 + n ≤ 10).
 */
async function passedRun(
  shares: Record<string, number>,
  extra: { files?: Record<string, string>; suite?: string } = {},
): Promise<{ dir: string; repo: string; home: string; runId: string; env: Record<string, string> }> {
  const dir = tempDir();
  const repo = makeRepo(path.join(dir, 'repo'), {
    'limits/base.txt': '3\n',
    'tests/test_budget.sh':
      'total=$(cat limits/*.txt | awk \'{ s += $1 } END { print s }\'); test "$total" -le 10 || { echo "the limits add up to $total, more than 10"; exit 1; }; echo "total $total"\n',
    'ci/suite.sh': 'set -e; for t in tests/test_*.sh; do bash "$t"; done\n',
    ...extra.files,
  });
  const tasks = Object.entries(shares).map(([key, n]) =>
    scriptTask(key, `echo ${n} > limits/${key}.txt`, `test -s limits/${key}.txt || { echo missing; exit 1; }`, { max_attempts: 1 }),
  );
  const file = writeManifest(dir, { worktrees: true, repo, max_parallel: 2, suite: extra.suite ?? 'bash ci/suite.sh', suite_timeout_s: 60, tasks });
  const home = path.join(dir, 'home');
  const env = { HOME: path.join(dir, 'user-home') };
  fs.mkdirSync(env.HOME);
  const r = await cli(['run', file, '--home', home, '--no-dashboard'], { env });
  assert.equal(r.exitCode, 0, r.all);
  return { dir, repo, home, runId: fs.readdirSync(path.join(home, 'runs'))[0] as string, env };
}

/** The suite's runs at merge time: one log per commit judged. */
function suiteRuns(home: string, runId: string): string[] {
  const dir = path.join(home, 'runs', runId, 'merge-suite');
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => /^[0-9a-f]{40}\.log$/.test(f)) : [];
}

describe('verdict merge: the suite on the integration branch', function () {
  this.timeout(300000);
  before(async function () {
    await requireSandbox(this);
  });

  it('one at a time: the merge that breaks the suite is named, the queue stops there, the branch stays at the last good merge, every other branch kept', async () => {
    const { repo, home, runId, env } = await passedRun({ t1: 4, t2: 4, t3: 1 });
    const before = git(repo, 'rev-parse', 'HEAD');
    const merge = await cli(['merge', runId, '--home', home], { env });
    assert.equal(merge.exitCode, 1, merge.all);
    assert.match(merge.stdout, /^t1: MERGED \(now [0-9a-f]{10}\)$/m);
    assert.match(
      merge.stdout,
      /^t2: SUITE_FAILED — its check passed after the rebase, but main with this merge fails the suite `bash ci\/suite\.sh` \(it exited 1: the limits add up to 11, more than 10; see [^)]*merge-suite\/[0-9a-f]{40}\.log\); not merged: main stays at [0-9a-f]{10}, the last good merge \(t1\)/m,
    );
    assert.match(
      merge.stdout,
      /^t3: NOT_TRIED — not tried: the queue stopped at t2, whose merge breaks the suite `bash ci\/suite\.sh`; this branch is kept as it was$/m,
    );
    assert.match(
      merge.stdout,
      /^the suite `bash ci\/suite\.sh` broke at t2: main is at [0-9a-f]{10}, the last good merge \(t1\); not merged, branches kept: t2, t3$/m,
    );
    // main holds t1 and nothing of t2 or t3; their branches still hold their work.
    assert.equal(git(repo, 'rev-parse', 'HEAD^'), before);
    assert.equal(git(repo, 'show', 'HEAD:limits/t1.txt'), '4');
    assert.throws(() => git(repo, 'show', 'HEAD:limits/t2.txt'));
    for (const key of ['t2', 't3']) assert.match(git(repo, 'show', `verdict/${runId}/${key}:limits/${key}.txt`), /^\d$/);
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as { tasks: { key: string; merged?: unknown }[] };
    assert.deepEqual(
      state.tasks.map((t) => [t.key, Boolean(t.merged)]),
      [
        ['t1', true],
        ['t2', false],
        ['t3', false],
      ],
    );
    // The suite ran on main after t1 (passed) and after t2 (failed): twice, never on t3.
    assert.equal(suiteRuns(home, runId).length, 2);
    // Merging again, after the queue stopped, goes on from the last good merge: t2 still breaks it.
    const again = await cli(['merge', runId, 't3', '--home', home], { env });
    assert.equal(again.exitCode, 0, again.all);
    assert.equal(git(repo, 'show', 'HEAD:limits/t3.txt'), '1');
  });

  it('--batch: merges all, runs the suite once, bisects only when it fails, names the culprit; the branch is left at the last good merge', async () => {
    const { repo, home, runId, env } = await passedRun({ t1: 1, t2: 2, t3: 5, t4: 1 });
    const before = git(repo, 'rev-parse', 'HEAD');
    const merge = await cli(['merge', runId, '--batch', '--home', home], { env });
    assert.equal(merge.exitCode, 1, merge.all);
    assert.match(merge.stdout, /^t1: MERGED/m);
    assert.match(merge.stdout, /^t2: MERGED/m);
    assert.match(
      merge.stdout,
      /^t3: SUITE_FAILED — the batch of 4 merges failed the suite `bash ci\/suite\.sh`, and bisecting it found this merge the first that breaks it \(it exited 1: the limits add up to 11, more than 10; see [^)]*\); not merged: main is at [0-9a-f]{10}, the last good merge \(t2\); the branch verdict\/[^ ]+\/t3 is kept as it was$/m,
    );
    assert.match(merge.stdout, /^t4: NOT_TRIED — not merged: it comes after t3 that breaks the suite/m);
    assert.match(
      merge.stdout,
      /^the suite `bash ci\/suite\.sh` broke at t3: main is at [0-9a-f]{10}, the last good merge \(t2\); not merged, branches kept: t3, t4$/m,
    );
    assert.equal(git(repo, 'rev-parse', 'HEAD~2'), before, 'main moved by exactly t1 and t2');
    assert.deepEqual(
      ['t1', 't2'].map((k) => git(repo, 'show', `HEAD:limits/${k}.txt`)),
      ['1', '2'],
    );
    // t3 and t4 were never moved: each still sits on the base it started from, holding its work.
    for (const key of ['t3', 't4']) {
      assert.equal(git(repo, 'merge-base', `verdict/${runId}/${key}`, before), before);
      assert.equal(git(repo, 'rev-parse', `verdict/${runId}/${key}^`), before);
    }
    // The merged tasks' branches are their commits on main.
    assert.equal(git(repo, 'rev-parse', `verdict/${runId}/t2`), git(repo, 'rev-parse', 'HEAD'));
    // The whole batch, then merges 1–2 (pass), then 1–3 (fail): three runs of the suite, not four.
    assert.equal(suiteRuns(home, runId).length, 3);
  });

  it('--batch with every share fitting: the suite runs once and everything merges; a suite that already fails on the branch blames no task', async () => {
    const ok = await passedRun({ t1: 1, t2: 2 });
    const merged = await cli(['merge', ok.runId, '--batch', '--home', ok.home], { env: ok.env });
    assert.equal(merged.exitCode, 0, merged.all);
    assert.match(merged.stdout, /^t1: MERGED[^\n]*\nt2: MERGED/m);
    assert.equal(suiteRuns(ok.home, ok.runId).length, 1);
    assert.equal(git(ok.repo, 'show', 'HEAD:limits/t2.txt'), '2');

    // Someone breaks main after the run: no merge is to blame, in either queue.
    const broken = await passedRun({ t1: 1, t2: 2 });
    fs.writeFileSync(path.join(broken.repo, 'limits', 'base.txt'), '30\n');
    git(broken.repo, 'commit', '-qam', 'over budget');
    const head = git(broken.repo, 'rev-parse', 'HEAD');
    for (const flags of [[], ['--batch']]) {
      const r = await cli(['merge', broken.runId, ...flags, '--home', broken.home], { env: broken.env });
      assert.equal(r.exitCode, 1, r.all);
      assert.doesNotMatch(r.stdout, /SUITE_FAILED|MERGED/, r.stdout);
      assert.match(r.stdout, /^t1: NOT_TRIED — not merged: the suite `bash ci\/suite\.sh` already fails on main \([0-9a-f]{10}\) before any merge/m, r.stdout);
      assert.match(r.stdout, /^the suite already fails on main before any merge: nothing was judged by it, branches kept: t1, t2$/m, r.stdout);
      assert.equal(git(broken.repo, 'rev-parse', 'HEAD'), head);
    }
  });

  it("hostile: a branch that weakens the suite's script to merge work that breaks it is refused by the re-check, naming the script", async () => {
    const { repo, home, runId, env } = await passedRun({ t1: 4 });
    // After the run, the branch gets a commit that breaks the budget and makes the suite pass anyway.
    const wt = path.join(path.dirname(repo), 'hostile');
    git(repo, 'worktree', 'add', '-q', '--force', wt, `verdict/${runId}/t1`);
    fs.writeFileSync(path.join(wt, 'limits', 't1.txt'), '40\n');
    fs.writeFileSync(path.join(wt, 'ci', 'suite.sh'), 'echo all good\n');
    git(wt, 'commit', '-qam', 'weaken');
    git(repo, 'worktree', 'remove', '--force', wt);
    const merge = await cli(['merge', runId, '--home', home], { env });
    assert.equal(merge.exitCode, 1, merge.all);
    assert.match(merge.stdout, /^t1: CHECK_FAILED — after the rebase the branch changes protected check inputs \(ci\/suite\.sh\)/m);
    assert.throws(() => git(repo, 'show', 'HEAD:limits/t1.txt'));
  });

  it('hostile: a branch that rewrites the package.json script the suite runs (`npm test`) is refused by the re-check, naming the script', async () => {
    const pkg = (test: string) => `${JSON.stringify({ name: 'app', version: '1.0.0', scripts: { test } }, null, 2)}\n`;
    const { repo, home, runId, env } = await passedRun({ t1: 4 }, { files: { 'package.json': pkg('bash ci/suite.sh') }, suite: 'npm test --silent' });
    const wt = path.join(path.dirname(repo), 'hostile');
    git(repo, 'worktree', 'add', '-q', '--force', wt, `verdict/${runId}/t1`);
    fs.writeFileSync(path.join(wt, 'limits', 't1.txt'), '40\n');
    fs.writeFileSync(path.join(wt, 'package.json'), pkg('echo all good'));
    git(wt, 'commit', '-qam', 'weaken');
    git(repo, 'worktree', 'remove', '--force', wt);
    const merge = await cli(['merge', runId, '--home', home], { env });
    assert.equal(merge.exitCode, 1, merge.all);
    assert.match(merge.stdout, /^t1: CHECK_FAILED — after the rebase the branch changes protected check inputs \(package\.json scripts\.test \(changed\)\)/m);
    assert.throws(() => git(repo, 'show', 'HEAD:limits/t1.txt'));
  });
});
