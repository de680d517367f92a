import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// `verdict plan MANIFEST`: the forecast before launch, from the eval log (core/scoreboard/forecast.ts).

const env = { ...process.env, VERDICT_PG_URL: '' } as Record<string, string>;
const CHECK = 'test -s out.txt || { echo "out.txt missing"; exit 1; }';
const paid = (usd: number) =>
  `echo ok > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":${usd},"usage":{"input_tokens":10,"output_tokens":5}}'`;

describe('plan: a forecast before launch (e2e, built CLI)', () => {
  it('per task: attempts, cost p50/p90 and duration from past tasks of the same model and task type, else the model, else "no history"; totals; --json; a budget below p50 is flagged', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const config = path.join(dir, 'config.json');
    const engine = (model: string) => ({ binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', model, retry_context: 'file' });
    fs.writeFileSync(config, JSON.stringify({ engines: { paid: engine('acme/hist'), fresh: engine('acme/new') } }));
    // History: three tasks of acme/hist on task type `test` costing $0.01, $0.02 and (two attempts: a FAIL, then a PASS) $0.03 + $0.03.
    const retry = `if [ "$VERDICT_ATTEMPT" = 1 ]; then echo '{"type":"result","is_error":false,"total_cost_usd":0.03,"usage":{"input_tokens":10,"output_tokens":5}}'; exit 0; fi; ${paid(0.03)}`;
    const history = writeManifest(
      dir,
      {
        run_name: 'history',
        max_parallel: 3,
        workdir: path.join(dir, 'w1'),
        tasks: [
          scriptTask('h1', paid(0.01), CHECK, { engine: 'paid' }),
          scriptTask('h2', paid(0.02), CHECK, { engine: 'paid' }),
          scriptTask('h3', retry, CHECK, { engine: 'paid' }),
        ],
      },
      'history.swarm.json',
    );
    assert.equal((await cli(['run', history, '--home', home, '--config', config, '--no-dashboard'], { env })).exitCode, 0);
    const tasks = [
      scriptTask('same', paid(0.01), CHECK, { engine: 'paid' }),
      scriptTask('other-type', paid(0.01), CHECK, { engine: 'paid', task_type: 'docs' }),
      scriptTask('new-model', paid(0.01), CHECK, { engine: 'fresh' }),
    ];
    const manifest = writeManifest(dir, { run_name: 'planned', budget_usd: 0.02, workdir: path.join(dir, 'w2'), tasks });
    const started = Date.now();
    const r = await cli(['plan', manifest, '--home', home, '--config', config], { env });
    console.log(`      verdict plan took ${Date.now() - started} ms (process start included)\n${r.stdout.replace(/^/gm, '      | ')}`);
    assert.equal(r.exitCode, 0, r.all);
    // p50 of {0.01, 0.02, 0.06} is 0.02, p90 0.06; attempts p50 1.
    assert.match(r.stdout, /same\s+paid\/acme\/hist\s+1\s+\$0\.02\s+\$0\.06\s+\S+\s+3 past task\(s\), task type test/);
    assert.match(r.stdout, /other-type\s+paid\/acme\/hist\s+1\s+\$0\.02\s+\$0\.06\s+\S+\s+3 past task\(s\), this model, any task type/);
    assert.match(r.stdout, /new-model\s+fresh\/acme\/new\s+—\s+—\s+—\s+—\s+no history/);
    // new-model has no history: the total is unknown, at least what the two others are expected to cost.
    assert.match(
      r.stdout,
      /total: cost unknown — at least \$0\.04 expected \(p50\), \$0\.12 at p90 from the others; 1 of 3 task\(s\) have no known cost \(1 without history\)/,
    );
    assert.match(
      r.stdout,
      /warning: budget_usd \$0\.02 is below the expected cost of its tasks with a known cost, \$0\.04 \(p50; \$0\.12 at p90\), and 1 more task\(s\) of unknown cost/,
    );
    assert.equal(fs.existsSync(path.join(dir, 'w2')), false, 'plan runs nothing');
    const j = await cli(['plan', manifest, '--home', home, '--config', config, '--json'], { env });
    const f = JSON.parse(j.stdout) as {
      budgetMicroUsd: number;
      tasks: { key: string; basis: string; figures: { tasks: number; costMedianMicroUsd: number } | null }[];
      total: { costMedianMicroUsd: number | null; known: { costMedianMicroUsd: number }; withoutHistory: number; costUnknown: number };
    };
    assert.deepEqual(
      f.tasks.map((t) => [t.key, t.basis, t.figures?.tasks ?? null, t.figures?.costMedianMicroUsd ?? null]),
      [
        ['same', 'model+task_type', 3, 20000],
        ['other-type', 'model', 3, 20000],
        ['new-model', 'none', null, null],
      ],
    );
    assert.deepEqual(
      [f.budgetMicroUsd, f.total.costMedianMicroUsd, f.total.known.costMedianMicroUsd, f.total.withoutHistory, f.total.costUnknown],
      [20000, null, 40000, 1, 1],
    );
    // lint holds budget_usd against the same forecast: a warning at budget_usd naming both figures.
    const lint = await cli(['lint', manifest, '--home', home, '--config', config, '--json'], { env });
    const found = (JSON.parse(lint.stdout) as { rule: string; severity: string; message: string; line: number }[]).filter((x) => x.rule === 'budget-forecast');
    console.log(`      lint: ${found.map((x) => `${x.severity} line ${x.line}: ${x.message}`).join('; ')}`);
    assert.equal(found.length, 1, lint.stdout);
    assert.equal(found[0]?.severity, 'warning');
    assert.match(found[0]?.message ?? '', /budget_usd \$0\.02 is below the expected cost of its tasks with a known cost, \$0\.04 \(p50; \$0\.12 at p90\)/);
    assert.equal(fs.readFileSync(manifest, 'utf8').split('\n')[(found[0]?.line ?? 0) - 1]?.trim(), '"budget_usd": 0.02,');
  });

  it('a manifest nobody ran before forecasts "cost unknown", never $0; lint warns at a budget_usd below the forecast (run or task), not at one above it', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const config = path.join(dir, 'config.json');
    const engine = (model: string) => ({ binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', model, retry_context: 'file' });
    fs.writeFileSync(config, JSON.stringify({ engines: { paid: engine('acme/hist') } }));
    const fresh = writeManifest(
      dir,
      { run_name: 'fresh', budget_usd: 0.001, workdir: path.join(dir, 'w0'), tasks: [scriptTask('a', paid(0.5), CHECK, { engine: 'paid' })] },
      'fresh.swarm.json',
    );
    const cold = await cli(['plan', fresh, '--home', home, '--config', config], { env });
    const coldJson = JSON.parse((await cli(['plan', fresh, '--home', home, '--config', config, '--json'], { env })).stdout) as {
      total: { costMedianMicroUsd: number | null; costP90MicroUsd: number | null; costUnknown: number };
    };
    const coldLint = await cli(['lint', fresh, '--home', home, '--config', config], { env });
    console.log(`      no history: ${cold.stdout.split('\n').find((l) => l.startsWith('total:')) ?? ''}`);
    assert.equal(cold.exitCode, 0, cold.all);
    assert.match(cold.stdout, /^total: cost unknown \(no task has a known cost: 1 of 1 without history\)/m);
    assert.doesNotMatch(cold.stdout, /\$0\.00/, 'no $0 figure stands for "no history"');
    assert.deepEqual([coldJson.total.costMedianMicroUsd, coldJson.total.costP90MicroUsd, coldJson.total.costUnknown], [null, null, 1]);
    assert.doesNotMatch(coldLint.stdout, /budget-forecast/, 'nothing known: nothing to compare');
    // History: two tasks at $0.04.
    const history = writeManifest(
      dir,
      {
        run_name: 'history',
        max_parallel: 2,
        workdir: path.join(dir, 'w1'),
        tasks: [scriptTask('h1', paid(0.04), CHECK, { engine: 'paid' }), scriptTask('h2', paid(0.04), CHECK, { engine: 'paid' })],
      },
      'history.swarm.json',
    );
    assert.equal((await cli(['run', history, '--home', home, '--config', config, '--no-dashboard'], { env })).exitCode, 0);
    const planned = writeManifest(
      dir,
      {
        run_name: 'planned',
        budget_usd: 0.05,
        workdir: path.join(dir, 'w2'),
        tasks: [
          scriptTask('a', paid(0.04), CHECK, { engine: 'paid', budget_usd: 0.01 }),
          scriptTask('b', paid(0.04), CHECK, { engine: 'paid', budget_usd: 0.1 }),
        ],
      },
      'planned.swarm.json',
    );
    const lint = await cli(['lint', planned, '--home', home, '--config', config], { env });
    const warnings = lint.stdout.split('\n').filter((l) => l.includes('[budget-forecast]'));
    console.log(`      ${warnings.join('\n      ')}`);
    assert.equal(lint.exitCode, 0, 'a warning, not an error');
    assert.equal(warnings.length, 2, lint.stdout);
    assert.match(
      warnings[0] ?? '',
      /planned\.swarm\.json:3:\d+: warning \[budget-forecast\] budget_usd \$0\.05 is below the expected cost \$0\.08 \(p50; \$0\.08 at p90\)/,
    );
    assert.match(warnings[1] ?? '', /warning \[budget-forecast\] \(a\) task a's budget_usd \$0\.01 is below the expected cost \$0\.04 \(p50; \$0\.04 at p90\)/);
    // `verdict run` warns the same before it starts (a warning: the run goes on).
    const run = await cli(['run', planned, '--home', home, '--config', config, '--no-dashboard'], { env });
    const said = run.stderr.split('\n').filter((l) => l.includes('[budget-forecast]'));
    assert.equal(said.length, 2, run.all);
    assert.match(said[0] ?? '', /^lint: .*planned\.swarm\.json:3:\d+: warning \[budget-forecast\] budget_usd \$0\.05 is below the expected cost \$0\.08/);
  });

  it('every template plans with "no history" on an empty home; a manifest that does not load is exit 2 with its position', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const list = await cli(['init', '--list'], { env });
    const names = list.stdout
      .split('\n')
      .map((l) => l.split(/\s+/)[0])
      .filter((n): n is string => !!n);
    assert.ok(names.length >= 10, list.stdout);
    for (const name of names) {
      const into = path.join(dir, name);
      assert.equal((await cli(['init', '--template', name, '--dir', into], { env })).exitCode, 0);
      const file = fs.readdirSync(into).find((f) => /\.swarm\.jsonc?$/.test(f));
      const r = await cli(['plan', path.join(into, file as string), '--home', home], { env });
      assert.equal(r.exitCode, 0, `${name}: ${r.all}`);
      assert.match(r.stdout, /no history/, `${name}: ${r.stdout}`);
      assert.match(r.stdout, /^total: /m, name);
    }
    const bad = writeManifest(dir, { run_name: 'bad', tasks: [{ key: 'a', engine: 'nope', spec: 'x', check: 'true' }] });
    const r = await cli(['plan', bad, '--home', home], { env });
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.stderr, /test\.swarm\.json:\d+:\d+: error: tasks\[0\]\.engine: unknown engine "nope"/);
  });
});
