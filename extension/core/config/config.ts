import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findNodeAtLocation, parse, parseTree, printParseErrorCode, type JSONPath, type ParseError } from 'jsonc-parser';
import { MAX_PARALLEL } from '../manifest/limits';
import { LineIndex } from '../manifest/positions';
import { routeProblems } from '../manifest/route-spec';
import { loadRingerConfig } from './ringer-config';
import { builtinEngines, customEngineProblems } from '../../../engines';
import { MAX_QUOTA_WAIT_MS } from '../../../engines/quota-reset';
import { MAX_MEMORY_MB, MIN_MEMORY_MB } from '../process/memory-cap';
import { MAX_LOG_MAX_MB, MIN_LOG_MAX_MB } from '../process/log-cap';

/** The largest `quota.max_wait_h`, h: a reset further than MAX_QUOTA_WAIT_MS (8 days) away is not believed at all. */
export const MAX_QUOTA_MAX_WAIT_H = MAX_QUOTA_WAIT_MS / 3600_000;

/** The user's Verdict config file (JSON or JSONC). Every field is optional. */
export interface VerdictConfig {
  /** Custom engines or overrides of built-ins, by name; each entry follows schemas/engine.schema.json. */
  engines?: Record<string, unknown>;
  /** Default identity (below flag, environment and .fleet-agent). */
  identity?: string;
  /** Default max_parallel when the manifest gives none: an integer from 1 to MAX_PARALLEL (256), as in the manifest. */
  max_parallel?: number;
  /**
   * The user means it when a task sets full_access: such a task runs without Verdict's sandbox and with its engine's
   * own sandbox flags off. Without it, a run with such a task is refused before it starts.
   */
  allow_full_access?: boolean;
  /** false: every step runs unsandboxed (as `--no-sandbox`). Absent or true: bubblewrap, or the run refuses to start. */
  sandbox?: boolean;
  /**
   * Unix sockets (or folders of them) every sandboxed step may reach: each path absolute or `~/…`, bound back into every
   * sandbox over the covers that keep the host's sockets out of reach (core/process/sandbox-view.ts). Only here, never
   * in a manifest: a repository cannot widen its own sandbox.
   */
  sockets?: string[];
  /**
   * More places no sandboxed step may read, besides the user's secrets every sandbox hides (~/.ssh, ~/.aws, this
   * file's folder…: core/process/secrets.ts): absolute or `~/…`. A manifest may add its own; neither can remove one.
   */
  hide?: string[];
  /**
   * Hidden places every sandboxed step may read after all (a task that needs ~/.npmrc for a private registry): absolute
   * or `~/…`. Only here, never in a manifest.
   */
  expose?: string[];
  /**
   * The default memory cap of every step, MB (16 to 16777216; a manifest's or task's memory_mb wins; absent: 4096):
   * core/process/memory-cap.ts.
   */
  memory_mb?: number;
  /** The default most a step's log keeps, MB (1 to 16384; a manifest's or task's log_max_mb wins; absent: 64). */
  log_max_mb?: number;
  /** Postgres connection URL: every eval row also goes to table swarm_runs there (VERDICT_PG_URL overrides). */
  postgres_url?: string;
  /**
   * A worker pool: its Postgres URL (runs whose manifest names no `pool` run their attempts there, docs/scale.md; the
   * manifest still needs a `remote`; the dashboard shows that pool; `--pool` and the manifest's `pool` win), or
   * `{url?, trust?}`. `trust` (see {@link PoolTrust}) holds for every pool run this config starts, whichever names the
   * pool; only the config can set it, never a manifest.
   */
  pool?: string | { url?: string; trust?: PoolTrust };
  /**
   * Logins: named groups of engines sharing one subscription, with how many of their attempts may run at once on this
   * machine across every run (run/slots.ts; a manifest's `logins` of the same name count too, at the lower limit).
   */
  logins?: Record<string, { engines: string[]; max_parallel: number; billing?: 'subscription' | 'metered' }>;
  /** Quota waits (run/quota-wait.ts). */
  quota?: {
    /**
     * The longest quota wait an engine's event starts without a probe confirming it, hours (0 to MAX_QUOTA_MAX_WAIT_H,
     * fractions allowed; default 6): a reset further away is shortened to it, and only an attempt started after it that
     * reports the quota again makes the engine wait until the reset. 0: every wait needs that confirmation.
     */
    max_wait_h?: number;
  };
  /**
   * The `route` block of `engine: "auto"` for manifests that give none (manifest/route-spec.ts; docs/scoreboard.md
   * "Routing"). Engine names are checked against the engines when a manifest is loaded.
   */
  route?: Record<string, unknown>;
}

/**
 * Whose word a pool worker's PASS rests on: `check` (the default) — the orchestrator re-runs the check on the commit
 * the worker reported before the task counts as PASS (pool/recheck.ts); `worker` — the worker's verdict is taken as
 * reported (the re-check is off), and every row says so.
 */
export type PoolTrust = 'check' | 'worker';

/** The config's pool URL (`pool`, or `pool.url`); undefined when none. */
export function poolUrlOf(config: VerdictConfig): string | undefined {
  return typeof config.pool === 'string' ? config.pool : config.pool?.url;
}

/** The config's pool trust (`pool.trust`); `check` when none. */
export function poolTrustOf(config: VerdictConfig): PoolTrust {
  return typeof config.pool === 'object' && config.pool.trust === 'worker' ? 'worker' : 'check';
}

/** The Postgres URL eval rows are mirrored to: $VERDICT_PG_URL > the config's postgres_url > none (null). */
export function postgresUrlOf(config: VerdictConfig, env: NodeJS.ProcessEnv = process.env): string | null {
  return env.VERDICT_PG_URL || config.postgres_url || null;
}

/**
 * The config file read when neither `--config` nor $VERDICT_CONFIG names one:
 * `$XDG_CONFIG_HOME/verdict/config.json`, else `~/.config/verdict/config.json`. Absolute; it may not exist.
 */
export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(base, 'verdict', 'config.json');
}

/** Which config file is in force and why. */
export interface ConfigLocation {
  /** The file to read (absolute), or null when none was named and the default file does not exist. */
  file: string | null;
  /** The file named in messages: `file`, or the default path it would be read from. */
  shown: string;
  /** What chose it: `--config`, `$VERDICT_CONFIG`, or `default`. */
  via: '--config' | '$VERDICT_CONFIG' | 'default';
}

/**
 * Where the config comes from: `--config FILE` > $VERDICT_CONFIG > the default file ({@link defaultConfigPath}) when
 * it exists. A file named by the flag or the variable must exist (loadConfig says so); the default one is optional.
 * Never throws.
 */
export function locateConfig(flag?: string | null, env: NodeJS.ProcessEnv = process.env): ConfigLocation {
  if (flag) return { file: path.resolve(flag), shown: path.resolve(flag), via: '--config' };
  if (env.VERDICT_CONFIG) return { file: path.resolve(env.VERDICT_CONFIG), shown: path.resolve(env.VERDICT_CONFIG), via: '$VERDICT_CONFIG' };
  const fallback = defaultConfigPath(env);
  return { file: fs.existsSync(fallback) ? fallback : null, shown: fallback, via: 'default' };
}

/**
 * The user's config, from the place {@link locateConfig} picks, over Ringer's config.toml when one exists
 * (ringer-config.ts: identity_default, allow_full_access, [engines.NAME]): each field of Verdict's file wins, and
 * engines merge by name (Verdict's entry wins).
 * @returns the config (empty when no file is in force), the file read (null: none), `shown` (the file, or the
 *   default path it would be read from: the place to tell the user to edit) and `ringer` (the Ringer file read, or
 *   null, and notes on what was not taken over)
 * @throws Error naming the file (and line:column or field) when either file cannot be read or is invalid
 */
export function loadUserConfig(
  flag?: string | null,
  env: NodeJS.ProcessEnv = process.env,
): { config: VerdictConfig; file: string | null; shown: string; ringer: { file: string | null; notes: string[] } } {
  const where = locateConfig(flag, env);
  if (where.via === '$VERDICT_CONFIG' && !fs.existsSync(where.shown))
    throw new Error(`${where.shown}: the config file named by $VERDICT_CONFIG does not exist`);
  const own = loadConfig(where.file);
  const ringer = loadRingerConfig(env);
  const config: VerdictConfig = { ...ringer.config, ...own.config };
  if (ringer.config.engines && own.config.engines) config.engines = { ...ringer.config.engines, ...own.config.engines };
  return { config, file: own.file, shown: where.shown, ringer: { file: ringer.file, notes: ringer.notes } };
}

/**
 * Reads a config file. Absent path → empty config.
 * @throws Error naming file:line:column for malformed JSON, or file:line:column (of the value) and the field for a
 *   wrong shape or a number out of its range
 */
export function loadConfig(file: string | null | undefined): { config: VerdictConfig; file: string | null } {
  if (!file) return { config: {}, file: null };
  const abs = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (e) {
    throw new Error(`${abs}: cannot read the config file: ${(e as Error).message}`);
  }
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true });
  if (errors[0]) {
    const pos = new LineIndex(text).position(errors[0].offset);
    throw new Error(`${abs}:${pos.line}:${pos.column}: malformed JSON (${printParseErrorCode(errors[0].error)})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${abs}: the config must be a JSON object`);
  const c = value as Record<string, unknown>;
  // `file:line:column: field:` of a field's value, so an editor jumps to it.
  const tree = parseTree(text, [], { allowTrailingComma: true });
  const lines = new LineIndex(text);
  const at = (field: string, location: (string | number)[] = [field]): string => {
    const node = tree && findNodeAtLocation(tree, location);
    if (!node) return `${abs}: ${field}`;
    const pos = lines.position(node.offset);
    return `${abs}:${pos.line}:${pos.column}: ${field}`;
  };
  if (c.engines !== undefined && (typeof c.engines !== 'object' || c.engines === null || Array.isArray(c.engines))) {
    throw new Error(`${at('engines')}: must be an object of engine name → engine definition`);
  }
  checkEngines(c, at);
  if (c.identity !== undefined && typeof c.identity !== 'string') throw new Error(`${at('identity')}: must be a string`);
  if (c.route !== undefined) {
    const p = routeProblems(c.route)[0];
    if (p) throw new Error(`${at(['route', ...p.at].join('.'), ['route', ...p.at])}: ${p.message}`);
  }
  if (c.max_parallel !== undefined && !(Number.isInteger(c.max_parallel) && (c.max_parallel as number) >= 1 && (c.max_parallel as number) <= MAX_PARALLEL)) {
    throw new Error(
      `${at('max_parallel')}: must be an integer from 1 to ${MAX_PARALLEL} (as the manifest's max_parallel), got ${JSON.stringify(c.max_parallel)}`,
    );
  }
  if (c.postgres_url !== undefined && !(typeof c.postgres_url === 'string' && /^postgres(ql)?:\/\//.test(c.postgres_url))) {
    throw new Error(`${at('postgres_url')}: must be a postgres:// or postgresql:// URL`);
  }
  checkPool(c, at);
  checkLogins(c, at);
  checkQuota(c, at);
  for (const [field, min, max] of [
    ['memory_mb', MIN_MEMORY_MB, MAX_MEMORY_MB],
    ['log_max_mb', MIN_LOG_MAX_MB, MAX_LOG_MAX_MB],
  ] as const) {
    const v = c[field];
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= min && (v as number) <= max))
      throw new Error(`${at(field)}: must be an integer number of MB from ${min} to ${max} (as the manifest's ${field}), got ${JSON.stringify(v)}`);
  }
  for (const field of ['allow_full_access', 'sandbox'] as const) {
    if (c[field] !== undefined && typeof c[field] !== 'boolean') throw new Error(`${at(field)}: must be true or false, got ${JSON.stringify(c[field])}`);
  }
  const bad = userPathListProblem(c.sockets, 'sockets') ?? userPathListProblem(c.hide, 'hide') ?? userPathListProblem(c.expose, 'expose');
  if (bad) {
    const pos = lines.position((tree && findNodeAtLocation(tree, bad.at))?.offset ?? 0);
    throw new Error(`${abs}:${pos.line}:${pos.column}: ${bad.message}`);
  }
  return { config: c as VerdictConfig, file: abs };
}

/** `file:line:column: field` of a config field's value (`location`: its JSON path, default `[field]`), for error messages. */
type ConfigAt = (field: string, location?: (string | number)[]) => string;

/**
 * Checks each entry of the config's `engines` (engines/custom.ts customEngineProblems: its name, its shape, its argv
 * template), so a wrong one is named where it is: `file:line:column: engines.mine.max_parallel: must be >= 1, got 0`.
 * @throws Error with every problem of the entries, one `file:line:column: field: message` a line
 */
function checkEngines(c: Record<string, unknown>, at: ConfigAt): void {
  if (c.engines === undefined) return;
  const lines = Object.entries(c.engines as Record<string, unknown>).flatMap(([name, entry]) =>
    customEngineProblems(name, entry).map((p) => `${at(`engines.${p.field}`, ['engines', name, ...p.at])}: ${p.message}`),
  );
  if (lines.length) throw new Error(lines.join('\n'));
}

/**
 * Checks the config's `pool`: a postgres:// URL, or {"url", "trust"}.
 * @throws Error at the offending value
 */
function checkPool(c: Record<string, unknown>, at: ConfigAt): void {
  const isUrl = (v: unknown) => typeof v === 'string' && /^postgres(ql)?:\/\//.test(v);
  if (c.pool !== undefined && typeof c.pool === 'object' && c.pool !== null && !Array.isArray(c.pool)) {
    const p = c.pool as Record<string, unknown>;
    const extra = Object.keys(p).filter((k) => k !== 'url' && k !== 'trust');
    if (extra.length) throw new Error(`${at('pool')}: unknown field(s) ${extra.join(', ')} (a pool is {"url", "trust"})`);
    if (p.url !== undefined && !isUrl(p.url)) throw new Error(`${at('pool.url', ['pool', 'url'])}: must be a postgres:// or postgresql:// URL`);
    if (p.trust !== undefined && p.trust !== 'check' && p.trust !== 'worker')
      throw new Error(
        `${at('pool.trust', ['pool', 'trust'])}: must be "check" (the orchestrator re-runs a worker's passed check; the default) or "worker" (a worker's PASS is taken as reported), got ${JSON.stringify(p.trust)}`,
      );
  } else if (c.pool !== undefined && !isUrl(c.pool)) {
    throw new Error(`${at('pool')}: must be a postgres:// or postgresql:// URL, or {"url", "trust"}`);
  }
}

/**
 * Checks the config's `logins`: login name → {"engines": [known engine names], "max_parallel": N, "billing"?}.
 * @throws Error at the offending value
 */
function checkLogins(c: Record<string, unknown>, at: ConfigAt): void {
  if (c.logins !== undefined) {
    if (typeof c.logins !== 'object' || c.logins === null || Array.isArray(c.logins))
      throw new Error(`${at('logins')}: must be an object of login name → {"engines": [...], "max_parallel": N}`);
    const known = new Set([...builtinEngines().keys(), ...Object.keys((c.engines as Record<string, unknown> | undefined) ?? {})]);
    for (const [name, login] of Object.entries(c.logins as Record<string, unknown>)) {
      const where = (field: string) => at(`logins.${name}.${field}`, ['logins', name, field]);
      if (!/^[A-Za-z0-9._-]+$/.test(name))
        throw new Error(`${at(`logins.${name}`, ['logins', name])}: a login name may only contain letters, digits, '.', '_' and '-'`);
      if (typeof login !== 'object' || login === null || Array.isArray(login))
        throw new Error(`${at(`logins.${name}`, ['logins', name])}: must be {"engines": [...], "max_parallel": N}`);
      const l = login as Record<string, unknown>;
      for (const key of Object.keys(l))
        if (key !== 'engines' && key !== 'max_parallel' && key !== 'billing')
          throw new Error(`${where(key)}: is not a known field (known: engines, max_parallel, billing)`);
      if (l.billing !== undefined && l.billing !== 'subscription' && l.billing !== 'metered')
        throw new Error(`${where('billing')}: must be "subscription" or "metered", got ${JSON.stringify(l.billing)}`);
      if (!Array.isArray(l.engines) || !l.engines.length || l.engines.some((e) => typeof e !== 'string'))
        throw new Error(`${where('engines')}: must be a non-empty list of engine names`);
      (l.engines as string[]).forEach((e, j) => {
        if (!known.has(e))
          throw new Error(
            `${at(`logins.${name}.engines[${j}]`, ['logins', name, 'engines', j])}: unknown engine "${e}" in login ${name}; known engines: ${[...known].sort().join(', ')}`,
          );
      });
      if (!(Number.isInteger(l.max_parallel) && (l.max_parallel as number) >= 1 && (l.max_parallel as number) <= MAX_PARALLEL))
        throw new Error(`${where('max_parallel')}: must be an integer from 1 to ${MAX_PARALLEL}, got ${JSON.stringify(l.max_parallel)}`);
    }
  }
}

/**
 * Checks the config's `quota`: {"max_wait_h": hours from 0 to MAX_QUOTA_MAX_WAIT_H}.
 * @throws Error at the offending value
 */
function checkQuota(c: Record<string, unknown>, at: ConfigAt): void {
  if (c.quota !== undefined) {
    if (typeof c.quota !== 'object' || c.quota === null || Array.isArray(c.quota)) throw new Error(`${at('quota')}: must be an object, e.g. {"max_wait_h": 6}`);
    const q = c.quota as Record<string, unknown>;
    for (const key of Object.keys(q))
      if (key !== 'max_wait_h') throw new Error(`${at(`quota.${key}`, ['quota', key])}: is not a known field (known: max_wait_h)`);
    const h = q.max_wait_h;
    if (h !== undefined && !(typeof h === 'number' && Number.isFinite(h) && h >= 0 && h <= MAX_QUOTA_MAX_WAIT_H)) {
      throw new Error(
        `${at('quota.max_wait_h', ['quota', 'max_wait_h'])}: must be a number of hours from 0 to ${MAX_QUOTA_MAX_WAIT_H}, got ${JSON.stringify(h)}`,
      );
    }
  }
}

/**
 * What is wrong with a list of paths a user names for the sandbox (`sockets`, `hide`, `expose`; `field` names it in the message): it
 * must be an array of strings, each absolute or starting with `~/` (the home), without a NUL. Null when it is fine or
 * absent; else the message and the JSON path of the offending value (for its line and column). Pure.
 */
export function userPathListProblem(value: unknown, field: string): { message: string; at: JSONPath } | null {
  if (value === undefined) return null;
  if (!Array.isArray(value)) return { message: `${field}: must be an array of paths (absolute or ~/…), got ${JSON.stringify(value)}`, at: [field] };
  for (const [i, p] of value.entries()) {
    if (typeof p !== 'string' || !(p.startsWith('/') || p.startsWith('~/')) || p.includes('\0')) {
      return { message: `${field}[${i}]: ${JSON.stringify(p)} must be an absolute path or start with ~/`, at: [field, i] };
    }
  }
  return null;
}

/**
 * A path a user named for the sandbox (absolute or `~/…`, see {@link userPathListProblem}) as an absolute path: `~/`
 * is `home`. Pure.
 */
export function expandUserPath(p: string, home: string): string {
  return path.resolve(p.startsWith('~/') ? path.join(home, p.slice(2)) : p);
}
