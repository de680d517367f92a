import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, ISOLATED, runRealTask, type RealRun, type RealTaskOptions } from '../helpers/real-engines';

// The real Grok CLI (npm @vibe-kit/grok-cli, the newest on the registry) run by `verdict run` inside Verdict's sandbox
// against the scripted model server's Chat Completions (it sends non-streaming requests, GROK_BASE_URL). It prints no
// usage, cost or model, and exits 0 even when the API failed: only its last assistant message tells.

const MODEL = 'grok-code-fast-1';
const SANDBOX = process.env.VERDICT_TEST_UNSANDBOXED ? 'none' : 'bwrap';

describe(`real Grok CLI against the scripted model server (${ISOLATED ? 'loopback-only network namespace' : 'not isolated'})`, function () {
  this.timeout(600000);
  const runs: Record<string, RealRun> = {};

  before(async function () {
    this.timeout(600000);
    const base: RealTaskOptions = { engine: 'grok', model: MODEL, binDirs: [await ensureCli('grok')], mode: 'plain' };
    const scenarios: Record<string, RealTaskOptions> = {
      pass: base,
      // grok's OpenAI client retries a 429 twice itself (after retry-after): one 429 is absorbed, three reach Verdict.
      absorbed: { ...base, server: { rateLimit: { requests: 1, retryAfterS: 1 } } },
      limited: { ...base, server: { rateLimit: { requests: 3, retryAfterS: 1 } } },
      badKey: { ...base, server: { requireKey: 'sk-the-real-one' } },
    };
    const done = await Promise.all(Object.entries(scenarios).map(async ([name, o]) => [name, await runRealTask({ ...o, name: `grok-${name}` })] as const));
    for (const [name, run] of done) runs[name] = run;
  });

  const run = (name: string) => runs[name] as RealRun;

  it('a worker task PASSes inside the sandbox; no usage is known (grok prints none), never 0', () => {
    const r = run('pass');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    const row = r.rows[0] as Record<string, unknown>;
    assert.deepEqual([row.verdict, row.worker_engine, row.harness, row.model, row.sandbox, row.worker_exit_code], ['PASS', 'grok', 'grok-cli', MODEL, SANDBOX, 0], explainRun(r));
    assert.deepEqual([row.tokens_in, row.tokens_out, row.worker_tokens, row.cost_microusd, row.reported_model], [null, null, null, null, null]);
    assert.deepEqual(r.server.requests.filter((q) => q.api === 'chat').map((q) => [q.reply, q.tool, (q.body as { model?: string }).model]), [['tool_call', 'bash', MODEL], ['final', null, MODEL]], explainRun(r));
    assert.equal(fs.readFileSync(path.join(r.dir, 'work', 'alpha', 'alpha.txt'), 'utf8'), 'alpha ready\n');
  });

  it('one 429 is retried by grok itself: one attempt, PASS', () => {
    const r = run('absorbed');
    assert.deepEqual(r.rows.map((x) => [x.attempt, x.verdict]), [[1, 'PASS']], explainRun(r));
    assert.deepEqual(r.server.requests.filter((q) => q.api === 'chat').map((q) => q.reply), ['rate_limited', 'tool_call', 'final'], explainRun(r));
  });

  it('429s past its own retries (grok exits 0 and says so in its last message) are RATE_LIMITED and requeued; the requeue PASSes', () => {
    const r = run('limited');
    assert.deepEqual(r.rows.map((x) => [x.attempt, x.verdict, x.worker_exit_code]), [[1, 'RATE_LIMITED', 0], [2, 'PASS', 0]], explainRun(r));
  });

  it('a key the API refuses (401): the attempt FAILs and the notes name the auth error', () => {
    const r = run('badKey');
    assert.deepEqual(r.rows.map((x) => [x.attempt, x.verdict]), [[1, 'FAIL']], explainRun(r));
    assert.match(String(r.rows[0]?.notes), /; the engine reported an error \(auth\)$/, explainRun(r));
  });
});
