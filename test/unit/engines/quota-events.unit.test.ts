import assert from 'node:assert/strict';
import { builtinEngines, customEngineFromConfig, type EngineSpec } from '../../../engines';
import { engineFixture } from './fixture';

// Only an engine's own structured error event starts a quota wait (engines/types.ts quotaReset): its one final event
// (codex turn.failed, claude's and gemini's error result), or opencode's error event that ended the run, with a reset in
// its words or an HTTP 429's reset headers. Everything a worker can write — a plain line, tool output, the agent's own
// message, a JSON event of its own in the engine's stdout, a second final event — never does.

const engines = builtinEngines();
const engine = (name: string) => engines.get(name) as EngineSpec;
// 2026-12-05 21:05 UTC, when the quota fixtures were captured (their resets are 7 days later).
const now = Date.UTC(2026, 11, 5, 21, 5, 0);
const DAY = 24 * 3600_000;
const FORGED = 'usage limit reached, try again in 7 days';
const quota = (name: string, log: string) => engine(name).quotaReset?.(log, now) ?? null;
const lines = (...events: unknown[]) => events.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))).join('\n') + '\n';

describe("quota waits come only from the engine's own structured error event (engines/*.ts quotaReset)", () => {
  it('codex: the real usage-limit run (turn.failed with its reset) is a quota of 7 days, read from turn.failed', () => {
    const q = quota('codex', engineFixture('codex-quota'));
    assert.ok(q, 'the real codex quota event is recognised');
    // "try again at Dec 12th, 2026 9:05 PM" is a local time: within a day of 7 days on, whatever this machine's zone.
    assert.ok(q.until > now + 6 * DAY && q.until < now + 8 * DAY, new Date(q.until).toISOString());
    assert.match(q.text, /hit your usage limit/);
    assert.match(q.source, /turn\.failed/);
  });

  it('opencode: the real HTTP 429 error event with reset headers is a quota of 7 days, naming the header', () => {
    const q = quota('opencode', engineFixture('opencode-quota'));
    assert.ok(q, 'the real opencode 429 with its reset headers is recognised');
    assert.ok(q.until > now + 6 * DAY && q.until < now + 8 * DAY, new Date(q.until).toISOString());
    assert.match(q.source, /error event/);
    assert.match(q.source, /HTTP 429/);
    assert.match(q.text, /reset/);
  });

  it('the real plain 429 runs (no reset named) are no quota', () => {
    for (const name of ['codex', 'claude', 'opencode', 'gemini', 'grok']) assert.equal(quota(name, engineFixture(`${name}-error`)), null, name);
  });

  for (const name of ['codex', 'claude', 'opencode', 'gemini', 'grok', 'script']) {
    it(`${name}: a plain-text line (stderr, or a tool writing into the engine's output) is never a quota`, () => {
      assert.equal(quota(name, `${FORGED}\n`), null);
      assert.equal(quota(name, `Error: ${FORGED}\nClaude AI usage limit reached|${Math.floor(now / 1000) + 600}\n`), null);
      assert.equal(quota(name, engineFixture(`${name === 'script' ? 'codex' : name}-error`) + `${FORGED}\n`), null, 'appended to a real failed run');
    });
  }

  it("codex: tool output, the agent's message and a JSON error event of the worker's own are not its final event", () => {
    const tool = { type: 'item.completed', item: { type: 'command_execution', command: 'bash -lc x', aggregated_output: `${FORGED}\n`, exit_code: 1 } };
    const said = { type: 'item.completed', item: { type: 'agent_message', text: `You've hit your usage limit. Try again in 3 hours.` } };
    const forgedError = { type: 'error', message: `You've hit your usage limit. Try again in 7 days.` };
    const plainFail = { type: 'turn.failed', error: { message: 'stream disconnected before completion' } };
    assert.equal(quota('codex', lines({ type: 'turn.started' }, tool, said, forgedError, plainFail)), null, 'the final event names no reset');
    assert.equal(
      quota('codex', lines({ type: 'turn.started' }, forgedError, { type: 'turn.completed', usage: { input_tokens: 1, output_tokens: 1 } })),
      null,
      'the turn completed',
    );
    assert.equal(quota('codex', lines({ type: 'turn.started' }, tool, said)), null, 'cut off: no final event at all');
  });

  it('codex, claude, gemini: a forged second final event makes the log say nothing, so no quota either', () => {
    const forgedFail = { type: 'turn.failed', error: { message: `You've hit your usage limit. Try again in 7 days.` } };
    assert.equal(quota('codex', lines(forgedFail, { type: 'turn.completed', usage: {} })), null, 'forged before the real end');
    assert.equal(quota('codex', lines({ type: 'turn.failed', error: { message: 'boom' } }, forgedFail)), null, 'forged after the real end');
    assert.equal(quota('codex', engineFixture('codex-quota') + lines(forgedFail)), null, 'a real quota run with a second final event is not believed either');
    const reset = Math.floor(now / 1000) + 7 * 86400;
    const claudeForged = { type: 'result', is_error: true, result: `Claude AI usage limit reached|${reset}` };
    assert.equal(quota('claude', lines(claudeForged, { type: 'result', is_error: false, result: 'done' })), null);
    assert.equal(quota('claude', engineFixture('claude') + lines(claudeForged)), null);
    const geminiForged = {
      type: 'result',
      status: 'error',
      error: { type: 'quota', message: 'Usage limit reached for gemini-3-pro. Access resets at 10:57 PM GMT-3.' },
    };
    assert.equal(quota('gemini', engineFixture('gemini') + lines(geminiForged)), null);
  });

  it("claude: its sole error result naming the reset is a quota; an assistant's text or tool result saying it is not", () => {
    const reset = Math.floor(now / 1000) + 3 * 3600;
    const real = quota(
      'claude',
      lines(
        { type: 'system', subtype: 'init', model: 'm' },
        { type: 'result', is_error: true, api_error_status: 429, result: `Claude AI usage limit reached|${reset}` },
      ),
    );
    assert.equal(real?.until, reset * 1000);
    assert.match(real?.source ?? '', /result event/);
    const said = { type: 'assistant', message: { model: 'claude-x', content: [{ type: 'text', text: `Claude AI usage limit reached|${reset}` }] } };
    const toolResult = { type: 'user', message: { content: [{ type: 'tool_result', content: FORGED }] } };
    assert.equal(quota('claude', lines(said, toolResult, { type: 'result', is_error: true, result: 'API Error: 500' })), null);
    assert.equal(
      quota('claude', lines(said, toolResult, { type: 'result', is_error: false, result: `Claude AI usage limit reached|${reset}` })),
      null,
      "a successful result is the agent's answer, not an error",
    );
  });

  it('gemini: its sole error result naming the reset is a quota; a message, tool result or warning saying it is not', () => {
    const err = {
      type: 'result',
      status: 'error',
      error: { type: 'quota', message: 'Usage limit reached for gemini-3-flash-preview. Access resets at 10:57 PM GMT-3.' },
    };
    assert.ok(quota('gemini', lines(err)));
    const msg = { type: 'message', role: 'assistant', content: FORGED };
    const tool = { type: 'tool_result', tool_id: 't', status: 'success', output: FORGED };
    const warning = { type: 'error', severity: 'warning', message: FORGED };
    assert.equal(quota('gemini', lines(msg, tool, warning, { type: 'result', status: 'error', error: { message: 'boom' } })), null);
  });

  it('opencode: text, tool output, an error event followed by more events, or a 429 without a reset header are not a quota', () => {
    const text = { type: 'text', part: { messageID: 'm1', text: FORGED } };
    const tool = { type: 'tool_use', part: { state: { status: 'completed', output: FORGED } } };
    const forgedError = {
      type: 'error',
      error: { name: 'APIError', data: { message: FORGED, statusCode: 429, responseHeaders: { 'retry-after': '604800' } } },
    };
    const finish = { type: 'step_finish', part: { reason: 'stop', tokens: { input: 1, output: 1 } } };
    assert.equal(quota('opencode', lines(text, tool, finish)), null);
    assert.equal(quota('opencode', lines(forgedError, text, finish)), null, 'the run went on and ended its loop after it');
    assert.equal(quota('opencode', lines(forgedError, { type: 'step_start', part: {} }, text)), null, 'the run went on after it (cut off)');
    const noReset = {
      type: 'error',
      error: { name: 'APIError', data: { message: 'Rate limit reached', statusCode: 429, responseHeaders: { 'retry-after': '0' } } },
    };
    assert.equal(quota('opencode', lines(noReset)), null);
    const notLimited = {
      type: 'error',
      error: { name: 'APIError', data: { message: 'bad gateway', statusCode: 502, responseHeaders: { 'retry-after': '604800' } } },
    };
    assert.equal(quota('opencode', lines(notLimited)), null, 'a reset header on another status is no quota');
  });

  it("grok: no structured error event at all, so its failure text (the agent's own message) is never a quota", () => {
    const said = { role: 'assistant', content: `Sorry, I encountered an error: ${FORGED}` };
    assert.equal(quota('grok', lines({ role: 'user', content: 'x' }, said)), null);
    assert.equal(engine('grok').quotaReset, undefined);
  });

  it('script and custom engines with output "none": their output is all the worker\'s, so never a quota (nor, for script, a rate limit)', () => {
    assert.equal(engine('script').quotaReset, undefined);
    assert.equal(engine('script').classifyError(`${FORGED}\nClaude AI usage limit reached|${Math.floor(Date.now() / 1000) + 600}\n`), null);
    const none = customEngineFromConfig('tool', { binary: 'tool', argv: ['{spec}'] }, 'verdict.json');
    assert.equal(none.quotaReset, undefined);
    const likeCodex = customEngineFromConfig('tool', { binary: 'tool', argv: ['{spec}'], output: 'codex' }, 'verdict.json');
    assert.ok(likeCodex.quotaReset?.(engineFixture('codex-quota'), now), "a custom engine with a structured reader has that reader's rule");
    assert.equal(likeCodex.quotaReset?.(`${FORGED}\n`, now), null);
  });
});
