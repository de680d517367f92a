import fs from 'node:fs';
import * as vscode from 'vscode';
import { loadUserConfig, locateConfig, type VerdictConfig } from '../core/config/config';
import { ringerConfigPath } from '../core/config/ringer-config';
import { overlaySettings, settingsFromConfig, type VerdictSettings } from '../core/config/settings';
import { MAX_PARALLEL } from '../core/manifest/limits';

/**
 * The editor's reader of {@link VerdictSettings} (the CLI's is settingsFromConfig): the `verdict.*` settings
 * (contributes.configuration in package.json) the user set, over the user's config file ($VERDICT_CONFIG, else
 * ~/.config/verdict/config.json; see loadUserConfig) for the fields not set in the editor. Read fresh on every call.
 */
export interface EditorSettings extends VerdictSettings {
  /** VERDICT_HOME override; undefined → $VERDICT_HOME or ~/.verdict. */
  home: string | undefined;
  /** `verdict.identity`: acts as `--identity` (beats VERDICT_IDENTITY); `identity` stays the config file's default. */
  identityFlag: string | undefined;
  /** Why the config file could not be read (file and field), or null; a run refuses to start while it is set. */
  configError: string | null;
  /** `verdict.confirmAboveUsd`: Run Manifest asks before a run whose forecast p90 total is above this, USD (default 1). */
  confirmAboveUsd: number;
  /** The config file's `route` block (engine "auto" in a manifest without one), or null. */
  route: Record<string, unknown> | null;
}

/**
 * Reads the settings. Never throws: a bad config file is reported in `configError` and ignored.
 * `engines`: the config file's (and Ringer's config.toml's, below it) by name, each replaced by a `verdict.engines`
 * entry of the same name, so a manifest naming an engine from either lints and runs in the editor as in the CLI.
 * `sandbox`, `allowFullAccess`, `engines`, `pool` and `eval.postgres` count only from the user's own settings
 * (VS Code's global level; the first two are machine-scoped too), never from a workspace's .vscode/settings.json,
 * trusted or not: a cloned repository cannot turn the
 * sandbox off, allow full access, widen it through an engine of its own (`state_dirs` bound writable, `credential_env`
 * passed in, its own `full_access_argv`), or send the user's runs or eval rows to its own database.
 */
export function readSettings(): EditorSettings {
  const c = vscode.workspace.getConfiguration('verdict');
  const { config, shown, error } = userConfig();
  const base = settingsFromConfig(config, shown);
  const merged = overlaySettings(base, {
    maxParallel: explicit<number>(c, 'maxParallel'),
    postgresUrl: userValue<string>(c, 'eval.postgres') || undefined,
    poolUrl: userValue<string>(c, 'pool') || undefined,
    allowFullAccess: userValue<boolean>(c, 'allowFullAccess'),
    sandbox: userValue<boolean>(c, 'sandbox'),
  });
  const poolError =
    merged.poolUrl !== undefined && !/^postgres(ql)?:\/\//.test(merged.poolUrl) ? `verdict.pool: must be a postgres:// or postgresql:// URL` : null;
  // VS Code only warns about a setting outside its schema's range; the value would still reach the run.
  const parallel = merged.maxParallel;
  const parallelError =
    parallel !== undefined && !(Number.isInteger(parallel) && parallel >= 1 && parallel <= MAX_PARALLEL)
      ? `verdict.maxParallel: must be an integer from 1 to ${MAX_PARALLEL}, got ${JSON.stringify(parallel)}`
      : null;
  return {
    ...merged,
    engines: { ...base.engines, ...(userValue<Record<string, unknown>>(c, 'engines') ?? {}) },
    home: c.get<string>('home') || undefined,
    identityFlag: c.get<string>('identity') || undefined,
    configError: error ?? poolError ?? parallelError,
    confirmAboveUsd: confirmAbove(c.get<unknown>('confirmAboveUsd')),
    route: config.route ?? null,
  };
}

/** `verdict.confirmAboveUsd` as a number of USD ≥ 0; anything else (VS Code only warns about it) is the default, 1. */
function confirmAbove(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 1;
}

/** The value of the user's own settings (VS Code's global level), whatever a workspace or folder says; undefined when unset there. */
function userValue<T>(c: vscode.WorkspaceConfiguration, key: string): T | undefined {
  return c.inspect<T>(key)?.globalValue;
}

/** The value the user set at any level (folder > workspace > user), or undefined when only the default applies. */
function explicit<T>(c: vscode.WorkspaceConfiguration, key: string): T | undefined {
  const i = c.inspect<T>(key);
  return i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
}

type UserConfig = { config: VerdictConfig; shown: string; error: string | null };
let cache: { key: string; value: UserConfig } | null = null;

/** The user's config file, parsed again only when its path, size or mtime changed. */
function userConfig(): UserConfig {
  const where = locateConfig();
  const st = fs.statSync(where.shown, { throwIfNoEntry: false });
  const ringer = fs.statSync(ringerConfigPath(), { throwIfNoEntry: false });
  const key = `${where.via}\0${where.shown}\0${st?.size ?? -1}\0${st?.mtimeMs ?? -1}\0${ringer?.size ?? -1}\0${ringer?.mtimeMs ?? -1}`;
  if (cache?.key === key) return cache.value;
  let value: UserConfig;
  try {
    const loaded = loadUserConfig();
    value = { config: loaded.config, shown: loaded.shown, error: null };
  } catch (e) {
    value = { config: {}, shown: where.shown, error: (e as Error).message };
  }
  cache = { key, value };
  return value;
}
