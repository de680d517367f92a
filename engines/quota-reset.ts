/**
 * Quota resets: an engine that says its usage limit (quota) is used up and when it resets. Unlike a short rate limit
 * (HTTP 429 with a Retry-After of seconds: requeued with backoff, run/decide.ts), a quota reset is a wait the run keeps
 * in its state, and no attempt (no model call) is spent on that engine during the wait (docs/attempt.md "Settle");
 * an arbitrary failure is never taken for one. Recognised only when one text names a usage / session
 * limit or a used-up quota AND a reset time. The forms, as the CLIs print them (quoted in their public issue trackers):
 * - codex: "You've hit your usage limit. Upgrade to Pro (…) or try again in 5 days 22 hours 11 minutes." and "… try
 *   again at Jul 5th, 2026 8:19 PM."; its API's `{"type":"usage_limit_reached", "resets_at": 1775317531,
 *   "resets_in_seconds": 602705}`;
 * - claude: "Claude AI usage limit reached|1766502000" (epoch seconds), "Claude usage limit reached. Your limit will
 *   reset at 9am (America/Chicago).", "You've hit your session limit · resets 12:50am (America/Los_Angeles)", and as
 *   Claude Code 2.1.332 prints a subscription's limit resetting on another day, "You've hit your weekly limit · resets
 *   Dec 13, 4:32am (UTC)" and "You've hit your 5-hour limit · resets …" (test/e2e/real-claude.e2e.test.ts);
 * - gemini: "Usage limit reached for gemini-3-flash-preview. Access resets at 10:57 PM GMT-3.", and quota errors with
 *   "Please retry in 23.5s".
 * A clock time without a zone is this machine's local time (the CLI runs here); with an IANA zone or GMT±h, that zone.
 * Pure: no I/O; `now` is passed in.
 */

/** A recognised reset: when the engine may be used again (epoch ms) and the text that said so (one line). */
export interface QuotaReset {
  until: number;
  text: string;
}

/**
 * A quota reset an engine reported in its own structured error event (EngineSpec.quotaReset): the reset (epoch ms),
 * the event's own words (one line, at most 300 characters) and which event of the engine's output said so
 * (`its turn.failed event`, `its error event (HTTP 429, x-ratelimit-reset-requests)`).
 */
export interface QuotaEvent extends QuotaReset {
  source: string;
}

/** A reset further away than this is not believed (a misread date), ms: 8 days (codex's weekly limit is 7). */
export const MAX_QUOTA_WAIT_MS = 8 * 24 * 3600_000;

const LIMIT =
  /usage[ _-]?limit|session limit|weekly limit|hit your (?:[\w-]+ )?limit|limit (?:has been )?reached|quota (?:exceeded|exhausted|reached)|exceeded your (?:current )?quota|exhausted your (?:\w+ )?(?:quota|capacity)/i;

const UNITS: Record<string, number> = { d: 86400_000, h: 3600_000, m: 60_000, s: 1000 };
const DURATION = /^\s*(?:(\d+(?:\.\d+)?)\s*(days?|d|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)(?![a-z])[\s,]*(?:and\s+)?)+/i;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/**
 * The first quota reset any of `texts` names (see the module comment), or null. `timeZone` is the zone of a clock time
 * that names none (default: this process's local zone). A reset in the past, or more than MAX_QUOTA_WAIT_MS ahead, is
 * not one.
 */
export function quotaResetIn(texts: readonly string[], now: number, timeZone?: string): QuotaReset | null {
  for (const text of texts) {
    if (!LIMIT.test(text)) continue;
    const until = resetTime(text, now, timeZone);
    if (until !== null && until > now && until - now <= MAX_QUOTA_WAIT_MS) return { until, text: oneLine(text) };
  }
  return null;
}

/** True when `text` reads as a quota message with a reset time (the engines classify it as a rate limit). */
export function isQuotaMessage(text: string, now: number): boolean {
  return quotaResetIn([text], now) !== null;
}

function oneLine(text: string): string {
  const line = text.split('\n').find((l) => LIMIT.test(l)) ?? text;
  return line.trim().slice(0, 300);
}

function resetTime(text: string, now: number, timeZone: string | undefined): number | null {
  const epoch = /limit reached\|(\d{10})\b/i.exec(text)?.[1] ?? /"resets_at"\s*:\s*(\d{10})\b/.exec(text)?.[1];
  if (epoch) return Number(epoch) * 1000;
  const inSeconds = /"resets_in_seconds"\s*:\s*(\d+)/.exec(text)?.[1];
  if (inSeconds) return now + Number(inSeconds) * 1000;
  const relative = /\b(?:try again in|retry in|resets? in|resets? after|available again in)\b(.*)/i.exec(text)?.[1];
  if (relative !== undefined) {
    const ms = durationMs(relative);
    if (ms !== null) return now + ms;
  }
  const at = /\b(?:try again at|resets? at|resets|reset at)\s+(.*)/i.exec(text)?.[1];
  return at === undefined ? null : clockTime(at, now, timeZone);
}

/** `5 days 22 hours 11 minutes`, `4hr 29min`, `2h13m5s`, `23.5s` → ms; null when none leads the text. */
function durationMs(text: string): number | null {
  const lead = DURATION.exec(text)?.[0];
  if (!lead) return null;
  let ms = 0;
  for (const m of lead.matchAll(/(\d+(?:\.\d+)?)\s*([a-z]+)/gi)) ms += Number(m[1]) * (UNITS[(m[2] as string)[0]!.toLowerCase()] ?? 0);
  return ms > 0 ? ms : null;
}

/**
 * `9am (America/Chicago)`, `12:50am (America/Los_Angeles)`, `10:57 PM GMT-3`, `Jul 5th, 2026 8:19 PM`, `Dec 13, 4:32am
 * (UTC)`, `14:05` → the epoch ms of that wall-clock time in its zone: on the date named (without a year: this year's,
 * or next year's when this year's passed more than an hour ago), else the next such time (today, or tomorrow when it
 * passed more than an hour ago: a reset a few minutes past is "now", not a day away). Null when none leads.
 */
function clockTime(text: string, now: number, timeZone: string | undefined): number | null {
  const date = /^([A-Za-z]{3})[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(\d{4}),?\s+)?(?:at\s+)?/.exec(text);
  const rest = date ? text.slice(date[0].length) : text;
  const clock =
    /^(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?(?=[\s.,)·]|$)\s*(?:\(([A-Za-z_]+(?:\/[A-Za-z_+-]+)+|UTC|GMT)\)|(UTC|GMT)([+-]\d{1,2})?(?::?(\d{2}))?)?/i.exec(
      rest,
    );
  if (!clock) return null;
  let hour = Number(clock[1]);
  const minute = Number(clock[2] ?? 0);
  const meridiem = clock[3]?.toLowerCase().replace(/\./g, '');
  if (!clock[2] && !meridiem) return null; // a bare number is not a time
  if (meridiem) {
    if (hour < 1 || hour > 12) return null;
    hour = (hour % 12) + (meridiem === 'pm' ? 12 : 0);
  }
  if (hour > 23 || minute > 59) return null;
  let zone: Zone;
  if (clock[4]) zone = { name: clock[4] === 'GMT' ? 'UTC' : clock[4] };
  else if (clock[5]) zone = { offsetMs: (clock[6] ? Number(clock[6]) * 60 + Math.sign(Number(clock[6]) || 1) * Number(clock[7] ?? 0) : 0) * 60_000 };
  else zone = { name: timeZone };
  let day: { y: number; m: number; d: number };
  if (date) {
    const month = MONTHS.indexOf((date[1] as string).toLowerCase());
    if (month < 0) return null;
    const named = { m: month, d: Number(date[2]) };
    if (date[3]) return zonedTime({ ...named, y: Number(date[3]) }, hour, minute, zone);
    const thisYear = wallDate(now, zone)?.y;
    if (thisYear === undefined) return null;
    const at = zonedTime({ ...named, y: thisYear }, hour, minute, zone);
    return at === null || at >= now - 3600_000 ? at : zonedTime({ ...named, y: thisYear + 1 }, hour, minute, zone);
  } else {
    const today = wallDate(now, zone);
    if (today === null) return null;
    day = today;
  }
  const at = zonedTime(day, hour, minute, zone);
  if (at === null) return at;
  return at < now - 3600_000 ? zonedTime(nextDay(day), hour, minute, zone) : at;
}

/** A zone: an IANA name (undefined: the local zone) or a fixed offset east of UTC. */
type Zone = { name?: string; offsetMs?: undefined } | { offsetMs: number; name?: undefined };

function offsetAt(zone: Zone, at: number): number | null {
  if (zone.offsetMs !== undefined) return zone.offsetMs;
  const parts = partsIn(zone.name, at);
  if (!parts) return null;
  return Date.UTC(parts.y, parts.m, parts.d, parts.h, parts.min, parts.s) - Math.floor(at / 1000) * 1000;
}

function partsIn(timeZone: string | undefined, at: number): { y: number; m: number; d: number; h: number; min: number; s: number } | null {
  let parts: Intl.DateTimeFormatPart[];
  try {
    parts = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    }).formatToParts(at);
  } catch {
    return null; // an unknown zone name
  }
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return { y: get('year'), m: get('month') - 1, d: get('day'), h: get('hour'), min: get('minute'), s: get('second') };
}

function wallDate(at: number, zone: Zone): { y: number; m: number; d: number } | null {
  const offset = offsetAt(zone, at);
  if (offset === null) return null;
  const wall = new Date(at + offset);
  return { y: wall.getUTCFullYear(), m: wall.getUTCMonth(), d: wall.getUTCDate() };
}

function nextDay(day: { y: number; m: number; d: number }): { y: number; m: number; d: number } {
  const t = new Date(Date.UTC(day.y, day.m, day.d + 1));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth(), d: t.getUTCDate() };
}

/** The instant a wall-clock time in `zone` names (the offset taken at that instant, so DST days come out right). */
function zonedTime(day: { y: number; m: number; d: number }, hour: number, minute: number, zone: Zone): number | null {
  const wall = Date.UTC(day.y, day.m, day.d, hour, minute);
  const first = offsetAt(zone, wall);
  if (first === null) return null;
  const second = offsetAt(zone, wall - first);
  return second === null ? null : wall - second;
}

/** A reset an HTTP response's headers name: when (epoch ms), the header and its value. */
export interface HeaderReset {
  until: number;
  header: string;
  value: string;
}

/** Reset headers read besides Retry-After, lower case (the first pattern that matches a name decides its form). */
const RESET_HEADERS: [RegExp, 'duration' | 'date' | 'seconds' | 'epoch-or-seconds'][] = [
  // OpenAI: `x-ratelimit-reset-requests: 1s`, `x-ratelimit-reset-tokens: 6m0s` (Go durations).
  [/^x-ratelimit-reset-(?:requests|tokens)$/, 'duration'],
  // Anthropic: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset: <RFC 3339>`.
  [/^anthropic-ratelimit-(?:requests|tokens|input-tokens|output-tokens)-reset$/, 'date'],
  // Anthropic subscriptions: `anthropic-ratelimit-unified-reset: <epoch seconds>`.
  [/^anthropic-ratelimit-unified(?:-[a-z0-9]+)?-reset$/, 'epoch-or-seconds'],
  // IETF draft-ietf-httpapi-ratelimit-headers: `ratelimit-reset: <delta seconds>`.
  [/^ratelimit-reset$/, 'seconds'],
  // Common: `x-ratelimit-reset`, epoch seconds (GitHub), epoch ms (OpenRouter) or delta seconds.
  [/^x-ratelimit-reset$/, 'epoch-or-seconds'],
];

/**
 * The reset an HTTP 429's response headers name (as an engine reported them in its structured error event), or null:
 * `retry-after` when it is a positive delay (RFC 9110 §10.2.3: delay-seconds or an HTTP-date; `retry-after-ms` as
 * OpenAI's and Anthropic's SDKs read it), else the latest reset of the provider headers in RESET_HEADERS (every limit
 * they name has reset by then). A reset not after `now`, or more than MAX_QUOTA_WAIT_MS ahead, is none. Header names
 * are matched case-insensitively; non-string values are ignored. Pure.
 */
export function quotaResetFromHeaders(headers: Record<string, unknown>, now: number): HeaderReset | null {
  const byName = new Map<string, string>();
  for (const [k, v] of Object.entries(headers)) if (typeof v === 'string' || typeof v === 'number') byName.set(k.toLowerCase(), String(v).trim());
  const valid = (r: HeaderReset | null) => (r && r.until > now && r.until - now <= MAX_QUOTA_WAIT_MS ? r : null);
  const ms = byName.get('retry-after-ms');
  if (ms !== undefined && /^\d+(?:\.\d+)?$/.test(ms) && Number(ms) > 0) {
    const r = valid({ until: now + Math.ceil(Number(ms)), header: 'retry-after-ms', value: ms });
    if (r) return r;
  }
  const after = byName.get('retry-after');
  if (after !== undefined) {
    const until = /^\d+(?:\.\d+)?$/.test(after) ? (Number(after) > 0 ? now + Math.ceil(Number(after) * 1000) : null) : httpDate(after);
    const r = until === null ? null : valid({ until, header: 'retry-after', value: after });
    if (r) return r;
  }
  let latest: HeaderReset | null = null;
  for (const [name, value] of byName) {
    const form = RESET_HEADERS.find(([re]) => re.test(name))?.[1];
    if (!form) continue;
    const until = headerTime(form, value, now);
    const r = until === null ? null : valid({ until, header: name, value });
    if (r && (!latest || r.until > latest.until)) latest = r;
  }
  return latest;
}

function headerTime(form: 'duration' | 'date' | 'seconds' | 'epoch-or-seconds', value: string, now: number): number | null {
  if (form === 'date') return httpDate(value);
  if (form === 'duration') {
    const ms = goDurationMs(value);
    return ms === null ? null : now + ms;
  }
  if (!/^\d+(?:\.\d+)?$/.test(value)) return null;
  const n = Number(value);
  if (form === 'seconds') return now + Math.ceil(n * 1000);
  // Epoch ms, epoch seconds, or a delay in seconds, told apart by size (a delay of 31 years is no delay).
  return n >= 1e12 ? n : n >= 1e9 ? n * 1000 : now + Math.ceil(n * 1000);
}

/** An RFC 3339 or HTTP-date (RFC 9110 §5.6.7) time, epoch ms; null when it does not parse. */
function httpDate(value: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}T|^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} /.test(value)) return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : t;
}

const GO_UNITS: Record<string, number> = { h: 3600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000001 };

/** A Go duration (`6m0s`, `1h2m3.5s`, `20ms`) in ms, as OpenAI's x-ratelimit-reset-* headers give it; null otherwise. */
function goDurationMs(value: string): number | null {
  if (!/^(?:\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns))+$/.test(value)) return null;
  let ms = 0;
  for (const m of value.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) ms += Number(m[1]) * (GO_UNITS[m[2] as string] ?? 0);
  return Math.ceil(ms);
}
