import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureCli } from '../helpers/agent-clis';
import { explainRun, ISOLATED, type RealRun, type RealTaskOptions } from '../helpers/real-engines';
import {
  assertRequeued,
  assertRetried,
  assertReviewedTwice,
  doctorOf,
  isReviewPrompt,
  retryScenario,
  reviewScenario,
  runScenarios,
} from '../helpers/real-suite';
import { git, tempDir } from '../helpers/fixtures';
import { wakeTime } from '../../extension/core/run/quota-wait';

// The real Claude Code CLI (installed on demand, test/helpers/agent-clis.ts) run by the built `verdict run` inside
// Verdict's sandbox, against the scripted model server speaking the Anthropic Messages API
// (test/fixtures/model-server/wire-anthropic.ts). The scenarios share nothing (each its own server, homes and folders),
// so they run at once in `before` (test/helpers/real-suite.ts); each `it` reads one. Claude Code answers in a few
// seconds here; the whole file takes about as long as its slowest scenario.

const MODEL = 'claude-sonnet-4-5';
const SANDBOX = process.env.VERDICT_TEST_UNSANDBOXED ? 'none' : 'bwrap';

/**
 * Anthropic's list price of claude-sonnet-4-5 in micro-USD per token (USD per million tokens): input 3, 5-minute cache
 * write 3.75, cache read 0.30, output 15. Claude Code prices a session with the same table (its result's `costBasis`
 * is `list`), so the row's cost must be exactly this sum.
 */
function sonnetCostMicroUsd(sent: { input: number; cached: number; cacheWrite: number; output: number }): number {
  return Math.round((sent.input - sent.cached - sent.cacheWrite) * 3 + sent.cacheWrite * 3.75 + sent.cached * 0.3 + sent.output * 15);
}

// What the user had in ~/.claude.json before the run; Claude Code rewrites this file by rename on every start.
const USER_CLAUDE_JSON = '{\n  "numStartups": 41,\n  "userID": "user-of-this-machine",\n  "projects": {}\n}\n';

describe(`real Claude Code against the scripted model server (${ISOLATED ? 'loopback-only network namespace' : 'not isolated: updates and telemetry off through env'})`, function () {
  this.timeout(600000);
  let run: (name: string) => RealRun;

  before(async function () {
    this.timeout(600000);
    const binDirs = [await ensureCli('claude')];
    const base = { engine: 'claude', model: MODEL, binDirs } as const;
    // A claude that prints an event type Verdict does not know before the real CLI's output (a newer CLI would).
    const wrapper = tempDir('verdict-claude-newer-');
    fs.writeFileSync(
      path.join(wrapper, 'claude'),
      `#!/bin/sh\nprintf '%s\\n' '{"type":"brand_new_event","detail":1}'\nexec '${path.join(binDirs[0] as string, 'claude')}' "$@"\n`,
      { mode: 0o755 },
    );
    const scenarios: Record<string, RealTaskOptions> = {
      pass: {
        ...base,
        mode: 'worktree',
        // Cache writes too, so that every usage field Claude Code reads is exercised; no thinking blocks are sent.
        server: { usage: { input: 1234, cached: 200, cacheWrite: 100, output: 56, reasoning: 0 } },
        seedHome: (home) => fs.writeFileSync(path.join(home, '.claude.json'), USER_CLAUDE_JSON),
      },
      retry: retryScenario({ ...base, mode: 'plain' }),
      review: reviewScenario({ ...base, mode: 'worktree' }),
      // Claude Code retries a 429 itself (10 times by default, after retry-after); with its retries off the 429 reaches
      // Verdict, as it does once they are used up.
      limited: { ...base, mode: 'plain', server: { rateLimit: { requests: 1, retryAfterS: 1 } }, env: { CLAUDE_CODE_MAX_RETRIES: '0' } },
      // A subscription (a claude.ai token, not an API key: Claude Code reads the account's limits from the answer's
      // anthropic-ratelimit-unified-* headers only then) whose weekly limit is used up for 7 days. With a cap of 0 h the
      // wait is shortened at once and the next attempt probes the engine, which the server then answers.
      quota: {
        ...base,
        mode: 'plain',
        server: { quota: { requests: 1, resetsInS: 7 * 86400, retryAfterS: 0 } },
        env: { ANTHROPIC_API_KEY: null, CLAUDE_CODE_OAUTH_TOKEN: 'sk-ant-oat01-verdict-test', CLAUDE_CODE_MAX_RETRIES: '0' },
        config: { quota: { max_wait_h: 0 } },
      },
      badKey: { ...base, mode: 'plain', server: { requireKey: 'sk-the-real-one' }, env: { CLAUDE_CODE_MAX_RETRIES: '0' } },
      noKey: { ...base, mode: 'plain', env: { ANTHROPIC_API_KEY: null } },
      newer: { ...base, binDirs: [wrapper, ...binDirs], mode: 'plain' },
      // A tool call Claude Code must not allow without asking (its own project settings): headless, nobody is asked.
      permission: { ...base, mode: 'plain', server: { askTool: { name: 'Write', input: { file_path: '.claude/settings.json', content: '{"hooks": {}}\n' } } } },
    };
    run = await runScenarios('claude', scenarios);
  });

  it('a worker task PASSes inside the sandbox with exactly the tokens the server sent and the list-price cost', () => {
    const r = run('pass');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.equal(r.rows.length, 1, explainRun(r));
    const row = r.rows[0] as Record<string, unknown>;
    assert.deepEqual(
      [row.verdict, row.worker_engine, row.harness, row.model, row.reported_model, row.worker_exit_code, row.sandbox],
      ['PASS', 'claude', 'claude-code', MODEL, MODEL, 0, SANDBOX],
      explainRun(r),
    );
    const sent = r.server.usageSent;
    assert.equal(sent.calls, 2, `one tool call and one final answer\n${explainRun(r)}`);
    assert.deepEqual(
      { in: row.tokens_in, cached: row.tokens_cached, out: row.tokens_out, reasoning: row.tokens_reasoning, total: row.worker_tokens, cost: row.cost_microusd },
      { in: sent.input, cached: sent.cached, out: sent.output, reasoning: 0, total: sent.input + sent.output, cost: sonnetCostMicroUsd(sent) },
      "tokens in count the cache reads and writes Anthropic reports apart; the cost is Claude Code's own, at list price",
    );
    assert.equal(sonnetCostMicroUsd(sent), 8154);
    const calls = r.server.requests.filter((q) => q.api === 'messages');
    assert.deepEqual(
      calls.map((q) => [q.reply, q.tool]),
      [
        ['tool_call', 'Bash'],
        ['final', null],
      ],
      explainRun(r),
    );
    for (const q of calls) assert.equal((q.body as { model?: unknown }).model, MODEL, 'the task model reached the server');
    assert.equal(git(path.join(r.dir, 'repo'), 'show', `${String(row.branch)}:alpha.txt`), 'alpha ready');
  });

  it("leaves the user's ~/.claude.json byte-identical; the session went to ~/.claude, the state dir the sandbox lets it write", () => {
    const r = run('pass');
    assert.equal(fs.readFileSync(path.join(r.userHome, '.claude.json'), 'utf8'), USER_CLAUDE_JSON, explainRun(r));
    assert.deepEqual(
      fs.readdirSync(r.userHome).filter((f) => f.startsWith('.claude.json')),
      ['.claude.json'],
      'no backup or temporary copy left beside it',
    );
    const projects = path.join(r.userHome, '.claude', 'projects');
    const sessions = fs.existsSync(projects)
      ? fs
          .readdirSync(projects, { recursive: true })
          .map(String)
          .filter((f) => f.endsWith('.jsonl'))
      : [];
    assert.ok(sessions.length >= 1, `Claude Code saved its session under ~/.claude/projects (found: ${sessions.join(', ') || 'nothing'})`);
  });

  it('a first attempt that FAILs the check is retried with the check output in the prompt; the retry PASSes', () => {
    const r = run('retry');
    assertRetried(r, 'messages');
    assert.match(String(r.rows[0]?.check_output), /CHECK-42/);
  });

  it('a claude reviewer answering changes fails the attempt; the retry addresses it and the reviewer approves', () => {
    const r = run('review');
    assertReviewedTwice(r, 'claude');
    assert.ok(
      r.server.requests.some((q) => !isReviewPrompt(JSON.stringify(q.body)) && JSON.stringify(q.body).includes('also say it twice')),
      'the retry prompt carried the concern',
    );
  });

  it('a 429 is RATE_LIMITED and requeued without burning the attempt; the requeue PASSes', () => {
    const r = run('limited');
    assertRequeued(r, 'messages');
    assert.match(fs.readFileSync(String(r.rows[0]?.worker_log), 'utf8'), /"api_error_status":429/);
  });

  it("a subscription's weekly limit (429 resetting in 7 days): Claude Code's own result names the reset, the engine waits for it (capped), the probe PASSes", () => {
    const r = run('quota');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => [x.attempt, x.verdict]),
      [
        [1, 'RATE_LIMITED'],
        [2, 'PASS'],
      ],
      explainRun(r),
    );
    assert.deepEqual(
      r.server.requests.filter((q) => q.api === 'messages').map((q) => q.reply),
      ['quota', 'tool_call', 'final'],
      explainRun(r),
    );
    const log = fs.readFileSync(String(r.rows[0]?.worker_log), 'utf8');
    const said = /"result":"(You've hit your weekly limit · resets [^"]+)"/.exec(log)?.[1];
    assert.ok(said, `Claude Code's result names the weekly limit and its reset\n${explainRun(r)}`);
    // The wait was set from that result, naming the reset the server sent (Claude Code prints it to the minute).
    const reset = r.server.requests.find((q) => q.reply === 'quota')?.at as number;
    const minute = Math.floor((reset + 7 * 86400_000) / 60_000) * 60_000;
    const named = [minute - 60_000, minute, minute + 60_000].map((t) => wakeTime(t));
    const out = String(r.result.all);
    assert.match(
      out,
      new RegExp(`engine claude reached its usage limit \\(alpha attempt 1, its result event \\(is_error\\)\\): it named (${named.join('|')}), past the cap`),
      out,
    );
    assert.ok(out.includes(said), 'the note quotes the result');
    assert.match(out, /engine claude: the probe \(alpha attempt 2\) did not report the usage limit again, so the wait alpha attempt 1 set is over/);
    assert.equal(r.state.waits, undefined, 'no wait is left');
  });

  for (const [name, what] of [
    ['badKey', 'a key the API refuses (401)'],
    ['noKey', 'no key and no login'],
  ] as const) {
    it(`${what}: the attempt FAILs as an auth error`, () => {
      const r = run(name);
      assert.equal(r.result.exitCode, 1, explainRun(r));
      assert.deepEqual(
        r.rows.map((x) => [x.attempt, x.verdict, x.tokens_in]),
        [[1, 'FAIL', 0]],
        explainRun(r),
      );
      assert.match(String(r.rows[0]?.notes), /the worker exited 1 \(auth\)/, explainRun(r));
      assert.equal(r.server.usageSent.calls, 0);
      assert.ok(r.ms < 120000, `Claude Code gave up at once (${r.ms} ms)`);
    });
  }

  it('verdict doctor, in the same home without a key, says claude is not logged in and names the fix', async () => {
    const { entry: claude, json, text } = await doctorOf('claude', run('noKey'));
    assert.deepEqual([claude?.login, claude?.version], ['no', '2.1.332 (Claude Code)'], json);
    assert.match(String(claude?.fix), /^claude setup-token\b/);
    assert.deepEqual(claude?.tested, { status: 'tested', versions: ['2.1.332'] }, 'doctor compares the version with engines/tested-versions.ts');
    assert.match(text, /2\.1\.332[^\n]*, a tested version/, text);
  });

  it('a tool call that needs permission is refused without asking: the run never waits for input and PASSes', () => {
    const r = run('permission');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    assert.deepEqual(
      r.rows.map((x) => x.verdict),
      ['PASS'],
      explainRun(r),
    );
    const log = fs.readFileSync(String(r.rows[0]?.worker_log), 'utf8');
    assert.match(log, /"permission_denials":\[\{"tool_name":"Write"/, 'Claude Code denied the write to its own settings');
    assert.ok(!fs.existsSync(path.join(r.dir, 'work', 'alpha', '.claude', 'settings.json')), 'the refused write did not happen');
    assert.deepEqual(
      r.server.requests.filter((q) => q.api === 'messages').map((q) => q.tool),
      ['Write', 'Bash', null],
      explainRun(r),
    );
  });

  it('an event type Verdict does not know is said once in the task notes; the usage it knows is read all the same', () => {
    const r = run('newer');
    assert.equal(r.result.exitCode, 0, explainRun(r));
    const row = r.rows[0] as Record<string, unknown>;
    assert.deepEqual([row.verdict, row.tokens_in, row.tokens_out], ['PASS', r.server.usageSent.input, r.server.usageSent.output], explainRun(r));
    const said = String(r.result.all)
      .split('\n')
      .filter((l) => l.includes('unknown event'));
    assert.equal(said.length, 1, String(r.result.all));
    assert.match(said[0] ?? '', /alpha\s+attempt 1: unknown event type\(s\) from claude: brand_new_event \(Verdict was tested with claude 2\.1\.332\)/);
    assert.match(fs.readFileSync(String(row.worker_log), 'utf8'), /^\{"type":"brand_new_event","detail":1\}$/m, 'the raw line is kept in the log');
  });
});
