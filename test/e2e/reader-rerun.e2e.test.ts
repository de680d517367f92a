import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import type { RunState, TaskState } from '../../extension/core/live/state';

// A reader (here a validator: a task with `inputs`) still running when one of its inputs is rerun (`verdict rerun
// RUN <input>` on the live run) judges a copy of work that no longer stands: it must not PASS on it. It is stopped
// (CANCELLED, saying why, not counted against max_attempts) and runs again once the input has settled.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const env = { VERDICT_IDENTITY: 'tester' };

async function until(what: string, ok: () => boolean, ms = 90000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
    try {
      if (ok()) return;
    } catch {
      // the state file is being replaced: read it again
    }
  }
  assert.fail(`timed out waiting until ${what}`);
}

/** A validated task whose validator (attempt 1 only) waits for `release` before reading its inputs. */
function setup(dir: string, w2Spec: string) {
  const release = path.join(dir, 'release');
  const spec = `if [ "$VERDICT_TASK_KEY" = sort--w2 ]; then ${w2Spec}; else echo v1 > out.txt; fi`;
  const validator = [
    `if [ "$VERDICT_ATTEMPT" = 1 ]; then while [ ! -e ${release} ]; do sleep 0.1; done; fi`,
    'for d in "$VERDICT_INPUTS"/*/; do echo "$(basename "$d"): $(cat "$d/out.txt")"; done > report.md',
  ].join('\n');
  const task = scriptTask('sort', spec, 'grep -qx "v[12]" out.txt || { echo "out.txt: $(cat out.txt)"; exit 1; }', {
    max_attempts: 1,
    timeout_s: 120,
    validate: { workers: 2, spec: validator, report: 'report.md', check: 'test "$(grep -c ": v[12]$" report.md)" = 2 || { cat report.md; exit 1; }' },
  });
  const home = path.join(dir, 'home');
  const manifest = writeManifest(dir, { workdir: 'w', max_parallel: 3, tasks: [task] });
  return { release, home, manifest };
}

async function startRun(home: string, manifest: string) {
  const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard'], { reject: false, all: true, stdin: 'ignore' });
  let runId = '';
  await until('the run started', () => {
    const runs = path.join(home, 'runs');
    runId = fs.existsSync(runs) ? (fs.readdirSync(runs)[0] ?? '') : '';
    return Boolean(runId) && fs.existsSync(path.join(runs, runId, 'state.json'));
  });
  const state = () => JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;
  return { child, runId, state, task: (key: string) => state().tasks.find((t) => t.key === key) as TaskState };
}

const running = (t: TaskState | undefined) => Boolean(t?.attempts.some((a) => a.phase === 'running'));

describe('a reader still running when its input is rerun', function () {
  this.timeout(240000);

  it('the validator is stopped (CANCELLED, not counted) and judges the rerun work once it settles: PASS on the new copy, on its only attempt', async () => {
    const dir = tempDir();
    const v2 = path.join(dir, 'v2');
    const { release, home, manifest } = setup(dir, `if [ -e ${v2} ]; then echo v2 > out.txt; else echo v1 > out.txt; fi`);
    const run = await startRun(home, manifest);
    await until('the validator runs', () => running(run.task('sort')));
    fs.writeFileSync(v2, '');
    const rerun = await cli(['rerun', run.runId, 'sort--w2', '--home', home], { env });
    // Without the stop, the validator would now go on with its copy of w2's first work.
    fs.writeFileSync(release, '');
    const r = await run.child;
    assert.equal(rerun.exitCode, 0, rerun.all);
    assert.match(rerun.stdout, /sort--w2 is queued again: .*; sort \(reading it\) stopped, to run again after it/);
    assert.equal(r.exitCode, 0, r.all);
    const s = run.state();
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status]).sort(),
      [
        ['sort', 'PASS'],
        ['sort--w1', 'PASS'],
        ['sort--w2', 'PASS'],
      ],
      r.all,
    );
    assert.doesNotMatch(s.tasks.find((t) => t.key === 'sort')?.reason ?? '', /being rerun/, "the PASS does not carry the stopped attempt's reason");
    assert.match(String(s.tasks.find((t) => t.key === 'sort')?.attempts[0]?.notes), /its input sort--w2 is being rerun/);
    const report = fs.readFileSync(path.join(s.tasks.find((t) => t.key === 'sort')!.dir, 'report.md'), 'utf8');
    assert.match(report, /: v2$/m, `the validator judged the old copy:\n${report}`);
    assert.match(report, /: v1$/m);
    const rows = readRows(home).filter((x) => x.task_key === 'sort');
    assert.deepEqual(
      rows.map((x) => [x.attempt, x.verdict]),
      [
        [1, 'CANCELLED'],
        [2, 'PASS'],
      ],
      'max_attempts 1: the stopped attempt spent nothing',
    );
    assert.match(String(rows[0]?.notes), /^its input sort--w2 is being rerun: stopped before judging work that no longer stands \(not counted\)/);
    const receipt = JSON.parse(fs.readFileSync(path.join(home, 'runs', run.runId, 'tasks', 'sort', 'attempt-1', 'receipt.json'), 'utf8')) as {
      verdict: string;
      reason: string;
    };
    assert.equal(receipt.verdict, 'CANCELLED');
    assert.match(receipt.reason, /its input sort--w2 is being rerun/);
  });

  it('the rerun input FAILs: the stopped validator never passes, it ends BLOCKED', async () => {
    const dir = tempDir();
    const broken = path.join(dir, 'broken');
    const { release, home, manifest } = setup(dir, `if [ -e ${broken} ]; then echo broken > out.txt; else echo v1 > out.txt; fi`);
    const run = await startRun(home, manifest);
    await until('the validator runs', () => running(run.task('sort')));
    fs.writeFileSync(broken, '');
    const rerun = await cli(['rerun', run.runId, 'sort--w2', '--home', home], { env });
    assert.equal(rerun.exitCode, 0, rerun.all);
    fs.writeFileSync(release, '');
    const r = await run.child;
    const s = run.state();
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status]).sort(),
      [
        ['sort', 'BLOCKED'],
        ['sort--w1', 'PASS'],
        ['sort--w2', 'FAIL'],
      ],
      r.all,
    );
    assert.deepEqual(
      readRows(home)
        .filter((x) => x.task_key === 'sort')
        .map((x) => x.verdict),
      ['CANCELLED'],
    );
  });

  it('ranked: a ranking under way when a candidate is rerun is stopped (its row CANCELLED, saying why) and a new round ranks the new work', async () => {
    const dir = tempDir();
    const hold = path.join(dir, 'hold');
    const v2 = path.join(dir, 'v2');
    fs.writeFileSync(hold, '');
    // The ranker waits while `hold` exists, then scores 3 per GOOD in each solution's material.
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(
      path.join(bin, 'rank-judge'),
      [
        '#!/bin/bash',
        `while [ -e ${hold} ]; do sleep 0.1; done`,
        'json=""; for n in A B; do f=$n.txt; [ -e $n.diff ] && f=$n.diff; s=$(( $(grep -o GOOD "$f" | wc -l) * 3 )); [ $s -gt 10 ] && s=10; json="$json${json:+, }\\"$n\\": $s"; done',
        'echo "{\\"scores\\": {$json}}"',
      ].join('\n') + '\n',
      { mode: 0o755 },
    );
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { judge: { binary: 'rank-judge', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'j1' } } }),
    );
    // Candidate 1: two GOODs. Candidate 2: one, then three once rerun.
    const spec = `if [ "$VERDICT_CANDIDATE" = 1 ]; then echo "GOOD GOOD" > out.txt; elif [ -e ${v2} ]; then echo "GOOD GOOD GOOD" > out.txt; else echo "GOOD" > out.txt; fi`;
    const home = path.join(dir, 'home');
    const manifest = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 2,
      tasks: [
        scriptTask('fix', spec, 'grep -q GOOD out.txt', {
          repeat: 2,
          select: 'ranked',
          max_attempts: 1,
          rank: { rubric: 'More GOOD is better.', engines: ['judge'] },
        }),
      ],
    });
    const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard', '--config', config], {
      reject: false,
      all: true,
      stdin: 'ignore',
      env: { PATH: `${bin}:${process.env.PATH}` },
    });
    let runId = '';
    await until('the ranker started', () => {
      runId = fs.readdirSync(path.join(home, 'runs'))[0] ?? '';
      return fs.existsSync(path.join(home, 'runs', runId, 'tasks', 'fix', 'rank-1', 'reviewer-1.prompt.md'));
    });
    fs.writeFileSync(v2, '');
    const rerun = await cli(['rerun', runId, 'fix--c2', '--home', home], { env });
    fs.rmSync(hold);
    const r = await child;
    assert.equal(r.exitCode, 0, r.all);
    const s = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;
    const fix = s.tasks.find((t) => t.key === 'fix') as TaskState & { winner?: string; scores?: Record<string, number> };
    assert.equal(fix.status, 'PASS', r.all);
    assert.equal(fix.winner, 'fix--c2', `the first round's ranking of the replaced work decided:\n${r.all}`);
    assert.equal(rerun.exitCode, 0, rerun.all);
    assert.match(rerun.stdout, /fix--c2 is queued again: .*; fix \(reading it\) stopped, to run again after it/);
    assert.deepEqual(fix.scores, { 'fix--c1': 6, 'fix--c2': 9 });
    const rank = readRows(home).filter((x) => x.step === 'rank');
    assert.deepEqual(
      rank.map((x) => x.verdict),
      ['CANCELLED', 'PASS'],
    );
    assert.match(String(rank[0]?.notes), /its input fix--c2 is being rerun/);
    assert.ok(fs.existsSync(path.join(home, 'runs', runId, 'tasks', 'fix', 'rank-2', 'receipt.json')), 'a second round ranked the new work');
  });
});
