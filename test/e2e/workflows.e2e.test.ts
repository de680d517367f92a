import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

interface TaskJson {
  key: string;
  status: string;
  reason?: string;
  engine: string;
  model: string | null;
  branch: string | null;
  commit: string | null;
  dir: string;
  after?: string[];
  group?: string;
  candidate?: number;
  select?: string;
  winner?: string;
  attempts: { verdict: string | null }[];
}
interface StateJson {
  runId: string;
  resumedFrom?: string;
  tasks: TaskJson[];
}

/** state.json of every run under `home`, oldest first. */
function states(home: string): StateJson[] {
  return fs
    .readdirSync(path.join(home, 'runs'))
    .sort()
    .map((id) => JSON.parse(fs.readFileSync(path.join(home, 'runs', id, 'state.json'), 'utf8')) as StateJson);
}

const byKey = (s: StateJson | undefined, key: string): TaskJson => {
  const t = s?.tasks.find((x) => x.key === key);
  assert.ok(t, `no task ${key} in ${JSON.stringify(s?.tasks.map((x) => x.key))}`);
  return t;
};

describe('workflows: best-of-N', function () {
  this.timeout(240000);

  it('first-pass: candidate 2 passes, 1 and 3 are cancelled naming it; the task branch holds the winner; a dependent starts from it; merge takes the winner only', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    // Candidates 1 and 3 never finish on their own: only the winner's PASS ends them.
    const spec = 'if [ "$VERDICT_CANDIDATE" = 2 ]; then echo "made by candidate $VERDICT_CANDIDATE" > out.txt; else while :; do sleep 0.2; done; fi';
    const file = writeManifest(repo, {
      worktrees: true,
      max_parallel: 4,
      tasks: [
        scriptTask('fix', spec, 'test -s out.txt || { echo "out.txt missing"; exit 1; }', { repeat: 3, select: 'first-pass', max_attempts: 1, timeout_s: 120 }),
        scriptTask('next', 'cat out.txt > seen.txt', 'grep -q "candidate 2" seen.txt || { echo "seen.txt lacks the winner"; exit 1; }', { after: ['fix'] }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const [s] = states(home);
    const runId = s?.runId as string;
    assert.deepEqual(
      s?.tasks.map((t) => [t.key, t.status, t.group ?? null, t.candidate ?? null]),
      [
        ['fix', 'PASS', 'fix', null],
        ['fix--c1', 'CANCELLED', 'fix', 1],
        ['fix--c2', 'PASS', 'fix', 2],
        ['fix--c3', 'CANCELLED', 'fix', 3],
        ['next', 'PASS', null, null],
      ],
    );
    const group = byKey(s, 'fix');
    assert.deepEqual([group.select, group.winner, group.after, group.attempts], ['first-pass', 'fix--c2', ['fix--c1', 'fix--c2', 'fix--c3'], []]);
    assert.match(group.reason ?? '', /winner: candidate 2 \(fix--c2, script/);
    for (const k of ['fix--c1', 'fix--c3']) assert.equal(byKey(s, k).reason, 'cancelled: candidate 2 (fix--c2) passed first');

    // Rows: one per candidate attempt (no work row for the group, which runs no worker), each with its group and number.
    const rows = readRows(home);
    const cand = rows.filter((row) => row.group === 'fix' && row.step === 'work').sort((a, b) => Number(a.candidate) - Number(b.candidate));
    assert.deepEqual(
      cand.map((row) => [row.task_key, row.candidate, row.verdict]),
      [
        ['fix--c1', 1, 'CANCELLED'],
        ['fix--c2', 2, 'PASS'],
        ['fix--c3', 3, 'CANCELLED'],
      ],
    );
    for (const row of [cand[0], cand[2]]) assert.equal(row?.notes, 'cancelled: candidate 2 (fix--c2) passed first');
    // The group's decision is one `select` row credited to the winner (the scoreboard's "won" column counts it).
    assert.deepEqual(
      rows
        .filter((row) => row.task_key === 'fix')
        .map((row) => [row.step, row.group, row.candidate, row.verdict, row.worker_engine, row.commit, row.duration_ms, row.cost_microusd]),
      [['select', 'fix', 2, 'PASS', 'script', byKey(s, 'fix--c2').commit, 0, null]],
    );
    assert.deepEqual(rows.find((row) => row.task_key === 'next')?.group, null);

    // Branches: every candidate's stays for review; the task's holds exactly the winner's commit.
    const winner = byKey(s, 'fix--c2').commit as string;
    assert.equal(group.commit, winner);
    assert.equal(git(repo, 'rev-parse', `verdict/${runId}/fix`), winner);
    assert.equal(git(repo, 'show', `verdict/${runId}/fix:out.txt`), 'made by candidate 2');
    for (const n of [1, 2, 3]) assert.ok(git(repo, 'rev-parse', '--verify', `verdict/${runId}/fix--c${n}`));
    // The dependent started from the winner's commit.
    assert.equal(git(repo, 'rev-parse', `${byKey(s, 'next').commit}~1`), winner);

    // merge without keys: the group (its winner) and next; no candidate on its own.
    const m = await cli(['merge', runId, '--home', home], { cwd: repo });
    assert.equal(m.exitCode, 0, m.all);
    assert.match(m.stdout, /^fix: MERGED/m);
    assert.match(m.stdout, /^next: MERGED/m);
    assert.doesNotMatch(m.stdout, /fix--c/);
    assert.equal(fs.readFileSync(path.join(repo, 'out.txt'), 'utf8'), 'made by candidate 2\n');
  });

  it('select all: every candidate runs to its end; the lowest-numbered pass wins; a failing candidate does not fail the run', async () => {
    const dir = tempDir();
    const spec = 'if [ "$VERDICT_CANDIDATE" != 1 ]; then echo "c$VERDICT_CANDIDATE" > out.txt; fi';
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 1,
      tasks: [scriptTask('fix', spec, 'test -s out.txt || { echo "out.txt missing"; exit 1; }', { repeat: 3, select: 'all', max_attempts: 1 })],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const [s] = states(home);
    assert.deepEqual(
      s?.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'FAIL'],
        ['fix--c2', 'PASS'],
        ['fix--c3', 'PASS'],
      ],
    );
    assert.equal(byKey(s, 'fix').winner, 'fix--c2');
    // Each candidate in its own task dir.
    assert.equal(fs.readFileSync(path.join(dir, 'w', 'fix--c3', 'out.txt'), 'utf8'), 'c3\n');
    assert.deepEqual(
      readRows(home).map((row) => [row.task_key, row.group, row.candidate, row.verdict]),
      [
        ['fix--c1', 'fix', 1, 'FAIL'],
        ['fix--c2', 'fix', 2, 'PASS'],
        ['fix--c3', 'fix', 3, 'PASS'],
        ['fix', 'fix', 2, 'PASS'],
      ],
    );
  });

  it('candidates across two engines: each candidate runs on its entry and its rows are credited to it', async () => {
    const dir = tempDir();
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'agent-lazy'), '#!/bin/bash\necho "lazy: not doing it"\n', { mode: 0o755 });
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
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask('fix', 'echo "$VERDICT_CANDIDATE" > out.txt', 'test -s out.txt || { echo "out.txt missing"; exit 1; }', {
          candidates: [{ engine: 'lazy' }, { engine: 'good', model: 'good-2' }],
          select: 'all',
          max_attempts: 1,
        }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--config', config, '--no-dashboard'], { env: { PATH: `${bin}:${process.env.PATH}` } });
    assert.equal(r.exitCode, 0, r.all);
    const [s] = states(home);
    assert.deepEqual(
      s?.tasks.map((t) => [t.key, t.status, t.engine, t.model]),
      [
        ['fix', 'PASS', 'lazy', 'lazy-1'],
        ['fix--c1', 'FAIL', 'lazy', 'lazy-1'],
        ['fix--c2', 'PASS', 'good', 'good-2'],
      ],
    );
    // Both run at once: rows in candidate order, whichever finished first (the select row comes after its winner's).
    assert.deepEqual(
      readRows(home)
        .sort((a, b) => Number(a.candidate) - Number(b.candidate))
        .map((row) => [row.task_key, row.worker_engine, row.model, row.verdict, row.candidate]),
      [
        ['fix--c1', 'lazy', 'lazy-1', 'FAIL', 1],
        ['fix--c2', 'good', 'good-2', 'PASS', 2],
        ['fix', 'good', 'good-2', 'PASS', 2],
      ],
    );
    // verdict models: good-2 won the one group it took part in, lazy-1 none of its one.
    const models = await cli(['models', '--home', home]);
    assert.equal(models.exitCode, 0, models.all);
    assert.match(models.stdout, /good-2\s.*\s1\/1\s/);
    assert.match(models.stdout, /lazy-1\s.*\s0\/1\s/);
    assert.equal(fs.readFileSync(path.join(dir, 'w', 'fix--c2', 'out.txt'), 'utf8'), '2\n');
  });

  it('no candidate passes: the task is BLOCKED listing them, its dependent is BLOCKED by it, the run fails; resume runs them again', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'may-pass');
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 1,
      tasks: [
        scriptTask(
          'fix',
          `if [ -f ${marker} ] && [ "$VERDICT_CANDIDATE" = 2 ]; then echo ok > out.txt; fi`,
          'test -s out.txt || { echo "out.txt missing"; exit 1; }',
          { repeat: 2, max_attempts: 1 },
        ),
        scriptTask('next', 'echo n > n.txt', 'test -s n.txt || exit 1', { after: ['fix'] }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 1, r.all);
    const [s1] = states(home);
    assert.deepEqual(
      s1?.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'BLOCKED'],
        ['fix--c1', 'FAIL'],
        ['fix--c2', 'FAIL'],
        ['next', 'BLOCKED'],
      ],
    );
    assert.equal(byKey(s1, 'fix').reason, 'no candidate passed (fix--c1 FAIL, fix--c2 FAIL)');
    assert.match(byKey(s1, 'next').reason ?? '', /prerequisite fix ended BLOCKED/);

    fs.writeFileSync(marker, '');
    const again = await cli(['resume', s1?.runId as string, '--home', home, '--no-dashboard']);
    assert.equal(again.exitCode, 0, again.all);
    // The same run goes on (resume keeps the run id).
    const all = states(home);
    assert.equal(all.length, 1);
    assert.equal(all[0]?.runId, s1?.runId);
    assert.deepEqual(
      all[0]?.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'FAIL'],
        ['fix--c2', 'PASS'],
        ['next', 'PASS'],
      ],
    );
  });

  it('resume after a task won: its cancelled losers stay as they ended; only what did not pass runs again', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'other-may-pass');
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 1,
      tasks: [
        scriptTask('fix', 'echo ok > out.txt', 'test -s out.txt || exit 1', { repeat: 2 }),
        scriptTask('other', `test -f ${marker} && echo o > o.txt`, 'test -s o.txt || { echo "o.txt missing"; exit 1; }', { max_attempts: 1 }),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 1, r.all);
    const [s1] = states(home);
    assert.deepEqual(
      s1?.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'PASS'],
        ['fix--c2', 'CANCELLED'],
        ['other', 'FAIL'],
      ],
    );
    fs.writeFileSync(marker, '');
    const again = await cli(['resume', s1?.runId as string, '--home', home, '--no-dashboard']);
    assert.equal(again.exitCode, 0, again.all);
    assert.match(again.all, /resuming 1 task\(s\) of run \S+ \(same run\): other\n/);
    const all = states(home);
    assert.equal(all.length, 1);
    assert.deepEqual(
      all[0]?.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'PASS'],
        ['fix--c2', 'CANCELLED'],
        ['other', 'PASS'],
      ],
    );
  });
});
