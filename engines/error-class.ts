import type { EngineErrorClass } from './types';
import { jsonEvents, plainLines, upToSoleFinal, type LogEvent } from './jsonl';
import { isQuotaMessage, quotaResetIn, type QuotaEvent } from './quota-reset';

// An HTTP status standing alone: not part of a longer number, a decimal or a `file.js:429:12` stack position.
const status = (code: number) => new RegExp(`(?<![\\d:.])${code}(?![\\d:.])`);

const RATE_LIMIT = [
  status(429),
  /rate[ _-]?limit/i,
  /usage[ _-]?limit/i,
  /too many requests/i,
  /resource[ _-]?exhausted/i,
  /quota exceeded|exceeded your current quota/i,
];

const AUTH = [
  status(401),
  status(403),
  /invalid[ _-]?(?:api[ _-]?)?key/i,
  /not logged in|please run \/login|login required/i,
  /unauthori[sz]ed|unauthenticated|authentication[ _-]?error|failed to authenticate/i,
  /api[ _-]?key (?:is )?(?:required|missing|not set)/i,
  // Gemini CLI 0.61.0 without a key: "When using Gemini API, you must specify the GEMINI_API_KEY environment variable."
  /must (?:specify|set|provide) (?:the |an |your )?\w*(?:API_?KEY|TOKEN)\b/i,
  /forbidden/i,
];

// A plain-text line in which the CLI itself reports a failure (`Error: ...`, `TypeError: ...`, `fatal: ...`).
const ERROR_LINE = /^\W{0,3}(?:\w*Error\b|error\b|fatal\b|panic\b)/;

/** What a log tail says about why a run failed, sorted by how sure the evidence is. */
export interface ErrorEvidence {
  /** Messages of the CLI's own structured error events (a run-ending failure the CLI reported). */
  fatal: string[];
  /** Other texts that may name a cause: non-fatal warnings, plain stderr lines. */
  hints: string[];
}

/**
 * Classifies error evidence: `rate_limit` when any text names HTTP 429 / a rate, usage or quota limit, or a used-up
 * quota with its reset time (engines/quota-reset.ts);
 * else `auth` for HTTP 401/403, an invalid or missing key or a login request; else `engine_error` when the CLI
 * reported a failure (a structured error, or a plain `Error: ...` line); else null. Rate limit wins over auth
 * because a rate-limited run must be requeued rather than counted as a failure.
 */
export function classifyEvidence(evidence: ErrorEvidence): EngineErrorClass | null {
  const texts = [...evidence.fatal, ...evidence.hints];
  if (texts.some((text) => RATE_LIMIT.some((re) => re.test(text)) || isQuotaMessage(text, Date.now()))) return 'rate_limit';
  if (texts.some((text) => AUTH.some((re) => re.test(text)))) return 'auth';
  if (evidence.fatal.length > 0) return 'engine_error';
  if (evidence.hints.some((text) => ERROR_LINE.test(text))) return 'engine_error';
  return null;
}

/**
 * Classifies a log tail: the engine picks the error texts out of its JSON events (`fatalOf`, and optionally
 * non-fatal `hintsOf`); the tail's plain-text lines are added as hints. JSON events that are not errors (the
 * echoed prompt, tool output) are never read, so a spec that mentions "rate limit" cannot misclassify a run.
 */
export function classifyLogTail(
  tail: string,
  fatalOf: (events: LogEvent[]) => string[],
  hintsOf: (events: LogEvent[]) => string[] = () => [],
): EngineErrorClass | null {
  const events = jsonEvents(tail);
  return classifyEvidence({ fatal: fatalOf(events), hints: [...hintsOf(events), ...plainLines(tail)] });
}

/**
 * The quota reset a one-turn CLI's own final event reports (codex turn.failed, claude's and gemini's error result), or
 * null. Only that event is read: the log is cut at its one final event (jsonl.ts upToSoleFinal), so a log with two
 * (the worker wrote one into the engine's stdout) or with none (cut off) reports none, and nothing else the log holds
 * — plain lines, tool output, the agent's messages, other JSON events — is ever read. `errorTexts` gives the event's
 * error words, or null when the event is not an error (a success). `source` names the event in the wait's record.
 */
export function finalEventQuota(
  log: string,
  now: number,
  isFinal: (event: LogEvent) => boolean,
  errorTexts: (final: LogEvent) => string[] | null,
  source: string,
): QuotaEvent | null {
  const final = upToSoleFinal(jsonEvents(log), isFinal)?.at(-1);
  if (!final || !isFinal(final)) return null;
  const texts = errorTexts(final);
  const reset = texts ? quotaResetIn(texts, now) : null;
  return reset && { ...reset, source };
}
