// `verdict doctor` per engine: installed (and which version), logged in, and — with --probe — answering a one-line
// prompt ("signs of life": one cheap call per engine, which shows a dead login or a broken install before any work is
// given to it).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { parse as parseToml } from 'smol-toml';
import { expandArgv } from '../../engines/argv';
import { findBinary } from '../../engines';
import type { EngineSpec } from '../../engines/types';
import { cliVersion, TESTED_CLIS, versionStatus, type VersionStatus } from '../../engines/tested-versions';
import { expandStatePath } from '../core/process/sandbox';
import { printedVersion } from '../core/run/engine-versions';
import { probeHome } from './probe-home';

/**
 * How to tell whether a CLI has credentials, per harness. Any one suffices: an environment variable holding a key, a
 * credentials file (templates as in EngineSpec.stateDirs; a JSON file must hold a non-empty object), or `command`
 * (argv after the binary) exiting 0. `command` exiting non-zero with no key or file found means not logged in.
 * `fix` is what the user runs to log in. Sources: each CLI's own docs and `--help` (codex `login status`, opencode
 * `auth login` writing auth.json, Claude Code's .credentials.json, Gemini CLI's oauth_creds.json, grok-cli's
 * user-settings.json / GROK_API_KEY).
 */
interface LoginCheck {
  /** Variables that count as a login besides the engine's own credentials (EngineSpec.credentialEnv). */
  env: string[];
  files: string[];
  command?: string[];
  fix: string;
}

const LOGIN: Record<string, LoginCheck> = {
  'codex-cli': { env: [], files: ['${CODEX_HOME:-~/.codex}/auth.json'], command: ['login', 'status'], fix: 'codex login   (or set OPENAI_API_KEY)' },
  'claude-code': {
    env: [],
    files: ['${CLAUDE_CONFIG_DIR:-~/.claude}/.credentials.json'],
    fix: 'claude setup-token   (or run claude and /login, or set ANTHROPIC_API_KEY)',
  },
  opencode: { env: [], files: ['${XDG_DATA_HOME:-~/.local/share}/opencode/auth.json'], fix: 'opencode auth login' },
  'gemini-cli': {
    env: ['GOOGLE_GENAI_USE_VERTEXAI'],
    files: ['~/.gemini/oauth_creds.json'],
    fix: 'gemini   (sign in with Google once, or set GEMINI_API_KEY)',
  },
  'grok-cli': { env: [], files: ['~/.grok/user-settings.json'], fix: 'export GROK_API_KEY=…   (or put apiKey in ~/.grok/user-settings.json)' },
};

/** One engine as `verdict doctor` sees it. */
export interface EngineHealth {
  name: string;
  binary: string;
  /** The binary's absolute path on PATH, or null when not installed. */
  found: string | null;
  /** The line of `<binary> --version` naming a version (else its first line), or null (not installed, or it printed nothing / failed). */
  version: string | null;
  /**
   * That version against engines/tested-versions.ts: `tested`, `untested` (a tested major), `untested-major`, or
   * `unknown` (not installed, no version printed, or an engine without a table entry); with the versions tested.
   */
  tested: { status: VersionStatus; versions: readonly string[] };
  /** `yes`/`no` from the login check; `n/a` for the script engine (no model); `unknown` for engines without a check. */
  login: 'yes' | 'no' | 'n/a' | 'unknown';
  /** How the login was found (the variable, the file, the command), or why not. */
  loginDetail: string;
  /** With --probe: whether a one-line prompt got an answer (exit 0, no error event), and what came back. */
  probe: { ok: boolean; detail: string; durationMs: number } | null;
  /** The command that fixes what is wrong (install, then log in), or null when nothing is. */
  fix: string | null;
  install: string;
}

/** The probe's prompt: one line, one word back; the cheapest call that proves the engine answers. */
export const PROBE_PROMPT = 'Reply with the single word OK and nothing else. Do not run tools or change files.';

/**
 * Checks one engine: found on PATH, version, login, and (when `probe`) one prompt. Never throws.
 * @param env the environment (PATH, HOME and the credential variables are read from it)
 * @param probe run the one-line prompt (a real model call: it costs a few tokens) when installed and not logged out
 * @param probeTimeoutMs the probe's time limit, ms
 */
export async function engineHealth(engine: EngineSpec, env: NodeJS.ProcessEnv, probe: boolean, probeTimeoutMs = 90_000): Promise<EngineHealth> {
  const found = findBinary(engine.binary, env.PATH ?? '');
  const base: EngineHealth = {
    name: engine.name,
    binary: engine.binary,
    found,
    version: null,
    tested: { status: 'unknown', versions: TESTED_CLIS[engine.name]?.versions ?? [] },
    login: 'unknown',
    loginDetail: '',
    probe: null,
    fix: null,
    install: engine.install,
  };
  if (!found) return { ...base, loginDetail: 'not installed', fix: engine.install };
  // In a throwaway home: asking the version must not touch the user's state (printedVersion says why). Up to 60 s:
  // Gemini CLI 0.61.0 took 15 to 20 s to print its version on a 2-core machine under load.
  const printed = await printedVersion(found, env, 60_000);
  // The line naming a version (codex 0.171.0 may print a warning line before it), else the first line.
  const lines =
    printed === null
      ? []
      : printed
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean);
  const version = lines.find((l) => cliVersion(l) !== null) ?? lines[0] ?? null;
  // The login command and the probe start the CLI for real: in a throwaway home holding copies of what it reads
  // (probe-home.ts), so that nothing of the user's changes but a refreshed login.
  const own = engine.harness === 'script' ? null : probeHome(engine, env);
  try {
    const login = engine.harness === 'script' ? { login: 'n/a' as const, detail: 'no model, no account' } : await loginOf(engine, found, env, own?.env ?? env);
    const check = LOGIN[engine.harness];
    const vs = versionStatus(engine.name, version);
    const health: EngineHealth = {
      ...base,
      version,
      tested: { status: vs.status, versions: vs.tested },
      login: login.login,
      loginDetail: login.detail,
      fix: login.login === 'no' && check ? (login.fix ?? check.fix) : null,
    };
    if (probe && engine.harness !== 'script' && health.login !== 'no') health.probe = await probeEngine(engine, found, own?.env ?? env, probeTimeoutMs);
    return health;
  } finally {
    own?.close();
  }
}

/** The login check: `env` (the user's) for the variables and files, `commandEnv` (the throwaway home's) to run the command in. */
async function loginOf(
  engine: EngineSpec,
  binary: string,
  env: NodeJS.ProcessEnv,
  commandEnv: NodeJS.ProcessEnv,
): Promise<{ login: EngineHealth['login']; detail: string; fix?: string }> {
  const check = LOGIN[engine.harness];
  if (!check) return { login: 'unknown', detail: 'no login check for this engine (a custom CLI): try --probe' };
  const home = env.HOME || os.homedir();
  if (engine.harness === 'codex-cli') {
    const provider = codexProviderKey(env, home);
    if (provider) {
      const where = `codex's model provider "${provider.id}" reads it (model_providers.${provider.id}.env_key in ${provider.file})`;
      if (env[provider.variable]?.trim()) return { login: 'yes', detail: `$${provider.variable} is set: ${where}` };
      return { login: 'no', detail: `$${provider.variable} is not set: ${where}`, fix: `export ${provider.variable}=…` };
    }
  }
  const vars = [...new Set([...(engine.credentialEnv ?? []), ...check.env])];
  const key = vars.find((name) => env[name]?.trim());
  if (key) return { login: 'yes', detail: `$${key} is set` };
  for (const template of check.files) {
    const file = expandStatePath(template, env, home);
    if (file && holdsCredentials(file)) return { login: 'yes', detail: file };
  }
  if (check.command) {
    const r = await execa(binary, check.command, { env: commandEnv, extendEnv: false, reject: false, timeout: 15_000, stdin: 'ignore', all: true });
    const said = lastLine(String(r.all ?? ''));
    if (r.exitCode === 0) return { login: 'yes', detail: `${engine.binary} ${check.command.join(' ')}: ${said}` };
    return { login: 'no', detail: `${engine.binary} ${check.command.join(' ')}: ${said || `exit ${r.exitCode}`}` };
  }
  return { login: 'no', detail: `none of ${[...vars.map((e) => `$${e}`), ...check.files].join(', ')}` };
}

/**
 * The variable codex's chosen model provider takes its key from: codex's config.toml (`$CODEX_HOME/config.toml`, else
 * `~/.codex/config.toml`) picks a provider with `model_provider`, and its `[model_providers.<id>]` table names the
 * variable in `env_key` (codex's configuration reference). Such a provider is not logged in to with `codex login`, and
 * OPENAI_API_KEY is not its key. Null when the file is missing or not TOML, or names no provider with an `env_key`.
 * @param home the user's home, for `~`
 */
export function codexProviderKey(env: NodeJS.ProcessEnv, home: string): { id: string; variable: string; file: string } | null {
  const file = expandStatePath('${CODEX_HOME:-~/.codex}/config.toml', env, home);
  if (!file) return null;
  let config: Record<string, unknown>;
  try {
    config = parseToml(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
  const id = config.model_provider;
  const providers = config.model_providers as Record<string, { env_key?: unknown } | undefined> | undefined;
  const variable = typeof id === 'string' ? providers?.[id]?.env_key : undefined;
  return typeof id === 'string' && typeof variable === 'string' && variable.trim() ? { id, variable, file } : null;
}

/** A credentials file: exists and is non-empty; a .json one must parse to an object with at least one key. */
function holdsCredentials(file: string): boolean {
  try {
    const text = fs.readFileSync(file, 'utf8');
    if (!text.trim()) return false;
    if (!file.endsWith('.json')) return true;
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && Object.keys(value).length > 0;
  } catch {
    return false;
  }
}

/**
 * The probe: the engine's own headless command (its argv template, sandbox flags, default model) with
 * {@link PROBE_PROMPT}, in a fresh temporary folder, stdin closed, with `env` (the throwaway home's, probe-home.ts);
 * ok when it exits 0 and its output reports no error.
 */
async function probeEngine(engine: EngineSpec, binary: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<NonNullable<EngineHealth['probe']>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-probe-'));
  const t0 = Date.now();
  try {
    const argv = expandArgv(engine, { spec: PROBE_PROMPT, taskdir: dir, model: null, engineArgs: [], fullAccess: false });
    const r = await execa(binary, argv, {
      cwd: dir,
      env: { ...env, ...engine.env },
      extendEnv: false,
      reject: false,
      timeout: timeoutMs,
      stdin: 'ignore',
      all: true,
    });
    const out = String(r.all ?? '');
    const usage = engine.parseOutput(out);
    const durationMs = Date.now() - t0;
    if (r.timedOut) return { ok: false, detail: `no answer within ${Math.round(timeoutMs / 1000)} s`, durationMs };
    if (r.exitCode !== 0 || usage.finalStatus === 'error') {
      const cls = engine.classifyError(out.slice(-4000));
      return { ok: false, detail: `${cls ?? 'failed'} (exit ${r.exitCode}): ${usage.finalError ?? lastLine(out)}`, durationMs };
    }
    return { ok: true, detail: `answered${usage.reportedModel ? ` (model ${usage.reportedModel})` : ''}`, durationMs };
  } catch (e) {
    return { ok: false, detail: (e as Error).message, durationMs: Date.now() - t0 };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function lastLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const line = lines[lines.length - 1] ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
