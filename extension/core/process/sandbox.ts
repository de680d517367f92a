/**
 * The containment every step (setup, worker, check) runs under. On Linux: bubblewrap (`bwrap`), one sandbox per
 * step — its own PID namespace that dies with the step, the whole filesystem read-only except the places the step
 * may write. Elsewhere, or where bwrap cannot run, there is no sandbox and the run refuses to start unless the user
 * said `--no-sandbox` (never silently unsandboxed). Source of the mount and namespace options: bwrap(1), bubblewrap
 * 0.8 (Debian 12).
 */
import fs from 'node:fs';
import { execa } from 'execa';
import { findBinary } from '../../../engines/find-binary';

/** The containment a step ran under, as recorded in every eval row (`sandbox`). */
export type Containment = 'bwrap' | 'none';

/** What this machine offers: bubblewrap that was seen to work, or nothing, with the reason in one line. */
export type SandboxProbe =
  | { kind: 'bwrap'; binary: string; version: string }
  | { kind: 'none'; reason: string };

/**
 * How a run asks for containment: `auto` (the default) uses bubblewrap and refuses to start without it; `off`
 * (`--no-sandbox`, `"sandbox": false`, the setting `verdict.sandbox`) runs every step unsandboxed, said so once.
 */
export type SandboxMode = 'auto' | 'off';

let cached: Promise<SandboxProbe> | null = null;

/**
 * Finds out whether bubblewrap works here by running it once as a step would (new PID namespace, / read-only,
 * /proc and /dev). Cached for the process; `fresh` probes again. Never throws: the failure is the reason.
 */
export function probeSandbox(env: NodeJS.ProcessEnv = process.env, fresh = false): Promise<SandboxProbe> {
  if (!cached || fresh) cached = probe(env);
  return cached;
}

async function probe(env: NodeJS.ProcessEnv): Promise<SandboxProbe> {
  if (process.platform !== 'linux') return { kind: 'none', reason: `bubblewrap runs only on Linux (this is ${process.platform})` };
  const binary = env.VERDICT_BWRAP || findBinary('bwrap', env.PATH ?? '');
  if (!binary) return { kind: 'none', reason: 'bubblewrap (bwrap) is not installed: apt-get install bubblewrap (Debian/Ubuntu) or dnf install bubblewrap (Fedora)' };
  try {
    const version = await execa(binary, ['--version'], { reject: false, timeout: 5000, stdin: 'ignore' });
    const trial = await execa(binary, ['--die-with-parent', '--unshare-pid', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--', 'true'], { reject: false, timeout: 10_000, stdin: 'ignore', all: true });
    if (trial.exitCode !== 0) {
      const why = String(trial.all ?? '').trim().split('\n').pop() || `exit ${trial.exitCode ?? trial.signal}`;
      return { kind: 'none', reason: `bubblewrap is installed (${binary}) but cannot make a sandbox here: ${why} (user namespaces disabled, or an AppArmor/container policy forbids them)` };
    }
    return { kind: 'bwrap', binary, version: String(version.stdout).trim().replace(/^bubblewrap\s*/, '') || 'unknown' };
  } catch (e) {
    return { kind: 'none', reason: `bubblewrap (${binary}) could not be started: ${(e as Error).message}` };
  }
}

/** True when `p` exists (used for optional engine state paths). */
export function exists(p: string): boolean {
  return fs.existsSync(p);
}
