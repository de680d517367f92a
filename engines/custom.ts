/**
 * Engines defined in configuration: any headless CLI, described by an entry that follows
 * schemas/engine.schema.json. Its output can be read by one of the built-in readers (`output`).
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { validateEngineEntry } from '../schemas/generated/validateEngineEntry.js';
import { emptyUsage, type ArgvTemplateElement, type EngineSpec } from './types';
import { templateProblems } from './argv';
import { lastLineMessage } from './final-message';
import { classifyLogTail } from './error-class';
import { codexEngine } from './codex';
import { claudeEngine } from './claude';
import { opencodeEngine } from './opencode';
import { geminiEngine } from './gemini';
import { grokEngine } from './grok';

/** A custom engine entry as written in configuration (the shape schemas/engine.schema.json validates). */
export interface CustomEngineConfig {
  description?: string;
  binary: string;
  argv: ArgvTemplateElement[];
  env?: Record<string, string>;
  model?: string | null;
  install?: string;
  full_access_argv?: string[];
  sandbox_argv?: string[];
  nested_sandbox_argv?: string[];
  output?: 'codex' | 'claude' | 'opencode' | 'gemini' | 'grok' | 'none';
  harness?: string;
  retry_context?: 'prompt' | 'file';
  state_dirs?: string[];
  state_files?: string[];
  state_guarded?: string[];
  state_shared?: string[];
  credential_env?: string[];
  /** How many attempts on this engine may run at once on the machine, across runs (run/slots.ts). */
  max_parallel?: number;
  /** The most one attempt is expected to cost, USD: reserved by the budget when the eval log knows none. */
  max_attempt_usd?: number;
  /** The most tokens one attempt is expected to use: reserved by budget_tokens when the eval log and the task know none. */
  max_attempt_tokens?: number;
}

type OutputReader = Pick<
  EngineSpec,
  | 'parseOutput'
  | 'streamUsage'
  | 'cachedInInput'
  | 'classifyError'
  | 'quotaReset'
  | 'finalMessage'
  | 'stateDirs'
  | 'stateFiles'
  | 'stateGuarded'
  | 'stateShared'
  | 'credentialEnv'
>;

const READERS: Record<NonNullable<CustomEngineConfig['output']>, OutputReader> = {
  codex: codexEngine,
  claude: claudeEngine,
  opencode: opencodeEngine,
  gemini: geminiEngine,
  grok: grokEngine,
  // No structured output: nothing in it is the engine's own event, so no quota wait (plain lines may still name a rate limit).
  none: {
    parseOutput: () => emptyUsage(),
    classifyError: (tail) => classifyLogTail(tail, () => []),
    finalMessage: lastLineMessage,
    stateDirs: [],
    stateFiles: [],
    stateGuarded: [],
    stateShared: [],
  },
};

// Same rule as a task key: the name ends up in paths and eval rows.
const ENGINE_NAME = /^[A-Za-z0-9._-]+$/;

/** The engine entry schema's validator, compiled at build time (schemas/validators.build.mjs). */
const validateEntry = (): ValidateFunction<CustomEngineConfig> => validateEngineEntry as ValidateFunction<CustomEngineConfig>;

/**
 * One problem of a custom engine entry, for a message with or without a position (config.ts puts the config file's
 * line:column of `at` in front of `field: message`).
 */
export interface EngineEntryProblem {
  /** The JSON path inside the entry (`['argv', 2]`); [] for the entry itself (a bad name, a missing field). */
  at: (string | number)[];
  /** The field from the engine's name, as the user wrote it: `mine.max_parallel`, `mine.argv[2]`. */
  field: string;
  /** What is wrong: `must be >= 1, got 0`. */
  message: string;
  /** The message without a position, as it always read: `mine.max_parallel must be >= 1`, `mine.argv[1]: unknown …`. */
  text: string;
}

/** `['argv', 2]` under engine `aider` → `aider.argv[2]`. */
function fieldPath(name: string, parts: (string | number)[]): string {
  return parts.reduce<string>((acc, part) => (typeof part === 'number' ? `${acc}[${part}]` : `${acc}.${part}`), name);
}

/** `/argv/2` → `['argv', 2]`. */
function jsonPath(instancePath: string): (string | number)[] {
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part.replace(/~1/g, '/').replace(/~0/g, '~')));
}

/** The value at `at` inside `json` (undefined when there is none). */
function valueAt(json: unknown, at: (string | number)[]): unknown {
  return at.reduce<unknown>((v, k) => (v !== null && typeof v === 'object' ? (v as Record<string | number, unknown>)[k] : undefined), json);
}

function describeAjvError(name: string, e: ErrorObject, json: unknown): EngineEntryProblem {
  const at = jsonPath(e.instancePath);
  const problem = (field: string, message: string, where = at, got = false): EngineEntryProblem => ({
    at: where,
    field,
    message: got && valueAt(json, at) !== undefined ? `${message}, got ${JSON.stringify(valueAt(json, at))}` : message,
    text: `${field} ${message}`,
  });
  switch (e.keyword) {
    case 'required':
      return problem(fieldPath(name, [...at, String(e.params.missingProperty)]), 'is required');
    case 'additionalProperties': {
      const extra = String(e.params.additionalProperty);
      return problem(fieldPath(name, [...at, extra]), 'is not a known field', [...at, extra]);
    }
    case 'anyOf':
      return problem(fieldPath(name, at), 'must be a string or an array of strings', at, true);
    case 'enum':
      return problem(fieldPath(name, at), `must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`, at, true);
    default:
      return problem(fieldPath(name, at), e.message ?? 'is invalid', at, true);
  }
}

/** One problem per field: an anyOf's own summary replaces the per-branch errors at the same place. */
function schemaErrors(name: string, errors: ErrorObject[], json: unknown): EngineEntryProblem[] {
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const relevant = errors.filter((e) => e.keyword === 'anyOf' || !anyOfPaths.has(e.instancePath));
  const seen = new Set<string>();
  return relevant.map((e) => describeAjvError(name, e, json)).filter((p) => !seen.has(p.text) && Boolean(seen.add(p.text)));
}

/** `argv[1][0]` → `['argv', 1, 0]`. */
function templatePath(path: string): (string | number)[] {
  return [...path.matchAll(/([A-Za-z_]+)|\[(\d+)\]/g)].map((m) => (m[1] !== undefined ? m[1] : Number(m[2])));
}

/**
 * What is wrong with one custom engine entry of a configuration file (empty when nothing is): its name
 * (`[A-Za-z0-9._-]+`), its shape against schemas/engine.schema.json, then its argv template. The name's problem
 * alone stops the checks; otherwise every schema problem, or (a valid shape) every template problem.
 */
export function customEngineProblems(name: string, json: unknown): EngineEntryProblem[] {
  if (!ENGINE_NAME.test(name)) {
    const message = `may only contain letters, digits, '.', '_' and '-'`;
    return [{ at: [], field: name, message: `engine name ${JSON.stringify(name)} ${message}`, text: `engine name ${JSON.stringify(name)} ${message}` }];
  }
  const validate = validateEntry();
  if (!validate(json)) return schemaErrors(name, validate.errors ?? [], json);
  return templateProblems(json.argv).map((p) => ({
    at: templatePath(p.path),
    field: `${name}.${p.path}`,
    message: p.message,
    text: `${name}.${p.path}: ${p.message}`,
  }));
}

/**
 * Builds an EngineSpec from one custom engine entry of a configuration file.
 * @param name the entry's key: the engine name used in manifests; `[A-Za-z0-9._-]+`.
 * @param entry the entry's value, checked against schemas/engine.schema.json and for a valid argv template.
 * @param where the configuration file (or other source) the entry came from, named in error messages.
 * @throws Error `<where>: <name>.<field path> <what is wrong>` (several problems joined with `; `) when the
 *   name or the entry is invalid (customEngineProblems; a config file's own entries are checked with positions when
 *   it is loaded, config.ts).
 */
export function customEngineFromConfig(name: string, entry: unknown, where: string): EngineSpec {
  const problems = customEngineProblems(name, entry);
  if (problems.length > 0) throw new Error(`${where}: ${problems.map((p) => p.text).join('; ')}`);
  const json = entry as CustomEngineConfig;
  const reader = READERS[json.output ?? 'none'];
  return {
    name,
    harness: json.harness ?? name,
    binary: json.binary,
    install: json.install ?? `install "${json.binary}" and put it on PATH`,
    argv: json.argv,
    fullAccessArgv: json.full_access_argv ?? [],
    sandboxArgv: json.sandbox_argv ?? [],
    nestedSandboxArgv: json.nested_sandbox_argv ?? [],
    env: json.env ?? {},
    // A CLI whose output is codex's is most likely codex under another name: its state lives where codex's does.
    stateDirs: json.state_dirs ?? reader.stateDirs,
    stateFiles: json.state_files ?? reader.stateFiles,
    stateGuarded: json.state_guarded ?? reader.stateGuarded,
    stateShared: json.state_shared ?? reader.stateShared,
    credentialEnv: json.credential_env ?? reader.credentialEnv ?? [],
    defaultModel: json.model ?? null,
    retryContext: json.retry_context ?? 'prompt',
    parseOutput: reader.parseOutput,
    ...(reader.streamUsage ? { streamUsage: reader.streamUsage } : {}),
    ...(reader.cachedInInput ? { cachedInInput: true } : {}),
    ...(json.max_parallel !== undefined ? { maxParallel: json.max_parallel } : {}),
    ...(json.max_attempt_usd !== undefined ? { maxAttemptMicroUsd: Math.round(json.max_attempt_usd * 1_000_000) } : {}),
    ...(json.max_attempt_tokens !== undefined ? { maxAttemptTokens: json.max_attempt_tokens } : {}),
    classifyError: reader.classifyError,
    ...(reader.quotaReset ? { quotaReset: reader.quotaReset } : {}),
    finalMessage: reader.finalMessage,
  };
}
