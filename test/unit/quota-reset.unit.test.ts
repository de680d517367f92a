import assert from 'node:assert/strict';
import { MAX_QUOTA_WAIT_MS, quotaResetFromHeaders, quotaResetIn } from '../../engines/quota-reset';
import { claudeEngine } from '../../engines/claude';
import { codexEngine } from '../../engines/codex';
import { scriptEngine } from '../../engines/script';
import { EngineWaits, waitLines, waitsLine } from '../../extension/core/run/quota-wait';
import type { RunState } from '../../extension/core/live/state';

// 2026-07-04 14:00:00 UTC; the zone of a clock time without one is given explicitly (UTC) so the table is exact.
const now = Date.UTC(2026, 6, 4, 14, 0, 0);
const at = (iso: string) => Date.parse(iso);
const H = 3600_000;

describe('quota resets in engine messages (engines/quota-reset.ts)', () => {
  const cases: [string, string, number | null][] = [
    [
      'codex, relative',
      "■ You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 5 days 22 hours 11 minutes.",
      now + 5 * 24 * H + 22 * H + 11 * 60_000,
    ],
    [
      'codex, date and time',
      "You've hit your usage limit. Upgrade to Plus to continue using Codex (https://chatgpt.com/explore/plus), or try again at Jul 5th, 2026 8:19 PM.",
      at('2026-07-05T20:19:00Z'),
    ],
    ['codex, time today', "You've hit your usage limit. Try again at 3:05 PM.", at('2026-07-04T15:05:00Z')],
    [
      'codex API body',
      '{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"free","resets_at":1783180800,"resets_in_seconds":602705}}',
      1783180800_000,
    ],
    [
      'codex API body, seconds only',
      '{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","resets_in_seconds":90}}',
      now + 90_000,
    ],
    ['claude, epoch', 'Claude AI usage limit reached|1783188000', 1783188000_000],
    ['claude, zone', 'Claude usage limit reached. Your limit will reset at 10am (America/Chicago).', at('2026-07-04T15:00:00Z')],
    ['claude, zone, passed today: tomorrow', 'Claude usage limit reached. Your limit will reset at 7am (America/Chicago).', at('2026-07-05T12:00:00Z')],
    ['claude, session, zone', "You've hit your session limit · resets 12:50am (America/Los_Angeles)", at('2026-07-05T07:50:00Z')],
    ['claude, no zone', "You've hit your limit · resets 5pm", at('2026-07-04T17:00:00Z')],
    ['claude, a few minutes past: now, not tomorrow', "You've hit your limit · resets 1:50pm", null],
    // Claude Code 2.1.332 itself, on a subscription's 429 (anthropic-ratelimit-unified-* headers) resetting on another
    // day: the date without a year (test/e2e/real-claude.e2e.test.ts).
    ['claude, weekly, date without a year', "You've hit your weekly limit · resets Jul 11, 4:32am (UTC)", at('2026-07-11T04:32:00Z')],
    ['claude, 5-hour, date without a year', "You've hit your 5-hour limit · resets Jul 5, 4:25am (UTC)", at('2026-07-05T04:25:00Z')],
    ['a date without a year already past: next year, too far ahead', "You've hit your weekly limit · resets Jul 1, 4:32am (UTC)", null],
    ['gemini, GMT offset', 'Usage limit reached for gemini-3-flash-preview. Access resets at 10:57 PM GMT-3.', at('2026-07-05T01:57:00Z')],
    ['gemini, retry in seconds', "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests'. Please retry in 23.5s.", now + 23_500],
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

  it('a quota line in plain text is still a rate limit for the engines that read plain lines, but no engine waits for it', () => {
    const line = `Claude AI usage limit reached|${Math.floor(Date.now() / 1000) + 600}`;
    assert.equal(claudeEngine.classifyError(`${line}\n`), 'rate_limit', 'requeued with backoff, as any rate limit');
    assert.equal(claudeEngine.quotaReset?.(`${line}\n`, Date.now()), null);
    assert.equal(scriptEngine.classifyError(`working\n${line}\n`), null, "a script's output is the worker's: never classified");
    assert.equal(scriptEngine.quotaReset, undefined);
    // The echoed prompt (a user message event) and the agent's message quoting it: not the engine's error event.
    const echoed = JSON.stringify({ type: 'user', message: { content: [{ type: 'text', text: line }] } });
    assert.equal(claudeEngine.quotaReset?.(`${echoed}\n`, Date.now()), null);
    const codexItem = JSON.stringify({ type: 'item.completed', item: { type: 'agent_message', text: `You've hit your usage limit. Try again in 3 hours.` } });
    assert.equal(codexEngine.quotaReset?.(`${codexItem}\n`, Date.now()), null);
  });
});

describe('reset headers of an HTTP 429 (engines/quota-reset.ts quotaResetFromHeaders)', () => {
  const cases: [string, Record<string, unknown>, number | null, string | null][] = [
    ['retry-after seconds', { 'Retry-After': '120' }, now + 120_000, 'retry-after'],
    ['retry-after HTTP-date', { 'retry-after': 'Sat, 04 Jul 2026 16:00:00 GMT' }, at('2026-07-04T16:00:00Z'), 'retry-after'],
    ['retry-after-ms', { 'retry-after-ms': '1500' }, now + 1500, 'retry-after-ms'],
    [
      'retry-after 0 falls through to the provider resets (the latest)',
      { 'retry-after': '0', 'x-ratelimit-reset-requests': '1s', 'x-ratelimit-reset-tokens': '6m0s' },
      now + 6 * 60_000,
      'x-ratelimit-reset-tokens',
    ],
    ['OpenAI Go durations', { 'x-ratelimit-reset-requests': '1h2m3.5s' }, now + H + 2 * 60_000 + 3500, 'x-ratelimit-reset-requests'],
    ['OpenAI milliseconds', { 'x-ratelimit-reset-tokens': '20ms' }, now + 20, 'x-ratelimit-reset-tokens'],
    ['Anthropic RFC 3339', { 'anthropic-ratelimit-requests-reset': '2026-07-05T02:00:00Z' }, at('2026-07-05T02:00:00Z'), 'anthropic-ratelimit-requests-reset'],
    ['Anthropic unified, epoch seconds', { 'anthropic-ratelimit-unified-reset': '1783188000' }, 1783188000_000, 'anthropic-ratelimit-unified-reset'],
    ['IETF ratelimit-reset, delta seconds', { 'ratelimit-reset': '30' }, now + 30_000, 'ratelimit-reset'],
    ['x-ratelimit-reset epoch ms', { 'x-ratelimit-reset': String(now + 5 * H) }, now + 5 * H, 'x-ratelimit-reset'],
    ['x-ratelimit-reset epoch seconds', { 'x-ratelimit-reset': String(Math.floor((now + 5 * H) / 1000)) }, now + 5 * H, 'x-ratelimit-reset'],
    ['x-ratelimit-reset delta seconds', { 'x-ratelimit-reset': '90' }, now + 90_000, 'x-ratelimit-reset'],
    // None: no reset header, a reset in the past, too far ahead, nonsense.
    ['no reset header', { 'content-type': 'application/json', date: 'Sat, 04 Jul 2026 14:00:00 GMT' }, null, null],
    ['retry-after 0 and nothing else', { 'retry-after': '0' }, null, null],
    ['a reset already past', { 'anthropic-ratelimit-requests-reset': '2026-07-04T13:00:00Z' }, null, null],
    ['too far ahead', { 'retry-after': String(30 * 24 * 3600) }, null, null],
    ['nonsense', { 'retry-after': 'soon', 'x-ratelimit-reset-requests': 'a while', 'anthropic-ratelimit-requests-reset': 'tomorrow' }, null, null],
  ];
  for (const [name, headers, until, header] of cases) {
    it(`${name}: ${until === null ? 'none' : new Date(until).toISOString()}`, () => {
      const r = quotaResetFromHeaders(headers, now);
      assert.equal(r?.until ?? null, until);
      assert.equal(r?.header ?? null, header);
    });
  }
});

describe('EngineWaits: waits from engine events, capped, confirmed by a probe, cleared (run/quota-wait.ts)', () => {
  const t0 = Date.UTC(2026, 6, 4, 12, 0);
  const CAP = 6 * H;
  const event = (until: number) => ({ until, text: "You've hit your usage limit.", source: 'its turn.failed event' });
  const fresh = () => {
    const state = { runId: 'r1', waits: undefined } as unknown as RunState;
    return { state, w: new EngineWaits(state, CAP) };
  };

  it('a reset within the cap: the engine waits until it, then its jobs go and the wait is dropped', () => {
    const { state, w } = fresh();
    const change = w.settle('codex', 'a', 1, event(t0 + H), t0);
    assert.deepEqual(
      [change.set?.until, change.set?.capped, change.set?.task, change.set?.attempt, change.set?.source],
      [t0 + H, undefined, 'a', 1, 'its turn.failed event'],
    );
    assert.deepEqual(w.gate('codex', t0 + 10, 'b'), { kind: 'wait', ms: H - 10 });
    assert.deepEqual(w.gate('claude', t0, 'c'), { kind: 'go', probe: false });
    assert.match(waitsLine(state, t0), /^waiting for codex until \d\d:\d\d$/);
    assert.deepEqual(w.gate('codex', t0 + H, 'b'), { kind: 'go', probe: false });
    assert.equal(state.waits, undefined, 'dropped once over');
    assert.equal(waitsLine(state, t0), '');
  });

  it('a reset past the cap is shortened to it; after it one probe goes, the others are held; the probe confirming makes the full wait', () => {
    const { state, w } = fresh();
    const reset = t0 + 7 * 24 * H;
    const set = w.settle('codex', 'a', 1, event(reset), t0).set;
    assert.deepEqual([set?.until, set?.reset, set?.capped], [t0 + CAP, reset, true]);
    assert.match(set?.why ?? '', /past the 6 h cap/);
    assert.deepEqual(w.gate('codex', t0 + CAP - 1, 'b'), { kind: 'wait', ms: 1 });
    assert.deepEqual(w.gate('codex', t0 + CAP, 'b'), { kind: 'go', probe: true });
    assert.deepEqual(state.waits?.codex?.probe, { task: 'b', since: t0 + CAP });
    assert.deepEqual(w.gate('codex', t0 + CAP + 5, 'c'), { kind: 'hold' });
    assert.match(
      waitLines(state, t0 + CAP + 5)[0] ?? '',
      /^codex is being probed by b .* set by a attempt 1 from its turn\.failed event .*verdict unwait r1 codex$/,
    );
    // An attempt that started before the cap ended (not the probe): its report is capped again, from its end.
    const again = w.settle('codex', 'c', 1, event(reset), t0 + CAP + 6);
    assert.equal(again.probeSettled, false);
    const confirmed = w.settle('codex', 'b', 2, event(reset), t0 + CAP + 10);
    assert.equal(confirmed.probeSettled, true);
    assert.deepEqual([confirmed.set?.until, confirmed.set?.confirmed, confirmed.set?.task, confirmed.set?.attempt], [reset, true, 'b', 2]);
    assert.equal(state.waits?.codex?.probe, undefined);
    assert.deepEqual(w.gate('codex', t0 + CAP + 11, 'c'), { kind: 'wait', ms: reset - (t0 + CAP + 11) });
  });

  it('a probe that does not report the quota again ends the wait; a stopped probe or a job that never ran one passes the turn on', () => {
    const { state, w } = fresh();
    w.settle('codex', 'a', 1, event(t0 + 7 * 24 * H), t0);
    assert.equal(w.gate('codex', t0 + CAP, 'b').kind, 'go');
    const cancelled = w.settle('codex', 'b', 2, null, t0 + CAP + 1, false);
    assert.deepEqual([cancelled.ended, cancelled.probeSettled], [null, true]);
    assert.ok(state.waits?.codex, 'a stopped probe leaves the wait');
    assert.deepEqual(w.gate('codex', t0 + CAP + 2, 'c'), { kind: 'go', probe: true });
    assert.equal(w.abandonProbe('codex', 'c'), true);
    assert.deepEqual(w.gate('codex', t0 + CAP + 3, 'd'), { kind: 'go', probe: true });
    const passed = w.settle('codex', 'd', 1, null, t0 + CAP + 4);
    assert.deepEqual([passed.ended?.task, passed.probeSettled], ['a', true]);
    assert.equal(state.waits, undefined);
    assert.deepEqual(w.gate('codex', t0 + CAP + 5, 'e'), { kind: 'go', probe: false });
  });

  it('the later wait wins; unwait clears any; a new orchestrator forgets a probe that was running', () => {
    const { state, w } = fresh();
    w.settle('codex', 'a', 1, event(t0 + 2 * H), t0);
    assert.equal(w.settle('codex', 'b', 1, event(t0 + H), t0).set, null, 'an earlier reset does not shorten a wait');
    assert.equal(state.waits?.codex?.task, 'a');
    assert.equal(w.clear('codex')?.task, 'a');
    assert.equal(w.clear('codex'), null);
    assert.deepEqual(w.gate('codex', t0 + 1, 'b'), { kind: 'go', probe: false });
    w.settle('codex', 'a', 1, event(t0 + 7 * 24 * H), t0);
    w.gate('codex', t0 + CAP, 'b');
    assert.ok(state.waits?.codex?.probe);
    const taken = new EngineWaits(state, CAP);
    assert.equal(state.waits?.codex?.probe, undefined);
    assert.deepEqual(taken.gate('codex', t0 + CAP + 1, 'c'), { kind: 'go', probe: true });
  });

  it('a cap of 0: every reset needs the probe', () => {
    const state = { runId: 'r1' } as unknown as RunState;
    const w = new EngineWaits(state, 0);
    assert.deepEqual([w.settle('codex', 'a', 1, event(t0 + 60_000), t0).set?.until, state.waits?.codex?.capped], [t0, true]);
    assert.deepEqual(w.gate('codex', t0, 'a'), { kind: 'go', probe: true });
  });
});
