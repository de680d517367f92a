import assert from 'node:assert/strict';
import { MAX_QUOTA_WAIT_MS, quotaResetIn } from '../../engines/quota-reset';
import { claudeEngine } from '../../engines/claude';
import { codexEngine } from '../../engines/codex';
import { scriptEngine } from '../../engines/script';
import { EngineWaits, waitsLine } from '../../extension/core/run/quota-wait';
import type { RunState } from '../../extension/core/live/state';

// 2026-07-04 14:00:00 UTC; the zone of a clock time without one is given explicitly (UTC) so the table is exact.
const now = Date.UTC(2026, 6, 4, 14, 0, 0);
const at = (iso: string) => Date.parse(iso);
const H = 3600_000;

describe('quota resets in engine messages (engines/quota-reset.ts)', () => {
  const cases: [string, string, number | null][] = [
    ['codex, relative', "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 5 days 22 hours 11 minutes.", now + 5 * 24 * H + 22 * H + 11 * 60_000],
    ['codex, date and time', "You've hit your usage limit. Upgrade to Plus to continue using Codex (https://chatgpt.com/explore/plus), or try again at Jul 5th, 2026 8:19 PM.", at('2026-07-05T20:19:00Z')],
    ['codex, time today', "You've hit your usage limit. Try again at 3:05 PM.", at('2026-07-04T15:05:00Z')],
    ['codex API body', '{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"free","resets_at":1783180800,"resets_in_seconds":602705}}', 1783180800_000],
    ['codex API body, seconds only', '{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":90}}', now + 90_000],
    ['claude, epoch', 'Claude AI usage limit reached|1783188000', 1783188000_000],
    ['claude, zone', 'Claude usage limit reached. Your limit will reset at 10am (America/Chicago).', at('2026-07-04T15:00:00Z')],
    ['claude, zone, passed today: tomorrow', 'Claude usage limit reached. Your limit will reset at 7am (America/Chicago).', at('2026-07-05T12:00:00Z')],
    ['claude, session, zone', "You've hit your session limit · resets 12:50am (America/Los_Angeles)", at('2026-07-05T07:50:00Z')],
    ['claude, no zone', "You've hit your limit · resets 5pm", at('2026-07-04T17:00:00Z')],
    ['claude, a few minutes past: now, not tomorrow', "You've hit your limit · resets 1:50pm", null],
    ['gemini, GMT offset', 'Usage limit reached for gemini-3-flash-preview. Access resets at 10:57 PM GMT-3.', at('2026-07-05T01:57:00Z')],
    ['gemini, retry in seconds', 'Quota exceeded for quota metric \'Gemini 2.5 Pro Requests\'. Please retry in 23.5s.', now + 23_500],
    ['compact duration', 'usage limit reached; resets in 2h13m5s', now + 2 * H + 13 * 60_000 + 5000],
    // Not quota resets: a rate limit with no reset time, a reset time with no limit, a bare number.
    ['429 without a time', 'exceeded retry limit, last status: 429 Too Many Requests', null],
    ['daily quota, no time', 'TerminalQuotaError: You have exhausted your daily quota on this model.', null],
    ['a time but no limit', 'the build will try again at 3:05 PM', null],
    ['a bare number', 'usage limit reached, try again at 3', null],
    ['too far ahead', 'usage limit reached, try again in 30 days', null],
    ['unknown zone', 'usage limit reached · resets 9am (Mars/Olympus_Mons)', null],
  ];
  for (const [name, text, until] of cases) {
    it(`${name}: ${until === null ? 'none' : new Date(until).toISOString()}`, () => {
      const r = quotaResetIn([text], now, 'UTC');
      assert.equal(r?.until ?? null, until, text);
      if (r) assert.ok(r.text.length > 0 && !r.text.includes('\n'));
    });
  }

  it('the first text that names one wins; the wait is capped', () => {
    assert.equal(quotaResetIn(['nothing here', 'usage limit reached|1783188000', 'usage limit reached|1783190000'], now)?.until, 1783188000_000);
    assert.ok(MAX_QUOTA_WAIT_MS >= 7 * 24 * H);
  });

  it('a local clock time resolves in the zone given (DST offset at that instant)', () => {
    // 14:05 in New York on 4 July 2026 is EDT (UTC-4).
    assert.equal(quotaResetIn(['usage limit reached, try again at 14:05'], Date.UTC(2026, 6, 4, 17, 0), 'America/New_York')?.until, at('2026-07-04T18:05:00Z'));
  });

  it('engines: a quota message is a rate limit with a reset; a quote of one in a non-error JSON event is not read', () => {
    const line = `Claude AI usage limit reached|${Math.floor(Date.now() / 1000) + 600}`;
    assert.equal(scriptEngine.classifyError(`working\n${line}\n`), 'rate_limit');
    assert.equal(scriptEngine.classifyError('429 Too Many Requests\n'), null, 'the script engine classifies nothing else');
    assert.ok(scriptEngine.quotaReset?.(line, Date.now()));
    assert.equal(claudeEngine.classifyError(`${line}\n`), 'rate_limit');
    assert.ok(claudeEngine.quotaReset?.(`${line}\n`, Date.now()));
    // The echoed prompt (a user message event) quoting the message: not the engine's error.
    const echoed = JSON.stringify({ type: 'user', message: { content: [{ type: 'text', text: line }] } });
    assert.equal(claudeEngine.quotaReset?.(`${echoed}\n`, Date.now()), null);
    const codexItem = JSON.stringify({ type: 'item.completed', item: { type: 'agent_message', text: `You've hit your usage limit. Try again in 3 hours.` } });
    assert.equal(codexEngine.quotaReset?.(`${codexItem}\n`, Date.now()), null);
  });

  it('EngineWaits: the later reset wins, an expired wait is dropped, the line names engine and time', () => {
    const state = { waits: undefined } as unknown as RunState;
    const w = new EngineWaits(state);
    const t0 = Date.UTC(2026, 6, 4, 12, 0);
    assert.equal(w.set('codex', { until: t0 + 60_000, reason: 'r', since: t0, task: 'a', attempt: 1 }), true);
    assert.equal(w.set('codex', { until: t0 + 30_000, reason: 'r', since: t0, task: 'b', attempt: 1 }), false);
    assert.equal(w.remaining('codex', t0), 60_000);
    assert.equal(w.remaining('claude', t0), 0);
    assert.match(waitsLine(state, t0), /^waiting for codex until \d\d:\d\d$/);
    assert.equal(w.remaining('codex', t0 + 60_000), 0);
    assert.equal(state.waits, undefined, 'dropped once over');
    assert.equal(waitsLine(state, t0), '');
  });
});
