import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, ISOLATED, type RealRun, type RealTaskOptions } from '../helpers/real-engines';
import { assertRequeued, assertRetried, assertReviewedTwice, doctorOf, retryScenario, reviewScenario, runScenarios } from '../helpers/real-suite';
import { git } from '../helpers/fixtures';

// The real Gemini CLI (installed on demand, test/helpers/agent-clis.ts) run by the built `verdict run` inside Verdict's
// sandbox, against the scripted model server speaking Gemini's streamGenerateContent
// (test/fixtures/model-server/wire-gemini.ts). The scenarios share nothing, so they run at once in `before`
// (test/helpers/real-suite.ts).

const MODEL = 'gemini-2.5-flash';
const SANDBOX = process.env.VERDICT_TEST_UNSANDBOXED ? 'none' : 'bwrap';

/**
 * The user's own ~/.gemini/settings.json: the test environment's (test/helpers/real-engines.ts engineEnv, whose
 * deprecated `general.disableAutoUpdate` and `disableUpdateNag` Gemini CLI 0.61.0 migrates to enableAutoUpdate and
 * enableAutoUpdateNotification, rewriting the file, at every start while they are there — a file without deprecated
 * keys it leaves alone) plus a setting of the user's own, and their GEMINI.md.
 */
function seedGeminiHome(home: string): { settings: string; instructions: string } {
  const file = path.join(home, '.gemini', 'settings.json');
  const settings = JSON.stringify({ ...(JSON.parse(fs.readFileSync(file, 'utf8')) as object), ui: { theme: 'GitHub' } }, null, 2) + '\n';
  fs.writeFileSync(file, settings);
  const instructions = '# My instructions\nAlways answer in English.\n';
  fs.writeFileSync(path.join(home, '.gemini', 'GEMINI.md'), instructions);
  return { settings, instructions };
}

describe(`real Gemini CLI against the scripted model server (${ISOLATED ? 'loopback-only network namespace' : 'not isolated: updates and telemetry off through settings'})`, function () {
  this.timeout(600000);
  let run: (name: string) => RealRun;
  const seeded: Record<string, { settings: string; instructions: string }> = {};

  before(async function () {
    this.timeout(600000);
    const binDirs = [await ensureCli('gemini')];
    const base = { engine: 'gemini', model: MODEL, binDirs } as const;
    const scenarios: Record<string, RealTaskOptions> = {
      pass: { ...base, mode: 'worktree', seedHome: (home) => (seeded.pass = seedGeminiHome(home)) },
      retry: retryScenario({ ...base, mode: 'plain' }),
      review: reviewScenario({ ...base, mode: 'worktree' }),
      // engineEnv's settings give Gemini CLI one attempt per model call, so the 429 reaches Verdict at once.
      limited: { ...base, mode: 'plain', server: { rateLimit: { requests: 1, retryAfterS: 1 } } },
      // The daily quota of an API key, used up (a 429 whose QuotaFailure names a per-day quota, resetting in 7 days).
      daily: { ...base, mode: 'plain', server: { quota: { requests: 1, resetsInS: 7 * 86400 } } },
      badKey: { ...base, mode: 'plain', server: { requireKey: 'sk-the-real-one' } },
      noKey: { ...base, mode: 'plain', env: { GEMINI_API_KEY: null } },
      // A write Gemini CLI must not allow without asking: its own settings, outside the workspace (the path is relative
      // to the task dir <dir>/work/alpha, so it names <dir>/user-home, the CLI's HOME). Headless, nobody is asked.
      permission: {
        ...base,
        mode: 'plain',
        server: { askTool: { name: 'write_file', input: { file_path: '../../user-home/.gemini/settings.json', content: '{"hooks": {}}\n' } } },
        seedHome: (home) => (seeded.permission = seedGeminiHome(home)),
      },
    };
    run = await runScenarios('gemini', scenarios);
  });

  it('a worker task PASSes inside the sandbox with exactly the tokens the server sent, thinking tokens included', () => {
    const r = run('pass');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.equal(r.rows.length, 1, explainRun(r));
    const row = r.rows[0] as Record<string, unknown>;
    assert.deepEqual(
      [row.verdict, row.worker_engine, row.harness, row.model, row.reported_model, row.worker_exit_code, row.sandbox],
      ['PASS', 'gemini', 'gemini-cli', MODEL, MODEL, 0, SANDBOX],
      explainRun(r),
    );
    const sent = r.server.usageSent;
    assert.equal(sent.calls, 2, `one function call and one final answer\n${explainRun(r)}`);
    assert.deepEqual(
      { in: row.tokens_in, cached: row.tokens_cached, out: row.tokens_out, reasoning: row.tokens_reasoning, total: row.worker_tokens },
      { in: sent.input, cached: sent.cached, out: sent.output, reasoning: sent.reasoning, total: sent.input + sent.output },
    );
    const calls = r.server.requests.filter((q) => q.api === 'gemini');
    assert.deepEqual(
      calls.map((q) => [q.reply, q.tool]),
      [
        ['tool_call', 'run_shell_command'],
        ['final', null],
      ],
      explainRun(r),
    );
    for (const q of calls) assert.match(q.path, new RegExp(`/models/${MODEL}:streamGenerateContent$`), 'the task model reached the server');
    assert.equal(git(path.join(r.dir, 'repo'), 'show', `${String(row.branch)}:alpha.txt`), 'alpha ready');
  });

  it("leaves the user's ~/.gemini/settings.json and GEMINI.md byte-identical (Gemini CLI migrates its deprecated keys at start); the note says the CLI did it, not the worker; the session went to ~/.gemini/tmp", () => {
    const r = run('pass');
    const gemini = path.join(r.userHome, '.gemini');
    const seed = seeded.pass as { settings: string; instructions: string };
    assert.equal(fs.readFileSync(path.join(gemini, 'settings.json'), 'utf8'), seed.settings, explainRun(r));
    assert.equal(fs.readFileSync(path.join(gemini, 'GEMINI.md'), 'utf8'), seed.instructions);
    // Gemini CLI's own rewrite happened inside the sandbox, where the state guard put the file back, and the note says
    // it was the CLI's migration of its deprecated keys (engines/gemini.ts geminiOwnRewrite), not the worker.
    assert.match(
      String(r.result.all),
      /alpha {2}Gemini CLI itself rewrites \S+\/user-home\/\.gemini\/settings\.json at every start while it holds deprecated keys \(general\.disableAutoUpdate, general\.disableUpdateNag\): it migrated them; put back as it was/,
      explainRun(r),
    );
    assert.doesNotMatch(String(r.result.all), /the worker changed gemini's own settings/, explainRun(r));
    const left = fs.readdirSync(gemini);
    assert.deepEqual(
      left.filter((f) => /\.tmp$|\.bak$|~$/.test(f)),
      [],
      `no temporary or backup copy left in ~/.gemini (${left.join(', ')})`,
    );
    const chats = fs
      .readdirSync(path.join(gemini, 'tmp'), { recursive: true })
      .map(String)
      .filter((f) => /chats\/session-.*\.jsonl$/.test(f));
    assert.equal(chats.length, 1, `Gemini CLI saved its session under ~/.gemini/tmp (found: ${chats.join(', ') || 'nothing'})`);
  });

  it('a first attempt that FAILs the check is retried with the check output in the prompt; the retry PASSes', () => {
    assertRetried(run('retry'), 'gemini');
  });

  it('a gemini reviewer answering changes fails the attempt; the retry addresses it and the reviewer approves', () => {
    assertReviewedTwice(run('review'), 'gemini');
  });

  it('a 429 is RATE_LIMITED and requeued without burning the attempt; the requeue PASSes', () => {
    assertRequeued(run('limited'), 'gemini');
  });

  it("an API key's daily quota used up: Gemini CLI names no reset, so no wait — RATE_LIMITED and requeued with a backoff, the requeue PASSes", () => {
    const r = run('daily');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict]),
      [
        [1, 'RATE_LIMITED'],
        [2, 'PASS'],
      ],
      explainRun(r),
    );
    assert.equal(r.server.requests.find((q) => q.api === 'gemini')?.reply, 'quota');
    // Its headless result says only this (the reset it was sent is in no line it prints as an event).
    assert.match(
      fs.readFileSync(String(r.rows[0]?.worker_log), 'utf8'),
      /\{"type":"result"[^\n]*"status":"error"[^\n]*You have exhausted your daily quota on this model\./,
    );
    assert.doesNotMatch(String(r.result.all), /reached its usage limit/, 'no quota wait was set');
    assert.equal(r.state.waits, undefined);
  });

  for (const [name, what] of [
    ['badKey', 'a key the API refuses (401)'],
    ['noKey', 'no key'],
  ] as const) {
    it(`${what}: the attempt FAILs as an auth error`, () => {
      const r = run(name);
      assert.equal(r.result.exitCode, 1, explainRun(r));
      assert.deepEqual(
        r.rows.map((x) => [x.attempt, x.verdict]),
        [[1, 'FAIL']],
        explainRun(r),
      );
      assert.match(String(r.rows[0]?.notes), /the worker exited \d+ \(auth\)/, explainRun(r));
      assert.equal(r.server.usageSent.calls, 0);
    });
  }

  it('verdict doctor, in the same home without a key, says gemini is not logged in and names the fix', async () => {
    const { entry: gemini, json, text } = await doctorOf('gemini', run('noKey'));
    assert.deepEqual([gemini?.login, gemini?.version], ['no', '0.61.0'], json);
    assert.match(String(gemini?.fix), /set GEMINI_API_KEY/);
    assert.deepEqual(gemini?.tested, { status: 'tested', versions: ['0.61.0'] }, 'doctor compares the version with engines/tested-versions.ts');
    assert.match(text, /0\.61\.0[^\n]*, a tested version/, text);
  });

  it('a write outside the workspace (its own settings) is refused without asking: the run never waits for input and PASSes', () => {
    const r = run('permission');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => x.verdict),
      ['PASS'],
      explainRun(r),
    );
    const log = fs.readFileSync(String(r.rows[0]?.worker_log), 'utf8');
    assert.match(
      log,
      /"tool_name":"write_file"[\s\S]*?"type":"tool_result"[^\n]*"status":"error"[^\n]*Path not in workspace/,
      'Gemini CLI refused the write to its own settings',
    );
    assert.equal(
      fs.readFileSync(path.join(r.userHome, '.gemini', 'settings.json'), 'utf8'),
      seeded.permission?.settings,
      "the user's settings are as they were",
    );
    assert.deepEqual(
      r.server.requests.filter((q) => q.api === 'gemini').map((q) => q.tool),
      ['write_file', 'run_shell_command', null],
      explainRun(r),
    );
  });
});
