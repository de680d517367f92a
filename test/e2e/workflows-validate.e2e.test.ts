import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// Validated (docs/workflows.md "Validated"): N workers run the same task, then one read-only validator reads all their
// sealed work and writes a report its own check judges. A failed worker blocks the validator until it is rerun.

interface StateJson {
  runId: string;
  inputNames?: Record<string, Record<string, string>>;
  tasks: {
    key: string;
    status: string;
    reason?: string;
    engine: string;
    model: string | null;
    dir: string;
    commit: string | null;
    after?: string[];
    inputs?: { entries: { name: string; key: string }[] };
  }[];
}

function stateOf(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}

describe('workflows: validated', function () {
  this.timeout(240000);

  it('a failed worker blocks the validator (BLOCKED naming it); `verdict rerun RUN <key>--w2` runs it again, then the validator runs and passes', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const home = path.join(dir, 'home');
    const mayPass = path.join(dir, 'w2-may-pass');
    // Worker 2 writes a wrong script until the marker exists (the user fixed what made it fail); worker 1 is right.
    const spec = `if [ "$VERDICT_TASK_KEY" = sort--w2 ] && [ ! -e ${mayPass} ]; then echo 'cat' > sort.sh; else echo 'sort' > sort.sh; fi`;
    // The validator runs each worker's sort.sh (copied to its scratch: the inputs are read-only) and reports per folder.
    const validator = [
      'for d in "$VERDICT_INPUTS"/*/; do n=$(basename "$d"); cp "$d/sort.sh" "$TMPDIR/$n.sh";',
      '  out=$(printf "b\\na\\n" | bash "$TMPDIR/$n.sh" | tr "\\n" " ");',
      '  if [ "$out" = "a b " ]; then echo "$n: keep"; else echo "$n: reject ($out)"; fi; done > report.md',
      'echo "touched" > ../escape.txt 2>/dev/null || true',
    ].join('\n');
    const task = scriptTask(
      'sort',
      spec,
      'out=$(printf "b\\na\\n" | bash sort.sh | tr "\\n" " "); test "$out" = "a b " || { echo "sort.sh printed \'$out\'"; exit 1; }',
      {
        max_attempts: 1,
        validate: {
          engines: [
            { engine: 'script', model: 'm1' },
            { engine: 'script', model: 'm2' },
          ],
          model: 'judge',
          spec: validator,
          report: 'report.md',
          check: 'test "$(grep -c \': keep$\' report.md)" = 2 || { cat report.md; exit 1; }',
        },
      },
    );
    const file = writeManifest(repo, { worktrees: true, max_parallel: 2, tasks: [task] });
    const lint = await cli(['lint', file]);
    assert.match(lint.all, / 0 error\(s\)/, lint.all);

    const first = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(first.exitCode, 1, first.all);
    let state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['sort--w1', 'PASS'],
        ['sort--w2', 'FAIL'],
        ['sort', 'BLOCKED'],
      ],
    );
    const v = state.tasks.find((t) => t.key === 'sort');
    assert.match(v?.reason ?? '', /sort--w2/);
    assert.match(v?.reason ?? '', /FAIL/);
    assert.deepEqual(v?.after, ['sort--w1', 'sort--w2']);
    // No validator row: it never ran.
    assert.deepEqual(
      readRows(home)
        .map((r) => [r.task_key, r.model, r.verdict])
        .sort(),
      [
        ['sort--w1', 'm1', 'PASS'],
        ['sort--w2', 'm2', 'FAIL'],
      ],
    );

    fs.writeFileSync(mayPass, '');
    const rerun = await cli(['rerun', state.runId, 'sort--w2', '--home', home, '--no-dashboard']);
    assert.equal(rerun.exitCode, 0, rerun.all);
    state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['sort--w1', 'PASS'],
        ['sort--w2', 'PASS'],
        ['sort', 'PASS'],
      ],
    );
    const validated = state.tasks.find((t) => t.key === 'sort');
    // It read both workers' sealed work, under the letters drawn for the run and recorded.
    const names = state.inputNames?.sort ?? {};
    assert.deepEqual(Object.values(names).sort(), ['A', 'B']);
    assert.deepEqual(
      validated?.inputs?.entries.map((e) => [e.key, e.name]),
      [
        ['sort--w1', names['sort--w1']],
        ['sort--w2', names['sort--w2']],
      ],
    );
    const report = fs.readFileSync(path.join(validated?.dir as string, 'report.md'), 'utf8');
    assert.equal(report, ['A: keep', 'B: keep', ''].join('\n'));
    // Read-only: nothing was written beside its task dir; its branch holds the report, not the workers' work.
    assert.ok(!fs.existsSync(path.join(path.dirname(validated?.dir as string), 'escape.txt')));
    // Its row is an ordinary eval row with its own engine and model.
    const rows = readRows(home).filter((r) => r.task_key === 'sort');
    assert.deepEqual(
      rows.map((r) => [r.worker_engine, r.model, r.verdict, r.step]),
      [['script', 'judge', 'PASS', 'work']],
    );
  });

  it('lint: a validated task that is also best-of-N, a report outside the task dir, a worker key taken', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask('t', 'true', 'true', { repeat: 2, validate: { check: 'test -s validation.md', report: '../x.md' } }),
        scriptTask('t--w1', 'true', 'true'),
      ],
    });
    const r = await cli(['lint', file]);
    assert.notEqual(r.exitCode, 0, r.all);
    assert.match(r.all, /error \[validate\].*cannot also have "repeat"/);
    assert.match(r.all, /error \[validate\].*report must be inside the validator's task dir: "\.\.\/x\.md" climbs out/);
    assert.match(r.all, /error \[validate\].*the worker "t--w1" of "t" would take the key of tasks\[1\]/);
  });
});
