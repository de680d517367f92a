import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { alive, git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { processesIn } from '../../extension/core/process/in-use';

const TASKS = 16;
const RUNS = 10;

/** Every file under `dir` whose name ends in `.lock` (git's and ours), relative to `dir`. */
function lockFiles(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith('.lock'));
}

describe('worktrees in parallel', function () {
  this.timeout(600000);

  it(`worktree mode, ${TASKS} tasks at once, ${RUNS} runs on one repository: nothing lost, nothing leaked`, async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# fixture\n', 'src/a.txt': 'a\n' });
    const home = path.join(dir, 'home');
    // Instant tasks: each writes its own number; the check reads it back from the sealed tree, with the checkout's
    // own files present (a checkout cut short by a concurrent one would miss them).
    const tasks = Array.from({ length: TASKS }, (_, i) =>
      scriptTask(
        `t${i}`,
        `echo ${i} > out.txt && mkdir -p made && echo ${i} > made/n${i}.txt`,
        `test "$(cat out.txt)" = ${i} && test -s README.md && test -s src/a.txt`,
        { max_attempts: 1 },
      ),
    );
    const file = writeManifest(dir, { worktrees: true, repo, max_parallel: TASKS, tasks });
    const runIds: string[] = [];
    for (let round = 1; round <= RUNS; round++) {
      const r = await cli(['run', file, '--home', home, '--no-dashboard']);
      assert.equal(r.exitCode, 0, `round ${round}: ${r.all}`);
      const rows = readRows(home);
      const runId: string | undefined = rows.map((row) => row.run_id as string).find((id) => !runIds.includes(id));
      assert.ok(runId, `round ${round}: no rows of a new run`);
      runIds.push(runId);
      const mine = rows.filter((row) => row.run_id === runId);
      // 0 lost: one PASS row per task, and each task branch holds exactly that task's work on top of the base commit.
      assert.deepEqual(
        mine.map((row) => `${row.task_key as string} ${row.verdict as string}`).sort(),
        tasks.map((t) => `${t.key as string} PASS`).sort(),
        `round ${round}`,
      );
      for (let i = 0; i < TASKS; i++) {
        const branch: string = `verdict/${runId}/t${i}`;
        assert.equal(git(repo, 'show', `${branch}:out.txt`), String(i), `round ${round}: ${branch}`);
        assert.equal(git(repo, 'show', `${branch}:made/n${i}.txt`), String(i), `round ${round}: ${branch}`);
        assert.equal(git(repo, 'rev-parse', `${branch}~1`), git(repo, 'rev-parse', 'main'), `round ${round}: ${branch} is one commit on main`);
        const row = mine.find((x) => x.task_key === `t${i}`);
        assert.equal(row?.commit, git(repo, 'rev-parse', branch), `round ${round}: the row names the branch's commit`);
      }
      // 0 leaked processes: every worker and check the receipts name is gone, and nothing works in a task dir.
      for (const row of mine) {
        const receipt = JSON.parse(fs.readFileSync(row.receipt_path as string, 'utf8')) as {
          worker: { pid: number | null };
          check: { pid: number | null } | null;
        };
        for (const pid of [receipt.worker.pid, receipt.check?.pid])
          if (pid) assert.equal(alive(pid), false, `round ${round}: pid ${pid} of ${row.task_key as string} is alive`);
      }
      assert.deepEqual(processesIn(home), [], `round ${round}: processes still working in ${home}`);
    }
    // 0 leaked worktrees or branches: exactly one registration and one branch per task of every run, none prunable or
    // locked, and no lock file left behind in the repository's git dir.
    const list = git(repo, 'worktree', 'list', '--porcelain');
    assert.equal(list.split('\n').filter((l) => l.startsWith('worktree ')).length, 1 + TASKS * RUNS);
    assert.doesNotMatch(list, /^(prunable|locked)/m);
    const branches = git(repo, 'branch', '--list', 'verdict/*', '--format=%(refname:short)').split('\n').filter(Boolean).sort();
    assert.deepEqual(branches, runIds.flatMap((id) => tasks.map((t) => `verdict/${id}/${t.key as string}`)).sort());
    assert.deepEqual(lockFiles(path.join(repo, '.git')), []);
    assert.equal(git(repo, 'status', '--porcelain'), '', 'the main checkout is untouched');
    assert.equal(git(repo, 'fsck', '--no-dangling', '--no-progress').trim(), '');
  });
});
