// Ringer's config.toml (the system Verdict grows from, github.com/NateBJones-Projects/ringer, config.sample.toml),
// read so its users bring their settings along: identity_default, allow_full_access and [engines.NAME]. Verdict's own
// JSON config takes precedence field by field (config.ts loadUserConfig merges the two).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse, TomlError } from 'smol-toml';

/** Names of Verdict's built-in engines: a Ringer engine of the same name is not imported (see ringerEngine). */
const BUILTIN_NAMES = new Set(['codex', 'claude', 'opencode', 'gemini', 'grok', 'script']);

/**
 * Where Ringer reads its config: $RINGER_CONFIG, else `$XDG_CONFIG_HOME/ringer/config.toml`, else
 * `~/.config/ringer/config.toml` (Ringer's default_config_path and env_config_path). Absolute; it may not exist.
 */
export function ringerConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RINGER_CONFIG?.trim()) return path.resolve(env.RINGER_CONFIG.trim().replace(/^~(?=\/|$)/, os.homedir()));
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(base, 'ringer', 'config.toml');
}

/**
 * The fields of a Verdict config (config.ts VerdictConfig) that a Ringer config can give; config.ts lays them under the
 * user's own file. Its own type, so this module need not import config.ts (which imports it).
 */
export interface RingerDerivedConfig {
  identity?: string;
  allow_full_access?: boolean;
  /** Custom engines by name, each following schemas/engine.schema.json. */
  engines?: Record<string, unknown>;
}

/** What a Ringer config gave: the fields as a Verdict config, the file read (null: none), and notes on what was left out. */
export interface RingerConfig {
  config: RingerDerivedConfig;
  file: string | null;
  /** One line each: a Ringer setting not taken over, and why (e.g. an engine named like a built-in). */
  notes: string[];
}

/**
 * Reads Ringer's config.toml when it exists ({@link ringerConfigPath}); an absent file gives an empty config.
 * Taken over: `identity_default` → identity, `allow_full_access`, and each `[engines.NAME]` with `bin` and
 * `args_template` → a custom engine (see ringerEngine). Everything else (state_dir, [eval], [artifact]…) is Ringer's.
 * VERDICT_RINGER_CONFIG=0 turns the reading off.
 * @throws Error naming file:line:column for malformed TOML, or the file and key for a wrong type
 */
export function loadRingerConfig(env: NodeJS.ProcessEnv = process.env): RingerConfig {
  if (env.VERDICT_RINGER_CONFIG === '0') return { config: {}, file: null, notes: [] };
  const file = ringerConfigPath(env);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { config: {}, file: null, notes: [] };
    throw new Error(`${file}: cannot read Ringer's config file: ${(e as Error).message}`);
  }
  let data: Record<string, unknown>;
  try {
    data = parse(text) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof TomlError) throw new Error(`${file}:${e.line}:${e.column}: malformed TOML (${e.message.split('\n')[0]})`);
    throw e;
  }
  return { ...ringerToVerdict(data, file), file };
}

/**
 * The Verdict config a parsed Ringer config stands for (pure; `file` only names things in messages and notes).
 * @throws Error naming the file and key when a taken-over key has the wrong type
 */
export function ringerToVerdict(data: Record<string, unknown>, file: string): { config: RingerDerivedConfig; notes: string[] } {
  const config: RingerDerivedConfig = {};
  const notes: string[] = [];
  const id = data.identity_default;
  if (id !== undefined && typeof id !== 'string') throw new Error(`${file}: identity_default: must be a string`);
  if (typeof id === 'string' && id.trim()) config.identity = id.trim();
  const full = data.allow_full_access;
  if (full !== undefined && typeof full !== 'boolean') throw new Error(`${file}: allow_full_access: must be true or false, got ${JSON.stringify(full)}`);
  if (typeof full === 'boolean') config.allow_full_access = full;
  const engines = data.engines;
  if (engines !== undefined) {
    if (!isTable(engines)) throw new Error(`${file}: engines: must be a table of [engines.NAME] sections`);
    const out: Record<string, unknown> = {};
    for (const [name, section] of Object.entries(engines)) {
      if (!isTable(section)) throw new Error(`${file}: engines.${name}: must be a table`);
      if (BUILTIN_NAMES.has(name)) {
        notes.push(
          `${file}: [engines.${name}] not taken over: Verdict's built-in ${name} engine reads its structured output (tokens, model, errors), which a Ringer template does not ask for`,
        );
        continue;
      }
      out[name] = ringerEngine(name, section, file);
    }
    if (Object.keys(out).length) config.engines = out;
  }
  return { config, notes };
}

/**
 * One `[engines.NAME]` section as a Verdict custom engine (schemas/engine.schema.json): `bin` → binary,
 * `args_template` → argv with Ringer's placeholders mapped (`{access_args}` → `{access}`, `{model_args}` → the
 * optional group `["-m", "{model}"]`, the way Ringer expands it; `{spec}`, `{taskdir}`, `{model}`, `{engine_args}`
 * as they are), `sandbox_args` / `full_access_args` → sandbox_argv / full_access_argv, `model_default` → model.
 * Ringer's token_regex and model_report_regex have no counterpart: output is `none` (usage unknown, never 0).
 * @throws Error naming the file and key when bin or args_template is missing or not strings
 */
export function ringerEngine(name: string, s: Record<string, unknown>, file: string): Record<string, unknown> {
  const at = `${file}: engines.${name}`;
  const bin = typeof s.bin === 'string' && s.bin.trim() ? s.bin.trim() : name;
  const list = (key: string): string[] => {
    const v = s[key] ?? [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`${at}.${key}: must be an array of strings`);
    return v as string[];
  };
  const template = list('args_template');
  if (!template.length) throw new Error(`${at}.args_template: must not be empty (Ringer needs it too)`);
  const argv = template.map((a) => (a === '{access_args}' ? '{access}' : a === '{model_args}' ? ['-m', '{model}'] : a));
  const model = typeof s.model_default === 'string' && s.model_default.trim() ? s.model_default.trim() : null;
  return {
    description: `from Ringer's ${file} [engines.${name}]`,
    binary: bin.replace(/^~(?=\/)/, os.homedir()),
    argv,
    sandbox_argv: list('sandbox_args'),
    full_access_argv: list('full_access_args'),
    model,
    output: 'none',
  };
}

function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
