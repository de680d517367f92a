import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { alive, git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import type { RunState } from '../../extension/core/live/state';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs a worktree manifest with tasks `pass` (commits work) and `fail` (leaves an uncommitted file); returns its run id. */
async function worktreeRun(repo: string, home: string, name: string): Promise<string> {
  const file = writeManifest(
    repo,
    {
      run_name: name,
      worktrees: true,
      tasks: [scriptTask('pass', 'echo p > p.txt', 'test -s p.txt || exit 1'), scriptTask('fail', 'echo f > f.txt', 'echo no; exit 1', { max_attempts: 1 })],
    },
    `${name}.swarm.json`,
  );
  const r = await cli(['run', file, '--home', home, '--no-dashboard']);
  assert.equal(r.exitCode, 1, r.all);
  return String(readRows(home).at(-1)?.run_id);
}

function verdictBranches(repo: string): string[] {
  return git(repo, 'branch', '--list', 'verdict/*', '--format=%(refname:short)').split('\n').filter(Boolean).sort();
}

describe('verdict clean', function () {
  this.timeout(120000);

  it('--dry-run changes nothing; clean removes worktrees and keeps branches, naming the unmerged one; --branches deletes them', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const runId = await worktreeRun(repo, home, 'one');
    const wt = path.join(home, 'worktrees', runId);

    const dry = await cli(['clean', '--home', home, '--dry-run']);
    assert.equal(dry.exitCode, 0, dry.all);
    assert.match(dry.stdout, new RegExp(`${runId}: would remove worktree ${path.join(wt, 'fail')} \\(1 uncommitted file discarded\\)`));
    assert.match(dry.stdout, /dry run: nothing was changed/);
    assert.ok(fs.existsSync(path.join(wt, 'pass')));
    assert.equal(verdictBranches(repo).length, 2);

    const clean = await cli(['clean', '--home', home]);
    assert.equal(clean.exitCode, 0, clean.all);
    assert.equal(fs.existsSync(wt), false);
    assert.equal(
      git(repo, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length,
      1,
      'only the main worktree is registered',
    );
    assert.equal(verdictBranches(repo).length, 2, 'branches stay without --branches');
    assert.match(clean.stdout, new RegExp(`kept branches holding work merged nowhere else: verdict/${runId}/pass\\n`));
    assert.match(clean.stdout, /2 task branches kept; add --branches to delete them/);
    assert.ok(fs.existsSync(path.join(home, 'runs', runId, 'state.json')), 'the run records stay');

    const branches = await cli(['clean', '--home', home, '--run', runId, '--branches']);
    assert.equal(branches.exitCode, 0, branches.all);
    assert.match(branches.stdout, new RegExp(`deleted branches that held work merged nowhere else: verdict/${runId}/pass`));
    assert.match(branches.stdout, new RegExp(`delete branch verdict/${runId}/fail \\([0-9a-f]{12}\\)\\n`), 'the untouched branch is merged (it is base_ref)');
    assert.deepEqual(verdictBranches(repo), []);
  });

  it('a run whose orchestrator died: `verdict runs` says its attempt was interrupted, and --dry-run reconciles nothing: its state file and its orphaned worker are as they were', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const pidFile = path.join(dir, 'worker.pid');
    const file = writeManifest(
      repo,
      { run_name: 'dies', worktrees: true, tasks: [scriptTask('hang', `echo $$ > ${pidFile}; sleep 300`, 'test -s out.txt')] },
      'dies.swarm.json',
    );
    // Unsandboxed so that the worker outlives its killed orchestrator (what reconcile is for).
    const child = execa('node', [CLI, 'run', file, '--home', home, '--no-dashboard', '--no-sandbox'], { reject: false, stdin: 'ignore' });
    for (let i = 0; i < 400 && !(fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').trim()); i++) await sleep(50);
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    const stateFile = path.join(home, 'runs', runId, 'state.json');
    for (let i = 0; i < 100 && !(JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState).tasks[0]?.attempts[0]?.workerPid; i++) await sleep(50);
    child.kill('SIGKILL');
    await child;
    const worker = Number(fs.readFileSync(pidFile, 'utf8').trim());
    try {
      const runs = await cli(['runs', runId, '--home', home]);
      assert.match(
        runs.stdout,
        /hang\s+interrupted at work \(its orchestrator died\)/,
        `verdict runs does not call the dead run's attempt running\n${runs.stdout}`,
      );
      const before = fs.readFileSync(stateFile);
      const dry = await cli(['clean', '--home', home, '--dry-run']);
      assert.equal(dry.exitCode, 0, dry.all);
      assert.doesNotMatch(dry.all, /reconciled/);
      assert.match(dry.stdout, /dry run: nothing was changed/);
      assert.match(dry.stdout, new RegExp(`${runId}: its orchestrator died; clean would first reconcile it`));
      assert.doesNotMatch(dry.stdout, /would remove worktree/, 'what happens to its worktree depends on the reconcile');
      assert.deepEqual(fs.readFileSync(stateFile), before, 'state.json untouched');
      assert.ok(alive(worker), 'the orphaned worker was not killed by a dry run');

      const clean = await cli(['clean', '--home', home]);
      assert.equal(clean.exitCode, 0, clean.all);
      assert.match(clean.stderr, new RegExp(`reconciled run ${runId} .*1 unfinished task\\(s\\) marked INTERRUPTED`));
      assert.match(clean.stdout, new RegExp(`${runId}: remove worktree ${path.join(home, 'worktrees', runId, 'hang')}`));
      assert.equal(fs.existsSync(path.join(home, 'worktrees', runId, 'hang')), false);
      assert.ok(git(repo, 'branch', '--list', `verdict/${runId}/hang`).trim(), 'its branch stays');
    } finally {
      if (alive(worker)) process.kill(worker, 'SIGKILL');
    }
  });

  it('a worktree whose index a worker left with a gitlink to a repository of its own: clean runs none of its programs', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const runId = await worktreeRun(repo, home, 'one');
    const wt = path.join(home, 'worktrees', runId, 'fail');
    // What a crashed run leaves: the worker's index as it wrote it (here, a gitlink to a repository it made, whose
    // config names a clean filter and whose file's stat no longer matches its own index).
    const mine = path.join(wt, 'mine');
    const marker = path.join(dir, 'PWNED');
    makeRepo(mine, { 'f.txt': 'f\n', '.gitattributes': '* filter=evil\n' });
    git(mine, 'config', 'filter.evil.clean', `sh -c 'echo ran > ${marker}; cat'`);
    const old = new Date(Date.now() - 86400_000);
    fs.utimesSync(path.join(mine, 'f.txt'), old, old);
    git(wt, 'update-index', '--add', '--cacheinfo', `160000,${git(mine, 'rev-parse', 'HEAD')},mine`);
    const clean = await cli(['clean', '--home', home]);
    assert.equal(clean.exitCode, 0, clean.all);
    assert.equal(fs.existsSync(marker), false, "verdict clean ran the worker's filter");
    assert.equal(fs.existsSync(wt), false);
  });

  it('a worktree whose index a worker left a FIFO (a crashed run): clean reads none and removes it', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const runId = await worktreeRun(repo, home, 'one');
    const wt = path.join(home, 'worktrees', runId, 'fail');
    const admin = path.resolve(
      wt,
      fs
        .readFileSync(path.join(wt, '.git'), 'utf8')
        .replace(/^gitdir: /, '')
        .trim(),
    );
    fs.rmSync(path.join(admin, 'index'));
    execFileSync('mkfifo', [path.join(admin, 'index')]);
    const clean = await cli(['clean', '--home', home]);
    assert.equal(clean.exitCode, 0, clean.all);
    assert.equal(fs.existsSync(wt), false);
    assert.equal(
      git(repo, 'worktree', 'list', '--porcelain')
        .split('\n')
        .filter((l) => l.startsWith('worktree ')).length,
      1,
    );
  });

  it('never touches a live run; --older-than and --run select; bad flags are named', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const oldRun = await worktreeRun(repo, home, 'old');
    const liveRun = await worktreeRun(repo, home, 'live');
    // Make one run look old, and the other live (this process as its orchestrator, heartbeat now).
    const edit = (id: string, change: (s: Record<string, unknown>) => void) => {
      const file = path.join(home, 'runs', id, 'state.json');
      const state = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
      change(state);
      fs.writeFileSync(file, JSON.stringify(state));
    };
    edit(oldRun, (s) => (s.endedAt = Date.now() - 10 * 86_400_000));
    edit(liveRun, (s) => Object.assign(s, { status: 'running', endedAt: null, pid: process.pid, heartbeatAt: Date.now() }));

    const recent = await cli(['clean', '--home', home, '--older-than', '30']);
    assert.equal(recent.exitCode, 0, recent.all);
    assert.match(recent.stdout, /no runs match/);

    const r = await cli(['clean', '--home', home, '--older-than', '7']);
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(fs.existsSync(path.join(home, 'worktrees', oldRun)), false);
    assert.ok(fs.existsSync(path.join(home, 'worktrees', liveRun, 'pass')));

    const all = await cli(['clean', '--home', home, '--branches']);
    assert.match(all.stdout, new RegExp(`${liveRun}: skipped: still running; its worktrees are in use`));
    assert.ok(fs.existsSync(path.join(home, 'worktrees', liveRun, 'pass')));
    assert.deepEqual(
      verdictBranches(repo).filter((b) => b.includes(oldRun)),
      [],
    );
    assert.equal(verdictBranches(repo).filter((b) => b.includes(liveRun)).length, 2);

    const missing = await cli(['clean', '--home', home, '--run', 'nope']);
    assert.equal(missing.exitCode, 2);
    assert.match(missing.stderr, /no run nope under .*home/);
    const bad = await cli(['clean', '--home', home, '--older-than', 'soon']);
    assert.equal(bad.exitCode, 2);
    assert.match(bad.stderr, /--older-than must be a number of days ≥ 0, got "soon"/);
  });
});
