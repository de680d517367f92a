/**
 * Claude Code (`claude -p --output-format stream-json --verbose`). Output: JSON lines `system` (subtype
 * `init`, with `model`), `assistant` / `user` messages, and `result` with `is_error`, `result` (final text),
 * `usage`, `total_cost_usd` and `api_error_status`.
 * Seen in test/fixtures/engines/claude*.jsonl (Claude Code 2.1.332 against the scripted model server): the
 * `result` event totals the whole session (its `model_usage_since_last_result` is the separate per-result
 * delta), so the last `result` is read, not a sum. Anthropic semantics: `input_tokens` excludes
 * `cache_read_input_tokens`. API failures appear as an `assistant` message with model `<synthetic>` and
 * `is_api_error_message`, then an `is_error` result.
 */
import { emptyUsage, type EngineSpec, type UsageReport } from './types';
import { amountAt, at, countAt, forgedFinalReport, jsonEvents, numberAt, stringAt, upToSoleFinal, type LogEvent } from './jsonl';
import { addCount, usdToMicroUsd } from './tally';
import { classifyLogTail, finalEventQuota } from './error-class';
import type { QuotaEvent } from './quota-reset';

// Claude Code's placeholder model on messages it makes up itself (API errors), not a model that answered.
const SYNTHETIC_MODEL = '<synthetic>';

/**
 * Reads usage, cost (`total_cost_usd` → micro-USD), the answering model (last real assistant message, else the
 * first init event's model) and the final status (`result.is_error`) from a Claude Code log; nothing after the
 * `result`, and nothing at all when there are two (forgedFinalReport: a forged line). Never throws.
 */
export function parseClaudeOutput(log: string): UsageReport {
  const events = upToSoleFinal(jsonEvents(log), isClaudeFinal);
  if (!events) return forgedFinalReport('result');
  const report = emptyUsage();
  let initModel: string | null | undefined;
  let answeredModel: string | null = null;
  for (const event of events) {
    // Claude Code prints one init event, first: a later one is a line the worker forged into the log.
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
 * The usage a running Claude Code session has reported so far: its `result` once printed (parseClaudeOutput), else the
 * `usage` of each real assistant message, the last one printed per message id (Claude Code prints an assistant event
 * per content block, each carrying its message's usage so far), summed: `input_tokens`, `cache_read_input_tokens`
 * (tokensCached) and `output_tokens`. No cost (the catalog prices the tokens). Never throws.
 */
export function streamClaudeUsage(log: string): UsageReport {
  const events = jsonEvents(log);
  if (events.some(isClaudeFinal)) return parseClaudeOutput(log);
  const byMessage = new Map<string, LogEvent>();
  for (const event of events) {
    if (event.type !== 'assistant' || stringAt(event, 'message', 'model') === SYNTHETIC_MODEL) continue;
    byMessage.set(stringAt(event, 'message', 'id') ?? `#${byMessage.size}`, event);
  }
  const report = emptyUsage();
  for (const event of byMessage.values()) {
    report.tokensIn = addCount(report.tokensIn, countAt(event, 'message', 'usage', 'input_tokens'));
    report.tokensCached = addCount(report.tokensCached, countAt(event, 'message', 'usage', 'cache_read_input_tokens'));
    report.tokensOut = addCount(report.tokensOut, countAt(event, 'message', 'usage', 'output_tokens'));
  }
  return report;
}

function readResult(result: LogEvent, report: UsageReport): void {
  report.tokensIn = countAt(result, 'usage', 'input_tokens');
  report.tokensCached = countAt(result, 'usage', 'cache_read_input_tokens');
  report.tokensOut = countAt(result, 'usage', 'output_tokens');
  report.tokensReasoning = countAt(result, 'usage', 'output_tokens_details', 'thinking_tokens');
  const usd = amountAt(result, 'total_cost_usd');
  report.costMicroUsd = usd === null ? null : usdToMicroUsd(usd);
  const failed = at(result, 'is_error') === true;
  report.finalStatus = failed ? 'error' : 'success';
  report.finalError = failed ? (stringAt(result, 'result') ?? stringAt(result, 'subtype')) : null;
}

/**
 * The final message: the last `result` event's `result` text (Claude Code's final answer, claude.jsonl), or when no
 * result was printed, the text blocks of the last real assistant message; null when the last result is an error
 * (`is_error`: its `result` is the error, not an answer), nothing was said, or the log holds two `result` events
 * (jsonl.ts upToSoleFinal). Never throws.
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

/** `claude -p` answers one prompt: it prints one `result` (jsonl.ts upToSoleFinal). */
function isClaudeFinal(event: LogEvent): boolean {
  return event.type === 'result';
}

/**
 * The quota a Claude Code run reports: its one `result` event with `is_error` whose `result` names the usage limit and
 * its reset ("Claude AI usage limit reached|1766502000", "You've hit your session limit · resets 12:50am
 * (America/Los_Angeles)"). Assistant messages (the model's, or Claude Code's synthetic API-error ones), tool results
 * and plain lines are never read (error-class.ts finalEventQuota). Never throws.
 */
export function claudeQuotaReset(log: string, now: number): QuotaEvent | null {
  return finalEventQuota(log, now, isClaudeFinal, (final) => (at(final, 'is_error') === true ? [stringAt(final, 'result') ?? ''] : null), 'its result event (is_error)');
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
  stateGuarded: ['${CLAUDE_CONFIG_DIR:-~/.claude}/settings.json', '${CLAUDE_CONFIG_DIR:-~/.claude}/settings.local.json', '${CLAUDE_CONFIG_DIR:-~/.claude}/CLAUDE.md', '${CLAUDE_CONFIG_DIR:-~/.claude}/agents', '${CLAUDE_CONFIG_DIR:-~/.claude}/commands', '${CLAUDE_CONFIG_DIR:-~/.claude}/hooks', '${CLAUDE_CONFIG_DIR:-~/.claude}/skills'],
  // The login and the user's settings; projects/ (the sessions), history.jsonl, todos/, shell-snapshots/ and file-history/ are not.
  stateShared: ['${CLAUDE_CONFIG_DIR:-~/.claude}/.credentials.json', '${CLAUDE_CONFIG_DIR:-~/.claude}/settings.json', '${CLAUDE_CONFIG_DIR:-~/.claude}/.claude.json'],
  defaultModel: null,
  retryContext: 'prompt',
  parseOutput: parseClaudeOutput,
  streamUsage: streamClaudeUsage,
  finalMessage: claudeFinalMessage,
  classifyError: (tail) => classifyLogTail(tail, claudeFatalErrors),
  quotaReset: claudeQuotaReset,
};
