/**
 * OpenCode (`opencode run --format json`). Output: JSON lines `step_start`, `text`, `tool_use`, `step_finish`
 * (`part.tokens {input, output, reasoning, cache {read, write}}`, `part.cost` in USD, `part.reason`) and
 * `error` (`error.name`, `error.data {message, statusCode}`).
 * Seen in test/fixtures/engines/opencode*.jsonl (opencode 1.18.33 against the scripted model server): one
 * `step_finish` per model call, each with that call's tokens, so they are summed. OpenCode splits the
 * provider's numbers: `input` excludes `cache.read`/`cache.write` and `output` excludes `reasoning`; they are added
 * back so tokensIn/tokensOut mean what they mean for every other engine (all input, all output, cached and
 * reasoning being subsets). No model id is printed.
 * Cost: opencode prints 0 for a model it has no price for, which cannot be told from a free model, so a total of 0
 * is recorded as unknown (null) and the scoreboard prices it from the catalog instead.
 */
import { emptyUsage, type EngineSpec, type UsageReport } from './types';
import { amountAt, countAt, forgedFinalReport, jsonEvents, numberAt, objectAt, stringAt, upToSoleFinal, type LogEvent } from './jsonl';
import { addCount, usdToMicroUsd } from './tally';
import { classifyLogTail } from './error-class';
import { quotaResetFromHeaders, quotaResetIn, type QuotaEvent } from './quota-reset';

/**
 * Reads usage and cost summed over every `step_finish`, and the final status: `error` when an `error` event
 * came after the last step, `success` when the last step ended for a reason other than `tool-calls` (the
 * model stopped), null otherwise (the run was cut off mid-loop). Nothing after the step that ended the loop is read,
 * and nothing at all when two steps ended it (forgedFinalReport: a forged line). Never throws.
 */
export function parseOpencodeOutput(log: string): UsageReport {
  const events = upToSoleFinal(jsonEvents(log), isOpencodeFinal);
  if (!events) return forgedFinalReport('final step_finish');
  return stepsUsage(events);
}

/**
 * The usage a running opencode session has reported so far, for the budget: every `step_finish` of the log summed,
 * a step that ended the loop or not. Not parseOpencodeOutput, which reads nothing after the step that ended the loop:
 * a final step the worker wrote into its engine's output early (`reason: "stop"`, its tool writing to the engine's
 * stdout) froze the reading there while opencode went on spending. A forged step here can only add. Never throws.
 */
export function streamOpencodeUsage(log: string): UsageReport {
  return stepsUsage(jsonEvents(log));
}

/** Usage, cost and final status summed over the `step_finish` events of `events` (see parseOpencodeOutput). */
function stepsUsage(events: LogEvent[]): UsageReport {
  const report = emptyUsage();
  // Micro-USD, summed step by step: a step whose cost is no safe amount (a worker's forged 1e10) counts as unknown
  // alone; summed in USD first, one such step made the whole session's cost null, and the budget stopped counting it.
  let micro: number | null = null;
  for (const event of events) {
    if (event.type === 'step_finish') {
      const input = countAt(event, 'part', 'tokens', 'input');
      const output = countAt(event, 'part', 'tokens', 'output');
      const reasoning = countAt(event, 'part', 'tokens', 'reasoning');
      const cacheRead = countAt(event, 'part', 'tokens', 'cache', 'read');
      const cacheWrite = countAt(event, 'part', 'tokens', 'cache', 'write');
      report.tokensIn = addCount(report.tokensIn, input === null ? null : input + (cacheRead ?? 0) + (cacheWrite ?? 0));
      report.tokensOut = addCount(report.tokensOut, output === null ? null : output + (reasoning ?? 0));
      report.tokensReasoning = addCount(report.tokensReasoning, reasoning);
      report.tokensCached = addCount(report.tokensCached, cacheRead);
      report.tokensCacheWrite = addCount(report.tokensCacheWrite, cacheWrite);
      const usd = amountAt(event, 'part', 'cost');
      micro = addCount(micro, usd === null ? null : usdToMicroUsd(usd));
      if (micro !== null) micro = Math.min(micro, Number.MAX_SAFE_INTEGER);
      const stopped = stringAt(event, 'part', 'reason') !== 'tool-calls';
      report.finalStatus = stopped ? 'success' : null;
      report.finalError = null;
    } else if (event.type === 'error') {
      report.finalStatus = 'error';
      report.finalError = opencodeErrorMessage(event);
    }
  }
  report.costMicroUsd = micro === null || micro === 0 ? null : micro;
  return report;
}

/**
 * The final message: the `text` parts of the last message that printed text, joined in order (opencode prints an
 * answer as `text` events whose `part.messageID` names the message; opencode.jsonl), or null when none was printed
 * or an `error` event came after it, or two steps ended the loop (jsonl.ts upToSoleFinal). Never throws.
 */
export function opencodeFinalMessage(log: string): string | null {
  let messageId: string | null = null;
  let parts: string[] = [];
  for (const event of upToSoleFinal(jsonEvents(log), isOpencodeFinal) ?? []) {
    if (event.type === 'error') {
      messageId = null;
      parts = [];
    }
    if (event.type !== 'text') continue;
    const id = stringAt(event, 'part', 'messageID');
    if (id !== messageId) {
      messageId = id;
      parts = [];
    }
    parts.push(stringAt(event, 'part', 'text') ?? '');
  }
  return parts.length ? parts.join('') : null;
}

/**
 * The step that ends `opencode run`: its loop goes on while a step ends for `tool-calls` and stops at the first that
 * ends otherwise, so a run prints one such step_finish (jsonl.ts upToSoleFinal).
 */
function isOpencodeFinal(event: LogEvent): boolean {
  return event.type === 'step_finish' && stringAt(event, 'part', 'reason') !== 'tool-calls';
}

function opencodeErrorMessage(event: LogEvent): string {
  return stringAt(event, 'error', 'data', 'message') ?? stringAt(event, 'error', 'name') ?? 'opencode reported an error';
}

/**
 * The quota an opencode run reports: the `error` event that ended it — the last JSON event of its log, with no step
 * having ended its loop (upToSoleFinal: a run with two such steps says nothing) — with `error.data.statusCode` 429 and
 * a reset in the response headers opencode reports with it (`error.data.responseHeaders`: a positive retry-after, or
 * the provider's reset headers, quota-reset.ts quotaResetFromHeaders; opencode-quota.jsonl), else a reset named in its
 * message or the response body (`usage_limit_reached` with `resets_at`). An error event the run went on after (one the
 * worker wrote into opencode's stdout), text and tool output are never read. Never throws.
 */
export function opencodeQuotaReset(log: string, now: number): QuotaEvent | null {
  const last = upToSoleFinal(jsonEvents(log), isOpencodeFinal)?.at(-1);
  if (!last || last.type !== 'error') return null;
  const message = opencodeErrorMessage(last);
  const statusCode = numberAt(last, 'error', 'data', 'statusCode');
  if (statusCode === 429) {
    const fromHeaders = quotaResetFromHeaders(objectAt(last, 'error', 'data', 'responseHeaders') ?? {}, now);
    if (fromHeaders)
      return {
        until: fromHeaders.until,
        text: `HTTP 429: ${message} (${fromHeaders.header}: ${fromHeaders.value})`.slice(0, 300),
        source: `its error event (HTTP 429, header ${fromHeaders.header})`,
      };
  }
  const fromWords = quotaResetIn([message, stringAt(last, 'error', 'data', 'responseBody') ?? ''], now);
  return fromWords && { ...fromWords, source: `its error event${statusCode !== null ? ` (HTTP ${statusCode})` : ''}` };
}

function opencodeFatalErrors(events: LogEvent[]): string[] {
  const texts: string[] = [];
  for (const event of events.filter((e) => e.type === 'error')) {
    const statusCode = numberAt(event, 'error', 'data', 'statusCode');
    if (statusCode !== null) texts.push(`HTTP ${statusCode}`);
    texts.push(opencodeErrorMessage(event));
  }
  return texts;
}

/**
 * The OpenCode engine. OpenCode has no sandbox: in sandbox mode its configured permissions apply; full access
 * adds `--auto`, which approves every permission not explicitly denied.
 */
export const opencodeEngine: EngineSpec = {
  name: 'opencode',
  harness: 'opencode',
  binary: 'opencode',
  install: 'npm i -g opencode-ai',
  // The model is `provider/model`, e.g. `openrouter/qwen/qwen3-coder`.
  // `--dir`: opencode takes its project directory from $PWD (inherited from the orchestrator), not from the
  // process's cwd; without it a worker edits the orchestrator's directory instead of its task dir.
  argv: ['run', '--format', 'json', '--dir', '{taskdir}', '{access}', ['--model', '{model}'], '{engine_args}', '--', '{spec}'],
  fullAccessArgv: ['--auto'],
  sandboxArgv: [],
  nestedSandboxArgv: [],
  env: { OPENCODE_DISABLE_AUTOUPDATE: '1' },
  // The providers' keys opencode reads from the environment (models.dev's provider entries).
  credentialEnv: [
    'OPENROUTER_API_KEY',
    'OPENAI_API_KEY',
    'ANTHROPIC_API_KEY',
    'GEMINI_API_KEY',
    'GOOGLE_GENERATIVE_AI_API_KEY',
    'GROQ_API_KEY',
    'MISTRAL_API_KEY',
    'DEEPSEEK_API_KEY',
    'XAI_API_KEY',
    'TOGETHER_AI_API_KEY',
    'FIREWORKS_API_KEY',
    'CEREBRAS_API_KEY',
    'OPENCODE_API_KEY',
  ],
  stateDirs: [
    '${XDG_DATA_HOME:-~/.local/share}/opencode',
    '${XDG_CONFIG_HOME:-~/.config}/opencode',
    '${XDG_CACHE_HOME:-~/.cache}/opencode',
    '${XDG_STATE_HOME:-~/.local/state}/opencode',
  ],
  stateFiles: [],
  stateGuarded: [
    '${XDG_CONFIG_HOME:-~/.config}/opencode/opencode.json',
    '${XDG_CONFIG_HOME:-~/.config}/opencode/opencode.jsonc',
    '${XDG_CONFIG_HOME:-~/.config}/opencode/AGENTS.md',
    '${XDG_CONFIG_HOME:-~/.config}/opencode/agent',
    '${XDG_CONFIG_HOME:-~/.config}/opencode/command',
    '${XDG_CONFIG_HOME:-~/.config}/opencode/plugin',
    '${XDG_CONFIG_HOME:-~/.config}/opencode/plugins',
    '${XDG_CONFIG_HOME:-~/.config}/opencode/tools',
    '${XDG_CONFIG_HOME:-~/.config}/opencode/tool',
  ],
  // The login, the config folder, the provider packages it installed (cache) and the tools it downloaded (bin/); its
  // sessions (storage/, opencode.db), logs, snapshots and prompt history (state) are not.
  stateShared: [
    '${XDG_DATA_HOME:-~/.local/share}/opencode/auth.json',
    '${XDG_DATA_HOME:-~/.local/share}/opencode/bin',
    '${XDG_CONFIG_HOME:-~/.config}/opencode',
    '${XDG_CACHE_HOME:-~/.cache}/opencode',
  ],
  defaultModel: null,
  retryContext: 'prompt',
  // The event types `opencode run --format json` 1.18.33 prints (its run command writes exactly these: step_start,
  // step_finish, text, tool_use, reasoning, error), seen in test/fixtures/engines/opencode*.jsonl but for reasoning.
  eventTypes: ['step_start', 'step_finish', 'text', 'tool_use', 'reasoning', 'error'],
  cachedInInput: true,
  parseOutput: parseOpencodeOutput,
  // One step_finish per model call, each with that call's tokens and cost: the sum so far is the usage so far.
  streamUsage: streamOpencodeUsage,
  finalMessage: opencodeFinalMessage,
  classifyError: (tail) => classifyLogTail(tail, opencodeFatalErrors),
  quotaReset: opencodeQuotaReset,
};
