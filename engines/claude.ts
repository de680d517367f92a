/**
 * Claude Code (`claude -p --output-format stream-json --verbose`). Output: JSON lines `system` (subtype
 * `init`, with `model`), `assistant` / `user` messages, and `result` with `is_error`, `result` (final text),
 * `usage`, `total_cost_usd` and `api_error_status`.
 * Seen running Claude Code 2.1.332 against the scripted model server (test/e2e/real-claude.e2e.test.ts, captures in
 * test/fixtures/engines/claude*.jsonl): a `result` ends each turn, and one `-p` prompt can take more than one turn —
 * a background subagent's completion wakes the main agent for another turn, with a second `init` and a second
 * `result` whose `result_index` counts on from 0. A result's `usage` covers only its own turn's main-agent calls;
 * `modelUsage` (per model) and `total_cost_usd` cover the whole session, subagents included, so the last result's
 * `modelUsage` is read. Anthropic semantics: `inputTokens` excludes `cacheReadInputTokens` and
 * `cacheCreationInputTokens`, which Verdict counts in (tokens in = all three; cached = the cache reads). API failures
 * appear as an `assistant` message with model `<synthetic>` and `is_api_error_message`, then an `is_error` result.
 */
import { emptyUsage, type EngineSpec, type UsageReport } from './types';
import { amountAt, at, countAt, jsonEvents, numberAt, objectAt, stringAt, upToSoleFinal, type LogEvent } from './jsonl';
import { addCount, usdToMicroUsd } from './tally';
import { classifyLogTail, finalEventQuota } from './error-class';
import type { QuotaEvent } from './quota-reset';

// Claude Code's placeholder model on messages it makes up itself (API errors), not a model that answered.
const SYNTHETIC_MODEL = '<synthetic>';

/**
 * Reads usage, cost (`total_cost_usd` → micro-USD), the answering model (last real assistant message, else the
 * first init event's model) and the final status (`result.is_error`) from a Claude Code log: the last `result`, and
 * nothing after it; nothing at all when the results are not Claude Code's sequence (claudeEvents: a forged line).
 * A log without any `result` (a session stopped for the budget, cancelled, timed out, killed) has the tokens its
 * assistant messages reported (assistantUsage) and no cost (the catalog prices the tokens), never null tokens: what
 * was used before the stop was used. Never throws.
 */
export function parseClaudeOutput(log: string): UsageReport {
  const events = claudeEvents(jsonEvents(log));
  if (!events)
    return {
      ...emptyUsage(),
      finalStatus: 'error',
      finalError:
        "the log's result events are not the sequence Claude Code prints (result_index 0, 1, … in order): the worker wrote into its engine's output, so none is believed",
    };
  const report = events.some(isClaudeFinal) ? emptyUsage() : assistantUsage(events);
  let initModel: string | null | undefined;
  let answeredModel: string | null = null;
  for (const event of events) {
    // The first init names the requested model (a later turn's init repeats it).
    if (event.type === 'system' && event.subtype === 'init' && initModel === undefined) initModel = stringAt(event, 'model');
    if (event.type === 'assistant') {
      const model = stringAt(event, 'message', 'model');
      if (model && model !== SYNTHETIC_MODEL) answeredModel = model;
    }
    if (event.type === 'result') readResult(event, report);
  }
  report.reportedModel = answeredModel ?? initModel ?? null;
  return report;
}

/**
 * The usage a running Claude Code session has reported so far: its `result` once printed, else what its assistant
 * messages reported (parseClaudeOutput, which reads a log cut off before its result the same way). Never throws.
 */
export function streamClaudeUsage(log: string): UsageReport {
  const parsed = parseClaudeOutput(log);
  // Every assistant message of the log, results or not. A result totals the session's messages so far, so a real one
  // never holds fewer tokens than they report; one that does was written by the worker into its CLI's output (a small
  // `result` early, after which parseClaudeOutput reads nothing), and the budget then reads the messages themselves
  // (priced from the catalog: no cost) instead of a reading frozen at the forged one while the session goes on.
  const messages = assistantUsage(jsonEvents(log));
  const more = (a: number | null, b: number | null) => a !== null && (b === null || a > b);
  if (more(messages.tokensIn, parsed.tokensIn) || more(messages.tokensOut, parsed.tokensOut)) return { ...messages, reportedModel: parsed.reportedModel };
  return parsed;
}

/**
 * The tokens of a session that printed no `result`: the `usage` of each real assistant message, summed over message
 * ids. Claude Code prints an assistant event per content block, each carrying its message's usage so far (its output
 * tokens growing), so each count is the largest any event of that id carried: a line written into the output later
 * with the same id and smaller counts lowers nothing. Tokens in = `input_tokens` + `cache_read_input_tokens` +
 * `cache_creation_input_tokens` (Anthropic reports them apart), cached = the cache reads, and `output_tokens`. No
 * cost, no final status.
 */
function assistantUsage(events: LogEvent[]): UsageReport {
  const byMessage = new Map<string, { fresh: number | null; read: number | null; written: number | null; out: number | null }>();
  const most = (a: number | null | undefined, b: number | null) => (a === null || a === undefined ? b : b === null ? a : Math.max(a, b));
  for (const event of events) {
    if (event.type !== 'assistant' || stringAt(event, 'message', 'model') === SYNTHETIC_MODEL) continue;
    const id = stringAt(event, 'message', 'id') ?? `#${byMessage.size}`;
    const had = byMessage.get(id);
    byMessage.set(id, {
      fresh: most(had?.fresh, countAt(event, 'message', 'usage', 'input_tokens')),
      read: most(had?.read, countAt(event, 'message', 'usage', 'cache_read_input_tokens')),
      written: most(had?.written, countAt(event, 'message', 'usage', 'cache_creation_input_tokens')),
      out: most(had?.out, countAt(event, 'message', 'usage', 'output_tokens')),
    });
  }
  const report = emptyUsage();
  for (const m of byMessage.values()) {
    report.tokensIn = addCount(report.tokensIn, m.fresh === null ? null : m.fresh + (m.read ?? 0) + (m.written ?? 0));
    report.tokensCached = addCount(report.tokensCached, m.read);
    report.tokensCacheWrite = addCount(report.tokensCacheWrite, m.written);
    report.tokensOut = addCount(report.tokensOut, m.out);
  }
  return report;
}

/**
 * The session's token totals from a result's `modelUsage` (summed over its models), else — an older result without
 * it — from its `usage`. Tokens in = input + cache reads + cache writes (Anthropic reports them apart).
 */
function readResult(result: LogEvent, report: UsageReport): void {
  const perModel = objectAt(result, 'modelUsage');
  const models = perModel ? Object.values(perModel) : [];
  if (perModel && models.length > 0) {
    const sum = (key: string): number | null => {
      let total = 0;
      for (const m of models) {
        const count = countAt(m, key);
        if (count === null) return null;
        total += count;
      }
      return total;
    };
    const fresh = sum('inputTokens');
    const read = sum('cacheReadInputTokens');
    const written = sum('cacheCreationInputTokens');
    report.tokensIn = fresh === null || read === null || written === null ? null : fresh + read + written;
    report.tokensCached = read;
    report.tokensCacheWrite = written;
    report.tokensOut = sum('outputTokens');
    report.tokensReasoning = sum('thinkingTokens');
  } else {
    const fresh = countAt(result, 'usage', 'input_tokens');
    const read = countAt(result, 'usage', 'cache_read_input_tokens') ?? 0;
    const written = countAt(result, 'usage', 'cache_creation_input_tokens') ?? 0;
    report.tokensIn = fresh === null ? null : fresh + read + written;
    report.tokensCached = fresh === null ? null : read;
    report.tokensCacheWrite = fresh === null ? null : written;
    report.tokensOut = countAt(result, 'usage', 'output_tokens');
    report.tokensReasoning = countAt(result, 'usage', 'output_tokens_details', 'thinking_tokens');
  }
  const usd = amountAt(result, 'total_cost_usd');
  report.costMicroUsd = usd === null ? null : usdToMicroUsd(usd);
  const failed = at(result, 'is_error') === true;
  report.finalStatus = failed ? 'error' : 'success';
  report.finalError = failed ? (stringAt(result, 'result') ?? stringAt(result, 'subtype')) : null;
}

/**
 * The final message: the `result` event's `result` text (Claude Code's final answer, claude.jsonl), or when no
 * result was printed, the text blocks of the last real assistant message; null when the result is an error
 * (`is_error`: its `result` is the error, not an answer), nothing was said, or the log holds more than one `result`
 * (jsonl.ts upToSoleFinal). A genuine second turn (result_index 1) is told from a result forged right after the real
 * one by nothing a worker cannot also write, and this text is what a reviewer's verdict is read from: so with two
 * results there is no answer (the reviewer is an ERROR), where the usage is still read (claudeEvents). Never throws.
 */
export function claudeFinalMessage(log: string): string | null {
  let fromResult: string | null | undefined;
  let fromAssistant: string | null = null;
  const events = upToSoleFinal(jsonEvents(log), isClaudeFinal);
  if (!events) return null;
  for (const event of events) {
    if (event.type === 'result') fromResult = at(event, 'is_error') === true ? null : stringAt(event, 'result');
    if (event.type === 'assistant' && stringAt(event, 'message', 'model') !== SYNTHETIC_MODEL) {
      const content = at(event, 'message', 'content');
      const texts = Array.isArray(content) ? content.filter((b) => stringAt(b, 'type') === 'text').map((b) => stringAt(b, 'text') ?? '') : [];
      if (texts.length) fromAssistant = texts.join('');
    }
  }
  return fromResult === undefined ? fromAssistant : fromResult;
}

/** A `result` event: the end of one of Claude Code's turns. */
function isClaudeFinal(event: LogEvent): boolean {
  return event.type === 'result';
}

/**
 * The events usage is read from: every event up to the last `result`, all of them when there is none (cut off), or
 * null when the results are not the sequence Claude Code prints — `result_index` 0, 1, 2… in order (a result without
 * one counts as 0), each reporting at least the session cost and tokens the one before did (a later result's
 * `total_cost_usd` and `modelUsage` are the session's totals so far). A result the worker forged into claude's stdout
 * (a tool can write there through /proc/<pid>/fd/1) repeats an index a real one also takes, breaks the order, or, put
 * after the real last one to lower the usage, reports less than it: none is believed. One put after the real last
 * one that reports more only raises the attempt's own cost. Lines after the last result are never read (jsonl.ts
 * upToSoleFinal gives the reason).
 */
export function claudeEvents(events: LogEvent[]): LogEvent[] | null {
  let last = -1;
  let expected = 0;
  let before: { usd: number; tokens: number } | null = null;
  for (const [i, event] of events.entries()) {
    if (!isClaudeFinal(event)) continue;
    const index = at(event, 'result_index') ?? 0;
    if (index !== expected) return null;
    const now = { usd: amountAt(event, 'total_cost_usd') ?? 0, tokens: sessionTokens(event) };
    if (before && (now.usd < before.usd || now.tokens < before.tokens)) return null;
    before = now;
    expected++;
    last = i;
  }
  return last < 0 ? events : events.slice(0, last + 1);
}

/** Every token count in a result's `modelUsage` (input, cache reads and writes, output), summed; 0 when none. */
function sessionTokens(result: LogEvent): number {
  const perModel = objectAt(result, 'modelUsage') ?? {};
  let total = 0;
  for (const m of Object.values(perModel))
    for (const key of ['inputTokens', 'cacheReadInputTokens', 'cacheCreationInputTokens', 'outputTokens']) total += countAt(m, key) ?? 0;
  return total;
}

/**
 * The quota a Claude Code run reports: its one `result` event with `is_error` whose `result` names the usage limit and
 * its reset ("Claude AI usage limit reached|1766502000", "You've hit your session limit · resets 12:50am
 * (America/Los_Angeles)"). Assistant messages (the model's, or Claude Code's synthetic API-error ones), tool results
 * and plain lines are never read (error-class.ts finalEventQuota). Never throws.
 */
export function claudeQuotaReset(log: string, now: number): QuotaEvent | null {
  return finalEventQuota(
    log,
    now,
    isClaudeFinal,
    (final) => (at(final, 'is_error') === true ? [stringAt(final, 'result') ?? ''] : null),
    'its result event (is_error)',
  );
}

function claudeFatalErrors(events: LogEvent[]): string[] {
  const texts: string[] = [];
  for (const event of events) {
    const isErrorResult = event.type === 'result' && at(event, 'is_error') === true;
    const isApiError = event.type === 'assistant' && at(event, 'is_api_error_message') === true;
    if (!isErrorResult && !isApiError) continue;
    const statusCode = numberAt(event, 'api_error_status');
    if (statusCode !== null) texts.push(`HTTP ${statusCode}`);
    texts.push(stringAt(event, 'result') ?? stringAt(event, 'error') ?? 'claude reported an error');
  }
  return texts;
}

/**
 * The Claude Code engine. Sandbox mode pre-approves only Bash, Write and Edit. Full access uses
 * `--dangerously-skip-permissions`, which Claude Code refuses as root ("cannot be used with root/sudo
 * privileges") unless IS_SANDBOX=1 is in the environment; Verdict does not set it for the user.
 */
export const claudeEngine: EngineSpec = {
  name: 'claude',
  harness: 'claude-code',
  binary: 'claude',
  install: 'npm i -g @anthropic-ai/claude-code',
  // `--allowedTools` takes a variadic list, and `--` ends it and all options before the prompt.
  argv: ['-p', '--output-format', 'stream-json', '--verbose', '{access}', ['--model', '{model}'], '{engine_args}', '--', '{spec}'],
  fullAccessArgv: ['--dangerously-skip-permissions'],
  sandboxArgv: ['--allowedTools', 'Bash,Write,Edit'],
  nestedSandboxArgv: [],
  env: { DISABLE_AUTOUPDATER: '1' },
  credentialEnv: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN'],
  stateDirs: ['${CLAUDE_CONFIG_DIR:-~/.claude}'],
  stateFiles: ['~/.claude.json'],
  stateGuarded: [
    '${CLAUDE_CONFIG_DIR:-~/.claude}/settings.json',
    '${CLAUDE_CONFIG_DIR:-~/.claude}/settings.local.json',
    '${CLAUDE_CONFIG_DIR:-~/.claude}/CLAUDE.md',
    '${CLAUDE_CONFIG_DIR:-~/.claude}/agents',
    '${CLAUDE_CONFIG_DIR:-~/.claude}/commands',
    '${CLAUDE_CONFIG_DIR:-~/.claude}/hooks',
    '${CLAUDE_CONFIG_DIR:-~/.claude}/skills',
  ],
  // The login and the user's settings; projects/ (the sessions), history.jsonl, todos/, shell-snapshots/ and file-history/ are not.
  stateShared: [
    '${CLAUDE_CONFIG_DIR:-~/.claude}/.credentials.json',
    '${CLAUDE_CONFIG_DIR:-~/.claude}/settings.json',
    '${CLAUDE_CONFIG_DIR:-~/.claude}/.claude.json',
  ],
  defaultModel: null,
  retryContext: 'prompt',
  // Seen from Claude Code 2.1.332 (system, assistant, user, result), and the other message types of its stream-json
  // output that the CLI's --help and its SDK name (partial messages, rate-limit and tool-progress notices, …).
  eventTypes: [
    'system',
    'assistant',
    'user',
    'result',
    'stream_event',
    'rate_limit_event',
    'tool_progress',
    'tool_use_summary',
    'auth_status',
    'prompt_suggestion',
    'keep_alive',
  ],
  parseOutput: parseClaudeOutput,
  streamUsage: streamClaudeUsage,
  // tokensIn counts the cache reads in (parseClaudeOutput adds them to input_tokens, which leaves them out).
  cachedInInput: true,
  finalMessage: claudeFinalMessage,
  classifyError: (tail) => classifyLogTail(tail, claudeFatalErrors),
  quotaReset: claudeQuotaReset,
};
