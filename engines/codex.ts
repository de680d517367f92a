/**
 * OpenAI Codex CLI (`codex exec --json`). Output: JSON lines `thread.started`, `turn.started`, `item.*`,
 * `turn.completed {usage}`, `turn.failed {error.message}` and top-level `error {message}`.
 * Seen in test/fixtures/engines/codex*.jsonl (codex-cli 0.171.0 against the scripted model server): the one
 * `turn.completed` totals both model calls of the turn; `cached_input_tokens` is a subset of `input_tokens`
 * and `reasoning_output_tokens` of `output_tokens`. Its usage is the thread's running total (codex-rs
 * exec/src/event_processor_with_jsonl_output.rs, `usage_from_last_total` reads `ThreadTokenUsage.total`), so
 * the last `turn.completed` is read, never a sum. The output names no model and no cost.
 */
import { emptyUsage, type EngineErrorClass, type EngineSpec, type UsageReport } from './types';
import { countAt, forgedFinalReport, jsonEvents, stringAt, upToSoleFinal, type LogEvent } from './jsonl';
import { classifyLogTail, finalEventQuota } from './error-class';
import type { QuotaEvent } from './quota-reset';

/**
 * Reads usage (the thread total of the last `turn.completed`) and the final status (the last of
 * `turn.completed` / `turn.failed` / `error`) from a codex log; nothing after the turn's end, and nothing at all when
 * it ended twice (forgedFinalReport: a forged line). Never throws.
 */
export function parseCodexOutput(log: string): UsageReport {
  const events = upToSoleFinal(jsonEvents(log), isCodexFinal);
  if (!events) return forgedFinalReport('turn.completed / turn.failed');
  const report = emptyUsage();
  for (const event of events) {
    switch (event.type) {
      case 'turn.completed':
        report.tokensIn = countAt(event, 'usage', 'input_tokens');
        report.tokensCached = countAt(event, 'usage', 'cached_input_tokens');
        report.tokensOut = countAt(event, 'usage', 'output_tokens');
        report.tokensReasoning = countAt(event, 'usage', 'reasoning_output_tokens');
        report.finalStatus = 'success';
        report.finalError = null;
        break;
      case 'turn.failed':
      case 'error':
        // The last of these events decides: a later turn.completed means codex recovered.
        report.finalStatus = 'error';
        report.finalError = codexErrorMessage(event);
        break;
    }
  }
  return report;
}

/**
 * The final message: the text of the last `item.completed` whose item is an `agent_message` (codex prints each
 * assistant message as one such item; see codex.jsonl, `"Done: created alpha.txt"`), or null when there is none or
 * a `turn.failed` / `error` came after it, or the log ends its turn twice (jsonl.ts upToSoleFinal). Never throws.
 */
export function codexFinalMessage(log: string): string | null {
  let text: string | null = null;
  for (const event of upToSoleFinal(jsonEvents(log), isCodexFinal) ?? []) {
    if (event.type === 'item.completed' && stringAt(event, 'item', 'type') === 'agent_message') text = stringAt(event, 'item', 'text');
    else if (event.type === 'turn.failed' || event.type === 'error') text = null;
  }
  return text;
}

/** codex exec runs one turn: it ends with one `turn.completed` or `turn.failed` (jsonl.ts upToSoleFinal). */
function isCodexFinal(event: LogEvent): boolean {
  return event.type === 'turn.completed' || event.type === 'turn.failed';
}

function codexErrorMessage(event: LogEvent): string | null {
  return stringAt(event, 'error', 'message') ?? stringAt(event, 'message');
}

/**
 * The quota a codex run reports: its one `turn.failed` naming the usage limit and its reset ("You've hit your usage
 * limit. … try again at Dec 12th, 2026 9:05 PM.", as codex words the API's `usage_limit_reached` 429; codex-quota.jsonl).
 * Its `error` events, items (tool output, the agent's messages) and plain lines are never read (error-class.ts
 * finalEventQuota). Never throws.
 */
export function codexQuotaReset(log: string, now: number): QuotaEvent | null {
  return finalEventQuota(log, now, isCodexFinal, (final) => (final.type === 'turn.failed' ? [codexErrorMessage(final) ?? ''] : null), 'its turn.failed event');
}

function codexFatalErrors(events: LogEvent[]): string[] {
  return events.filter((e) => e.type === 'turn.failed' || e.type === 'error').map((e) => codexErrorMessage(e) ?? String(e.type));
}

/**
 * codex's own error when the variable its model provider's `env_key` names is unset: "Missing environment variable:
 * \`NAME\`." (then the provider's `env_key_instructions`, when it has some), in an `error` event and the `turn.failed`
 * (codex-nokey.jsonl, codex 0.171.0). No key is an auth failure.
 */
const MISSING_KEY_VARIABLE = /^Missing environment variable: `[^`]+`\./;

/**
 * Classifies a codex log tail (error-class.ts classifyLogTail over its `turn.failed` and `error` events and plain
 * lines); what would be an engine_error is auth when one of those events is codex's own missing-key error
 * (MISSING_KEY_VARIABLE). Only its error events are read for that: a command's output or a plain line with the same
 * words is not codex's. Never throws.
 */
export function classifyCodexError(tail: string): EngineErrorClass | null {
  const cls = classifyLogTail(tail, codexFatalErrors);
  if (cls !== 'engine_error') return cls;
  return codexFatalErrors(jsonEvents(tail)).some((m) => MISSING_KEY_VARIABLE.test(m)) ? 'auth' : cls;
}

/** The Codex CLI engine. Sandbox mode is codex's own `workspace-write` sandbox (as root inside Verdict's, Verdict's alone); full access bypasses it. */
export const codexEngine: EngineSpec = {
  name: 'codex',
  harness: 'codex-cli',
  binary: 'codex',
  install: 'npm i -g @openai/codex',
  // `--` ends the options, so a spec that starts with `-` is still the prompt.
  argv: ['exec', '--json', '--skip-git-repo-check', '{access}', ['-m', '{model}'], '{engine_args}', '--', '{spec}'],
  fullAccessArgv: ['--dangerously-bypass-approvals-and-sandbox'],
  sandboxArgv: ['-s', 'workspace-write'],
  // codex makes /tmp a writable root and bind-mounts over /tmp/.git in its own sandbox, which fails on a read-only /tmp
  // ("bwrap: Can't mkdir /tmp/.git"); inside ours /tmp is read-only anyway and $TMPDIR is the writable scratch dir.
  nestedSandboxArgv: ['-c', 'sandbox_workspace_write.exclude_slash_tmp=true'],
  // As root inside Verdict's sandbox codex's bubblewrap cannot start (types.ts rootNestedArgv); every command it ran
  // failed ("bwrap: Can't mount proc"). Verdict's sandbox contains it instead.
  rootNestedArgv: ['--dangerously-bypass-approvals-and-sandbox'],
  env: {},
  credentialEnv: ['OPENAI_API_KEY', 'CODEX_API_KEY'],
  // codex's own Linux sandbox is bubblewrap too; it keeps its synthetic mount targets and a lock in this fixed folder
  // (not $TMPDIR), and its daemon socket in /tmp/codex-daemon-<uid>: both must be writable for codex's sandbox to start inside ours.
  stateDirs: ['${CODEX_HOME:-~/.codex}', '/tmp/codex-bwrap-synthetic-mount-targets-${UID}', '/tmp/codex-daemon-${UID}'],
  stateFiles: [],
  stateGuarded: [
    '${CODEX_HOME:-~/.codex}/config.toml',
    '${CODEX_HOME:-~/.codex}/AGENTS.md',
    '${CODEX_HOME:-~/.codex}/AGENTS.override.md',
    '${CODEX_HOME:-~/.codex}/hooks.json',
    '${CODEX_HOME:-~/.codex}/prompts',
    '${CODEX_HOME:-~/.codex}/rules',
  ],
  // The login and the user's settings; sessions/, archived_sessions/, history.jsonl, log/ and the state databases are not.
  stateShared: ['${CODEX_HOME:-~/.codex}/auth.json', '${CODEX_HOME:-~/.codex}/config.toml'],
  defaultModel: null,
  retryContext: 'prompt',
  // The event types of `codex exec --json` 0.171.0: its JSONL thread events, as the binary names them (the serde
  // tags of codex-rs exec's ThreadEvent), seen in test/fixtures/engines/codex*.jsonl but for item.updated.
  eventTypes: ['thread.started', 'turn.started', 'turn.completed', 'turn.failed', 'item.started', 'item.updated', 'item.completed', 'error'],
  cachedInInput: true,
  parseOutput: parseCodexOutput,
  finalMessage: codexFinalMessage,
  classifyError: classifyCodexError,
  quotaReset: codexQuotaReset,
};
