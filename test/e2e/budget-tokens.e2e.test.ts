import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// Prices that match the bill, subscription logins counted in tokens (budget_tokens), readers reserving their own p90,
// and a resumed run's budget (docs/scoreboard.md "Cost and budget"). The engines are bash scripts printing opencode's
// JSON (one step_finish per model call), read while they run as the real opencode's output is.

const env = { ...process.env, VERDICT_PG_URL: '' } as Record<string, string>;
type Row = Record<string, unknown>;
const spentOf = (rows: Row[]) => rows.reduce((sum, x) => sum + ((x.cost_microusd as number | null) ?? 0), 0);
const tokensOf = (rows: Row[]) => rows.reduce((sum, x) => sum + ((x.worker_tokens as number | null) ?? 0), 0);
const runIdOf = (home: string) => fs.readdirSync(path.join(home, 'runs'))[0] ?? '';
const stateOf = (home: string) =>
  JSON.parse(fs.readFileSync(path.join(home, 'runs', runIdOf(home), 'state.json'), 'utf8')) as {
    tasks: { key: string; status: string; dir: string; reason?: string }[];
    spend?: Record<string, unknown>;
  };
const statusOf = (home: string) => Object.fromEntries(stateOf(home).tasks.map((t) => [t.key, t.status]));
const check = 'test -s out.txt || { echo "out.txt missing"; exit 1; }';

/** One opencode step_finish: `input` excludes the cache and `output` the reasoning, as opencode prints them. */
function step(reason: string, t: { input: number; output: number; reasoning?: number; read?: number; write?: number }, costUsd = 0): string {
  return `{"type":"step_finish","part":{"type":"step-finish","reason":"${reason}","tokens":{"input":${t.input},"output":${t.output},"reasoning":${t.reasoning ?? 0},"cache":{"write":${t.write ?? 0},"read":${t.read ?? 0}}},"cost":${costUsd}}}`;
}

/** A worker making `steps` model calls of 1000 in + 50 out tokens (1050 each), `costUsd` each, one every `everyS` s. */
function streamingWorker(steps: number, costUsd: number, everyS = 0.2): string {
  const s = (reason: string) => step(reason, { input: 1000, output: 50 }, costUsd);
  return `echo partial > draft.txt; for i in $(seq ${steps}); do echo '${s('tool-calls')}'; sleep ${everyS}; done; echo '${s('stop')}'; echo ok > out.txt`;
}

/** Config whose engines print opencode's JSON; `extra` adds fields to each engine entry, `top` to the config. */
function config(dir: string, engines: Record<string, Record<string, unknown>>, top: Record<string, unknown> = {}): string {
  const file = path.join(dir, 'config.json');
  const entry = (name: string, extra: Record<string, unknown>) => ({
    binary: 'bash',
    argv: ['-c', '{spec}'],
    output: 'opencode',
    model: `acme/${name}`,
    retry_context: 'file',
    ...extra,
  });
  fs.writeFileSync(file, JSON.stringify({ engines: Object.fromEntries(Object.entries(engines).map(([n, e]) => [n, entry(n, e)])), ...top }));
  return file;
}

describe('budget: prices that match the bill, subscription logins and budget_tokens, readers and resume (e2e, built CLI)', () => {
  it("cache writes and reasoning tokens are priced at the catalog's input_cache_write and internal_reasoning; without those prices, with the rest", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // $1/Mtok in, $2/Mtok out, $0.10 cache read, $1.25 cache write, $4 reasoning; acme/plain gives no write or
    // reasoning price (0 is no price: a write or a thought is never free).
    const catalog = path.join(dir, 'catalog.json');
    const model = (id: string, pricing: Record<string, string>) => ({
      id,
      name: id,
      context_length: 100000,
      pricing: { prompt: '0.000001', completion: '0.000002', input_cache_read: '0.0000001', ...pricing },
      architecture: { modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'] },
    });
    fs.writeFileSync(
      catalog,
      JSON.stringify({
        data: [model('acme/full', { input_cache_write: '0.00000125', internal_reasoning: '0.000004' }), model('acme/plain', { internal_reasoning: '0' })],
      }),
    );
    assert.equal((await cli(['catalog', '--home', home, '--refresh', '--source', catalog], { env })).exitCode, 0);
    const cfg = config(dir, { full: {}, plain: {} });
    // One call: 1,000 fresh input + 3,000 read from the cache + 2,000 written to it; 100 output + 400 reasoning; no cost.
    const spec = `echo ok > out.txt; echo '${step('stop', { input: 1000, output: 100, reasoning: 400, read: 3000, write: 2000 })}'`;
    const tasks = [
      scriptTask('f', spec, check, { engine: 'full', expect_files: ['out.txt'] }),
      scriptTask('p', spec, check, { engine: 'plain', expect_files: ['out.txt'] }),
    ];
    const r = await cli(['run', writeManifest(dir, { run_name: 'prices', workdir: path.join(dir, 'work'), tasks }), '--home', home, '--config', cfg], { env });
    assert.equal(r.exitCode, 0, r.all);
    const rows = Object.fromEntries(readRows(home).map((x) => [x.task_key, x]));
    console.log(
      `      6,000 in (3,000 read, 2,000 written), 500 out (400 reasoning): ${String(rows.f?.cost_microusd)} micro-USD with write and reasoning prices, ${String(rows.p?.cost_microusd)} without`,
    );
    assert.deepEqual(
      [rows.f?.tokens_in, rows.f?.tokens_cached, rows.f?.tokens_cache_write, rows.f?.tokens_out, rows.f?.tokens_reasoning],
      [6000, 3000, 2000, 500, 400],
    );
    // 1,000 × 1 + 3,000 × 0.1 + 2,000 × 1.25 + 100 × 2 + 400 × 4 = 1000 + 300 + 2500 + 200 + 1600
    assert.equal(rows.f?.cost_microusd, 5_600);
    // Without them: 3,000 × 1 + 3,000 × 0.1 + 500 × 2
    assert.equal(rows.p?.cost_microusd, 4_300);
  });

  it('a subscription login: rows record tokens, cost null and billing "subscription"; budget_usd does not count it, budget_tokens does and stops it mid-run', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // The engine even reports a cost ($0.0002 a call): on a flat-rate login nothing is paid per token, so it is not
    // the cost and budget_usd ($0.001, five calls' worth) does not stop it. budget_tokens (20,000: 19 calls) does.
    const cfg = config(dir, { sub: {} }, { logins: { flat: { engines: ['sub'], max_parallel: 3, billing: 'subscription' } } });
    const tasks = ['a', 'b', 'c'].map((k) => scriptTask(k, streamingWorker(150, 0.0002), check, { engine: 'sub', expect_files: ['out.txt'], timeout_s: 120 }));
    const manifest = writeManifest(dir, {
      run_name: 'flat',
      max_parallel: 3,
      budget_usd: 0.001,
      budget_tokens: 20_000,
      workdir: path.join(dir, 'work'),
      tasks,
    });
    const r = await cli(['run', manifest, '--home', home, '--config', cfg], { env });
    const rows = readRows(home);
    const used = tokensOf(rows);
    console.log(
      `      used ${used} tokens of a 20,000-token budget (${((used / 20_000 - 1) * 100).toFixed(1)} % over; one whole attempt: 158,550), ${rows.length} attempt(s) ran; cost ${rows.map((x) => String(x.cost_microusd)).join(', ')}`,
    );
    assert.equal(r.exitCode, 1, r.all);
    assert.equal(rows.length, 1, `unknown token use: one attempt at a time, the others refused after it\n${r.all}`);
    assert.equal(rows[0]?.billing, 'subscription');
    assert.equal(rows[0]?.cost_microusd, null);
    assert.ok(used > 20_000 && used <= 22_000, `used ${used} tokens: the budget stops it at most 10 % over\n${r.all}`);
    assert.match(r.all, /tokens of an attempt on sub \(acme\/sub\) are unknown .* one at a time/);
    assert.deepEqual(Object.values(statusOf(home)), ['BUDGET_EXCEEDED', 'BUDGET_EXCEEDED', 'BUDGET_EXCEEDED'], r.all);
    const stopped = stateOf(home).tasks.find((t) => t.key === rows[0]?.task_key);
    assert.match(stopped?.reason ?? '', /budget: [\d,]+ tokens used passed budget_tokens 20,000 tokens; this attempt was stopped/);
    const refused = stateOf(home).tasks.filter((t) => t.key !== rows[0]?.task_key);
    for (const t of refused) assert.match(t.reason ?? '', /this attempt may cost up to [\d,]+ tokens: that would pass budget_tokens 20,000 tokens/);
    const runs = await cli(['runs', runIdOf(home), '--home', home], { env });
    assert.match(runs.stdout, /^spent \$0\.0000 · budget \$0\.0010 \(0 %\) · tokens [\d,]+ · budget 20,000 tokens \(1\d\d %\)$/m, runs.stdout);
  });

  it("a task's budget_tokens is an envelope for all its attempts: with max_attempt_tokens a retry that could pass it does not start", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const cfg = config(dir, { meter: {} });
    // `retry` fails its check at 2 × 1050 tokens an attempt; its first attempt reserves 2,000 (max_attempt_tokens), the
    // second the most an attempt of its engine used (2,100): 4,200 would pass its envelope of 3,000. `other` has no
    // envelope and PASSes.
    const tasks = [
      scriptTask('retry', streamingWorker(1, 0, 0.01).replace('echo ok > out.txt', 'true'), check, {
        engine: 'meter',
        max_attempts: 3,
        budget_tokens: 3000,
        max_attempt_tokens: 2000,
      }),
      scriptTask('other', streamingWorker(1, 0, 0.01), check, { engine: 'meter', expect_files: ['out.txt'] }),
    ];
    const r = await cli(['run', writeManifest(dir, { run_name: 'tok-envelope', workdir: path.join(dir, 'work'), tasks }), '--home', home, '--config', cfg], {
      env,
    });
    const rows = readRows(home);
    console.log(
      `      retry: ${rows.filter((x) => x.task_key === 'retry').length} attempt(s), ${tokensOf(rows.filter((x) => x.task_key === 'retry'))} tokens of 3,000`,
    );
    assert.deepEqual(statusOf(home), { retry: 'BUDGET_EXCEEDED', other: 'PASS' }, r.all);
    assert.equal(rows.filter((x) => x.task_key === 'retry').length, 1, r.all);
    assert.match(
      stateOf(home).tasks.find((t) => t.key === 'retry')?.reason ?? '',
      /task retry has 2,100 tokens spent, and this attempt may cost up to 2,100 tokens: that would pass the task's budget_tokens 3,000 tokens/,
    );
  });

  it("bad token budgets and billing are load errors with their position: negative, zero, fractional, non-numeric; a login's billing in the config", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const good = (k: string, extra: Record<string, unknown>) => scriptTask(k, 'echo ok > out.txt', check, { expect_files: ['out.txt'], ...extra });
    const tasks = [
      good('a', { budget_tokens: -1 }),
      good('b', { max_attempt_tokens: 0 }),
      good('c', { budget_tokens: '5' }),
      good('d', { budget_tokens: 1.5 }),
    ];
    const manifest = writeManifest(dir, {
      run_name: 'bad',
      budget_tokens: 0,
      logins: { l: { engines: ['script'], max_parallel: 1, billing: 'free' } },
      workdir: path.join(dir, 'work'),
      tasks,
    });
    const r = await cli(['run', manifest, '--home', home], { env });
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: budget_tokens: must be >= 1, got 0/);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: tasks\[0\]\.budget_tokens: must be >= 1, got -1/);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: tasks\[1\]\.max_attempt_tokens: must be >= 1, got 0/);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: tasks\[2\]\.budget_tokens: .*integer/);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: tasks\[3\]\.budget_tokens: .*integer/);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: logins\.l\.billing: .*(subscription|allowed)/);
    assert.equal(fs.existsSync(path.join(home, 'runs')), false, 'nothing ran');
    const cfg = config(dir, { meter: {} }, { logins: { flat: { engines: ['meter'], max_parallel: 1, billing: 'flat' } } });
    const ok = writeManifest(dir, { run_name: 'ok', workdir: path.join(dir, 'work'), tasks: [good('a', {})] }, 'ok.swarm.json');
    const r2 = await cli(['run', ok, '--home', home, '--config', cfg], { env });
    assert.equal(r2.exitCode, 2, r2.all);
    assert.match(r2.all, /logins\.flat\.billing.*must be "subscription" or "metered", got "flat"/);
  });

  it('a reviewer reserves the p90 of past reviews of its model before it starts: one that would pass the budget does not run', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // The reviewer approves and reports $0.004 a review. A first run without a budget puts two reviews in the eval
    // log. Then, under $0.005, a worker spends $0.002: the reviewer's p90 ($0.004) would pass the budget, so it must
    // not start. Reserving nothing (no catalog price, no max_attempt_usd) it ran and the task PASSed at $0.006.
    const answer = `{"type":"text","part":{"messageID":"m1","text":"{\\"verdict\\": \\"approve\\", \\"concerns\\": []}"}}`;
    fs.writeFileSync(path.join(bin, 'rev'), `#!/bin/bash\necho '${answer}'\necho '${step('stop', { input: 100, output: 10 }, 0.004)}'\n`, { mode: 0o755 });
    const cfg = path.join(dir, 'config.json');
    fs.writeFileSync(
      cfg,
      JSON.stringify({
        engines: {
          meter: { binary: 'bash', argv: ['-c', '{spec}'], output: 'opencode', model: 'acme/meter', retry_context: 'file' },
          rev: { binary: 'rev', argv: ['{spec}'], install: 'a test fixture', output: 'opencode', model: 'acme/rev' },
        },
      }),
    );
    const worker = `echo ok > out.txt; echo '${step('stop', { input: 1000, output: 50 }, 0.002)}'`;
    const task = (k: string) => scriptTask(k, worker, check, { engine: 'meter', expect_files: ['out.txt'], review: { engines: ['rev'] } });
    const runEnv = { ...env, PATH: `${bin}:${process.env.PATH}` };
    const first = await cli(
      [
        'run',
        writeManifest(dir, { run_name: 'history', workdir: path.join(dir, 'w1'), tasks: [task('h1'), task('h2')] }, 'h.swarm.json'),
        '--home',
        home,
        '--config',
        cfg,
      ],
      { env: runEnv },
    );
    assert.equal(first.exitCode, 0, first.all);
    assert.equal(readRows(home).filter((x) => x.step === 'review' && x.cost_microusd === 4000).length, 2, first.all);
    const r = await cli(
      [
        'run',
        writeManifest(dir, { run_name: 'capped', budget_usd: 0.005, workdir: path.join(dir, 'w2'), tasks: [task('a')] }),
        '--home',
        home,
        '--config',
        cfg,
      ],
      { env: runEnv },
    );
    const rows = readRows(home).filter((x) => x.run_name === 'capped');
    const review = rows.find((x) => x.step === 'review');
    console.log(
      `      the reviewer's p90 $0.004 after a $0.002 worker under $0.005: spent ${spentOf(rows)} micro-USD; review row: exit ${String(review?.worker_exit_code)}, ${String(review?.notes ?? '').slice(0, 100)}`,
    );
    assert.equal(spentOf(rows), 2_000, `only the worker spent: the reviewer did not run\n${r.all}`);
    assert.ok(!review || (review.worker_exit_code === null && review.cost_microusd === null), `the reviewer did not run: ${JSON.stringify(review)}`);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.all, /reviewer could not run: not started: budget: .*may cost up to \$0\.0040: that would pass budget_usd \$0\.0050/, r.all);
  });

  it('resume keeps what the run spent: a BUDGET_EXCEEDED task stays refused under the same budget, and --budget-usd raises it', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const cfg = config(dir, { meter: { max_attempt_usd: 0.002 } });
    // Three tasks one after another at $0.002 each under $0.005: a and b run, c (0.004 + 0.002) is refused.
    const worker = `echo ok > out.txt; echo '${step('stop', { input: 1000, output: 50 }, 0.002)}'`;
    const tasks = ['a', 'b', 'c'].map((k) => scriptTask(k, worker, check, { engine: 'meter', expect_files: ['out.txt'] }));
    const r = await cli(
      [
        'run',
        writeManifest(dir, { run_name: 'resumable', max_parallel: 1, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks }),
        '--home',
        home,
        '--config',
        cfg,
      ],
      { env },
    );
    assert.equal(r.exitCode, 1, r.all);
    assert.deepEqual(statusOf(home), { a: 'PASS', b: 'PASS', c: 'BUDGET_EXCEEDED' }, r.all);
    const runId = runIdOf(home);
    // Resumed under the same budget: the $0.004 spent still counts, so c is refused again (from $0 it would run).
    const same = await cli(['resume', runId, '--home', home, '--config', cfg], { env });
    console.log(`      resume under $0.005: c ${statusOf(home).c}, ${readRows(home).length} row(s) in all`);
    assert.equal(same.exitCode, 1, same.all);
    assert.equal(statusOf(home).c, 'BUDGET_EXCEEDED', same.all);
    assert.equal(readRows(home).length, 2, `no attempt of c ran\n${same.all}`);
    assert.match(same.all, /the run goes on from what it spent before: spent \$0\.0040 · budget \$0\.0050/);
    assert.match(stateOf(home).tasks.find((t) => t.key === 'c')?.reason ?? '', /\$0\.0040 spent.*that would pass budget_usd \$0\.0050/);
    // Bad values are refused before anything is taken over.
    const bad = await cli(['resume', runId, '--home', home, '--config', cfg, '--budget-usd=-1'], { env });
    assert.equal(bad.exitCode, 2, bad.all);
    assert.match(bad.all, /--budget-usd: must be a number of US dollars more than 0/);
    // A higher budget: c runs and passes; the run's spend is all three.
    const raised = await cli(['resume', runId, '--home', home, '--config', cfg, '--budget-usd', '0.01'], { env });
    const spend = stateOf(home).spend as { spentMicroUsd: number; budgetMicroUsd: number };
    console.log(`      resume --budget-usd 0.01: c ${statusOf(home).c}; state.json spend ${spend.spentMicroUsd} of ${spend.budgetMicroUsd} micro-USD`);
    assert.equal(raised.exitCode, 0, raised.all);
    assert.deepEqual(statusOf(home), { a: 'PASS', b: 'PASS', c: 'PASS' }, raised.all);
    assert.deepEqual([spend.spentMicroUsd, spend.budgetMicroUsd], [6_000, 10_000]);
    // A later rerun goes on under the raised budget, not the manifest's $0.005 (under which c would be refused).
    const again = await cli(['rerun', runId, 'c', '--home', home, '--config', cfg], { env });
    const after = stateOf(home).spend as { spentMicroUsd: number; budgetMicroUsd: number };
    assert.equal(again.exitCode, 0, again.all);
    assert.match(again.all, /the run goes on from what it spent before: spent \$0\.0060 · budget \$0\.0100/);
    assert.deepEqual([after.spentMicroUsd, after.budgetMicroUsd], [8_000, 10_000]);
  });
});
