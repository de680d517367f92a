import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { resolveEngines } from '../../engines';
import { DirtyTreeError, mergeQueue } from '../../extension/core/git/merge';
import { readState } from '../../extension/core/live/registry';
import type { RunState } from '../../extension/core/live/state';
import { deliveredBefore, mergeRequestsForRun } from '../../extension/core/run/merge-plan';
import { runManifest } from '../../extension/core/run/runner';
import { git, makeRepo, scriptTask, tempDir } from '../helpers/fixtures';
import { requireSandbox, testSandboxMode } from '../helpers/sandbox-env';
import { parseManifest } from '../../extension/core/run/manifest';

/** Runs a worktree-mode manifest on `repo` with the script engine; returns the final state. */
async function run(repo: string, home: string, tasks: Record<string, unknown>[], extra: Record<string, unknown> = {}): Promise<RunState> {
  const file = path.join(repo, 'm.swarm.json');
  const { manifest } = parseManifest(JSON.stringify({ worktrees: true, max_parallel: 4, tasks, ...extra }), file);
  assert.ok(manifest);
  const summary = await runManifest({ manifest, home, identity: 't', engines: resolveEngines(), sandbox: testSandboxMode() });
  const read = readState(summary.stateFile);
  assert.ok('state' in read);
  return read.state;
}

describe('merge queue', function () {
  this.timeout(60000);
  let dir: string;
  let repo: string;
  let home: string;
  beforeEach(() => {
    dir = tempDir();
    home = path.join(dir, 'home');
    repo = makeRepo(path.join(dir, 'repo'), { 'README.md': 'line one\n', 'shared.txt': 'original\n' });
  });

  it('a later merge that undoes what an earlier one delivered is CHECK_FAILED naming it (queue and batch); one that leaves its files alone merges', async () => {
    const state = await run(repo, home, [
      scriptTask('a', 'echo 42 > a.txt', 'grep -x 42 a.txt'),
      // A dependent that deletes its prerequisite's file, checked only on its own.
      scriptTask('b', 'rm -f a.txt; echo 7 > b.txt', 'grep -x 7 b.txt', { after: ['a'] }),
      scriptTask('c', 'echo c > c.txt', 'test -s c.txt'),
    ]);
    const head = git(repo, 'rev-parse', 'HEAD');
    for (const batch of [false, true]) {
      git(repo, 'reset', '-q', '--hard', head);
      const outcomes = await mergeQueue(mergeRequestsForRun(home, state), () => undefined, { batch });
      assert.deepEqual(
        outcomes.map((o) => `${o.key}:${o.status}`),
        ['a:MERGED', 'b:CHECK_FAILED', 'c:MERGED'],
        `batch ${batch}: ${JSON.stringify(outcomes)}`,
      );
      const b = outcomes[1];
      assert.ok(b && b.status === 'CHECK_FAILED');
      assert.match(b.reason, /changes what a delivered earlier in this queue \(a\.txt\) and a's check fails on the result/);
      assert.equal(fs.readFileSync(path.join(repo, 'a.txt'), 'utf8'), '42\n', `batch ${batch}: a's work is on the branch`);
      assert.equal(fs.existsSync(path.join(repo, 'b.txt')), false);
    }
  });

  it('a later merge that undoes what an earlier merge of the same run delivered is CHECK_FAILED naming it (queue and batch)', async () => {
    const state = await run(repo, home, [
      scriptTask('a', 'echo 42 > a.txt', 'grep -x 42 a.txt'),
      scriptTask('b', 'rm -f a.txt; echo 7 > b.txt', 'grep -x 7 b.txt', { after: ['a'] }),
      scriptTask('c', 'echo c > c.txt', 'test -s c.txt'),
    ]);
    const head = git(repo, 'rev-parse', 'HEAD');
    const into = git(repo, 'symbolic-ref', '--short', 'HEAD');
    for (const batch of [false, true]) {
      git(repo, 'reset', '-q', '--hard', head);
      const s = JSON.parse(JSON.stringify(state)) as RunState;
      // One merge call merges a; its record (state.json `merged`, as the callers write it) carries the paths it changed.
      const [a] = await mergeQueue(mergeRequestsForRun(home, s, ['a']), () => undefined, { batch });
      assert.ok(a && a.status === 'MERGED', JSON.stringify(a));
      assert.deepEqual(a.paths, ['a.txt']);
      const ta = s.tasks.find((t) => t.key === 'a');
      assert.ok(ta);
      ta.merged = { commit: a.sha, into, at: Date.now(), paths: a.paths };
      // A later, separate merge call of the same run: b deletes a.txt and passes its own check.
      const outcomes = await mergeQueue(mergeRequestsForRun(home, s, ['b', 'c']), () => undefined, { batch, merged: deliveredBefore(home, s) });
      assert.deepEqual(
        outcomes.map((o) => `${o.key}:${o.status}`),
        ['b:CHECK_FAILED', 'c:MERGED'],
        `batch ${batch}: ${JSON.stringify(outcomes)}`,
      );
      const b = outcomes[0];
      assert.ok(b && b.status === 'CHECK_FAILED');
      assert.match(
        b.reason,
        new RegExp(`changes what a delivered in an earlier merge into ${into} \\([0-9a-f]{10}\\) \\(a\\.txt\\) and a's check fails on the result`),
      );
      assert.equal(fs.readFileSync(path.join(repo, 'a.txt'), 'utf8'), '42\n', `batch ${batch}: a's work is still on the branch`);
      assert.equal(fs.existsSync(path.join(repo, 'b.txt')), false);
    }
  });

  it('rebases, re-checks and fast-forwards each passed task in order; a conflict BLOCKs only that task', async () => {
    const state = await run(repo, home, [
      scriptTask('add-a', 'echo a > a.txt', 'test -s a.txt || { echo a.txt missing; exit 1; }'),
      scriptTask('edit-shared', 'echo from-task > shared.txt', 'grep -x from-task shared.txt'),
      scriptTask('add-b', 'echo b > b.txt', 'test -s b.txt || { echo b.txt missing; exit 1; }'),
    ]);
    // Meanwhile someone changed shared.txt on main: edit-shared now conflicts.
    fs.writeFileSync(path.join(repo, 'shared.txt'), 'changed on main\n');
    git(repo, 'commit', '-qam', 'main moves on');
    const seen: string[] = [];
    const outcomes = await mergeQueue(mergeRequestsForRun(home, state), (o) => seen.push(`${o.key}:${o.status}`));
    assert.deepEqual(seen, ['add-a:MERGED', 'edit-shared:BLOCKED', 'add-b:MERGED']);
    const blocked = outcomes[1];
    assert.ok(blocked && blocked.status === 'BLOCKED');
    assert.deepEqual(blocked.conflicts, ['shared.txt']);
    assert.equal(git(repo, 'log', '--format=%s', '-4').split('\n').length, 4);
    assert.match(git(repo, 'log', '--format=%s', '-1'), /^verdict: add-b/);
    assert.equal(fs.readFileSync(path.join(repo, 'a.txt'), 'utf8'), 'a\n');
    assert.equal(fs.readFileSync(path.join(repo, 'b.txt'), 'utf8'), 'b\n');
    assert.equal(fs.readFileSync(path.join(repo, 'shared.txt'), 'utf8'), 'changed on main\n');
    assert.equal(git(repo, 'status', '--porcelain', '--untracked-files=no'), '');
    // the blocked task's work is still on its branch, its rebase aborted
    assert.equal(git(repo, 'show', `${state.tasks[1]?.branch}:shared.txt`), 'from-task');
  });

  it('the re-check runs on a fresh checkout of the branch, not on what the worker left untracked or ignored', async () => {
    fs.writeFileSync(path.join(repo, '.gitignore'), 'build/\n');
    git(repo, 'add', '.gitignore');
    git(repo, 'commit', '-qm', 'ignore build');
    // The worker's deliverable lands in an ignored folder: the attempt's check no longer sees it either (it is moved
    // out of the task dir, run/undelivered.ts), so the run and the merge agree: FAIL, nothing to merge.
    const ignored = await run(repo, home, [
      scriptTask('ignored', 'mkdir -p build && echo out > build/out.txt && echo x > note.txt', 'cat build/out.txt', { max_attempts: 1 }),
    ]);
    assert.equal(ignored.tasks[0]?.status, 'FAIL');
    assert.deepEqual(mergeRequestsForRun(home, ignored), []);
    // A PASS whose branch then loses the file (moved back by hand) while the worker's worktree still has it: the
    // re-check reads the branch, not the worktree.
    const state = await run(repo, path.join(dir, 'home2'), [scriptTask('moved', 'echo out > out.txt && echo x > note.txt', 'cat out.txt')]);
    assert.equal(state.tasks[0]?.status, 'PASS');
    const branch = String(state.tasks[0]?.branch);
    const tree = git(repo, 'rev-parse', `${branch}^{tree}`);
    const without = execFileSync('git', ['mktree'], {
      cwd: repo,
      input:
        git(repo, 'ls-tree', tree)
          .split('\n')
          .filter((l) => !l.endsWith('\tout.txt'))
          .join('\n') + '\n',
      encoding: 'utf8',
    }).trim();
    git(repo, 'update-ref', `refs/heads/${branch}`, git(repo, 'commit-tree', without, '-p', branch, '-m', 'out.txt dropped'));
    assert.equal(fs.existsSync(path.join(String(state.tasks[0]?.dir), 'out.txt')), true);
    const [outcome] = await mergeQueue(mergeRequestsForRun(path.join(dir, 'home2'), state));
    assert.equal(outcome?.status, 'CHECK_FAILED', JSON.stringify(outcome));
    assert.match((outcome as { output: string }).output, /out\.txt: No such file or directory/);
    assert.equal(fs.existsSync(path.join(repo, 'note.txt')), false, 'nothing was merged');
  });

  it('the merge checkout gets include and setup as a task worktree does; a setup failing there is CHECK_FAILED naming it', async () => {
    fs.writeFileSync(path.join(repo, '.gitignore'), 'deps/\n.env\n');
    fs.writeFileSync(path.join(repo, '.env'), 'TOKEN=local\n');
    git(repo, 'add', '.gitignore');
    git(repo, 'commit', '-qm', 'ignore deps');
    // Setup fails only while the marker file exists (made after the run, before the first merge).
    const fail = path.join(dir, 'fail-setup');
    const setup = `test ! -e ${fail} || exit 3; mkdir -p deps && echo dep > deps/lib.txt`;
    const state = await run(repo, home, [scriptTask('uses-deps', 'echo x > note.txt', 'cat deps/lib.txt && grep -x TOKEN=local .env')], {
      setup,
      include: ['.env'],
    });
    assert.equal(state.tasks[0]?.status, 'PASS');
    fs.writeFileSync(fail, '');
    const [failed] = await mergeQueue(mergeRequestsForRun(home, state));
    assert.equal(failed?.status, 'CHECK_FAILED', JSON.stringify(failed));
    assert.match((failed as { reason: string }).reason, /setup `.*` exited 3 in the merge checkout; see .*merge-setup\.log/);
    fs.rmSync(fail);
    const [merged] = await mergeQueue(mergeRequestsForRun(home, state));
    assert.equal(merged?.status, 'MERGED', JSON.stringify(merged));
  });

  it('the re-check is sandboxed like the attempt: what the worker wrote cannot write outside at merge time', async function () {
    await requireSandbox(this);
    const marker = path.join(dir, 'escaped.txt');
    // The worker ships a test script that misbehaves only when it finds itself outside the attempt (at merge time).
    const spec = `printf '#!/bin/bash\n[ "$VERDICT_ATTEMPT" = merge ] && echo pwned > ${marker}\nexit 0\n' > run-tests.sh`;
    const state = await run(repo, home, [scriptTask('tests', spec, 'bash run-tests.sh && test -s run-tests.sh')]);
    assert.equal(state.tasks[0]?.status, 'PASS');
    const [outcome] = await mergeQueue(mergeRequestsForRun(home, state));
    assert.equal(outcome?.status, 'MERGED', JSON.stringify(outcome));
    assert.equal(fs.existsSync(marker), false, 'the merge-time check wrote outside its checkout');
  });

  it("the re-check runs with the base's versions of protected check inputs: a branch that changed a test fails on the real one, and one that passes it is still not merged", async function () {
    await requireSandbox(this);
    fs.mkdirSync(path.join(repo, 'tests'));
    fs.writeFileSync(path.join(repo, 'run-tests.sh'), 'for t in tests/*.sh; do bash "$t" || { echo "FAIL $t"; exit 1; }; done; echo "tests pass"\n');
    fs.writeFileSync(path.join(repo, 'tests', 't1.sh'), 'grep -qx done feature.txt\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'tests');
    const state = await run(repo, home, [
      scriptTask('broken', 'echo done > feature.txt', 'bash run-tests.sh'),
      scriptTask('honest', 'echo done > feature.txt', 'bash run-tests.sh'),
      scriptTask('untouched', 'echo done > feature.txt', 'bash run-tests.sh'),
    ]);
    assert.deepEqual(
      state.tasks.map((t) => t.status),
      ['PASS', 'PASS', 'PASS'],
    );
    // Somehow (a commit made before protection, a rebase, a hand edit) two branches now change the protected test.
    const commitOn = (key: string, edit: () => void) => {
      const t = state.tasks.find((x) => x.key === key);
      assert.ok(t?.branch);
      git(t.dir, 'checkout', '-q', t.branch);
      edit();
      git(t.dir, 'commit', '-qam', 'tests, loosened');
    };
    commitOn('broken', () => {
      const d = state.tasks[0]!.dir;
      fs.writeFileSync(path.join(d, 'tests', 't1.sh'), 'exit 0\n');
      fs.writeFileSync(path.join(d, 'feature.txt'), 'not done\n');
    });
    commitOn('honest', () => fs.writeFileSync(path.join(state.tasks[1]!.dir, 'tests', 't1.sh'), 'true\n'));
    const head = git(repo, 'rev-parse', 'HEAD');
    const outcomes = await mergeQueue(mergeRequestsForRun(home, state));
    assert.deepEqual(
      outcomes.map((o) => `${o.key}:${o.status}`),
      ['broken:CHECK_FAILED', 'honest:CHECK_FAILED', 'untouched:MERGED'],
    );
    const [broken, honest] = outcomes as { reason: string; output: string }[];
    assert.match(String(broken?.output), /FAIL tests\/t1\.sh/, 'the real test ran and failed');
    assert.match(String(broken?.reason), /with the base's versions of the protected check inputs the branch changes: tests\/t1\.sh/);
    assert.match(String(honest?.output), /tests pass/);
    assert.match(String(honest?.reason), /the branch changes protected check inputs \(tests\/t1\.sh\); the check passed with the base's versions/);
    assert.equal(git(repo, 'show', 'HEAD:tests/t1.sh'), 'grep -qx done feature.txt', 'the loosened test never reached the current branch');
    assert.equal(git(repo, 'rev-parse', 'HEAD~1'), head, 'only the untouched task was merged');
  });

  it('refuses a dirty working tree before touching anything', async () => {
    const state = await run(repo, home, [scriptTask('add-a', 'echo a > a.txt', 'test -s a.txt || exit 1')]);
    fs.writeFileSync(path.join(repo, 'README.md'), 'uncommitted edit\n');
    const head = git(repo, 'rev-parse', 'HEAD');
    await assert.rejects(
      mergeQueue(mergeRequestsForRun(home, state)),
      (e) => e instanceof DirtyTreeError && /README\.md/.test(e.message) && /never merges into a dirty working tree/.test(e.message),
    );
    assert.equal(git(repo, 'rev-parse', 'HEAD'), head);
    assert.equal(fs.readFileSync(path.join(repo, 'README.md'), 'utf8'), 'uncommitted edit\n');
  });

  it('reports a task branch deleted by hand as MISSING and goes on', async () => {
    const state = await run(repo, home, [
      scriptTask('gone', 'echo g > g.txt', 'test -s g.txt || exit 1'),
      scriptTask('kept', 'echo k > k.txt', 'test -s k.txt || exit 1'),
    ]);
    const gone = state.tasks[0];
    assert.ok(gone?.branch);
    git(repo, 'worktree', 'remove', '--force', gone.dir);
    git(repo, 'branch', '-D', gone.branch);
    const outcomes = await mergeQueue(mergeRequestsForRun(home, state));
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['MISSING', 'MERGED'],
    );
    assert.match(outcomes[0]?.status === 'MISSING' ? outcomes[0].reason : '', /no longer exists/);
  });

  it("does not merge when the check fails on the rebased result, and uses a temporary worktree when the task's is gone", async () => {
    const state = await run(repo, home, [
      scriptTask('needs-one-line', 'echo n > n.txt', 'test "$(wc -l < README.md)" = 1 || { echo "README.md has $(wc -l < README.md) lines"; exit 1; }'),
    ]);
    fs.appendFileSync(path.join(repo, 'README.md'), 'line two\n');
    git(repo, 'commit', '-qam', 'two lines');
    const t = state.tasks[0];
    assert.ok(t);
    git(repo, 'worktree', 'remove', '--force', t.dir);
    const head = git(repo, 'rev-parse', 'HEAD');
    const [outcome] = await mergeQueue(mergeRequestsForRun(home, state));
    assert.equal(outcome?.status, 'CHECK_FAILED');
    assert.match(outcome?.status === 'CHECK_FAILED' ? outcome.output : '', /README\.md has 2 lines/);
    assert.equal(git(repo, 'rev-parse', 'HEAD'), head);
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1, 'the temporary worktree is removed');
  });
});
