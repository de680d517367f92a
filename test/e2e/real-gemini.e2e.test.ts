import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, ISOLATED, runRealTask, type RealRun, type RealTaskOptions } from '../helpers/real-engines';
import { git } from '../helpers/fixtures';
import { CLI } from '../helpers/cli';

// The real Gemini CLI (installed on demand, test/helpers/agent-clis.ts) run by the built `verdict run` inside Verdict's
// sandbox, against the scripted model server speaking Gemini's streamGenerateContent
// (test/fixtures/model-server/wire-gemini.ts). The scenarios share nothing, so they run at once in `before`.

const MODEL = 'gemini-2.5-flash';
const SANDBOX = process.env.VERDICT_TEST_UNSANDBOXED ? 'none' : 'bwrap';
const CHANGES = '{"verdict": "changes", "concerns": ["alpha.txt: also say it twice"]}';
const APPROVE = '{"verdict": "approve", "concerns": []}';
const isReview = (body: string) => /approve\\?" \| \\?"changes/.test(body);

describe(`real Gemini CLI against the scripted model server (${ISOLATED ? 'loopback-only network namespace' : 'not isolated: updates and telemetry off through settings'})`, function () {
  this.timeout(600000);
  const runs: Record<string, RealRun> = {};
  let reviewsAnswered = 0;

  before(async function () {
    this.timeout(600000);
    const binDirs = [await ensureCli('gemini')];
    const base = { engine: 'gemini', model: MODEL, binDirs } as const;
    const scenarios: Record<string, RealTaskOptions> = {
      pass: { ...base, mode: 'worktree' },
      retry: {
        ...base,
        mode: 'plain',
        server: { content: (body) => (body.includes('CHECK-42') ? 'alpha ready' : 'alpha wrong') },
        task: { max_attempts: 2, check: "grep -x 'alpha ready' alpha.txt || { echo \"CHECK-$((6*7)): alpha.txt must hold the line 'alpha ready'\"; exit 1; }" },
      },
      review: {
        ...base,
        mode: 'worktree',
        server: { finalText: (body) => (isReview(body) ? (reviewsAnswered++ === 0 ? CHANGES : APPROVE) : 'Done: created alpha.txt') },
        task: { max_attempts: 2, review: { engines: [{ engine: 'gemini', model: MODEL }] } },
      },
      // engineEnv's settings give Gemini CLI one attempt per model call, so the 429 reaches Verdict at once.
      limited: { ...base, mode: 'plain', server: { rateLimit: { requests: 1, retryAfterS: 1 } } },
      badKey: { ...base, mode: 'plain', server: { requireKey: 'sk-the-real-one' } },
      noKey: { ...base, mode: 'plain', env: { GEMINI_API_KEY: null } },
    };
    const done = await Promise.all(Object.entries(scenarios).map(async ([name, o]) => [name, await runRealTask({ ...o, name: `gemini-${name}` })] as const));
    for (const [name, run] of done) runs[name] = run;
  });

  const run = (name: string) => runs[name] as RealRun;

  it('a worker task PASSes inside the sandbox with exactly the tokens the server sent, thinking tokens included', () => {
    const r = run('pass');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.equal(r.rows.length, 1, explainRun(r));
    const row = r.rows[0] as Record<string, unknown>;
    assert.deepEqual([row.verdict, row.worker_engine, row.harness, row.model, row.reported_model, row.worker_exit_code, row.sandbox], ['PASS', 'gemini', 'gemini-cli', MODEL, MODEL, 0, SANDBOX], explainRun(r));
    const sent = r.server.usageSent;
    assert.equal(sent.calls, 2, `one function call and one final answer\n${explainRun(r)}`);
    assert.deepEqual(
      { in: row.tokens_in, cached: row.tokens_cached, out: row.tokens_out, reasoning: row.tokens_reasoning, total: row.worker_tokens },
      { in: sent.input, cached: sent.cached, out: sent.output, reasoning: sent.reasoning, total: sent.input + sent.output },
    );
    const calls = r.server.requests.filter((q) => q.api === 'gemini');
    assert.deepEqual(calls.map((q) => [q.reply, q.tool]), [['tool_call', 'run_shell_command'], ['final', null]], explainRun(r));
    for (const q of calls) assert.match(q.path, new RegExp(`/models/${MODEL}:streamGenerateContent$`), 'the task model reached the server');
    assert.equal(git(path.join(r.dir, 'repo'), 'show', `${String(row.branch)}:alpha.txt`), 'alpha ready');
  });

  it('a first attempt that FAILs the check is retried with the check output in the prompt; the retry PASSes', () => {
    const r = run('retry');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(r.rows.map((x) => [x.attempt, x.verdict, x.retry, x.check_exit_code]), [[1, 'FAIL', false, 1], [2, 'PASS', true, 0]], explainRun(r));
    assert.ok(r.server.requests.some((q) => q.api === 'gemini' && JSON.stringify(q.body).includes('CHECK-42')), 'the retry prompt reached the model with the check output');
    const sent = r.server.usageSent;
    assert.equal(r.rows.reduce((n, x) => n + Number(x.tokens_in), 0), sent.input, explainRun(r));
    assert.equal(r.rows.reduce((n, x) => n + Number(x.tokens_out), 0), sent.output);
    assert.equal(fs.readFileSync(path.join(r.dir, 'work', 'alpha', 'alpha.txt'), 'utf8'), 'alpha ready\n');
  });

  it('a gemini reviewer answering changes fails the attempt; the retry addresses it and the reviewer approves', () => {
    const r = run('review');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(r.rows.map((x) => [x.step, x.attempt, x.worker_engine, x.verdict, (x.review as { verdict?: string } | undefined)?.verdict ?? null]), [
      ['work', 1, 'gemini', 'FAIL', null],
      ['review', 1, 'gemini', 'FAIL', 'changes'],
      ['work', 2, 'gemini', 'PASS', null],
      ['review', 2, 'gemini', 'PASS', 'approve'],
    ], explainRun(r));
    assert.match(String(r.rows[0]?.notes), /asked for changes: \(1\) alpha\.txt: also say it twice/);
    const sent = r.server.usageSent;
    assert.equal(r.rows.reduce((n, x) => n + Number(x.tokens_in), 0), sent.input, `every token the server sent is on exactly one row\n${explainRun(r)}`);
  });

  it('a 429 is RATE_LIMITED and requeued without burning the attempt; the requeue PASSes', () => {
    const r = run('limited');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(r.rows.map((x) => [x.attempt, x.verdict]), [[1, 'RATE_LIMITED'], [2, 'PASS']], explainRun(r));
    assert.equal(r.server.requests.find((q) => q.api === 'gemini')?.reply, 'rate_limited');
    const pass = r.rows[1] as Record<string, unknown>;
    assert.deepEqual([pass.tokens_in, pass.tokens_out], [r.server.usageSent.input, r.server.usageSent.output]);
  });

  for (const [name, what] of [['badKey', 'a key the API refuses (401)'], ['noKey', 'no key']] as const) {
    it(`${what}: the attempt FAILs as an auth error`, () => {
      const r = run(name);
      assert.equal(r.result.exitCode, 1, explainRun(r));
      assert.deepEqual(r.rows.map((x) => [x.attempt, x.verdict]), [[1, 'FAIL']], explainRun(r));
      assert.match(String(r.rows[0]?.notes), /the worker exited \d+ \(auth\)/, explainRun(r));
      assert.equal(r.server.usageSent.calls, 0);
    });
  }

  it('verdict doctor, in the same home without a key, says gemini is not logged in and names the fix', async () => {
    const r = run('noKey');
    const env = { PATH: [await ensureCli('gemini'), process.env.PATH ?? ''].join(path.delimiter), HOME: r.userHome };
    const doctor = await execa('node', [CLI, 'doctor', '--json', '--home', r.home], { env, extendEnv: false, reject: false, stdin: 'ignore' });
    const gemini = (JSON.parse(String(doctor.stdout)) as { engines: Array<Record<string, unknown>> }).engines.find((e) => e.name === 'gemini');
    assert.deepEqual([gemini?.login, gemini?.version], ['no', '0.61.0'], String(doctor.stdout));
    assert.match(String(gemini?.fix), /set GEMINI_API_KEY/);
    assert.deepEqual(gemini?.tested, { status: 'tested', versions: ['0.61.0'] }, 'doctor compares the version with engines/tested-versions.ts');
    const text = await execa('node', [CLI, 'doctor', '--home', r.home], { env, extendEnv: false, reject: false, stdin: 'ignore' });
    assert.match(String(text.stdout), /0\.61\.0[^\n]*, a tested version/, String(text.stdout));
  });
});
