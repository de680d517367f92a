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

/** `/argv/2` under engine `aider` → `aider.argv[2]`. */
function fieldPath(name: string, instancePath: string, child?: string): string {
  const parts = instancePath.split('/').slice(1);
  if (child !== undefined) parts.push(child);
  return parts.reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : `${acc}.${part}`), name);
}

function describeAjvError(name: string, e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return `${fieldPath(name, e.instancePath, String(e.params.missingProperty))} is required`;
    case 'additionalProperties':
      return `${fieldPath(name, e.instancePath, String(e.params.additionalProperty))} is not a known field`;
    case 'anyOf':
      return `${fieldPath(name, e.instancePath)} must be a string or an array of strings`;
    case 'enum':
      return `${fieldPath(name, e.instancePath)} must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return `${fieldPath(name, e.instancePath)} ${e.message ?? 'is invalid'}`;
  }
}

/** One message per field: an anyOf's own summary replaces the per-branch errors at the same place. */
function schemaErrors(name: string, errors: ErrorObject[]): string[] {
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const relevant = errors.filter((e) => e.keyword === 'anyOf' || !anyOfPaths.has(e.instancePath));
  return [...new Set(relevant.map((e) => describeAjvError(name, e)))];
}

/**
 * Builds an EngineSpec from one custom engine entry of a configuration file.
 * @param name the entry's key: the engine name used in manifests; `[A-Za-z0-9._-]+`.
 * @param json the entry's value, checked against schemas/engine.schema.json and for a valid argv template.
 * @param where the configuration file (or other source) the entry came from, named in error messages.
 * @throws Error `<where>: <name>.<field path> <what is wrong>` (several problems joined with `; `) when the
 *   name or the entry is invalid.
 */
export function customEngineFromConfig(name: string, json: unknown, where: string): EngineSpec {
  if (!ENGINE_NAME.test(name)) {
    throw new Error(`${where}: engine name ${JSON.stringify(name)} may only contain letters, digits, '.', '_' and '-'`);
  }
  const validate = validateEntry();
  if (!validate(json)) {
    throw new Error(`${where}: ${schemaErrors(name, validate.errors ?? []).join('; ')}`);
  }
  const problems = templateProblems(json.argv);
  if (problems.length > 0) {
    throw new Error(`${where}: ${problems.map((p) => `${name}.${p.path}: ${p.message}`).join('; ')}`);
  }
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
    classifyError: reader.classifyError,
    ...(reader.quotaReset ? { quotaReset: reader.quotaReset } : {}),
    finalMessage: reader.finalMessage,
  };
}
