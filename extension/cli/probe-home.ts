// The throwaway home `verdict doctor` runs an engine's CLI in for its login command and its --probe: a real start of
// the CLI, which rewrites the files it keeps in the user's home (Claude Code replaces ~/.claude.json on every start,
// Gemini CLI migrates ~/.gemini/settings.json when it holds keys it renamed and leaves projects.json.*.tmp beside it,
// codex unpacks helpers into ~/.codex/tmp, and each saves the probe's session in the user's history). A doctor
// changes nothing of the user's: the CLI gets copies of what it reads, and only a refreshed login goes back.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EngineSpec } from '../../engines/types';
import { expandStatePath } from '../core/process/sandbox';
import { STATE_HOME_VARS } from '../core/run/engine-versions';

/** An engine's throwaway home: the environment to start its CLI with, and `close` (always call it). */
export interface ProbeHome {
  /** `env` with HOME (and each of STATE_HOME_VARS the user set) pointing into the throwaway folder. */
  env: NodeJS.ProcessEnv;
  /** The throwaway folder. */
  dir: string;
  /**
   * Writes back each login file the CLI changed (a refreshed token: the old one may no longer be valid), unless the
   * user's own changed meanwhile; removes the folder. Returns the files written back. Never throws.
   */
  close(): string[];
}

/**
 * Makes `engine`'s throwaway home: every path the engine declares it reads — its login and settings (stateShared), the
 * files a run gives it private copies of (stateFiles) and the settings a run puts back (stateGuarded) — copied from
 * the user's home (`env`'s HOME, else the OS home) to the same place in the throwaway one, a folder whose declared
 * paths hold no guarded setting (opencode's tool and package caches) linked instead of copied, as a run shares it.
 * Null for an engine that declares no state (a custom CLI without state paths): it then runs in the user's home.
 * @throws when the temporary folder cannot be made
 */
export function probeHome(engine: EngineSpec, env: NodeJS.ProcessEnv): ProbeHome | null {
  const declared = [...new Set([...engine.stateShared, ...engine.stateFiles, ...engine.stateGuarded])];
  if (!declared.length && !engine.stateDirs.length) return null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-probe-home-'));
  const own: NodeJS.ProcessEnv = { ...env, HOME: dir };
  for (const name of STATE_HOME_VARS) if (name !== 'HOME' && env[name]) own[name] = path.join(dir, `.${name.toLowerCase()}`);
  const home = env.HOME || os.homedir();
  const where = (t: string) => ({ real: expandStatePath(t, env, home), copy: expandStatePath(t, own, dir) });
  const guarded = engine.stateGuarded.map((t) => where(t).real).filter((p): p is string => p !== null);
  for (const t of declared) {
    const { real, copy } = where(t);
    if (!real || !copy || real === copy || fs.existsSync(copy) || !fs.existsSync(real)) continue;
    fs.mkdirSync(path.dirname(copy), { recursive: true });
    const holdsGuarded = guarded.some((g) => g === real || g.startsWith(`${real}${path.sep}`));
    if (fs.statSync(real).isDirectory() && !holdsGuarded) fs.symlinkSync(real, copy);
    else fs.cpSync(real, copy, { recursive: true, verbatimSymlinks: true });
  }
  const logins = loginFiles(engine, where);
  return { env: own, dir, close: () => closeProbeHome(dir, logins) };
}

/** A login file: its place in the user's home, in the throwaway one, and its bytes when copied. */
interface LoginFile {
  real: string;
  copy: string;
  before: Buffer;
}

/** The declared shared paths that are files, neither a guarded setting nor a private copy: the logins. */
function loginFiles(engine: EngineSpec, where: (t: string) => { real: string | null; copy: string | null }): LoginFile[] {
  const settings = new Set([...engine.stateGuarded, ...engine.stateFiles]);
  const out: LoginFile[] = [];
  for (const t of engine.stateShared) {
    if (settings.has(t)) continue;
    const { real, copy } = where(t);
    if (!real || !copy || real === copy) continue;
    try {
      if (fs.statSync(real).isFile()) out.push({ real, copy, before: fs.readFileSync(real) });
    } catch {
      // not there: nothing to refresh
    }
  }
  return out;
}

function closeProbeHome(dir: string, logins: LoginFile[]): string[] {
  const back: string[] = [];
  for (const f of logins) {
    try {
      const now = fs.readFileSync(f.copy);
      if (now.equals(f.before) || !fs.readFileSync(f.real).equals(f.before)) continue;
      const tmp = `${f.real}.verdict-${process.pid}.tmp`;
      fs.writeFileSync(tmp, now, { mode: fs.statSync(f.real).mode & 0o7777 });
      fs.renameSync(tmp, f.real);
      back.push(f.real);
    } catch {
      // left as the user had it
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return back;
}
