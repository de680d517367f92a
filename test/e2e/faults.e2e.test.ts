import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { mergeTask } from '../../extension/core/git/merge';
import { cli } from '../helpers/cli';
import { alive, git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

/** Pids written one per line to files named `name` under `root` (any depth). */
function pidsIn(root: string, name: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && entry.name === name) {
      found.push(...fs.readFileSync(path.join(entry.parentPath, entry.name), 'utf8').split('\n').filter(Boolean).map(Number));
    }
  }
  return found;
}

/** state.json of the only run under `home`, parsed (throws when it is not valid JSON). */
function onlyState(home: string): { status: string; tasks: { key: string; status: string }[] } {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as ReturnType<typeof onlyState>;
}

describe('faults: nothing is lost, nothing is left running', function () {
  this.timeout(120000);
  // The daemon and never-ending-check cases run unsandboxed: they prove the fallback supervisor (process group,
  // environment cookie, pipes cut after a grace) ends everything, by pids written outside the task dirs, which
  // bubblewrap would refuse. The same cases in the sandbox: containment.e2e.test.ts.

  it('a worker that forks daemons (nohup … &, a double fork): none survives the run', async () => {
    const dir = tempDir();
    const spec = [
      'nohup sleep 300 >/dev/null 2>&1 & echo $! >> daemons.pid',
      '( sleep 301 >/dev/null 2>&1 & echo $! >> daemons.pid )',
      'echo done > out.txt',
    ].join('\n');
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 2,
      tasks: [scriptTask('a', spec, 'test -s out.txt || exit 1'), scriptTask('b', spec, 'test -s out.txt || exit 1')],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard', '--no-sandbox']);
    assert.equal(r.exitCode, 0, r.all);
    const pids = pidsIn(path.join(dir, 'w'), 'daemons.pid');
    assert.equal(pids.length, 4);
    for (const pid of pids) assert.equal(alive(pid), false, `daemon ${pid} outlived its attempt`);
    assert.deepEqual(
      readRows(home).map((row) => row.verdict),
      ['PASS', 'PASS'],
    );
  });

  it('a check that never ends: FAIL with the timeout note, its processes gone, both attempts recorded', async () => {
    const dir = tempDir();
    const check = 'echo $$ >> ../check.pid; sleep 300 & echo $! >> ../check.pid; wait';
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('hang', 'echo hi > hi.txt', check, { check_timeout_s: 1 })] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard', '--no-sandbox']);
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.verdict, row.attempt]),
      [
        ['FAIL', 1],
        ['FAIL', 2],
      ],
    );
    for (const row of rows) {
      assert.match(String(row.notes), /the check timed out after 1 s/);
      assert.match(String(row.check_output), /\[verdict\] the check timed out after 1 s and was killed/);
    }
    const pids = pidsIn(path.join(dir, 'w'), 'check.pid');
    assert.equal(pids.length, 4);
    for (const pid of pids) assert.equal(alive(pid), false, `check process ${pid} is still running`);
    assert.equal(onlyState(home).status, 'finished');
  });

  it('an engine binary removed mid-run: later attempts end ERROR naming it, a row for every attempt, the run finishes', async () => {
    const dir = tempDir();
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    const agent = path.join(bin, 'vanishing-agent');
    // The agent does its work, then deletes itself: every later spawn finds no binary.
    fs.writeFileSync(agent, '#!/bin/bash\nbash -c "$1"\nrm -f "$0"\n', { mode: 0o755 });
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { vanishing: { binary: 'vanishing-agent', argv: ['{spec}'], install: 'it deleted itself', output: 'none' } } }),
    );
    const tasks = ['t1', 't2', 't3'].map((k) => scriptTask(k, 'echo ok > ok.txt', 'test -s ok.txt || exit 1', { engine: 'vanishing' }));
    const file = writeManifest(dir, { workdir: 'w', max_parallel: 1, tasks });
    const home = path.join(dir, 'home');
    // Unsandboxed: in the sandbox the agent could not delete itself (its folder is read-only there).
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard', '--no-sandbox'], { env: { PATH: `${bin}:${process.env.PATH}` } });
    assert.equal(r.exitCode, 1, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.task_key, row.verdict]),
      [
        ['t1', 'PASS'],
        ['t2', 'ERROR'],
        ['t3', 'ERROR'],
      ],
    );
    for (const row of rows.slice(1)) assert.match(String(row.notes), new RegExp(`the worker could not start: .*${agent}.*ENOENT`));
    const state = onlyState(home);
    assert.equal(state.status, 'finished');
    assert.deepEqual(
      state.tasks.map((t) => t.status),
      ['PASS', 'ERROR', 'ERROR'],
    );
  });

  it('a leftover .git/index.lock: the run is unaffected (worktrees have their own index), the lock is left alone, the merge names it', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const lock = path.join(repo, '.git', 'index.lock');
    fs.writeFileSync(lock, '');
    const file = writeManifest(repo, {
      worktrees: true,
      tasks: [scriptTask('a', 'echo a > a.txt', 'test -s a.txt || exit 1'), scriptTask('b', 'echo b > b.txt', 'test -s b.txt || exit 1')],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    assert.ok(fs.existsSync(lock), 'another process’s lock is not ours to remove');
    assert.doesNotMatch(git(repo, 'worktree', 'list', '--porcelain'), /prunable/);
    const [row] = readRows(home);
    // Merging into the main working tree needs its index: refused, with the lock's path and the fix.
    const recheck = async () => ({ passed: true, output: '', reason: '' });
    const outcome = await mergeTask({ key: 'a', repo, branch: String(row?.branch), recheck });
    assert.equal(outcome.status, 'BLOCKED');
    assert.match(
      (outcome as { reason: string }).reason,
      new RegExp(`${lock} exists: another git process is running, or one crashed; if none is running: rm ${lock}`),
    );
    assert.equal(git(repo, 'rev-list', '--count', 'HEAD'), '1', 'nothing was merged');
  });

  it('a full disk for the eval log (runs.jsonl → /dev/full): a clear error, no torn line, state.json still valid', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    fs.mkdirSync(home);
    fs.symlinkSync('/dev/full', path.join(home, 'runs.jsonl'));
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('a', 'echo a > a.txt', 'test -s a.txt || exit 1')] });
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.notEqual(r.exitCode, 0, r.all);
    assert.match(
      r.all ?? '',
      new RegExp(`cannot append the eval row of \\S+/a attempt 1 to ${path.join(home, 'runs.jsonl')}: no space left on device; the row was not written`),
    );
    assert.equal(onlyState(home).status, 'finished');
    assert.match(r.stdout, /^a\s+PASS\s+1\s/m, 'the table still shows what happened');
    assert.match(r.stderr, /error: the eval row of a attempt 1 \(PASS\) could not be written/);
    // the attempt's own records are whole
    const [id] = fs.readdirSync(path.join(home, 'runs'));
    const receipt = JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'tasks', 'a', 'attempt-1', 'receipt.json'), 'utf8')) as {
      verdict: string;
    };
    assert.equal(receipt.verdict, 'PASS');
  });
});
