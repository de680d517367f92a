/**
 * Grok CLI, the community `grok` command from npm `@vibe-kit/grok-cli` (0.0.34, the newest version on the
 * registry this project can reach; source: github.com/superagent-ai/grok-cli). Headless mode is
 * `grok --prompt <text>`: it auto-approves every tool, and when the agent loop ends it prints the conversation
 * as JSON lines of OpenAI chat messages (`{role, content, tool_calls?}` / `{role: "tool", tool_call_id,
 * content}`). Seen in test/fixtures/engines/grok*.jsonl (0.0.34 against the scripted model server).
 *
 * Known gaps, from the real output and the CLI's source:
 * - No token usage, cost or model id is printed, so those stay null.
 * - There is no final event and the exit code is 0 even when the API failed; a failure is printed as the last
 *   assistant message `Sorry, I encountered an error: <message>` (or `Error: <message>` with exit 1 when the
 *   agent could not start), and a run cut off by --max-tool-rounds ends with `Maximum tool execution rounds
 *   reached...`. The parser reads those texts.
 * - Later versions (npm `grok-dev`) add `--format json` with usage events, and xAI's own Grok CLI has
 *   `--output-format streaming-json`; neither could be installed or captured here, so neither is parsed.
 *   Either can be run as a custom engine with `"output": "none"`.
 * - With no structured error event, its failure is the agent's own message: never a quota wait (no quotaReset), though
 *   a failure message naming a rate limit still makes the attempt RATE_LIMITED (requeued with backoff): the check step
 *   classifies an exit 0 whose final report is an error (test/e2e/real-grok.e2e.test.ts). Its OpenAI client retries a
 *   429 twice itself first. Run for real by that test against the scripted model server (GROK_BASE_URL); `--version`
 *   prints 1.0.1.
 */
import { emptyUsage, type EngineSpec, type UsageReport } from './types';
import { jsonEvents, stringAt, type LogEvent } from './jsonl';
import { classifyLogTail } from './error-class';

const FAILURE_PREFIXES = ['Sorry, I encountered an error: ', 'Error: '];
const ROUNDS_EXHAUSTED = 'Maximum tool execution rounds reached';

/** The error text of an assistant message that reports a failure, or null for an ordinary message. */
function grokFailure(message: LogEvent): string | null {
  if (message.role !== 'assistant') return null;
  const content = stringAt(message, 'content') ?? '';
  if (content.startsWith(ROUNDS_EXHAUSTED)) return content;
  const prefix = FAILURE_PREFIXES.find((p) => content.startsWith(p));
  return prefix === undefined ? null : content.slice(prefix.length);
}

/**
 * Reads the final status from the printed conversation: `error` (with the message) when the last message
 * reports a failure, `success` when the last message is an assistant answer without tool calls, null when no
 * conversation was printed. Usage, cost and model are always null (grok prints none). Never throws.
 */
export function parseGrokOutput(log: string): UsageReport {
  const report = emptyUsage();
  const messages = jsonEvents(log).filter((e) => typeof e.role === 'string');
  const last = messages.at(-1);
  if (!last || last.role !== 'assistant') return report;
  const failure = grokFailure(last);
  if (failure !== null) {
    report.finalStatus = 'error';
    report.finalError = failure;
  } else if (last.tool_calls === undefined) {
    report.finalStatus = 'success';
  }
  return report;
}

/**
 * The final message: the content of the last message when it is an assistant answer without tool calls that does
 * not report a failure (grok.jsonl ends with `{"role":"assistant","content":"Done: created alpha.txt"}`), else null.
 * Never throws.
 */
export function grokFinalMessage(log: string): string | null {
  const last = jsonEvents(log)
    .filter((e) => typeof e.role === 'string')
    .at(-1);
  if (!last || last.role !== 'assistant' || last.tool_calls !== undefined || grokFailure(last) !== null) return null;
  return stringAt(last, 'content');
}

function grokFatalErrors(events: LogEvent[]): string[] {
  return events.map(grokFailure).filter((text): text is string => text !== null);
}

/** The Grok CLI engine. Headless grok approves every tool itself, so both access modes add nothing. */
export const grokEngine: EngineSpec = {
  name: 'grok',
  harness: 'grok-cli',
  binary: 'grok',
  install: 'npm i -g @vibe-kit/grok-cli',
  // One `--prompt=` element, so a spec that starts with `-` is not read as an option.
  argv: ['--prompt={spec}', '--directory', '{taskdir}', '{access}', ['--model', '{model}'], '{engine_args}'],
  fullAccessArgv: [],
  sandboxArgv: [],
  nestedSandboxArgv: [],
  env: {},
  credentialEnv: ['GROK_API_KEY', 'XAI_API_KEY'],
  stateDirs: ['~/.grok'],
  stateFiles: [],
  stateGuarded: ['~/.grok/user-settings.json', '~/.grok/settings.json'],
  // The login (the API key lives in user-settings.json) and the settings; anything else it keeps there is not.
  stateShared: ['~/.grok/user-settings.json', '~/.grok/settings.json'],
  defaultModel: null,
  retryContext: 'prompt',
  parseOutput: parseGrokOutput,
  finalMessage: grokFinalMessage,
  classifyError: (tail) => classifyLogTail(tail, grokFatalErrors),
};
