import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Lint errors refuse every start: a careless or hostile manifest author's `"check": "true"` PASSes
 * whatever the worker did. `verdict run`, `resume` and `rerun` refuse it with exit 2 and the errors as
 * file:line:column [rule], starting nothing; `--force` starts it and every row of the run says `forced: true`.
 */
describe('lint errors refuse every start', function () {
  this.timeout(120000);
  let dir: string;
  let home: string;
  let repo: string;
  beforeEach(() => {
    dir = tempDir();
    home = path.join(dir, 'home');
    repo = makeRepo(path.join(dir, 'repo'));
  });

  /** A worktree-mode manifest: `trusted`'s check cannot fail (lint error check-cannot-fail), `fails` fails honestly. */
  const manifest = () =>
    writeManifest(repo, {
      worktrees: true,
      tasks: [
        scriptTask('trusted', 'echo "I did nothing"', 'true'),
        scriptTask('fails', 'echo no > answer.txt', 'grep -q yes answer.txt || { echo "answer.txt does not say yes"; exit 1; }', { max_attempts: 1 }),
      ],
    });
  /** Where `"check": "true"` is in the file, 1-based, as lint names it. */
  const checkAt = (file: string) => {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    const line = lines.findIndex((l) => l.includes('"check": "true"'));
    return `${line + 1}:${(lines[line] as string).indexOf('"true"') + 1}`;
  };

  it('verdict run: exit 2 listing file:line:column [check-cannot-fail], and nothing ran: no run dir, no branch, no row', async () => {
    const file = manifest();
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.stderr, new RegExp(`^cannot start ${esc(file)}: 1 lint error \\(fix them and lint again; --force starts it anyway`, 'm'));
    assert.match(r.stderr, new RegExp(`^  ${esc(file)}:${checkAt(file)}: error \\[check-cannot-fail\\] \\(trusted\\) This check always exits 0`, 'm'));
    assert.equal(fs.existsSync(path.join(home, 'runs')), false, 'no run records');
    assert.equal(fs.existsSync(path.join(home, 'worktrees')), false, 'no worktree');
    assert.equal(git(repo, 'branch', '--list', 'verdict/*'), '', 'no task branch');
    assert.deepEqual(readRows(home), []);
  });

  it('--force runs it: state.json, every attempt and every eval row say forced: true, and verdict runs RUN shows it', async () => {
    const file = manifest();
    const r = await cli(['run', file, '--home', home, '--no-dashboard', '--force']);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stderr, new RegExp(`^--force: starting ${esc(file)} despite 1 lint error \\(recorded as forced: true`, 'm'));
    assert.match(r.stdout, /^trusted\s+PASS/m);
    const rows = readRows(home);
    assert.deepEqual(rows.map((x) => [x.task_key, x.verdict, x.forced]).sort(), [
      ['fails', 'FAIL', true],
      ['trusted', 'PASS', true],
    ]);
    const runId = rows[0]?.run_id as string;
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8'));
    assert.equal(state.forced, true);
    for (const t of state.tasks) for (const a of t.attempts) assert.equal(a.forced, true, `${t.key} attempt ${a.attempt}`);
    const shown = await cli(['runs', runId, '--home', home]);
    assert.equal(shown.exitCode, 0, shown.all);
    assert.match(shown.stdout, /^forced: run with --force over lint errors in its manifest/m);
    const json = await cli(['runs', runId, '--home', home, '--json']);
    assert.equal(JSON.parse(json.stdout).forced, true);
    // Its rows are not evidence: the scoreboard counts them apart and credits no model with trusted's PASS.
    const models = await cli(['models', '--home', home, '--json']);
    assert.equal(models.exitCode, 0, models.all);
    const board = JSON.parse(models.stdout);
    assert.equal(board.source.forced, 2);
    assert.equal(board.source.rows, 0, 'no attempt of a forced run in the evidence');
    const text = await cli(['models', '--home', home]);
    assert.match(text.stdout, /^2 row\(s\) of runs started over lint errors \(--force\) left out/m);
    // A run without a lint error, --force or not, is not marked.
    const clean = writeManifest(
      repo,
      { worktrees: true, tasks: [scriptTask('honest', 'echo yes > answer.txt', 'grep -q yes answer.txt || exit 1')] },
      'clean.swarm.json',
    );
    const c = await cli(['run', clean, '--home', home, '--no-dashboard', '--force']);
    assert.equal(c.exitCode, 0, c.all);
    const honest = readRows(home).find((x) => x.task_key === 'honest');
    assert.equal(honest?.verdict, 'PASS');
    assert.equal('forced' in (honest ?? {}), false);
  });

  it('verdict resume and rerun of that run refuse (its frozen manifest, file:line:column) and start nothing; --force goes on, forced', async () => {
    const file = manifest();
    const first = await cli(['run', file, '--home', home, '--no-dashboard', '--force']);
    assert.equal(first.exitCode, 1, first.all);
    const runId = readRows(home)[0]?.run_id as string;
    // Fixing the file does not change what a resume runs: the run's frozen manifest.
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('"check": "true"', '"check": "test -d ."'));
    const frozen = path.join(home, 'runs', runId, 'manifest.json');
    const stateBefore = fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8');
    for (const args of [
      ['resume', runId],
      ['rerun', runId, 'fails'],
    ]) {
      const r = await cli([...args, '--home', home, '--no-dashboard']);
      assert.equal(r.exitCode, 2, `${args.join(' ')}: ${r.all}`);
      assert.match(
        r.stderr,
        new RegExp(
          `^cannot ${args[0]} run ${runId} \\(its frozen manifest, from ${esc(file)}\\): 1 lint error \\(a run keeps the manifest it started with`,
          'm',
        ),
      );
      assert.match(r.stderr, new RegExp(`^  ${esc(frozen)}:${checkAt(frozen)}: error \\[check-cannot-fail\\] \\(trusted\\)`, 'm'));
      assert.equal(readRows(home).length, 2, 'no attempt ran');
      assert.equal(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8'), stateBefore, 'the run was not taken over');
    }
    const forced = await cli(['resume', runId, '--home', home, '--no-dashboard', '--force']);
    assert.equal(forced.exitCode, 1, forced.all);
    assert.match(forced.stderr, new RegExp(`^--force: resuming run ${runId} \\(its frozen manifest, from ${esc(file)}\\) despite 1 lint error`, 'm'));
    const again = readRows(home).filter((x) => x.task_key === 'fails');
    assert.deepEqual(
      again.map((x) => [x.attempt, x.verdict, x.forced]),
      [
        [1, 'FAIL', true],
        [2, 'FAIL', true],
      ],
    );
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8'));
    assert.equal(state.resumes.at(-1).forced, true);
    assert.match((await cli(['runs', runId, '--home', home])).stdout, /^forced: run with --force over lint errors in its manifest \(forced: resume by /m);
  });
});
