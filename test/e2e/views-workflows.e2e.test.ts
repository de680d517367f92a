import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// Validated and council runs in the CLI's tables (`verdict run`'s, `verdict runs RUN` and its --json): members under
// their lead with role, number, letter and verdict, grouped from the compiled manifest's structure, never from keys.

interface JsonRow {
  key: string;
  status: string;
  after: string[];
  engine: string;
  model: string | null;
  role?: string;
  blockedBy?: string[];
  lead?: string;
  member?: number;
  letter?: string | null;
  blocking?: boolean;
}

function stateOf(home: string): { runId: string; inputNames?: Record<string, Record<string, string>> } {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as {
    runId: string;
    inputNames?: Record<string, Record<string, string>>;
  };
}

const tableOf = (stdout: string) => stdout.slice(stdout.indexOf('\ntask ')).trim().split('\n');

describe('the CLI tables: validated and council members under their lead', function () {
  this.timeout(240000);

  it('validate: the workers under the validator with their letters; the blocked validator names the worker; look-alike keys stay plain tasks', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // Worker 2 fails its check; `sort--w3` and `x--w1` are plain tasks whose keys only look like workers (`sort--w3`
    // even fails, and is listed before the validated task).
    const manifest = writeManifest(dir, {
      run_name: 'views-validate',
      workdir: 'work',
      max_parallel: 2,
      tasks: [
        scriptTask('sort--w3', 'echo cat > sort.sh', 'echo "plain task failed"; exit 1', { max_attempts: 1 }),
        scriptTask(
          'sort',
          'if [ "$VERDICT_TASK_KEY" = sort--w2 ]; then echo cat > sort.sh; else echo sort > sort.sh; fi',
          'test "$(printf "b\\na\\n" | bash sort.sh | head -n 1)" = a || { echo "sort.sh does not sort"; exit 1; }',
          {
            max_attempts: 1,
            validate: {
              engines: [
                { engine: 'script', model: 'm1' },
                { engine: 'script', model: 'm2' },
              ],
              model: 'judge',
              report: 'report.md',
              spec: 'ls "$VERDICT_INPUTS" > report.md',
              check: 'test -s report.md',
            },
          },
        ),
        scriptTask('x--w1', 'echo x > x.txt', 'test -s x.txt'),
      ],
    });
    const run = await cli(['run', manifest, '--home', home, '--no-dashboard']);
    assert.equal(run.exitCode, 1, run.all);
    const { runId, inputNames } = stateOf(home);
    // The validator never ran, so no letters were drawn: none is shown.
    assert.equal(inputNames?.sort, undefined);

    const table = tableOf(run.stdout);
    const at = (re: RegExp) => table.findIndex((l) => re.test(l));
    const sort = at(/^sort\s+BLOCKED\s/);
    assert.ok(sort > 0, table.join('\n'));
    assert.match(table[sort] ?? '', /validator of 2 workers; blocked by worker 2 \(sort--w2 FAIL\)/);
    assert.match(table[sort + 1] ?? '', /^ {2}sort--w1\s+PASS\s+1\s.*worker 1 · script\/m1$/);
    assert.match(table[sort + 2] ?? '', /^ {2}sort--w2\s+FAIL\s+1\s.*worker 2 · script\/m2 · .*does not sort/);
    assert.match(table[at(/sort--w3/)] ?? '', /^sort--w3\s+FAIL\s/, 'a look-alike is a task of its own, not indented');
    assert.match(table[at(/x--w1/)] ?? '', /^x--w1\s+PASS\s/);
    assert.equal(table.filter((l) => /^ {2}/.test(l)).length, 2, 'only the two real workers are members');

    const listed = await cli(['runs', runId, '--home', home]);
    assert.equal(listed.exitCode, 0, listed.all);
    const rows = listed.stdout.trim().split('\n').slice(2);
    const i = rows.findIndex((l) => /^sort\s/.test(l));
    assert.match(rows[i] ?? '', /^sort\s+BLOCKED\s+—\s+0\s+validator of 2 workers; blocked by worker 2 \(sort--w2 FAIL\); prerequisite sort--w2/);
    assert.match(rows[i + 1] ?? '', /^ {2}sort--w1\s+PASS\s+—\s+1\s+worker 1 · script\/m1$/);
    assert.match(rows[i + 2] ?? '', /^ {2}sort--w2\s+FAIL at check\s+—\s+1\s+worker 2 · script\/m2 · /);
    assert.match(rows.find((l) => /sort--w3/.test(l)) ?? '', /^sort--w3\s+FAIL/);

    const json = JSON.parse((await cli(['runs', runId, '--json', '--home', home])).stdout) as { tasks: JsonRow[] };
    const byKey = new Map(json.tasks.map((t) => [t.key, t]));
    const lead = byKey.get('sort');
    assert.deepEqual([lead?.role, lead?.blockedBy, lead?.engine, lead?.model], ['validator', ['sort--w2'], 'script', 'judge']);
    assert.deepEqual(
      ['sort--w1', 'sort--w2'].map((k) => {
        const m = byKey.get(k);
        return [m?.lead, m?.role, m?.member, m?.letter, m?.blocking, m?.status, m?.model];
      }),
      [
        ['sort', 'worker', 1, null, false, 'PASS', 'm1'],
        ['sort', 'worker', 2, null, true, 'FAIL', 'm2'],
      ],
    );
    const order = json.tasks.map((t) => t.key);
    assert.deepEqual(order.slice(order.indexOf('sort'), order.indexOf('sort') + 3), ['sort', 'sort--w1', 'sort--w2'], 'the workers follow their validator');
    assert.ok(order.indexOf('sort--w3') < order.indexOf('sort'), 'the look-alike keeps its own place, before the validated task');
    for (const k of ['sort--w3', 'x--w1'])
      assert.deepEqual([byKey.get(k)?.lead, byKey.get(k)?.role, byKey.get(k)?.member], [undefined, undefined, undefined], `${k} is not a member`);

    // A state file written before it carried `workflow` (stripped here): `verdict resume` takes the places from the
    // frozen manifest it compiles, so the views group the run again.
    const stateFile = path.join(home, 'runs', runId, 'state.json');
    const old = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { tasks: Record<string, unknown>[] };
    for (const t of old.tasks) delete t.workflow;
    fs.writeFileSync(stateFile, JSON.stringify(old));
    const flat = JSON.parse((await cli(['runs', runId, '--json', '--home', home])).stdout) as { tasks: JsonRow[] };
    assert.ok(
      flat.tasks.every((t) => t.role === undefined),
      'without the places nothing is grouped (no guessing from keys)',
    );
    const resumed = await cli(['resume', runId, '--home', home, '--no-dashboard']);
    assert.equal(resumed.exitCode, 1, resumed.all);
    const again = JSON.parse((await cli(['runs', runId, '--json', '--home', home])).stdout) as { tasks: JsonRow[] };
    assert.deepEqual(
      again.tasks.filter((t) => t.role).map((t) => [t.key, t.role, t.member, t.status]),
      [
        ['sort', 'validator', undefined, 'BLOCKED'],
        ['sort--w1', 'worker', 1, 'PASS'],
        ['sort--w2', 'worker', 2, 'FAIL'],
      ],
    );
  });

  it('council: answers and reviews under the chair, each with its role, number, letter and verdict', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const manifest = writeManifest(dir, {
      run_name: 'views-council',
      workdir: 'work',
      max_parallel: 3,
      tasks: [
        scriptTask('indent', 'printf "## Recommendation\\nspaces\\n" > answer.md', 'grep -qx "## Recommendation" answer.md', {
          council: {
            members: [
              { engine: 'script', model: 'm1' },
              { engine: 'script', model: 'm2' },
            ],
            review: { spec: 'ls "$VERDICT_INPUTS"/answers > review.md' },
            chair: { engine: 'script', model: 'chair', spec: 'ls "$VERDICT_INPUTS"/answers > synthesis.md', check: 'test -s synthesis.md' },
          },
        }),
      ],
    });
    const run = await cli(['run', manifest, '--home', home, '--no-dashboard']);
    assert.equal(run.exitCode, 0, run.all);
    const { runId, inputNames } = stateOf(home);
    const letters = inputNames?.indent ?? {};
    assert.deepEqual(Object.keys(letters).sort(), ['indent--a1', 'indent--a2']);
    const [l1, l2] = [letters['indent--a1'], letters['indent--a2']];

    const table = tableOf(run.stdout);
    const chair = table.findIndex((l) => /^indent\s+PASS\s/.test(l));
    assert.match(table[chair] ?? '', /chair of 2 answers, 2 reviews/);
    assert.deepEqual(
      table.slice(chair + 1, chair + 5).map((l) => l.replace(/\s+PASS\s.*? (answer|review)/, ' $1')),
      [
        `  indent--a1 answer 1 · ${l1} · script/m1`,
        `  indent--a2 answer 2 · ${l2} · script/m2`,
        `  indent--r1 review 1 · by ${l1} · script/m1`,
        `  indent--r2 review 2 · by ${l2} · script/m2`,
      ],
    );

    const json = JSON.parse((await cli(['runs', runId, '--json', '--home', home])).stdout) as { tasks: JsonRow[] };
    assert.deepEqual(
      json.tasks.map((t) => [t.key, t.status, t.role, t.lead, t.member, t.letter, t.model]),
      [
        ['indent', 'PASS', 'chair', undefined, undefined, undefined, 'chair'],
        ['indent--a1', 'PASS', 'answer', 'indent', 1, l1, 'm1'],
        ['indent--a2', 'PASS', 'answer', 'indent', 2, l2, 'm2'],
        ['indent--r1', 'PASS', 'review', 'indent', 1, l1, 'm1'],
        ['indent--r2', 'PASS', 'review', 'indent', 2, l2, 'm2'],
      ],
    );
    const listed = await cli(['runs', runId, '--home', home]);
    assert.match(listed.stdout, new RegExp(`\\n {2}indent--r2\\s+PASS\\s+—\\s+1\\s+review 2 · by ${l2} · script/m2(\\n|$)`));
  });
});
