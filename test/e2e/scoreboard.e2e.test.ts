import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

const FIXTURES = path.resolve('test/fixtures/scoreboard');

describe('verdict models / catalog / budget (e2e, built CLI)', () => {
  it('models: the scoreboard of a Ringer log from the built CLI (sql.js wasm found beside the bundle), corrupt lines counted', async () => {
    const home = tempDir();
    const log = path.join(home, 'ringer.jsonl');
    fs.writeFileSync(log, fs.readFileSync(path.join(FIXTURES, 'ringer-runs.jsonl'), 'utf8') + '{"torn": \n');
    const r = await cli(['models', '--home', home, '--log', log, '--json']);
    assert.equal(r.exitCode, 0, r.all);
    const { view, source } = JSON.parse(r.stdout) as {
      view: { rows: { model: string; tasks: number; first_try_pass_rate: number; tier: string }[]; quarantined: unknown[] };
      source: { corrupt: number };
    };
    assert.deepEqual(
      view.rows.map((x) => [x.model, x.tasks, x.tier]),
      [['glm-4.6', 3, 'probation']],
    );
    assert.equal(view.quarantined.length, 1);
    assert.equal(source.corrupt, 1);
    const text = await cli(['models', '--home', home, '--log', log, '--task-type', 'cli']);
    assert.equal(text.exitCode, 0, text.all);
    assert.match(text.stdout, /probation\s+glm-4\.6\s+cli\s+3\s+4\s+100%\s+67%/);
    assert.match(text.stdout, /quarantined: 1 attempt/);
    assert.match(text.stderr, /1 corrupt line\(s\) skipped \(first: .*ringer\.jsonl:7: not JSON/);
    const bad = await cli(['models', '--home', home, '--since', 'someday']);
    assert.equal(bad.exitCode, 2);
    assert.match(bad.stderr, /--since: "someday" is not a date/);
  });

  it('catalog: refresh from a file, change log, --free, --explore; a wrong shape is refused (exit 2) and the snapshot kept', async () => {
    const home = tempDir();
    const a = await cli(['catalog', '--home', home, '--refresh', '--source', path.join(FIXTURES, 'catalog-a.json')]);
    assert.equal(a.exitCode, 0, a.all);
    const b = await cli(['catalog', '--home', home, '--refresh', '--source', path.join(FIXTURES, 'catalog-b.json')]);
    assert.match(b.stderr, /6 model\(s\), 5 change\(s\)/);
    const changes = await cli(['catalog', '--home', home, '--changes', '--json']);
    assert.deepEqual(
      (JSON.parse(changes.stdout) as { kind: string }[]).map((c) => c.kind),
      ['price_change', 'went_paid', 'added', 'went_free', 'removed'],
    );
    const free = await cli(['catalog', '--home', home, '--free', '--json']);
    assert.deepEqual(
      (JSON.parse(free.stdout) as { id: string }[]).map((m) => m.id),
      ['pricey/three', 'img/gen'],
    );
    const snapshot = fs.readFileSync(path.join(home, 'openrouter-catalog.json'), 'utf8');
    const badFile = path.join(home, 'bad.json');
    fs.writeFileSync(badFile, JSON.stringify({ models: [] }));
    const bad = await cli(['catalog', '--home', home, '--refresh', '--source', badFile]);
    assert.equal(bad.exitCode, 2);
    assert.match(bad.stderr, /bad\.json: data: must be an array of models.*the previous snapshot is kept/);
    assert.equal(fs.readFileSync(path.join(home, 'openrouter-catalog.json'), 'utf8'), snapshot);
    fs.writeFileSync(path.join(home, 'runs.jsonl'), '');
    const explore = await cli(['models', '--home', home, '--explore', '--json']);
    const untested = (JSON.parse(explore.stdout) as { view: { untested: { model: string }[] } }).view.untested.map((u) => u.model);
    // text→text with ≥ 32k context: free first (pricey/three went free), then by price per token.
    assert.deepEqual(untested, ['pricey/three', 'free/one', 'new/four', 'lab/alpha']);
  });

  it('budget: an attempt that could pass budget_usd is not started, its task ends BUDGET_EXCEEDED, the run reports its spend', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // A worker that reports its cost like Claude Code does ($0.40 an attempt).
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { paid: { binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', model: 'acme/paid', retry_context: 'file' } } }),
    );
    const spec = `echo ok > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":0.4,"usage":{"input_tokens":10,"output_tokens":5}}'`;
    const tasks = ['a', 'b', 'c'].map((k) => scriptTask(k, spec, 'test -s out.txt', { engine: 'paid', expect_files: ['out.txt'] }));
    const manifest = writeManifest(dir, { run_name: 'budget', max_parallel: 1, budget_usd: 1, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env: { ...process.env, VERDICT_PG_URL: '' } as Record<string, string> });
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stdout, /c\s+BUDGET_EXCEEDED\s+0 .*budget: \$0\.80 spent, and this attempt may cost up to \$0\.40: that would pass budget_usd \$1\.00/);
    assert.match(r.stdout, /^spent \$0\.8000 · budget \$1\.00 \(80 %\)$/m);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((x) => [x.task_key, x.verdict, x.cost_microusd]),
      [
        ['a', 'PASS', 400000],
        ['b', 'PASS', 400000],
      ],
    );
  });

  it('budget: parallel attempts on an engine of unknown price run one at a time until one is priced (spent ≤ budget + one attempt)', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // No catalog in this home: acme/unpriced has no price, so nothing bounds an attempt before one has run. Each
    // attempt takes a second (all three would be running at once) and reports $0.012, like Claude Code's result.
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { paid: { binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', model: 'acme/unpriced', retry_context: 'file' } } }),
    );
    const spec = `sleep 1; echo ok > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":0.012,"usage":{"input_tokens":10,"output_tokens":5}}'`;
    const tasks = ['a', 'b', 'c'].map((k) => scriptTask(k, spec, 'test -s out.txt', { engine: 'paid', expect_files: ['out.txt'] }));
    const manifest = writeManifest(dir, { run_name: 'unpriced', max_parallel: 3, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env: { ...process.env, VERDICT_PG_URL: '' } as Record<string, string> });
    const rows = readRows(home);
    const spent = rows.reduce((sum, x) => sum + (x.cost_microusd as number), 0);
    console.log(`      spent ${spent} micro-USD of a 5000 micro-USD budget (one attempt: 12000), ${rows.length} attempt(s) ran`);
    assert.ok(spent <= 5_000 + 12_000, `spent ${spent} micro-USD: more than the budget plus one attempt\n${r.all}`);
    assert.equal(rows.length, 1, r.all);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.all, /cost of an attempt on paid \(acme\/unpriced\) is unknown .* one at a time/);
    assert.equal((r.stdout.match(/BUDGET_EXCEEDED/g) ?? []).length >= 2, true, r.stdout);
  });

  it("budget: a running attempt is stopped when a sibling's finished spend passes the budget; its task ends BUDGET_EXCEEDED, its work kept", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // Two engines of unknown price (each its own first attempt, so both start): `quick` reports $0.012 at once, past
    // the $0.005 budget; `long` works until it is stopped (without the stop it would run to its 120 s timeout).
    const config = path.join(dir, 'config.json');
    const engine = (model: string) => ({ binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', model, retry_context: 'file' });
    fs.writeFileSync(config, JSON.stringify({ engines: { quick: engine('acme/quick'), long: engine('acme/long') } }));
    const quick = `echo ok > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":0.012,"usage":{"input_tokens":10,"output_tokens":5}}'`;
    const long = `echo partial > draft.txt; while true; do echo working; sleep 0.2; done`;
    const tasks = [
      scriptTask('long', long, 'test -s out.txt', { engine: 'long', expect_files: ['out.txt'], timeout_s: 120 }),
      scriptTask('quick', quick, 'test -s out.txt', { engine: 'quick', expect_files: ['out.txt'] }),
    ];
    const manifest = writeManifest(dir, { run_name: 'stop-mid-run', max_parallel: 2, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env: { ...process.env, VERDICT_PG_URL: '' } as Record<string, string> });
    const rows = readRows(home);
    const spent = rows.reduce((sum, x) => sum + ((x.cost_microusd as number | null) ?? 0), 0);
    console.log(
      `      spent ${spent} micro-USD of a 5000 micro-USD budget; rows: ${rows.map((x) => `${x.task_key as string} ${x.verdict as string}`).join(', ')}`,
    );
    assert.equal(r.exitCode, 1, r.all);
    const longRow = rows.find((x) => x.task_key === 'long');
    assert.equal(longRow?.verdict, 'CANCELLED', r.all);
    assert.match(String(longRow?.notes ?? '') + r.all, /spent passed budget_usd \$0\.0050; this attempt was stopped/);
    assert.match(r.stdout, /long\s+BUDGET_EXCEEDED/, r.stdout);
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', fs.readdirSync(path.join(home, 'runs'))[0] ?? '', 'state.json'), 'utf8')) as {
      tasks: { key: string; status: string; dir: string }[];
    };
    const longState = state.tasks.find((t) => t.key === 'long');
    assert.equal(longState?.status, 'BUDGET_EXCEEDED');
    assert.ok(fs.existsSync(path.join(longState?.dir ?? '', 'draft.txt')), "the stopped attempt's work is kept");
  });

  it("budget: the eval log's p90 cost of (model, task_type) is reserved before an attempt of an engine the catalog does not price", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { paid: { binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', model: 'acme/hist', retry_context: 'file' } } }),
    );
    const spec = `echo ok > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":0.012,"usage":{"input_tokens":10,"output_tokens":5}}'`;
    const env = { ...process.env, VERDICT_PG_URL: '' } as Record<string, string>;
    // History: one priced attempt of acme/hist on task type 'test' ($0.012), in a run without a budget.
    const first = writeManifest(
      dir,
      {
        run_name: 'history',
        workdir: path.join(dir, 'work1'),
        tasks: [scriptTask('h', spec, 'test -s out.txt', { engine: 'paid', expect_files: ['out.txt'] })],
      },
      'history.swarm.json',
    );
    assert.equal((await cli(['run', first, '--home', home, '--config', config], { env })).exitCode, 0);
    // Two parallel attempts under $0.03: each reserves the p90 ($0.012), so both start at once (no one-at-a-time
    // wait), and a third would be refused up front.
    const tasks = ['a', 'b', 'c'].map((k) => scriptTask(k, spec, 'test -s out.txt', { engine: 'paid', expect_files: ['out.txt'] }));
    const manifest = writeManifest(dir, { run_name: 'p90', max_parallel: 3, budget_usd: 0.03, workdir: path.join(dir, 'work2'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    const rows = readRows(home).filter((x) => x.run_name === 'p90');
    console.log(
      `      spent ${rows.reduce((sum, x) => sum + (x.cost_microusd as number), 0)} micro-USD of a 30000 micro-USD budget, ${rows.length} attempt(s)`,
    );
    assert.doesNotMatch(r.all, /is unknown/, 'the eval log priced acme/hist');
    assert.equal(rows.length, 2, r.all);
    assert.match(r.stdout, /BUDGET_EXCEEDED\s+0 .*this attempt may cost up to \$0\.01: that would pass budget_usd \$0\.03/, r.stdout);
  });

  it('a Postgres that is down never fails a run: rows wait in the outbox', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const manifest = writeManifest(dir, { run_name: 'pg-down', workdir: path.join(dir, 'work'), tasks: [scriptTask('a', 'echo hi > a.txt', 'test -s a.txt')] });
    const r = await cli(['run', manifest, '--home', home], {
      env: { ...process.env, VERDICT_PG_URL: 'postgres://nobody@127.0.0.1:1/none' } as Record<string, string>,
    });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stdout, /postgres: rows wait in the outbox/);
    assert.equal(readRows(home).length, 1);
  });
});
