/**
 * Verdict's user settings: one shape, two readers. The CLI reads them from the config file (snake_case JSON, see
 * config.ts: {@link settingsFromConfig}); the extension from the `verdict.*` settings (extension/vscode/settings.ts),
 * over the same config file for the fields the user did not set there. Pattern: vscode-eslint's `$shared/settings.ts`.
 */
import type { SandboxMode } from '../process/sandbox';
import { poolTrustOf, poolUrlOf, type PoolTrust, type VerdictConfig } from './config';

/** The settings both sides use. Absent optional fields: the built-in default applies. */
export interface VerdictSettings {
  /** Default identity (below flag, environment and .fleet-agent). */
  identity: string | undefined;
  /** Custom engines or overrides of built-ins, by name (schemas/engine.schema.json). */
  engines: Record<string, unknown>;
  /** Default max_parallel when a manifest gives none. */
  maxParallel: number | undefined;
  /** Tasks with `full_access: true` may run (without Verdict's sandbox, engine sandbox flags off). */
  allowFullAccess: boolean;
  /** false: every step runs unsandboxed. true (default): bubblewrap, or the run refuses to start. */
  sandbox: boolean;
  /** Unix sockets every sandboxed step may reach (config `sockets`: absolute or `~/…`; the config file only). */
  sockets: string[];
  /** More places no sandboxed step may read (config `hide`: absolute or `~/…`). */
  hide: string[];
  /** Hidden places every sandboxed step may read (config `expose`: absolute or `~/…`; the config file only). */
  expose: string[];
  /** The default memory cap of a step, MB (config `memory_mb`; undefined: DEFAULT_MEMORY_MB). */
  memoryMb: number | undefined;
  /** The default most a step's log keeps, MB (config `log_max_mb`; undefined: DEFAULT_LOG_MAX_MB). */
  logMaxMb: number | undefined;
  /** Postgres URL for the shared eval table ($VERDICT_PG_URL wins; see postgresUrlOf). */
  postgresUrl: string | undefined;
  /** The worker pool's Postgres URL (config `pool`, setting `verdict.pool`): the default pool of a run and the pool the views show. */
  poolUrl: string | undefined;
  /** The cap on a quota wait no probe confirmed, hours (config `quota.max_wait_h`; undefined: 6, run/quota-wait.ts). */
  quotaMaxWaitH: number | undefined;
  /** Whose word a pool worker's PASS rests on (config `pool.trust` only; config.ts PoolTrust): `check` unless set. */
  poolTrust: PoolTrust;
  /**
   * Where the user can change `allowFullAccess` and `sandbox`, named in messages: the config file read, or the
   * default path it would be read from.
   */
  configFile: string;
}

/** The CLI's reader: a loaded config file (`shown`: the file, or the default path, see loadUserConfig). */
export function settingsFromConfig(config: VerdictConfig, shown: string): VerdictSettings {
  return {
    identity: config.identity,
    engines: (config.engines as Record<string, unknown> | undefined) ?? {},
    maxParallel: config.max_parallel,
    allowFullAccess: config.allow_full_access === true,
    sandbox: config.sandbox !== false,
    sockets: config.sockets ?? [],
    hide: config.hide ?? [],
    expose: config.expose ?? [],
    memoryMb: config.memory_mb,
    logMaxMb: config.log_max_mb,
    postgresUrl: config.postgres_url,
    poolUrl: poolUrlOf(config),
    poolTrust: poolTrustOf(config),
    quotaMaxWaitH: config.quota?.max_wait_h,
    configFile: shown,
  };
}

/**
 * The settings the user set in the editor, laid over those of the config file: a field the user set in VS Code
 * (`set`, undefined = not set) wins; otherwise the config file's value (or its default) stays.
 */
export function overlaySettings(base: VerdictSettings, set: Partial<Omit<VerdictSettings, 'configFile'>>): VerdictSettings {
  const out: VerdictSettings = { ...base };
  for (const [k, v] of Object.entries(set)) if (v !== undefined) (out as unknown as Record<string, unknown>)[k] = v;
  return out;
}

/** What a run is told about containment (RunOptions.sandbox / allowFullAccess / configSource). */
export interface ContainmentChoice {
  sandbox: SandboxMode;
  allowFullAccess: boolean;
  /** Where to set `"allow_full_access": true`, named when a full_access task is refused (VerdictSettings.configFile). */
  configSource: string;
  /** Unix sockets every sandboxed step may reach (VerdictSettings.sockets), as the config names them. */
  sockets: string[];
  /** More places no sandboxed step may read (VerdictSettings.hide), as the config names them. */
  hide: string[];
  /** Hidden places every sandboxed step may read (VerdictSettings.expose), as the config names them. */
  expose: string[];
}

/**
 * The one precedence for containment: `--no-sandbox` (CLI) > the settings (`verdict.sandbox` in the editor, else the
 * config file's `"sandbox"`) > the default `auto`. There is no flag that turns the sandbox back on: `--no-sandbox`
 * only ever lowers it. Full access is allowed only by the settings (`verdict.allowFullAccess`, else the config
 * file's `"allow_full_access"`); no flag allows it. Declared sockets, `hide` and `expose` come from the config file only.
 */
export function containmentChoice(
  settings: Pick<VerdictSettings, 'sandbox' | 'allowFullAccess' | 'configFile' | 'sockets' | 'hide' | 'expose'>,
  flags: { noSandbox?: boolean } = {},
): ContainmentChoice {
  return {
    sandbox: flags.noSandbox === true || !settings.sandbox ? 'off' : 'auto',
    allowFullAccess: settings.allowFullAccess,
    configSource: settings.configFile,
    sockets: settings.sockets,
    hide: settings.hide,
    expose: settings.expose,
  };
}
