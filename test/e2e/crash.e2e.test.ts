import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { alive, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import type { RunState } from '../../extension/core/live/state';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the orchestrator is killed with SIGKILL mid-run', function () {
  this.timeout(120000);
  it('the next start reconciles: no worker survives, unfinished attempts INTERRUPTED, worktrees kept; resume finishes the tasks', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const marks = path.join(dir, 'marks');
    fs.mkdirSync(marks);
    const repo = makeRepo(path.join(dir, 'repo'));
    // First time: leave a marker, fork a grandchild and hang. After a resume: do the work.
    const spec = `if [ -f ${marks}/$VERDICT_TASK_KEY ]; then echo done > out.txt; else echo $$ > ${marks}/$VERDICT_TASK_KEY; (sleep 300) & echo $! >> ${marks}/pids; echo $$ >> ${marks}/pids; sleep 300; fi`;
    const tasks = ['a', 'b', 'c'].map((k) => scriptTask(k, spec, 'test -s out.txt || { echo out.txt missing; exit 1; }', { expect_files: ['out.txt'] }));
    const manifest = writeManifest(repo, { worktrees: true, max_parallel: 3, tasks });
    // Unsandboxed: reconcile's kill of orphaned worker groups is what is tested (in bubblewrap the workers die with
    // their orchestrator: containment.e2e.test.ts), and the workers keep their marks outside their task dirs.
    const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard', '--no-sandbox'], { reject: false, stdin: 'ignore' });
    const pidsFile = path.join(marks, 'pids');
    for (let i = 0; i < 300 && (fs.existsSync(pidsFile) ? fs.readFileSync(pidsFile, 'utf8').trim().split('\n').length : 0) < 6; i++) await sleep(50);
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    const stateFile = path.join(home, 'runs', runId, 'state.json');
    for (let i = 0; i < 100 && !(JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState).tasks.every((t) => t.attempts[0]?.workerPid); i++) await sleep(50);
    child.kill('SIGKILL');
    await child;
    const orphans = fs.readFileSync(pidsFile, 'utf8').trim().split('\n').map(Number);
    assert.equal(orphans.length, 6);
    assert.ok(orphans.every(alive), 'the workers outlived their orchestrator (as they would after a crash)');

    const r = await cli(['resume', runId, '--home', home, '--no-dashboard', '--no-sandbox']);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stderr, new RegExp(`reconciled run ${runId} .*3 unfinished task\\(s\\) marked INTERRUPTED, 3 orphaned worker group\\(s\\) killed`));
    await sleep(200);
    for (const p of orphans) assert.equal(alive(p), false, `process ${p} survived the reconcile`);

    // The same run went on: its INTERRUPTED attempts have rows (reconciled first), then attempt 2 of each passed.
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState;
    assert.equal(state.status, 'finished');
    assert.deepEqual(
      state.tasks.map((t) => [t.status, t.attempts.map((a) => a.verdict)]),
      [
        ['PASS', ['INTERRUPTED', 'PASS']],
        ['PASS', ['INTERRUPTED', 'PASS']],
        ['PASS', ['INTERRUPTED', 'PASS']],
      ],
    );
    assert.deepEqual(
      state.resumes?.map((x) => [x.verb, x.from, x.tasks]),
      [['resume', 'interrupted', ['a', 'b', 'c']]],
    );
    const rows = readRows(home);
    assert.ok(
      rows.every((x) => x.run_id === runId),
      'every row has the run id',
    );
    assert.deepEqual(rows.map((x) => [x.task_key, x.attempt, x.verdict]).sort(), [
      ['a', 1, 'INTERRUPTED'],
      ['a', 2, 'PASS'],
      ['b', 1, 'INTERRUPTED'],
      ['b', 2, 'PASS'],
      ['c', 1, 'INTERRUPTED'],
      ['c', 2, 'PASS'],
    ]);
    assert.match(r.stdout, /resuming 3 task\(s\) of run .* \(same run\)/);

    const again = await cli(['resume', runId, '--home', home, '--no-dashboard', '--no-sandbox']);
    assert.equal(again.exitCode, 0);
    assert.doesNotMatch(again.stderr, /reconciled/, 'a run is reconciled once');
    assert.match(again.stdout, new RegExp(`run ${runId}: every task of run ${runId} passed; nothing to resume`));
    assert.equal(readRows(home).length, rows.length, 'a second resume runs nothing again');
  });

  it('a worker started after the last state write is still found: the worker journal gives reconcile its pid', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const marks = path.join(dir, 'marks');
    fs.mkdirSync(marks);
    const spec = `echo $$ >> ${marks}/pids; (sleep 300) & echo $! >> ${marks}/pids; sleep 300`;
    const manifest = writeManifest(dir, { max_parallel: 3, workdir: 'w', tasks: ['a', 'b', 'c'].map((k) => scriptTask(k, spec, 'true')) });
    // --force: the check `true` is a lint error; the workers never reach it.
    const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard', '--no-sandbox', '--force'], { reject: false, stdin: 'ignore' });
    const pidsFile = path.join(marks, 'pids');
    for (let i = 0; i < 300 && (fs.existsSync(pidsFile) ? fs.readFileSync(pidsFile, 'utf8').trim().split('\n').length : 0) < 6; i++) await sleep(50);
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    const stateFile = path.join(home, 'runs', runId, 'state.json');
    const journal = path.join(home, 'runs', runId, 'workers.jsonl');
    for (let i = 0; i < 100 && !(fs.existsSync(journal) && fs.readFileSync(journal, 'utf8').trim().split('\n').length === 3); i++) await sleep(50);
    child.kill('SIGKILL');
    await child;
    // As if the orchestrator died before state.json took the spawns: a's attempt is not in it, b's and c's lack the pid.
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState;
    for (const t of state.tasks) {
      if (t.key === 'a') {
        t.attempts = [];
        t.status = 'preparing';
      } else for (const a of t.attempts) Object.assign(a, { workerPid: null, workerStartTime: null, phase: 'preparing' });
    }
    fs.writeFileSync(stateFile, JSON.stringify(state));
    const orphans = fs.readFileSync(pidsFile, 'utf8').trim().split('\n').map(Number);
    assert.equal(orphans.length, 6);
    assert.ok(orphans.every(alive), 'the workers outlived their orchestrator');

    // Any starting command reconciles first (clean --dry-run does not: it changes nothing).
    const r = await cli(['clean', '--home', home]);
    assert.match(r.stderr, /3 orphaned worker group\(s\) killed/, r.all);
    await sleep(200);
    for (const p of orphans) assert.equal(alive(p), false, `process ${p} survived the reconcile`);
    assert.deepEqual(
      readRows(home)
        .map((x) => [x.task_key, x.attempt, x.verdict])
        .sort(),
      [
        ['a', 1, 'INTERRUPTED'],
        ['b', 1, 'INTERRUPTED'],
        ['c', 1, 'INTERRUPTED'],
      ],
    );
  });
});
