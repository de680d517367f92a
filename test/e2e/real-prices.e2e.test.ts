import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, ISOLATED, runRealTask, type RealRun } from '../helpers/real-engines';
import { cli } from '../helpers/cli';
import { tempDir } from '../helpers/fixtures';

// Prices and token budgets on the real CLIs (test/helpers/agent-clis.ts) run by the built `verdict run` in the
// sandbox against the scripted model server: codex's reasoning and cached tokens priced at the catalog's own prices,
// and Claude Code on a subscription login (tokens recorded, cost null, capped by budget_tokens mid-run from the usage
// it streams). The scenarios share nothing and run at once in `before`.

/**
 * A catalog (OpenRouter's format) pricing `id` (default the model codex names) at $1/Mtok in, $2 out, $0.10 cache read,
 * $4 reasoning, with a context of `contextLength` tokens (the budget's estimate of one attempt: a full context in, a
 * tenth of it out).
 */
async function loadCatalog(home: string, id = 'stub-model', contextLength = 100000): Promise<void> {
  const file = path.join(tempDir('verdict-real-prices-'), 'catalog.json');
  const pricing = { prompt: '0.000001', completion: '0.000002', input_cache_read: '0.0000001', internal_reasoning: '0.000004' };
  fs.writeFileSync(
    file,
    JSON.stringify({
      data: [
        {
          id,
          name: id,
          context_length: contextLength,
          pricing,
          architecture: { modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'] },
        },
      ],
    }),
  );
  const r = await cli(['catalog', '--home', home, '--refresh', '--source', file]);
  if (r.exitCode !== 0) throw new Error(`verdict catalog failed: ${r.all}`);
}

const FLAT = { logins: { 'claude-max': { engines: ['claude'], max_parallel: 2, billing: 'subscription' } } };

describe(`prices and token budgets on real CLIs against the scripted model server (${ISOLATED ? 'loopback-only network namespace' : 'not isolated'})`, function () {
  this.timeout(600000);
  const runs: Record<string, RealRun> = {};

  before(async function () {
    this.timeout(600000);
    const [codex, claude, opencode] = await Promise.all([ensureCli('codex'), ensureCli('claude'), ensureCli('opencode')]);
    const scenarios = {
      // Odd reasoning and cached counts per call, so a price applied to the wrong part shows.
      codex: runRealTask({
        engine: 'codex',
        model: 'stub-model',
        binDirs: [codex],
        mode: 'plain',
        server: { usage: { input: 1500, cached: 900, output: 300, reasoning: 120 } },
        prepareHome: (home) => loadCatalog(home),
        name: 'real-prices-codex',
      }),
      // opencode reports each step's usage once the step ends (step_finish, after its tools ran). Its one attempt
      // reserves the catalog's estimate (500 in + 50 out = 600 micro-USD) under a 1,100 micro-USD budget; its first step
      // (1,034 in + 200 cached, 49 out + 7 reasoning: 1,180 micro-USD) passes it, and the attempt is stopped while the
      // model thinks 60 s over the next call.
      streamed: runRealTask({
        engine: 'opencode',
        model: 'verdict-test/stub-model',
        binDirs: [opencode],
        mode: 'plain',
        server: { prefer: ['shell'], thinkMs: (body) => (/"role":\s*"tool"/.test(body) ? 60_000 : 0) },
        manifest: { budget_usd: 0.0011 },
        prepareHome: (home) => loadCatalog(home, 'verdict-test/stub-model', 500),
        name: 'real-prices-streamed',
      }),
      flat: runRealTask({
        engine: 'claude',
        model: 'claude-sonnet-4-5',
        binDirs: [claude],
        mode: 'plain',
        server: { usage: { cacheWrite: 100 } },
        manifest: { ...FLAT, budget_usd: 0.000001, budget_tokens: 1_000_000 },
        name: 'real-prices-flat',
      }),
      // 1,234 tokens in per call: the first call's streamed usage already passes 1,000 tokens.
      capped: runRealTask({
        engine: 'claude',
        model: 'claude-sonnet-4-5',
        binDirs: [claude],
        mode: 'plain',
        manifest: { ...FLAT, budget_tokens: 1_000 },
        name: 'real-prices-capped',
      }),
    };
    for (const [name, run] of await Promise.all(Object.entries(scenarios).map(async ([n, p]) => [n, await p] as const))) runs[name] = run;
  });

  it("codex: reasoning tokens at the catalog's internal_reasoning price and cached input at input_cache_read, the rest at prompt and completion", () => {
    const run = runs.codex as RealRun;
    const row = run.rows.at(-1) as Record<string, unknown>;
    const sent = run.server.usageSent;
    const expected = Math.round((sent.input - sent.cached) * 1 + sent.cached * 0.1 + (sent.output - sent.reasoning) * 2 + sent.reasoning * 4);
    console.log(
      `      ${sent.calls} calls: ${sent.input} in (${sent.cached} cached), ${sent.output} out (${sent.reasoning} reasoning): ${String(row.cost_microusd)} micro-USD; all at prompt/completion it would be ${sent.input + sent.output * 2}`,
    );
    assert.equal(row.verdict, 'PASS', explainRun(run));
    assert.deepEqual(
      [row.tokens_in, row.tokens_cached, row.tokens_out, row.tokens_reasoning],
      [sent.input, sent.cached, sent.output, sent.reasoning],
      explainRun(run),
    );
    assert.equal(row.cost_microusd, expected, explainRun(run));
    assert.equal(row.billing, undefined, 'a metered engine');
  });

  it('Claude Code on a subscription login: its row has the tokens, cost null and billing "subscription"; budget_usd does not stop it', () => {
    const run = runs.flat as RealRun;
    const row = run.rows.at(-1) as Record<string, unknown>;
    const sent = run.server.usageSent;
    console.log(
      `      ${String(row.verdict)}: ${String(row.tokens_in)} in, ${String(row.tokens_out)} out, ${String(row.tokens_cache_write)} cache writes, cost ${String(row.cost_microusd)}, billing ${String(row.billing)} (budget_usd $0.000001)`,
    );
    assert.equal(run.result.exitCode, 0, explainRun(run));
    assert.equal(row.verdict, 'PASS', explainRun(run));
    assert.equal(row.billing, 'subscription');
    assert.equal(row.cost_microusd, null, 'Claude Code reports a list-price cost, but a flat-rate login pays nothing per token');
    assert.deepEqual([row.tokens_in, row.tokens_out], [sent.input, sent.output], explainRun(run));
    assert.equal(row.tokens_cache_write, sent.cacheWrite);
  });

  it('opencode under budget_usd: stopped mid-run once the usage it streams passes the budget (priced from the catalog), BUDGET_EXCEEDED, its spend in its row', () => {
    const run = runs.streamed as RealRun;
    const row = run.rows.at(-1) as Record<string, unknown>;
    const task = run.state.tasks[0];
    const spent = Number(row.cost_microusd);
    console.log(
      `      ${String(task?.status)} after ${run.server.usageSent.calls} model call(s) in ${(run.ms / 1000).toFixed(1)} s; ${spent} micro-USD recorded of a 1,100 micro-USD budget (${((spent / 1100 - 1) * 100).toFixed(1)} % over); ${String(task?.reason).slice(0, 100)}`,
    );
    assert.equal(task?.status, 'BUDGET_EXCEEDED', explainRun(run));
    assert.match(task?.reason ?? '', /passed budget_usd \$0\.0011; this attempt was stopped/, explainRun(run));
    assert.ok(spent > 1100 && spent <= 1210, `spent ${spent} micro-USD: recorded, and at most 10 % over the 1,100 budget\n${explainRun(run)}`);
    assert.ok(run.ms < 55_000, `stopped while its model thought (60 s), not at its end: ${run.ms} ms`);
  });

  it('Claude Code on a subscription login under budget_tokens: stopped mid-run from its streamed usage, BUDGET_EXCEEDED', () => {
    const run = runs.capped as RealRun;
    const row = run.rows.at(-1) as Record<string, unknown>;
    const task = run.state.tasks[0];
    console.log(
      `      ${String(task?.status)} after ${run.server.usageSent.calls} model call(s); ${String(row.worker_tokens)} tokens recorded of a 1,000-token budget; ${String(task?.reason).slice(0, 110)}`,
    );
    assert.equal(run.result.exitCode, 1, explainRun(run));
    assert.equal(task?.status, 'BUDGET_EXCEEDED', explainRun(run));
    assert.match(task?.reason ?? '', /tokens used passed budget_tokens 1,000 tokens; this attempt was stopped/);
    assert.equal(row.billing, 'subscription');
    assert.equal(row.cost_microusd, null);
  });
});
