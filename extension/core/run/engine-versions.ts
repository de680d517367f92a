/**
 * The run start's check of each engine's CLI version against the versions Verdict was tested with
 * (engines/tested-versions.ts): an untested major version is a warning, printed once as a run note, never a refusal.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { TESTED_CLIS, versionWarning } from '../../../engines/tested-versions';

/**
 * The variables a CLI finds its home and state folders by; {@link printedVersion} points each at a throwaway folder.
 * HOME and the XDG base directories (opencode), CODEX_HOME (codex), CLAUDE_CONFIG_DIR (Claude Code), GEMINI_CLI_HOME
 * (Gemini CLI).
 */
export const STATE_HOME_VARS = [
  'HOME',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'XDG_CACHE_HOME',
  'XDG_STATE_HOME',
  'CODEX_HOME',
  'CLAUDE_CONFIG_DIR',
  'GEMINI_CLI_HOME',
] as const;

/**
 * What `<binary> --version` prints (stdout and stderr), or null when it fails, times out or cannot start. It runs with
 * `env` (PATH and the rest kept), stdin closed, at most `timeoutMs`, but with a fresh, empty home and state folders
 * (STATE_HOME_VARS, each an existing empty folder), removed afterwards: even `--version` is a full start for some CLIs, and Gemini CLI 0.61.0 then
 * rewrites the user's ~/.gemini/settings.json when it holds deprecated keys (migrated to their new names) and leaves projects.json.*.tmp files beside it. Asking
 * a version must change nothing of the user's. Never throws.
 */
export async function printedVersion(binary: string, env: Record<string, string | undefined>, timeoutMs: number): Promise<string | null> {
  let home: string | null = null;
  try {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-version-'));
    const own: Record<string, string> = {};
    // Each one made: codex refuses a CODEX_HOME that does not exist (and prints a warning before its version).
    for (const name of STATE_HOME_VARS) {
      own[name] = name === 'HOME' ? home : path.join(home, name.toLowerCase());
      fs.mkdirSync(own[name], { recursive: true });
    }
    const r = await execa(binary, ['--version'], {
      env: { ...env, ...own },
      extendEnv: false,
      reject: false,
      timeout: timeoutMs,
      stdin: 'ignore',
      all: true,
      cwd: home,
    });
    return r.exitCode === 0 ? String(r.all ?? '') : null;
  } catch {
    return null;
  } finally {
    if (home) fs.rmSync(home, { recursive: true, force: true });
  }
}

/**
 * One warning per engine whose CLI (`binaries`: engine name → the binary found on PATH by the preflight) prints a
 * major version no tested one shares; engines without a table entry (custom engines, script) are not asked. Each
 * `<binary> --version` runs at once (printedVersion: with `env`, in a throwaway home), at most `timeoutMs` (default
 * 15 s); one that fails or prints no version gives no warning. Never throws.
 */
export async function engineVersionWarnings(
  binaries: ReadonlyMap<string, string>,
  env: Record<string, string | undefined>,
  timeoutMs = 15_000,
): Promise<string[]> {
  const asked = [...binaries].filter(([name]) => TESTED_CLIS[name]);
  const printed = await Promise.all(asked.map(async ([name, binary]) => [name, await printedVersion(binary, env, timeoutMs)] as const));
  return printed.map(([name, text]) => versionWarning(name, text)).filter((w): w is string => w !== null);
}
