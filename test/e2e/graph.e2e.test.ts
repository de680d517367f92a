import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

interface StateJson {
  runId: string;
  resumedFrom?: string;
  tasks: {
    key: string;
    status: string;
    reason?: string;
    engine: string;
    model: string | null;
    commit: string | null;
    after?: string[];
    attempts: { attempt: number; engine?: string; model?: string | null; verdict: string | null }[];
  }[];
}

/** state.json of every run under `home`, oldest first. */
function states(home: string): StateJson[] {
  return fs
    .readdirSync(path.join(home, 'runs'))
    .sort()
    .map((id) => JSON.parse(fs.readFileSync(path.join(home, 'runs', id, 'state.json'), 'utf8')) as StateJson);
}

/** Two custom engines: `lazy` prints and changes nothing, `good` runs the spec with bash. */
function twoEngines(dir: string): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'agent-lazy'), '#!/bin/bash\necho "lazy: not doing $1"\n', { mode: 0o755 });
  fs.writeFileSync(path.join(bin, 'agent-good'), '#!/bin/bash\nbash -c "$1"\n', { mode: 0o755 });
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      engines: {
        lazy: { binary: 'agent-lazy', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'lazy-1' },
        good: { binary: 'agent-good', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'good-1' },
      },
    }),
  );
  return { config, env: { PATH: `${bin}:${process.env.PATH}` } };
}

describe('fallback engines and the task graph', function () {
  this.timeout(180000);

  it('fallback: attempt 1 on the task engine fails, 2 on the first entry (its model), 3 on the second passes; rows credited to each', async () => {
    const dir = tempDir();
    const { config, env } = twoEngines(dir);
    const task = scriptTask('t', 'echo ok > ok.txt', 'test -s ok.txt || { echo "ok.txt missing"; exit 1; }', {
      engine: 'lazy',
      max_attempts: 3,
      fallback: [{ engine: 'lazy', model: 'lazy-2' }, 'good'],
    });
    const file = writeManifest(dir, { workdir: 'w', tasks: [task] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard', '--no-sandbox'], { env });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.all, /attempt 3 falls back to good\/good-1/);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.attempt, row.worker_engine, row.harness, row.model, row.verdict, row.retry]),
      [
        [1, 'lazy', 'lazy', 'lazy-1', 'FAIL', false],
        [2, 'lazy', 'lazy', 'lazy-2', 'FAIL', true],
        [3, 'good', 'good', 'good-1', 'PASS', true],
      ],
    );
    const [state] = states(home);
    const t = state?.tasks[0];
    assert.deepEqual([t?.engine, t?.model, t?.status], ['good', 'good-1', 'PASS']);
    assert.deepEqual(
      t?.attempts.map((a) => [a.engine, a.model, a.verdict]),
      [
        ['lazy', 'lazy-1', 'FAIL'],
        ['lazy', 'lazy-2', 'FAIL'],
        ['good', 'good-1', 'PASS'],
      ],
    );
    // The failure was injected into the fallback attempt, as into any retry.
    const failure = fs.readFileSync(path.join(home, 'runs', state?.runId as string, 'tasks', 't', 'attempt-3', 'failure.md'), 'utf8');
    assert.match(failure, /ok\.txt missing/);
  });

  it("fallback: preflight checks every fallback engine's binary", async () => {
    const dir = tempDir();
    const { config } = twoEngines(dir);
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('t', 'true', 'true', { engine: 'script', fallback: ['good'] })] });
    // --force: the check `true` is a lint error; the preflight is what is tested.
    const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--config', config, '--no-dashboard', '--no-sandbox', '--force']);
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.all, /engine "good" needs the `agent-good` command, which is not on PATH/);
  });

  it("a → b → c with b failing: c BLOCKED naming b; resume runs b and c from a's branch and keeps a", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const marker = path.join(dir, 'b-may-pass');
    const file = writeManifest(repo, {
      worktrees: true,
      max_parallel: 3,
      tasks: [
        scriptTask('a', 'echo a > a.txt', 'test -s a.txt || exit 1'),
        scriptTask('b', `if [ -f ${marker} ]; then echo b > b.txt; fi`, 'test -s a.txt && test -s b.txt || { echo "b.txt or a.txt missing"; exit 1; }', {
          after: ['a'],
          max_attempts: 1,
        }),
        scriptTask('c', 'echo c > c.txt', 'test -s a.txt && test -s b.txt && test -s c.txt || exit 1', { after: ['b'] }),
      ],
    });
    const home = path.join(dir, 'home');
    const first = await cli(['run', file, '--home', home, '--no-dashboard', '--no-sandbox']);
    assert.equal(first.exitCode, 1, first.all);
    assert.match(first.all, /⊘ c {2}BLOCKED — prerequisite b ended FAIL, not PASS/);
    assert.match(first.all, /\nc +BLOCKED +0 +0\.0s +0 +— +b +prerequisite b ended FAIL/);
    const [s1] = states(home);
    assert.deepEqual(
      s1?.tasks.map((t) => [t.key, t.status, t.after ?? []]),
      [
        ['a', 'PASS', []],
        ['b', 'FAIL', ['a']],
        ['c', 'BLOCKED', ['b']],
      ],
    );
    assert.match(s1?.tasks[2]?.reason ?? '', /prerequisite b ended FAIL/);
    assert.deepEqual(s1?.tasks[2]?.attempts, []);
    // c never ran: no row for it.
    assert.deepEqual(
      readRows(home).map((row) => [row.task_key, row.verdict]),
      [
        ['a', 'PASS'],
        ['b', 'FAIL'],
      ],
    );

    fs.writeFileSync(marker, '');
    const again = await cli(['resume', s1?.runId as string, '--home', home, '--no-dashboard', '--no-sandbox']);
    assert.equal(again.exitCode, 0, again.all);
    // The same run goes on: no new run, the same state file.
    const all = states(home);
    assert.equal(all.length, 1);
    const s2 = all[0];
    assert.equal(s2?.runId, s1?.runId);
    assert.equal(s2?.resumedFrom, undefined);
    assert.deepEqual(
      s2?.tasks.map((t) => [t.key, t.status]),
      [
        ['a', 'PASS'],
        ['b', 'PASS'],
        ['c', 'PASS'],
      ],
    );
    // a is kept (not run again, same commit); b's attempt 2 follows its attempt 1; c started from b's commit.
    assert.deepEqual(
      readRows(home).map((row) => [row.run_id, row.task_key, row.attempt, row.verdict]),
      [
        [s1?.runId, 'a', 1, 'PASS'],
        [s1?.runId, 'b', 1, 'FAIL'],
        [s1?.runId, 'b', 2, 'PASS'],
        [s1?.runId, 'c', 1, 'PASS'],
      ],
    );
    const aCommit = s1?.tasks[0]?.commit as string;
    assert.equal(s2?.tasks[0]?.commit, aCommit);
    const bCommit = s2?.tasks[1]?.commit as string;
    const cCommit = s2?.tasks[2]?.commit as string;
    assert.equal(git(repo, 'rev-parse', `${bCommit}~1`), aCommit);
    assert.equal(git(repo, 'rev-parse', `${cCommit}~1`), bCommit);
    assert.deepEqual(git(repo, 'ls-tree', '--name-only', cCommit).split('\n').sort(), ['README.md', 'a.txt', 'b.txt', 'c.txt']);
  });

  it('several prerequisites: merged (c sees both); a conflict between them is an ERROR naming the file', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const file = writeManifest(repo, {
      worktrees: true,
      tasks: [
        scriptTask('a', 'echo a > a.txt; echo a > same.txt', 'test -s a.txt || exit 1'),
        scriptTask('b', 'echo b > b.txt', 'test -s b.txt || exit 1'),
        scriptTask('x', 'echo x > same.txt', 'test -s same.txt || exit 1'),
        scriptTask('c', 'echo c > c.txt', 'test -s a.txt && test -s b.txt || exit 1', { after: ['a', 'b'] }),
        scriptTask('d', 'echo d > d.txt', 'true', { after: ['a', 'x'] }),
      ],
    });
    const home = path.join(dir, 'home');
    // --force: d's check `true` is a lint error; d ends ERROR before it (its prerequisites do not merge).
    const r = await cli(['run', file, '--home', home, '--no-dashboard', '--no-sandbox', '--force']);
    assert.equal(r.exitCode, 1, r.all);
    const [s] = states(home);
    assert.deepEqual(
      s?.tasks.map((t) => [t.key, t.status]),
      [
        ['a', 'PASS'],
        ['b', 'PASS'],
        ['x', 'PASS'],
        ['c', 'PASS'],
        ['d', 'ERROR'],
      ],
    );
    const cCommit = s?.tasks[3]?.commit as string;
    assert.deepEqual(git(repo, 'ls-tree', '--name-only', cCommit).split('\n').sort(), ['README.md', 'a.txt', 'b.txt', 'c.txt', 'same.txt']);
    const dRow = readRows(home).find((row) => row.task_key === 'd');
    assert.match(String(dRow?.notes), /the prerequisites of d do not merge: same\.txt conflict between a and x/);
  });

  it('plain mode: the dependent starts only after its prerequisite passed', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 4,
      tasks: [
        scriptTask('slow', 'sleep 1; date +%s%N > ../slow.done; echo s > s.txt', 'test -s s.txt || exit 1'),
        scriptTask('next', 'test -s ../slow.done && echo n > n.txt', 'test -s n.txt || exit 1', { after: ['slow'] }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard', '--no-sandbox']);
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      readRows(home).map((row) => [row.task_key, row.verdict, row.attempt]),
      [
        ['slow', 'PASS', 1],
        ['next', 'PASS', 1],
      ],
    );
  });
});
