import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { processesWith } from '../helpers/procs';

// A hard budget over engines that report usage as they stream (docs/scoreboard.md "Cost and budget"): fake engines
// are bash scripts whose output is opencode's JSON (one step_finish per model call, each with its cost in USD), so the
// orchestrator reads their spend while they run, as it does for the real opencode.

/** Config with custom engines printing opencode's JSON; `extra` adds fields (max_attempt_usd) to each. */
function streamingConfig(dir: string, engines: Record<string, Record<string, unknown>>): string {
  const config = path.join(dir, 'config.json');
  const entry = (model: string, extra: Record<string, unknown>) => ({
    binary: 'bash',
    argv: ['-c', '{spec}'],
    output: 'opencode',
    model,
    retry_context: 'file',
    ...extra,
  });
  fs.writeFileSync(
    config,
    JSON.stringify({ engines: Object.fromEntries(Object.entries(engines).map(([name, extra]) => [name, entry(`acme/${name}`, extra)])) }),
  );
  return config;
}

/**
 * A worker that makes `steps` model calls, `costUsd` each, one every `everyS` seconds (each reported by a step_finish
 * as it happens), then the final step, then writes out.txt: a long attempt unless something stops it.
 */
function streamingWorker(steps: number, costUsd: number, everyS = 0.2): string {
  const step = (reason: string) =>
    `{"type":"step_finish","part":{"type":"step-finish","reason":"${reason}","tokens":{"input":1000,"output":50,"reasoning":0,"cache":{"write":0,"read":0}},"cost":${costUsd}}}`;
  return `echo partial > draft.txt; for i in $(seq ${steps}); do echo '${step('tool-calls')}'; sleep ${everyS}; done; echo '${step('stop')}'; echo ok > out.txt`;
}

/**
 * A reader engine's binary `<dir>/bin/runaway` that reports a model call of $0.0001 (opencode's JSON) every 0.2 s and
 * never answers nor ends; returns the bin folder to put on PATH and the engine's config entry.
 */
function runawayReader(dir: string): { bin: string; entry: Record<string, unknown> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  const step = `{"type":"step_finish","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":1000,"output":50,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0.0001}}`;
  fs.writeFileSync(path.join(bin, 'runaway'), `#!/bin/bash\nwhile :; do echo '${step}'; sleep 0.2; done\n`, { mode: 0o755 });
  return { bin, entry: { binary: 'runaway', argv: ['{spec}'], install: 'a test fixture', output: 'opencode', model: 'acme/runaway' } };
}

const env = { ...process.env, VERDICT_PG_URL: '' } as Record<string, string>;

/**
 * One task under a $0.005 run budget: a worker that spends $0.001 and writes out.txt (its check passes), then `reader`
 * (a `review` or `critique` block naming the engine `runaway`: runawayReader) streams its spend and never ends; its
 * task's timeout is 120 s. `during` is awaited while the run goes on (given the run and the reader's binary). Returns
 * the run's result, its rows, what they spent (micro-USD), its state, and its config, environment and reader's binary
 * (for a resume).
 */
async function underRunawayReader(name: string, reader: Record<string, unknown>, during?: (run: ReturnType<typeof cli>, runaway: string) => Promise<void>) {
  const dir = tempDir();
  const home = path.join(dir, 'home');
  const { bin, entry } = runawayReader(dir);
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      engines: { stream: { binary: 'bash', argv: ['-c', '{spec}'], output: 'opencode', model: 'acme/stream', retry_context: 'file' }, runaway: entry },
    }),
  );
  const tasks = [
    scriptTask('t', streamingWorker(0, 0.001, 0), 'test -s out.txt || { echo "out.txt missing"; exit 1; }', {
      engine: 'stream',
      expect_files: ['out.txt'],
      ...reader,
      timeout_s: 120,
    }),
  ];
  const manifest = writeManifest(dir, { run_name: name, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
  const started = Date.now();
  const runEnv = { ...env, PATH: `${bin}:${process.env.PATH}` };
  const run = cli(['run', manifest, '--home', home, '--config', config], { env: runEnv });
  await during?.(run, path.join(bin, 'runaway'));
  const r = await run;
  const rows = readRows(home);
  const spent = spentOf(rows);
  console.log(
    `      spent ${spent} micro-USD of a 5000 micro-USD budget (${((spent / 5000 - 1) * 100).toFixed(1)} % over), stopped after ${((Date.now() - started) / 1000).toFixed(1)} s of a 120 s timeout; rows: ${rows
      .map((x) => `${x.step as string} ${x.verdict as string} ${String(x.cost_microusd)}`)
      .join(', ')}`,
  );
  return { r, rows, spent, home, state: stateOf(home), config, runEnv, runaway: path.join(bin, 'runaway') };
}
const spentOf = (rows: Record<string, unknown>[]) => rows.reduce((sum, x) => sum + ((x.cost_microusd as number | null) ?? 0), 0);
const stateOf = (home: string) =>
  JSON.parse(fs.readFileSync(path.join(home, 'runs', fs.readdirSync(path.join(home, 'runs'))[0] ?? '', 'state.json'), 'utf8')) as {
    tasks: { key: string; status: string; dir: string; reason?: string }[];
  };

/** The first file named `name` under `root` (depth first), or null. */
function findFile(root: string, name: string): string | null {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch {
    return null;
  }
  for (const e of entries) {
    const p = path.join(root, e.name);
    if (e.isFile() && e.name === name) return p;
    if (e.isDirectory()) {
      const found = findFile(p, name);
      if (found) return found;
    }
  }
  return null;
}

/**
 * Resolves once the log `locate` finds holds `marker` in its last 64 KiB and is at most `maxBytes` long: all the step
 * wrote up to the marker is in, and no compaction of it is under way (one keeps the log over its cap until its end).
 * Rejects when `run` ends first.
 */
async function logSettled(run: Promise<unknown>, locate: () => string | null, marker: string, maxBytes: number): Promise<void> {
  let ended = false;
  void run.finally(() => (ended = true));
  for (;;) {
    if (ended) throw new Error(`the run ended before its log held ${marker}`);
    const file = locate();
    if (file) {
      const fd = fs.openSync(file, 'r');
      try {
        const size = fs.fstatSync(fd).size;
        const buf = Buffer.alloc(Math.min(size, 65536));
        fs.readSync(fd, buf, 0, buf.length, size - buf.length);
        if (size <= maxBytes && buf.toString('latin1').includes(marker)) return;
      } finally {
        fs.closeSync(fd);
      }
    }
    await new Promise((res) => setTimeout(res, 50));
  }
}

/**
 * Resolves once `ready` (polled every 50 ms; a throw counts as not yet: a file being replaced, a run not yet listed)
 * is true. Rejects, naming `what`, when `run` ends first.
 */
async function until(run: ReturnType<typeof cli>, what: string, ready: () => boolean): Promise<void> {
  let ended = false;
  void run.finally(() => (ended = true));
  for (;;) {
    try {
      if (ready()) return;
    } catch {
      // not yet
    }
    if (ended) throw new Error(`the run ended before ${what}:\n${String((await run).all)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe('budget: a hard cap over engines that stream their usage (e2e, built CLI)', () => {
  it('parallel attempts of unknown price under a tiny budget: the running one is stopped mid-run from its streamed usage; at most 10 % over', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const config = streamingConfig(dir, { stream: {} });
    // Each attempt would cost 150 × $0.0002 = $0.03 (6× the budget) over 30 s; the catalog has no price for acme/stream.
    const tasks = ['a', 'b', 'c'].map((k) =>
      scriptTask(k, streamingWorker(150, 0.0002), 'test -s out.txt', { engine: 'stream', expect_files: ['out.txt'], timeout_s: 120 }),
    );
    const manifest = writeManifest(dir, { run_name: 'stream-unpriced', max_parallel: 3, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    const rows = readRows(home);
    const spent = spentOf(rows);
    console.log(
      `      spent ${spent} micro-USD of a 5000 micro-USD budget (${((spent / 5000 - 1) * 100).toFixed(1)} % over; one whole attempt: 30000), ${rows.length} attempt(s) ran`,
    );
    assert.equal(r.exitCode, 1, r.all);
    assert.ok(spent > 5000, `the stopped attempt's spend is recorded (${spent})\n${r.all}`);
    assert.ok(spent <= 5500, `spent ${spent} micro-USD: more than 10 % over the 5000 budget\n${r.all}`);
    assert.equal(rows.length, 1, r.all);
    assert.match(r.all, /cost of an attempt on stream \(acme\/stream\) is unknown .* one at a time/);
    const state = stateOf(home);
    assert.deepEqual(
      state.tasks.map((t) => t.status),
      ['BUDGET_EXCEEDED', 'BUDGET_EXCEEDED', 'BUDGET_EXCEEDED'],
      r.all,
    );
    const stopped = state.tasks.find((t) => t.key === rows[0]?.task_key);
    assert.match(stopped?.reason ?? '', /spent passed budget_usd \$0\.0050; this attempt was stopped/);
    assert.ok(fs.existsSync(path.join(stopped?.dir ?? '', 'draft.txt')), "the stopped attempt's work is kept");
  });

  it('a Claude Code session stopped for the budget before its result keeps, in its row, the tokens its assistant messages reported (not null)', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // acme/cl at $1/Mtok in, $2/Mtok out (a context of 1,000 tokens: an attempt may cost up to $0.0012); a fake Claude
    // Code prints one assistant message of 1,000 tokens in every 0.2 s and would go on for 20 s; $0.005 stops it after
    // about five. Before, its row said tokens null and cost null: the usage lived only in the result it never printed.
    const catalog = path.join(dir, 'catalog.json');
    const arch = { modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'] };
    fs.writeFileSync(
      catalog,
      JSON.stringify({
        data: [{ id: 'acme/cl', name: 'acme/cl', context_length: 1000, pricing: { prompt: '0.000001', completion: '0.000002' }, architecture: arch }],
      }),
    );
    assert.equal((await cli(['catalog', '--home', home, '--refresh', '--source', catalog], { env })).exitCode, 0);
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { cl: { binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', model: 'acme/cl', retry_context: 'file' } } }),
    );
    const message = (i: string) =>
      `{"type":"assistant","message":{"id":"msg_${i}","model":"acme/cl","usage":{"input_tokens":1000,"output_tokens":1},"content":[{"type":"text","text":"working"}]}}`;
    const worker = `echo '{"type":"system","subtype":"init","model":"acme/cl"}'; echo partial > draft.txt; for i in $(seq 100); do echo '${message("'$i'")}'; sleep 0.2; done; echo ok > out.txt`;
    const tasks = [scriptTask('t', worker, 'test -s out.txt', { engine: 'cl', expect_files: ['out.txt'], timeout_s: 120 })];
    const manifest = writeManifest(dir, { run_name: 'claude-stopped', budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    const row = readRows(home)[0] ?? {};
    console.log(
      `      stopped at the budget: row tokens_in ${String(row.tokens_in)}, tokens_out ${String(row.tokens_out)}, cost ${String(row.cost_microusd)} micro-USD`,
    );
    assert.equal(stateOf(home).tasks[0]?.status, 'BUDGET_EXCEEDED', r.all);
    assert.ok(typeof row.tokens_in === 'number' && row.tokens_in >= 5_000, `tokens_in ${String(row.tokens_in)}\n${r.all}`);
    assert.ok(typeof row.cost_microusd === 'number' && row.cost_microusd > 5_000 && row.cost_microusd <= 5_500, `cost ${String(row.cost_microusd)}\n${r.all}`);
  });

  it('max_attempt_usd is the reserve when nothing else prices an engine: two attempts run at once, a third is refused, both stopped at the budget', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // The engine says an attempt costs at most $0.004: under $0.01 two reserve $0.008 and start together; a third
    // ($0.012 in all) would pass the budget and is refused up front. The two then stream past the budget together.
    const config = streamingConfig(dir, { capped: { max_attempt_usd: 0.004 } });
    const tasks = ['a', 'b', 'c'].map((k) =>
      scriptTask(k, streamingWorker(150, 0.0002), 'test -s out.txt', { engine: 'capped', expect_files: ['out.txt'], timeout_s: 120 }),
    );
    const manifest = writeManifest(dir, { run_name: 'stream-capped', max_parallel: 3, budget_usd: 0.01, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    const rows = readRows(home);
    const spent = spentOf(rows);
    console.log(
      `      spent ${spent} micro-USD of a 10000 micro-USD budget (${((spent / 10000 - 1) * 100).toFixed(1)} % over), ${rows.length} attempt(s) ran at once`,
    );
    assert.doesNotMatch(r.all, /is unknown/, 'max_attempt_usd bounds the engine');
    assert.equal(rows.length, 2, r.all);
    assert.ok(spent <= 11000, `spent ${spent} micro-USD: more than 10 % over the 10000 budget\n${r.all}`);
    assert.match(r.stdout, /BUDGET_EXCEEDED\s+0 .*may cost up to \$0\.0040: that would pass budget_usd \$0\.01/, r.stdout);
    assert.deepEqual(
      stateOf(home).tasks.map((t) => t.status),
      ['BUDGET_EXCEEDED', 'BUDGET_EXCEEDED', 'BUDGET_EXCEEDED'],
      r.all,
    );
  });

  it('an engine whose cost stays unknown (tokens but no cost reported, no catalog price, no max_attempt_usd) runs one attempt uncounted; the budget refuses the rest and says how to cap it', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // codex's output reports tokens and never a cost; without a model the catalog prices nothing. All four tasks ran
    // (one at a time) and the run said it had spent $0 of its $0.005: the budget capped nothing.
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({ engines: { cx: { binary: 'bash', argv: ['-c', '{spec}'], output: 'codex', retry_context: 'file' } } }));
    const spec = `echo ok > out.txt; echo '{"type":"turn.completed","usage":{"input_tokens":1000000,"cached_input_tokens":0,"output_tokens":100000,"reasoning_output_tokens":0}}'`;
    const tasks = ['a', 'b', 'c', 'd'].map((k) => scriptTask(k, spec, 'test -s out.txt', { engine: 'cx', expect_files: ['out.txt'] }));
    const manifest = writeManifest(dir, { run_name: 'uncounted', max_parallel: 4, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    const statuses = stateOf(home).tasks.map((t) => t.status);
    console.log(`      ${readRows(home).length} attempt(s) of unknown cost ran under a $0.005 budget; tasks: ${statuses.join(' ')}`);
    assert.deepEqual([...statuses].sort(), ['BUDGET_EXCEEDED', 'BUDGET_EXCEEDED', 'BUDGET_EXCEEDED', 'PASS'], r.all);
    assert.equal(readRows(home).length, 1, r.all);
    assert.match(
      r.all,
      /the cost of cx stays unknown: an attempt on it ended with no cost reported .*budget_usd cannot count its attempts; the attempt was not started\. Give the engine or the task a max_attempt_usd/,
      r.all,
    );
    // With max_attempt_usd on the engine, each attempt counts that much: the resumed run goes on under the same budget.
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { cx: { binary: 'bash', argv: ['-c', '{spec}'], output: 'codex', retry_context: 'file', max_attempt_usd: 0.001 } } }),
    );
    const runDir = fs.readdirSync(path.join(home, 'runs'))[0] ?? '';
    const again = await cli(['resume', runDir, '--home', home, '--config', config, '--no-dashboard'], { env });
    assert.deepEqual(
      stateOf(home).tasks.map((t) => t.status),
      ['PASS', 'PASS', 'PASS', 'PASS'],
      again.all,
    );
    assert.equal(readRows(home).length, 4, again.all);
  });

  it("a task's own budget_usd is an envelope for all its attempts: a retry that could pass it does not start, a long attempt is stopped at it; other tasks go on", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const config = streamingConfig(dir, { stream: {} });
    // `retry` fails its check at $0.002 an attempt (max_attempt_usd $0.002 in the task): with $0.003 in its envelope the
    // second attempt ($0.002 + $0.002) is refused. `long` streams past its $0.003 envelope and is stopped. `free` has
    // no envelope and no run budget binds it: it PASSes. A careless manifest gives max_attempts 3: still refused.
    const tasks = [
      scriptTask('retry', streamingWorker(10, 0.0002, 0.01).replace('echo ok > out.txt', 'true'), 'test -s out.txt', {
        engine: 'stream',
        max_attempts: 3,
        budget_usd: 0.003,
        max_attempt_usd: 0.002,
      }),
      scriptTask('long', streamingWorker(300, 0.0001), 'test -s out.txt', { engine: 'stream', expect_files: ['out.txt'], budget_usd: 0.003, timeout_s: 120 }),
      scriptTask('free', streamingWorker(5, 0.0002, 0.01), 'test -s out.txt', { engine: 'stream', expect_files: ['out.txt'] }),
    ];
    const manifest = writeManifest(dir, { run_name: 'envelope', max_parallel: 3, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    const rows = readRows(home);
    const byTask = (k: string) => rows.filter((x) => x.task_key === k);
    console.log(
      `      retry: ${byTask('retry').length} attempt(s), ${spentOf(byTask('retry'))} micro-USD of 3000; long: ${spentOf(byTask('long'))} micro-USD of 3000 (${((spentOf(byTask('long')) / 3000 - 1) * 100).toFixed(1)} % over); free: ${spentOf(byTask('free'))}`,
    );
    const state = stateOf(home);
    const status = Object.fromEntries(state.tasks.map((t) => [t.key, t.status]));
    assert.deepEqual(status, { retry: 'BUDGET_EXCEEDED', long: 'BUDGET_EXCEEDED', free: 'PASS' }, r.all);
    assert.equal(byTask('retry').length, 1, r.all);
    assert.match(
      state.tasks.find((t) => t.key === 'retry')?.reason ?? '',
      /task retry has \$0\.00\d+ spent, and this attempt may cost up to \$0\.00\d+: that would pass the task's budget_usd \$0\.0030/,
    );
    assert.match(
      state.tasks.find((t) => t.key === 'long')?.reason ?? '',
      /task long's \$0\.00\d+ spent passed its budget_usd \$0\.0030; this attempt was stopped/,
    );
    assert.ok(spentOf(byTask('long')) <= 3300, `long spent ${spentOf(byTask('long'))}: more than 10 % over its envelope`);
  });

  it('a worker whose output passes log_max_mb cannot cut its spend out of the log: the budget still stops it, and its row has what it spent', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const config = streamingConfig(dir, { stream: {} });
    // 300 KB of output first (the kept head of a 1 MB cap is 256 KB), then four rounds of 8 model calls at $0.001 and
    // 1.5 MB of output: each compaction cuts the round's calls out of the log, so the log holds no more than $0.008 of
    // the $0.033 spent, under the $0.01 budget. After each round the worker pauses for the supervisor's 100 ms poll to
    // cut the log (it cannot look: its output is a socket the spawn helper relays, log-cap.ts); on a machine too loaded
    // for that, two rounds share a cut, and the budget may then see $0.016 in the log itself, but the row's cost still
    // needs every cut part: the log as left holds no call (its head is the first 300 KB, its tail the last flood). After
    // the four the worker waits to be stopped: only the budget ends it (no race between the budget's stop and the
    // worker's own end).
    const step = (reason: string) =>
      `{"type":"step_finish","part":{"type":"step-finish","reason":"${reason}","tokens":{"input":1000,"output":50,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0.001}}`;
    const flood = (bytes: number) => `yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -c ${bytes}; echo`;
    // (Waiting for `stat -L /proc/$$/fd/1` to fall back under 1 MiB, as this did when stdout was the log, ends at once
    // on a relay: a socket's size is 0.)
    const settled = 'sleep 0.5';
    const round = `for i in $(seq 8); do echo '${step('tool-calls')}'; done; ${flood(1_500_000)}; ${settled}`;
    const worker = `echo partial > draft.txt; ${flood(300_000)}; for r in 1 2 3 4; do ${round}; done; sleep 600`;
    const manifest = writeManifest(dir, {
      run_name: 'cut-spend',
      budget_usd: 0.01,
      workdir: path.join(dir, 'work'),
      tasks: [scriptTask('t', worker, 'test -s out.txt', { engine: 'stream', expect_files: ['out.txt'], log_max_mb: 1, timeout_s: 120 })],
    });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    const rows = readRows(home);
    console.log(
      `      $0.001 calls, the log cut to 1 MB after each round of 8, budget $0.01: ${stateOf(home).tasks[0]?.status}, ${String(rows[0]?.cost_microusd)} micro-USD recorded`,
    );
    assert.equal(rows.length, 1, r.all);
    assert.equal(stateOf(home).tasks[0]?.status, 'BUDGET_EXCEEDED', r.all);
    assert.ok(
      ((rows[0]?.cost_microusd as number | null) ?? 0) >= 10_000,
      `recorded ${String(rows[0]?.cost_microusd)} micro-USD, the budget was 10000\n${r.all}`,
    );
  });

  it('an attempt whose worker has exited is not stopped when another passes the budget: its check goes on and it PASSes', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const config = path.join(dir, 'config.json');
    const entry = (model: string, output: string) => ({ binary: 'bash', argv: ['-c', '{spec}'], output, model, retry_context: 'file' });
    fs.writeFileSync(config, JSON.stringify({ engines: { quick: entry('acme/quick', 'claude'), stream: entry('acme/stream', 'opencode') } }));
    // The order is made by the test, not by time: `done` reports $0.001 and exits at once, and its check waits for a
    // file `go` in its tree. `spender` waits for `go` in its own tree, written once done's check has started (its
    // worker has exited then: spend.ts workerEnded), then streams past the $0.005 budget and is stopped. Done's `go` is
    // written only once spender has ended BUDGET_EXCEEDED: the budget was passed while done's check ran, at any load.
    const wait = 'until [ -e go ]; do sleep 0.05; done';
    const done = `echo ok > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":0.001,"usage":{"input_tokens":10,"output_tokens":5}}'`;
    const tasks = [
      scriptTask('done', done, `${wait}; test -s out.txt || { echo "out.txt missing"; exit 1; }`, { engine: 'quick', expect_files: ['out.txt'] }),
      scriptTask('spender', `${wait}; ${streamingWorker(150, 0.001, 0.05)}`, 'test -s out.txt || { echo "out.txt missing"; exit 1; }', {
        engine: 'stream',
        expect_files: ['out.txt'],
        timeout_s: 120,
      }),
    ];
    const manifest = writeManifest(dir, { run_name: 'checking', max_parallel: 2, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const run = cli(['run', manifest, '--home', home, '--config', config], { env });
    const runs = path.join(home, 'runs');
    const attemptFile = (key: string, file: string) => () => fs.existsSync(path.join(runs, fs.readdirSync(runs)[0] ?? '', 'tasks', key, 'attempt-1', file));
    const task = (key: string) => stateOf(home).tasks.find((t) => t.key === key);
    await until(run, "done's check and spender's worker to start", () => attemptFile('done', 'check.log')() && attemptFile('spender', 'worker.log')());
    fs.writeFileSync(path.join(task('spender')?.dir ?? '', 'go'), '');
    await until(run, 'spender to end BUDGET_EXCEEDED', () => task('spender')?.status === 'BUDGET_EXCEEDED');
    fs.writeFileSync(path.join(task('done')?.dir ?? '', 'go'), '');
    const r = await run;
    const rows = readRows(home);
    console.log(
      `      spent ${spentOf(rows)} micro-USD of a 5000 micro-USD budget; rows: ${rows.map((x) => `${x.task_key as string} ${x.verdict as string}`).join(', ')}`,
    );
    const status = Object.fromEntries(stateOf(home).tasks.map((t) => [t.key, t.status]));
    assert.deepEqual(status, { done: 'PASS', spender: 'BUDGET_EXCEEDED' }, r.all);
    assert.ok(spentOf(rows) > 5000, `the budget was passed: ${spentOf(rows)} micro-USD\n${r.all}`);
  });

  it("a reviewer whose output passes log_max_mb (the worker's code printing into it) keeps its spend in its row", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // A reviewer speaking opencode's JSON: 300 KB, 8 model calls at $0.001, 1.5 MB (the tool output of the worker's
    // code it ran), then its answer and its last call: the compaction cuts the 8 calls out of its log. It writes its
    // last lines only once the test has seen its log settled (all of its output in, within 1 MiB: no compaction under
    // way, which could lose a write made meanwhile, log-cap.ts): `go` is written then.
    const step = (reason: string) =>
      `{"type":"step_finish","part":{"type":"step-finish","reason":"${reason}","tokens":{"input":1000,"output":50,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0.001}}`;
    const flood = (bytes: number) => `yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx | head -c ${bytes}; echo`;
    const answer = `{"type":"text","part":{"messageID":"m9","text":"{\\"verdict\\": \\"approve\\", \\"concerns\\": []}"}}`;
    const go = path.join(dir, 'go');
    fs.writeFileSync(
      path.join(bin, 'rev'),
      `#!/bin/bash\n${flood(300_000)}\nfor i in $(seq 8); do echo '${step('tool-calls')}'; done\n${flood(1_500_000)}\necho FLOOD-DONE\nuntil [ -e '${go}' ]; do sleep 0.05; done\necho '${answer}'\necho '${step('stop')}'\n`,
      { mode: 0o755 },
    );
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { rev: { binary: 'rev', argv: ['{spec}'], install: 'a test fixture', output: 'opencode', model: 'acme/rev' } } }),
    );
    const manifest = writeManifest(dir, {
      run_name: 'cut-review',
      workdir: path.join(dir, 'work'),
      tasks: [
        scriptTask('t', 'echo ok > out.txt', 'test -s out.txt || { echo "out.txt missing"; exit 1; }', {
          expect_files: ['out.txt'],
          log_max_mb: 1,
          review: { engines: ['rev'] },
        }),
      ],
    });
    const run = cli(['run', manifest, '--home', home, '--config', config], { env: { ...env, PATH: `${bin}:${process.env.PATH}` } });
    await logSettled(run, () => findFile(path.join(home, 'runs'), 'review-1.log'), 'FLOOD-DONE', 1024 * 1024);
    fs.writeFileSync(go, '');
    const r = await run;
    const review = readRows(home).find((x) => x.step === 'review');
    console.log(`      a reviewer's 9 calls at 1000 micro-USD, its log cut to 1 MB: ${String(review?.cost_microusd)} micro-USD recorded`);
    assert.equal(r.exitCode, 0, r.all);
    assert.ok(((review?.cost_microusd as number | null) ?? 0) >= 9_000, `recorded ${String(review?.cost_microusd)} micro-USD of 9000\n${r.all}`);
  });

  it("a reviewer of unknown cost (no cost report, no catalog price) is charged its engine's max_attempt_usd: readers cannot pass the budget at $0", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // The reviewer approves without reporting any usage; acme/freerev has no catalog price; its engine says a run costs
    // at most $0.004. Each task's worker reports $0.001: one task and its review take the whole $0.005, so the next
    // task must not start. Counting the reviewer $0, every task ran and the reviews spent whatever they spent.
    const answer = `{"type":"text","part":{"messageID":"m1","text":"{\\"verdict\\": \\"approve\\", \\"concerns\\": []}"}}`;
    fs.writeFileSync(path.join(bin, 'freerev'), `#!/bin/bash\necho '${answer}'\n`, { mode: 0o755 });
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        engines: {
          stream: { binary: 'bash', argv: ['-c', '{spec}'], output: 'opencode', model: 'acme/stream', retry_context: 'file' },
          freerev: { binary: 'freerev', argv: ['{spec}'], install: 'a test fixture', output: 'opencode', model: 'acme/freerev', max_attempt_usd: 0.004 },
        },
      }),
    );
    const tasks = ['a', 'b', 'c'].map((k) =>
      scriptTask(k, streamingWorker(0, 0.001, 0), 'test -s out.txt', { engine: 'stream', expect_files: ['out.txt'], review: { engines: ['freerev'] } }),
    );
    const manifest = writeManifest(dir, { run_name: 'free-review', max_parallel: 1, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env: { ...env, PATH: `${bin}:${process.env.PATH}` } });
    const rows = readRows(home);
    const status = stateOf(home).tasks.map((t) => t.status);
    console.log(
      `      statuses ${status.join(' ')}; ${rows.filter((x) => x.step === 'review').length} review(s) ran, cost ${rows
        .filter((x) => x.step === 'review')
        .map((x) => String(x.cost_microusd))
        .join(', ')}`,
    );
    assert.ok(
      rows.some((x) => x.step === 'review' && x.cost_microusd === null),
      `the reviewer's cost is unknown\n${r.all}`,
    );
    assert.deepEqual(status.slice().sort(), ['BUDGET_EXCEEDED', 'BUDGET_EXCEEDED', 'PASS'], r.all);
    assert.match(r.stdout, /BUDGET_EXCEEDED\s+0 .*\$0\.0050 spent.*that would pass budget_usd \$0\.0050/, r.stdout);
  });

  it('reviewers of an engine nothing prices (no catalog price, no history, no max_attempt_usd) run one at a time until one is priced, not side by side at $0', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // Three cheap workers ($0.0001 each, bounded by max_attempt_usd) end together; each task's reviewer runs 1 s and
    // spends $0.003 (reported at its end) on acme/dearrev, which nothing prices. Reserving $0 each, the three reviews ran
    // side by side: $0.0093 of a $0.005 budget. One at a time, the first prices the engine at $0.003 and the next
    // ($0.0033 + $0.003) would pass the budget: it does not start.
    const step = `{"type":"step_finish","part":{"type":"step-finish","reason":"stop","tokens":{"input":1000,"output":50,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0.003}}`;
    const answer = `{"type":"text","part":{"messageID":"m1","text":"{\\"verdict\\": \\"approve\\", \\"concerns\\": []}"}}`;
    fs.writeFileSync(path.join(bin, 'dearrev'), `#!/bin/bash\nsleep 1\necho '${answer}'\necho '${step}'\n`, { mode: 0o755 });
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        engines: {
          stream: { binary: 'bash', argv: ['-c', '{spec}'], output: 'opencode', model: 'acme/stream', retry_context: 'file', max_attempt_usd: 0.0002 },
          dearrev: { binary: 'dearrev', argv: ['{spec}'], install: 'a test fixture', output: 'opencode', model: 'acme/dearrev' },
        },
      }),
    );
    const tasks = ['a', 'b', 'c'].map((k) =>
      scriptTask(k, streamingWorker(0, 0.0001, 0), 'test -s out.txt', { engine: 'stream', expect_files: ['out.txt'], review: { engines: ['dearrev'] } }),
    );
    const manifest = writeManifest(dir, { run_name: 'unpriced-review', max_parallel: 3, budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env: { ...env, PATH: `${bin}:${process.env.PATH}` } });
    const rows = readRows(home);
    const reviews = rows.filter((x) => x.step === 'review' && x.cost_microusd !== null);
    const spent = spentOf(rows);
    console.log(
      `      spent ${spent} micro-USD of a 5000 micro-USD budget (${((spent / 5000 - 1) * 100).toFixed(1)} % over); ${reviews.length} of 3 reviewers ran; statuses ${stateOf(
        home,
      )
        .tasks.map((t) => t.status)
        .join(' ')}`,
    );
    assert.equal(reviews.length, 1, r.all);
    assert.ok(spent <= 5000, `spent ${spent} micro-USD of a 5000 budget\n${r.all}`);
    assert.match(r.all, /cost of a reviewer on dearrev \(acme\/dearrev\) is unknown .* one at a time/, r.all);
    assert.match(r.all, /reviewer could not run: not started: budget: .*may cost up to \$0\.0030: that would pass budget_usd \$0\.0050/, r.all);
    assert.equal(stateOf(home).tasks.filter((t) => t.status === 'PASS').length, 1, r.all);
  });

  it('a reviewer whose reservation would pass the budget does not start, and the attempt it was to approve is not a PASS', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    // The worker spends $0.001 of $0.005; the reviewer may cost up to $0.0045: $0.0055 would pass the budget.
    const answer = `{"type":"text","part":{"messageID":"m1","text":"{\\"verdict\\": \\"approve\\", \\"concerns\\": []}"}}`;
    fs.writeFileSync(path.join(bin, 'freerev'), `#!/bin/bash\ntouch "${path.join(dir, 'reviewer-ran')}"\necho '${answer}'\n`, { mode: 0o755 });
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        engines: {
          stream: { binary: 'bash', argv: ['-c', '{spec}'], output: 'opencode', model: 'acme/stream', retry_context: 'file' },
          freerev: { binary: 'freerev', argv: ['{spec}'], install: 'a test fixture', output: 'opencode', model: 'acme/freerev', max_attempt_usd: 0.0045 },
        },
      }),
    );
    const tasks = [
      scriptTask('a', streamingWorker(0, 0.001, 0), 'test -s out.txt', { engine: 'stream', expect_files: ['out.txt'], review: { engines: ['freerev'] } }),
    ];
    const manifest = writeManifest(dir, { run_name: 'refused-review', budget_usd: 0.005, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env: { ...env, PATH: `${bin}:${process.env.PATH}` } });
    const state = stateOf(home);
    const review = readRows(home).find((x) => x.step === 'review');
    console.log(`      status ${state.tasks[0]?.status}; review row: ${String(review?.verdict)} ${String(review?.notes ?? '').slice(0, 120)}`);
    assert.equal(fs.existsSync(path.join(dir, 'reviewer-ran')), false, 'the reviewer did not start');
    assert.notEqual(state.tasks[0]?.status, 'PASS', r.all);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.all, /reviewer could not run: not started: budget: .*may cost up to \$0\.0045: that would pass budget_usd \$0\.0050/, r.all);
  });

  it('a runaway reviewer (it streams its usage and never ends) is stopped once the spend passes the budget: the task ends BUDGET_EXCEEDED, its work kept; at most 10 % over', async () => {
    // Its reviewer, speaking opencode's JSON on an engine nothing prices, reports a model call of $0.0001 every 0.2 s
    // and never answers nor ends: only the budget can stop it. Counted only when it ended, it ran to the task's 120 s
    // timeout and spent $0.06 of a $0.005 budget.
    const { r, spent, home, state } = await underRunawayReader('runaway-review', { review: { engines: ['runaway'] } });
    assert.equal(r.exitCode, 1, r.all);
    const task = state.tasks[0];
    assert.equal(task?.status, 'BUDGET_EXCEEDED', r.all);
    assert.match(
      task?.reason ?? '',
      /^budget: \$0\.00\d+ spent passed budget_usd \$0\.0050; this attempt was stopped \(its work is kept; resume with a higher budget/,
    );
    assert.ok(spent > 5000, `the reviewer's spend is recorded (${spent})\n${r.all}`);
    assert.ok(spent <= 5500, `spent ${spent} micro-USD: more than 10 % over the 5000 budget\n${r.all}`);
    assert.equal(fs.readFileSync(path.join(task?.dir ?? '', 'out.txt'), 'utf8'), 'ok\n', "the worker's work is kept");
    // `verdict runs RUN` says spent vs budget.
    const runs = await cli(['runs', fs.readdirSync(path.join(home, 'runs'))[0] ?? '', '--home', home], { env });
    assert.match(runs.stdout, /^spent \$0\.00\d+ · budget \$0\.0050 \(1\d\d %\)$/m, runs.stdout);
  });

  it("a runaway critic is stopped once the spend passes the budget: the task ends BUDGET_EXCEEDED, its work kept, and the critic's CANCELLED row holds what it spent", async () => {
    // As the runaway reviewer above, as the task's one critic: its check passes, then the critic streams and never ends.
    const { r, rows, spent, state } = await underRunawayReader('runaway-critic', { critique: { critics: ['runaway'] } });
    assert.equal(r.exitCode, 1, r.all);
    const task = state.tasks[0];
    assert.equal(task?.status, 'BUDGET_EXCEEDED', r.all);
    const critic = rows.filter((x) => x.step === 'critique');
    assert.deepEqual(
      critic.map((x) => [x.verdict, x.worker_engine]),
      [['CANCELLED', 'runaway']],
      r.all,
    );
    assert.ok(Number(critic[0]?.cost_microusd) > 0, `the critic's row holds what it spent: ${JSON.stringify(critic[0])}`);
    assert.ok(spent > 5000 && spent <= 5500, `spent ${spent} micro-USD: recorded, and at most 10 % over the 5000 budget\n${r.all}`);
    assert.equal(fs.readFileSync(path.join(task?.dir ?? '', 'out.txt'), 'utf8'), 'ok\n', "the worker's work is kept");
  });

  it("a consensus group's runaway inputs engine is stopped once the spend passes the budget: the group ends BUDGET_EXCEEDED, its CANCELLED row holds what it spent, nothing is left running; resumed with a higher budget it is decided without redoing its candidates", async () => {
    // Two candidates of $0.001 each pass; the group's inputs engine (distinguish.inputs) streams $0.0001 every 0.2 s and
    // never ends: only the budget can stop it, short of the group's 120 s timeout.
    const consensus = {
      repeat: 2,
      select: 'consensus',
      max_attempts: 1,
      distinguish: { inputs: { engine: 'runaway' }, probe: 'cat "$VERDICT_CASE_FILE"', max_inputs: 5 },
    };
    const { r, rows, spent, home, state, config, runEnv, runaway } = await underRunawayReader('runaway-inputs', consensus, (run, binary) =>
      until(run, 'the inputs engine to run', () => processesWith(binary).length > 0),
    );
    assert.equal(r.exitCode, 1, r.all);
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['t', 'BUDGET_EXCEEDED'],
        ['t--c1', 'PASS'],
        ['t--c2', 'PASS'],
      ],
      r.all,
    );
    assert.match(state.tasks[0]?.reason ?? '', /^budget: \$0\.00\d+ spent passed budget_usd \$0\.0050; this attempt was stopped/, r.all);
    const inputs = rows.filter((x) => x.step === 'distinguish');
    assert.deepEqual(
      inputs.map((x) => [x.verdict, x.worker_engine]),
      [['CANCELLED', 'runaway']],
      r.all,
    );
    assert.ok(Number(inputs[0]?.cost_microusd) > 0, `the inputs engine's row holds what it spent: ${JSON.stringify(inputs[0])}`);
    assert.ok(spent > 5000 && spent <= 5500, `spent ${spent} micro-USD: recorded, and at most 10 % over the 5000 budget\n${r.all}`);
    assert.deepEqual(processesWith(runaway), [], 'the inputs engine is not left running');
    // Resumed under $1 with an inputs engine that now writes one input and ends: the group is decided, its two passed
    // candidates are not run again, and the run goes on from what it spent.
    const answer = `{"type":"text","part":{"messageID":"m1","text":"wrote 01"}}`;
    const stop = `{"type":"step_finish","part":{"type":"step-finish","reason":"stop","tokens":{"input":1000,"output":50,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0.0001}}`;
    fs.writeFileSync(runaway, `#!/bin/bash\nprintf 7 > 01\necho '${answer}'\necho '${stop}'\n`, { mode: 0o755 });
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] ?? '';
    const resumed = await cli(['resume', runId, '--home', home, '--config', config, '--budget-usd', '1', '--no-dashboard'], { env: runEnv });
    const after = stateOf(home);
    const all = readRows(home);
    console.log(
      `      resumed: ${after.tasks.map((t) => `${t.key} ${t.status}`).join(', ')}; rows ${all.map((x) => `${x.task_key as string} ${x.step as string} ${x.verdict as string}`).join(', ')}`,
    );
    assert.equal(resumed.exitCode, 0, resumed.all);
    assert.deepEqual(
      after.tasks.map((t) => [t.key, t.status]),
      [
        ['t', 'PASS'],
        ['t--c1', 'PASS'],
        ['t--c2', 'PASS'],
      ],
      resumed.all,
    );
    assert.equal(all.filter((x) => x.step === 'work').length, 2, `the passed candidates ran once each\n${resumed.all}`);
    assert.deepEqual(
      all.filter((x) => x.step === 'distinguish').map((x) => x.verdict),
      ['CANCELLED', 'PASS'],
      resumed.all,
    );
    assert.deepEqual(processesWith(runaway), [], 'nothing of the inputs engine is left running');
  });

  it("a runaway ranking reviewer of a best-of-N group is stopped at the group's own budget_usd: the group ends BUDGET_EXCEEDED, its candidates' PASSes kept", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // Two candidates on the script engine (no cost) pass; the group's one ranking reviewer reports $0.0001 every 0.2 s
    // and never answers. The group's envelope is $0.002: the ranker is stopped there, never at the 120 s timeout.
    const { bin, entry } = runawayReader(dir);
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(config, JSON.stringify({ engines: { runaway: entry } }));
    const tasks = [
      scriptTask('pick', 'echo "GOOD $VERDICT_CANDIDATE" > out.txt', 'grep -q GOOD out.txt || { echo "no GOOD"; exit 1; }', {
        repeat: 2,
        select: 'ranked',
        max_attempts: 1,
        timeout_s: 120,
        budget_usd: 0.002,
        rank: { rubric: 'any', engines: ['runaway'] },
      }),
    ];
    const manifest = writeManifest(dir, { run_name: 'runaway-ranker', workdir: path.join(dir, 'work'), tasks });
    const started = Date.now();
    const r = await cli(['run', manifest, '--home', home, '--config', config, '--no-dashboard'], { env: { ...env, PATH: `${bin}:${process.env.PATH}` } });
    const rows = readRows(home);
    const rank = rows.filter((x) => x.step === 'rank');
    const spent = spentOf(rank);
    const state = stateOf(home);
    console.log(
      `      the ranker spent ${spent} micro-USD of the group's 2000 micro-USD budget (${((spent / 2000 - 1) * 100).toFixed(1)} % over), stopped after ${((Date.now() - started) / 1000).toFixed(1)} s; statuses ${state.tasks.map((t) => `${t.key} ${t.status}`).join(', ')}`,
    );
    assert.deepEqual(
      state.tasks.map((t) => [t.key, t.status]),
      [
        ['pick', 'BUDGET_EXCEEDED'],
        ['pick--c1', 'PASS'],
        ['pick--c2', 'PASS'],
      ],
      r.all,
    );
    assert.match(state.tasks[0]?.reason ?? '', /^budget: task pick's \$0\.00\d+ spent passed its budget_usd \$0\.0020; this attempt was stopped/);
    assert.deepEqual(
      rank.map((x) => x.verdict),
      ['CANCELLED'],
      r.all,
    );
    assert.match(String(rank[0]?.notes), /stopped before it answered \(budget: task pick's/);
    assert.ok(spent > 2000 && spent <= 2200, `the ranker spent ${spent} micro-USD of a 2000 budget\n${r.all}`);
    assert.equal(r.exitCode, 1, r.all);
  });

  it('spend in the views: run notes at 50 %, 80 % and 100 % of the budget, each once; `verdict runs RUN` and state.json say spent / reserved / budget', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const config = streamingConfig(dir, { stream: {} });
    // Five tasks one after another at $0.002 each under $0.01: 20 %, 40 %, 60 % (the 50 % note), 80 %, 100 %.
    const tasks = ['a', 'b', 'c', 'd', 'e'].map((k) =>
      scriptTask(k, streamingWorker(0, 0.002, 0), 'test -s out.txt', { engine: 'stream', expect_files: ['out.txt'] }),
    );
    const manifest = writeManifest(dir, { run_name: 'spend-notes', max_parallel: 1, budget_usd: 0.01, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    const notes = r.all.split('\n').filter((l) => /budget: \d+ % used/.test(l));
    console.log(`      ${notes.map((l) => l.replace(/^\S+\s+/, '')).join(' | ')}`);
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      notes.map((l) => /budget: (\d+) % used/.exec(l)?.[1]),
      ['50', '80', '100'],
      r.all,
    );
    assert.match(notes[0] ?? '', /budget: 50 % used — spent \$0\.0060 · budget \$0\.0100 \(\d+ %\)/);
    assert.match(notes[2] ?? '', /budget: 100 % used — spent \$0\.0100 · budget \$0\.0100 \(100 %\)/);
    // Each attempt's line says what it cost and the run's spend just after it.
    const attempts = r.all.split('\n').filter((l) => /attempt 1 {2}PASS/.test(l));
    assert.deepEqual(
      attempts.map((l) => / \$(\d\.\d+) {2}\[spent \$(\d\.\d+)[^\]]* · budget \$0\.0100/.exec(l)?.slice(1)),
      ['0.0020', '0.0040', '0.0060', '0.0080', '0.0100'].map((spent) => ['0.002000', spent]),
      r.all,
    );
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] ?? '';
    const spend = (JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as { spend?: unknown }).spend;
    assert.deepEqual(spend, {
      spentMicroUsd: 10_000,
      reservedMicroUsd: 0,
      budgetMicroUsd: 10_000,
      tokens: { spent: 5 * 1050, reserved: 0, budget: null },
      byTask: Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((k) => [k, { usd: 2_000, tokens: 1050 }])),
    });
    const runs = await cli(['runs', runId, '--home', home], { env });
    assert.equal(runs.exitCode, 0, runs.all);
    assert.match(runs.stdout, /^spent \$0\.0100 · budget \$0\.0100 \(100 %\)$/m, runs.stdout);
    const json = JSON.parse((await cli(['runs', runId, '--home', home, '--json'], { env })).stdout) as { spend?: unknown };
    assert.deepEqual(json.spend, spend);
  });

  it("cached input tokens are priced at the catalog's cache-read price where it gives one (codex's cached_input_tokens, part of its input)", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // Catalog: acme/cache at $1/Mtok in, $2/Mtok out, $0.10/Mtok cache read; acme/nocache the same without a cache price.
    const catalog = path.join(dir, 'catalog.json');
    const model = (id: string, cache: boolean) => ({
      id,
      name: id,
      context_length: 100000,
      pricing: { prompt: '0.000001', completion: '0.000002', ...(cache ? { input_cache_read: '0.0000001' } : {}) },
      architecture: { modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'] },
    });
    fs.writeFileSync(catalog, JSON.stringify({ data: [model('acme/cache', true), model('acme/nocache', false)] }));
    assert.equal((await cli(['catalog', '--home', home, '--refresh', '--source', catalog], { env })).exitCode, 0);
    const config = path.join(dir, 'config.json');
    const engine = (m: string) => ({ binary: 'bash', argv: ['-c', '{spec}'], output: 'codex', model: m, retry_context: 'file' });
    fs.writeFileSync(config, JSON.stringify({ engines: { cache: engine('acme/cache'), nocache: engine('acme/nocache') } }));
    // 1,000,000 tokens in, 900,000 of them from the cache, 1,000 out.
    const spec = `echo ok > out.txt; echo '{"type":"turn.completed","usage":{"input_tokens":1000000,"cached_input_tokens":900000,"output_tokens":1000,"reasoning_output_tokens":0}}'`;
    const check = 'test -s out.txt || { echo "out.txt missing"; exit 1; }';
    const tasks = [
      scriptTask('c', spec, check, { engine: 'cache', expect_files: ['out.txt'] }),
      scriptTask('n', spec, check, { engine: 'nocache', expect_files: ['out.txt'] }),
    ];
    const manifest = writeManifest(dir, { run_name: 'cached', workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', config], { env });
    assert.equal(r.exitCode, 0, r.all);
    const cost = Object.fromEntries(readRows(home).map((x) => [x.task_key, x.cost_microusd]));
    console.log(`      1M tokens in (900k cached), 1k out: ${cost.c as number} micro-USD with a cache-read price, ${cost.n as number} without`);
    // 100,000 × $1/M + 900,000 × $0.10/M + 1,000 × $2/M = 0.1 + 0.09 + 0.002 USD; without a cache price: 1.0 + 0.002.
    assert.deepEqual(cost, { c: 192_000, n: 1_002_000 });
  });

  it('bad budgets are load errors with their position: negative, zero, non-numeric, in a task and in an engine entry', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const good = (k: string, extra: Record<string, unknown>) =>
      scriptTask(k, 'echo ok > out.txt', 'test -s out.txt || { echo "out.txt missing"; exit 1; }', { expect_files: ['out.txt'], ...extra });
    const tasks = [good('a', { budget_usd: -1 }), good('b', { max_attempt_usd: 0 }), good('c', { budget_usd: '5' })];
    const manifest = writeManifest(dir, { run_name: 'bad', workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home], { env });
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: tasks\[0\]\.budget_usd: must be > 0, got -1/);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: tasks\[1\]\.max_attempt_usd: must be > 0, got 0/);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: tasks\[2\]\.budget_usd: .*number/);
    assert.equal(fs.existsSync(path.join(home, 'runs')), false, 'nothing ran');
    const config = streamingConfig(dir, { stream: { max_attempt_usd: -0.5 } });
    const ok = writeManifest(dir, { run_name: 'ok', workdir: path.join(dir, 'work'), tasks: [good('a', {})] }, 'ok.swarm.json');
    const r2 = await cli(['run', ok, '--home', home, '--config', config], { env });
    assert.equal(r2.exitCode, 2, r2.all);
    const at = fs.readFileSync(config, 'utf8').indexOf('"max_attempt_usd":-0.5') + '"max_attempt_usd":'.length + 1;
    assert.ok(r2.all.includes(`${config}:1:${at}: engines.stream.max_attempt_usd: must be > 0, got -0.5`), r2.all);
  });
});
