import { harnessOf, type Rule, type RuleFinding, type LintTask } from './document';

/** The lab whose models a harness reaches by default, and how to say so. */
const NATIVE: Record<string, { lab: string; engine: string; models: string }> = {
  'codex-cli': { lab: 'openai', engine: 'codex', models: 'an OpenAI model (e.g. "gpt-5-mini")' },
  'claude-code': { lab: 'anthropic', engine: 'claude', models: 'an Anthropic model (e.g. "claude-sonnet-4-5")' },
  'gemini-cli': { lab: 'google', engine: 'gemini', models: 'a Google model (e.g. "gemini-2.5-flash")' },
};
/** `lab/` prefixes as model ids spell them (OpenRouter and models.dev style), to one lab name. */
const LAB_PREFIX: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'google',
  gemini: 'google',
  'google-vertex': 'google',
  xai: 'xai',
  'x-ai': 'xai',
};
/** Bare model ids whose family names their lab. */
const FAMILIES: [RegExp, string][] = [
  [/^(?:gpt-|o[1-9](?:-|$)|codex-|chatgpt-)/i, 'openai'],
  [/^(?:claude-|claude$|sonnet$|opus$|haiku$)/i, 'anthropic'],
  [/^gemini-/i, 'google'],
  [/^grok-/i, 'xai'],
];
/** The engine that reaches a lab's models natively (opencode for any other `provider/model`). */
const ENGINE_FOR_LAB: Record<string, string> = { openai: 'codex', anthropic: 'claude', google: 'gemini', xai: 'grok' };
/** codex arguments that select another model provider, after which any model id may route. */
const CODEX_PROVIDER_ARGS = /^(?:--oss|--profile|-p|--local-provider)$|model_provider/;

/**
 * model-not-routable (warning): the model, as written, cannot reach the engine's model API. Exact logic, by
 * the harness of the task's engine (engines not listed, such as grok and custom engines, are not checked: they
 * route through whatever base URL their configuration names):
 * - `script`: any model (the script engine runs no model, so it is ignored);
 * - `opencode`: a model not of the form `provider/model` (no `/`, or an empty side, or blanks), which opencode
 *   cannot resolve (engines/opencode.ts);
 * - `codex-cli` (OpenAI), `claude-code` (Anthropic), `gemini-cli` (Google): a `prefix/model` id whose prefix is
 *   not that lab (`anthropic/claude-sonnet-4` on codex, `openai/gpt-5` on claude, `qwen/qwen3-coder` on gemini),
 *   or a bare id of another lab's family (`gpt-*`, `o1..o9`, `codex-*` → OpenAI; `claude-*`, sonnet/opus/haiku
 *   → Anthropic; `gemini-*` → Google; `grok-*` → xAI). A prefix naming the engine's own lab passes. For codex,
 *   engine_args that select another provider (`--oss`, `--profile`/`-p`, `-c model_provider=...`) turn the
 *   check off.
 * The range is the model value.
 */
export const modelNotRoutable: Rule = (doc, ctx) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const model = task.model;
    const harness = harnessOf(task, ctx);
    if (!model || !harness) continue;
    const problem = routingProblem(model.value, harness, task);
    if (problem) out.push({ rule: 'model-not-routable', severity: 'warning', message: problem, range: model.range, taskKey: task.key });
  }
  return out;
};

function routingProblem(model: string, harness: string, task: LintTask): string | null {
  if (harness === 'script') return `The script engine runs no model, so "${model}" is ignored (and recorded as if it did the work). Remove "model".`;
  if (harness === 'opencode') {
    return /^[^/\s]+\/\S*[^/\s]$/.test(model)
      ? null
      : `opencode resolves models as provider/model, so "${model}" reaches no provider. Name the provider too, as \`opencode models\` lists them (e.g. "openrouter/qwen/qwen3-coder").`;
  }
  const native = NATIVE[harness];
  if (!native) return null;
  if (harness === 'codex-cli' && task.engineArgs.some((a) => CODEX_PROVIDER_ARGS.test(a))) return null;
  const slash = model.indexOf('/');
  const lab = slash >= 0 ? (LAB_PREFIX[model.slice(0, slash).toLowerCase()] ?? model.slice(0, slash)) : FAMILIES.find(([re]) => re.test(model))?.[1];
  if (!lab || lab === native.lab) return null;
  const elsewhere = ENGINE_FOR_LAB[lab];
  const instead = elsewhere ? `the ${elsewhere} engine` : `opencode with "${slash >= 0 ? model : `${lab}/${model}`}"`;
  return `The ${native.engine} engine only reaches ${native.lab} models, so "${model}" (${lab}) cannot be routed as written. Use ${native.models}, or run this task on ${instead}.`;
}
