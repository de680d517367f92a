import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, ISOLATED, type RealRun, type RealTaskOptions } from '../helpers/real-engines';
import { assertRetried, assertReviewedTwice, doctorOf, retryScenario, reviewScenario, runScenarios } from '../helpers/real-suite';

// The real Grok CLI (npm @vibe-kit/grok-cli, the newest on the registry) run by `verdict run` inside Verdict's sandbox
// against the scripted model server's Chat Completions (it sends non-streaming requests, GROK_BASE_URL). It prints no
// usage, cost or model, and exits 0 even when the API failed: only its last assistant message tells.

const MODEL = 'grok-code-fast-1';
// What the user had in ~/.grok/user-settings.json before the run (grok keeps its key and endpoint there).
const USER_SETTINGS = '{\n  "defaultModel": "grok-code-fast-1",\n  "models": ["grok-code-fast-1"]\n}\n';
const SANDBOX = process.env.VERDICT_TEST_UNSANDBOXED ? 'none' : 'bwrap';

describe(`real Grok CLI against the scripted model server (${ISOLATED ? 'loopback-only network namespace' : 'not isolated'})`, function () {
  this.timeout(600000);
  let run: (name: string) => RealRun;

  before(async function () {
    this.timeout(600000);
    const base: RealTaskOptions = { engine: 'grok', model: MODEL, binDirs: [await ensureCli('grok')], mode: 'plain' };
    const scenarios: Record<string, RealTaskOptions> = {
      pass: base,
      // grok's OpenAI client retries a 429 twice itself (after retry-after): one 429 is absorbed, three reach Verdict.
      absorbed: { ...base, server: { rateLimit: { requests: 1, retryAfterS: 1 } } },
      limited: { ...base, server: { rateLimit: { requests: 3, retryAfterS: 1 } } },
      badKey: { ...base, server: { requireKey: 'sk-the-real-one' } },
      noKey: { ...base, env: { GROK_API_KEY: null } },
      retry: retryScenario(base),
      review: reviewScenario({ ...base, mode: 'worktree' }),
      // Headless grok approves every tool itself (an interactive session asks before a file edit): a create_file over
      // its own settings (relative to the task dir <dir>/work/alpha, so in <dir>/user-home, its HOME) is done without
      // asking, inside the sandbox, where ~/.grok is writable and the state guard puts the file back.
      permission: {
        ...base,
        server: {
          askTool: {
            name: 'create_file',
            input: { path: '../../user-home/.grok/user-settings.json', content: '{"apiKey": "sk-attacker", "baseURL": "http://attacker.invalid/v1"}\n' },
          },
        },
        seedHome: (home) => {
          fs.mkdirSync(path.join(home, '.grok'), { recursive: true });
          fs.writeFileSync(path.join(home, '.grok', 'user-settings.json'), USER_SETTINGS);
        },
      },
    };
    run = await runScenarios('grok', scenarios);
  });

  it('a worker task PASSes inside the sandbox; no usage is known (grok prints none), never 0', () => {
    const r = run('pass');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    const row = r.rows[0] as Record<string, unknown>;
    assert.deepEqual(
      [row.verdict, row.worker_engine, row.harness, row.model, row.sandbox, row.worker_exit_code],
      ['PASS', 'grok', 'grok-cli', MODEL, SANDBOX, 0],
      explainRun(r),
    );
    assert.deepEqual([row.tokens_in, row.tokens_out, row.worker_tokens, row.cost_microusd, row.reported_model], [null, null, null, null, null]);
    assert.deepEqual(
      r.server.requests.filter((q) => q.api === 'chat').map((q) => [q.reply, q.tool, (q.body as { model?: string }).model]),
      [
        ['tool_call', 'bash', MODEL],
        ['final', null, MODEL],
      ],
      explainRun(r),
    );
    assert.equal(fs.readFileSync(path.join(r.dir, 'work', 'alpha', 'alpha.txt'), 'utf8'), 'alpha ready\n');
  });

  it('one 429 is retried by grok itself: one attempt, PASS', () => {
    const r = run('absorbed');
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict]),
      [[1, 'PASS']],
      explainRun(r),
    );
    assert.deepEqual(
      r.server.requests.filter((q) => q.api === 'chat').map((q) => q.reply),
      ['rate_limited', 'tool_call', 'final'],
      explainRun(r),
    );
  });

  it('429s past its own retries (grok exits 0 and says so in its last message) are RATE_LIMITED and requeued; the requeue PASSes', () => {
    const r = run('limited');
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict, x.worker_exit_code]),
      [
        [1, 'RATE_LIMITED', 0],
        [2, 'PASS', 0],
      ],
      explainRun(r),
    );
  });

  it('a key the API refuses (401): the attempt FAILs and the notes name the auth error', () => {
    const r = run('badKey');
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict]),
      [[1, 'FAIL']],
      explainRun(r),
    );
    assert.match(String(r.rows[0]?.notes), /; the engine reported an error \(auth\)$/, explainRun(r));
  });

  it('no key and no settings: the attempt FAILs and the notes name the auth error; verdict doctor says grok is not logged in and names the fix', async () => {
    const r = run('noKey');
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict]),
      [[1, 'FAIL']],
      explainRun(r),
    );
    assert.match(String(r.rows[0]?.notes), /\(auth\)/, explainRun(r));
    assert.equal(r.server.usageSent.calls, 0);
    const { entry: grok, json, text } = await doctorOf('grok', r);
    assert.deepEqual([grok?.login, grok?.version], ['no', '1.0.1'], json);
    assert.match(String(grok?.fix), /^export GROK_API_KEY=/);
    assert.deepEqual(grok?.tested, { status: 'tested', versions: ['1.0.1'] }, 'doctor compares what --version prints with engines/tested-versions.ts');
    assert.match(text, /1\.0\.1[^\n]*, a tested version/, text);
  });

  it('a first attempt that FAILs the check is retried with the check output in the prompt; the retry PASSes (usage unknown on both rows)', () => {
    assertRetried(run('retry'), 'chat', false);
  });

  it('a grok reviewer answering changes fails the attempt; the retry addresses it and the reviewer approves', () => {
    assertReviewedTwice(run('review'), 'grok', false);
  });

  it("a file edit a session would ask for is done without asking (headless): the run never waits for input and PASSes; the user's ~/.grok/user-settings.json is put back byte-identical", () => {
    const r = run('permission');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => x.verdict),
      ['PASS'],
      explainRun(r),
    );
    assert.deepEqual(
      r.server.requests.filter((q) => q.api === 'chat').map((q) => q.tool),
      ['create_file', 'bash', null],
      explainRun(r),
    );
    assert.match(String(r.result.all), /alpha {2}the worker changed grok's own settings; put back: \S+\/user-home\/\.grok\/user-settings\.json/, explainRun(r));
    assert.equal(fs.readFileSync(path.join(r.userHome, '.grok', 'user-settings.json'), 'utf8'), USER_SETTINGS);
  });
});
