/**
 * Gemini CLI (`gemini -p ... -o stream-json`). Output: JSON lines `init` (`model`: the requested model),
 * `message`, `tool_use`, `tool_result`, `error` (non-fatal warnings) and one final `result` with `status`
 * (`success` | `error`), `error {type, message}` and `stats` totals for the whole run: `input_tokens`,
 * `output_tokens`, `cached` (a subset of `input_tokens`; `input` is the uncached rest) and `models`, keyed by
 * the model id the API answered with.
 * Seen in test/fixtures/engines/gemini*.jsonl (gemini-cli 0.61.0 against the scripted model server,
 * test/e2e/real-gemini.e2e.test.ts). `output_tokens` sums the API's `candidatesTokenCount`, which leaves out the
 * thinking tokens (`thoughtsTokenCount`), while `total_tokens` sums `totalTokenCount`, which counts them (prompt +
 * candidates + thoughts, per Google's generateContent usageMetadata): tokens out = total - input, and the reasoning
 * tokens are what that adds to `output_tokens`.
 */
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse, type ParseError } from 'jsonc-parser';
import { emptyUsage, type EngineSpec, type UsageReport } from './types';
import { countAt, forgedFinalReport, jsonEvents, objectAt, stringAt, upToSoleFinal, type LogEvent } from './jsonl';
import { classifyLogTail, finalEventQuota } from './error-class';
import type { QuotaEvent } from './quota-reset';

/**
 * Reads usage from the last `result` event's `stats`, the model (the single key of `stats.models` when there is
 * exactly one, which is the id the API answered with; else the first `init` event's model) and the final status;
 * nothing after the `result`, and nothing at all when there are two (forgedFinalReport: a forged line). Never throws.
 */
export function parseGeminiOutput(log: string): UsageReport {
  const events = upToSoleFinal(jsonEvents(log), isGeminiFinal);
  if (!events) return forgedFinalReport('result');
  const report = emptyUsage();
  let initModel: string | null | undefined;
  let answeredModel: string | null = null;
  for (const event of events) {
    // gemini prints one `init`, first: a later one is a line the worker forged into the log.
    if (event.type === 'init' && initModel === undefined) initModel = stringAt(event, 'model');
    if (event.type !== 'result') continue;
    report.tokensIn = countAt(event, 'stats', 'input_tokens');
    const candidates = countAt(event, 'stats', 'output_tokens');
    const total = countAt(event, 'stats', 'total_tokens');
    const thoughts =
      total !== null && report.tokensIn !== null && candidates !== null && total >= report.tokensIn + candidates ? total - report.tokensIn - candidates : null;
    report.tokensOut = candidates === null ? null : candidates + (thoughts ?? 0);
    report.tokensReasoning = thoughts;
    report.tokensCached = countAt(event, 'stats', 'cached');
    const models = Object.keys(objectAt(event, 'stats', 'models') ?? {});
    answeredModel = models.length === 1 ? (models[0] ?? null) : null;
    const failed = event.status !== 'success';
    report.finalStatus = failed ? 'error' : 'success';
    report.finalError = failed ? (stringAt(event, 'error', 'message') ?? `status ${String(event.status)}`) : null;
  }
  report.reportedModel = answeredModel ?? initModel ?? null;
  return report;
}

/**
 * The final message: the last run of assistant `message` events (gemini streams an answer as `delta: true` pieces;
 * gemini.jsonl), joined; a tool call, a tool result or a user message between them starts a new answer. Null when
 * the assistant said nothing, the final `result` is not a success, or the log holds two `result` events (jsonl.ts
 * upToSoleFinal). Never throws.
 */
export function geminiFinalMessage(log: string): string | null {
  let parts: string[] = [];
  let open = false;
  let failed = false;
  const events = upToSoleFinal(jsonEvents(log), isGeminiFinal);
  if (!events) return null;
  for (const event of events) {
    if (event.type === 'message' && event.role === 'assistant') {
      if (!open || event.delta !== true) parts = [];
      parts.push(stringAt(event, 'content') ?? '');
      open = event.delta === true;
    } else if (event.type === 'tool_use' || event.type === 'tool_result' || event.type === 'message') {
      open = false;
    } else if (event.type === 'result') {
      failed = event.status !== 'success';
    }
  }
  return parts.length && !failed ? parts.join('') : null;
}

/** `gemini -p` answers one prompt: it prints one `result` (jsonl.ts upToSoleFinal). */
function isGeminiFinal(event: LogEvent): boolean {
  return event.type === 'result';
}

/**
 * The quota a gemini run reports: its one `result` event that is not a success, whose `error.message` names the usage
 * limit and its reset ("Usage limit reached for gemini-3-flash-preview. Access resets at 10:57 PM GMT-3."). Messages,
 * tool results, its non-fatal `error` warnings and plain lines are never read (error-class.ts finalEventQuota). Never
 * throws.
 */
export function geminiQuotaReset(log: string, now: number): QuotaEvent | null {
  return finalEventQuota(
    log,
    now,
    isGeminiFinal,
    (final) => (final.status !== 'success' ? [stringAt(final, 'error', 'message') ?? ''] : null),
    'its result event (status error)',
  );
}

function geminiFatalErrors(events: LogEvent[]): string[] {
  return events.filter((e) => e.type === 'result' && e.status !== 'success').map((e) => stringAt(e, 'error', 'message') ?? 'gemini reported an error');
}

function geminiWarnings(events: LogEvent[]): string[] {
  return events.filter((e) => e.type === 'error').map((e) => stringAt(e, 'message') ?? '');
}

type Settings = Record<string, unknown>;
const isObject = (v: unknown): v is Settings => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What Gemini CLI 0.61.0 writes back over a user's settings.json at every start while it holds deprecated keys (its
 * migrateDeprecatedSettings, user scope; seen on the real CLI: test/fixtures/engines/gemini-settings-before.json →
 * gemini-settings-after.json): each `disableX: b` becomes `enableX: !b` (general.disableAutoUpdate → enableAutoUpdate,
 * general.disableUpdateNag → enableAutoUpdateNotification, ui.accessibility.disableLoadingPhrases →
 * enableLoadingPhrases, context.fileFiltering.disableFuzzySearch → enableFuzzySearch; an `enableX` already set is
 * kept), `enableLoadingPhrases: false` adds `ui.loadingPhrases: "off"`, and tools.approvalMode moves to
 * general.defaultApprovalMode. Its `experimental` migrations are not modelled. Returns the settings and the deprecated
 * keys it found (none: nothing to rewrite). Pure.
 */
export function migrateGeminiSettings(settings: Settings): { settings: Settings; migrated: string[] } {
  const out = structuredClone(settings);
  const migrated: string[] = [];
  const flip = (parent: unknown, prefix: string, oldKey: string, newKey: string) => {
    if (!isObject(parent) || typeof parent[oldKey] !== 'boolean') return;
    if (typeof parent[newKey] !== 'boolean') parent[newKey] = !parent[oldKey];
    delete parent[oldKey];
    migrated.push(`${prefix}.${oldKey}`);
  };
  flip(out.general, 'general', 'disableAutoUpdate', 'enableAutoUpdate');
  flip(out.general, 'general', 'disableUpdateNag', 'enableAutoUpdateNotification');
  const ui = out.ui;
  if (isObject(ui)) {
    flip(ui.accessibility, 'ui.accessibility', 'disableLoadingPhrases', 'enableLoadingPhrases');
    const enable = isObject(ui.accessibility) ? ui.accessibility.enableLoadingPhrases : undefined;
    if (enable === false && ui.loadingPhrases === undefined) ui.loadingPhrases = 'off';
  }
  if (isObject(out.context)) flip(out.context.fileFiltering, 'context.fileFiltering', 'disableFuzzySearch', 'enableFuzzySearch');
  if (isObject(out.tools) && out.tools.approvalMode !== undefined) {
    const general = isObject(out.general) ? out.general : (out.general = {});
    if (general.defaultApprovalMode === undefined) general.defaultApprovalMode = out.tools.approvalMode;
    delete out.tools.approvalMode;
    migrated.push('tools.approvalMode');
  }
  return { settings: out, migrated };
}

/**
 * EngineSpec.ownRewrite for gemini: a change to ~/.gemini/settings.json that is exactly Gemini CLI's own migration of
 * its deprecated keys (migrateGeminiSettings; compared as parsed JSON with comments, key order aside) is the CLI's,
 * named with the keys; anything else — another file, another change, text that does not parse — is not (null).
 */
export function geminiOwnRewrite(file: string, before: string | null, after: string | null): string | null {
  if (path.basename(file) !== 'settings.json' || before === null || after === null) return null;
  const read = (text: string): Settings | null => {
    const errors: ParseError[] = [];
    const value: unknown = parse(text, errors, { allowTrailingComma: true });
    return errors.length || !isObject(value) ? null : value;
  };
  const was = read(before);
  const now = read(after);
  if (!was || !now) return null;
  const { settings, migrated } = migrateGeminiSettings(was);
  if (!migrated.length || !isDeepStrictEqual(settings, now)) return null;
  return `Gemini CLI itself rewrites ${file} at every start while it holds deprecated keys (${migrated.join(', ')}): it migrated them; put back as it was — open it once and rename them (or run gemini once outside Verdict) and this note goes away`;
}

/**
 * The Gemini CLI engine. Headless Gemini CLI runs shell tools only in YOLO mode (other approval modes refuse
 * them without a terminal) and its own `--sandbox` needs Docker or Podman, so both access modes pass `--yolo`;
 * the worktree is the isolation. The prompt is the value of `--prompt`, written as one `--prompt=` element so
 * a spec that starts with `-` is not read as an option.
 */
export const geminiEngine: EngineSpec = {
  name: 'gemini',
  harness: 'gemini-cli',
  binary: 'gemini',
  install: 'npm i -g @google/gemini-cli',
  argv: ['--prompt={spec}', '--output-format', 'stream-json', '--skip-trust', '{access}', ['--model', '{model}'], '{engine_args}'],
  fullAccessArgv: ['--yolo'],
  sandboxArgv: ['--yolo'],
  nestedSandboxArgv: [],
  env: {},
  credentialEnv: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_APPLICATION_CREDENTIALS'],
  stateDirs: ['~/.gemini'],
  stateFiles: [],
  stateGuarded: ['~/.gemini/settings.json', '~/.gemini/GEMINI.md', '~/.gemini/commands', '~/.gemini/extensions'],
  ownRewrite: geminiOwnRewrite,
  // The login and the user's settings; tmp/ (the chats, checkpoints and shell history of every project) is not.
  stateShared: [
    '~/.gemini/oauth_creds.json',
    '~/.gemini/google_accounts.json',
    '~/.gemini/mcp-oauth-tokens.json',
    '~/.gemini/installation_id',
    '~/.gemini/user_id',
    '~/.gemini/settings.json',
  ],
  defaultModel: null,
  retryContext: 'prompt',
  // Seen from Gemini CLI 0.61.0 (test/fixtures/engines/gemini*.jsonl).
  eventTypes: ['init', 'message', 'tool_use', 'tool_result', 'error', 'result'],
  cachedInInput: true,
  parseOutput: parseGeminiOutput,
  finalMessage: geminiFinalMessage,
  classifyError: (tail) => classifyLogTail(tail, geminiFatalErrors, geminiWarnings),
  quotaReset: geminiQuotaReset,
};
