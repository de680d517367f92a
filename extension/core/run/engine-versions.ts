/**
 * The run start's check of each engine's CLI version against the versions Verdict was tested with
 * (engines/tested-versions.ts): an untested major version is a warning, printed once as a run note, never a refusal.
 */
import { execa } from 'execa';
import { TESTED_CLIS, versionWarning } from '../../../engines/tested-versions';

/**
 * One warning per engine whose CLI (`binaries`: engine name → the binary found on PATH by the preflight) prints a
 * major version no tested one shares; engines without a table entry (custom engines, script) are not asked. Each
 * `<binary> --version` runs at once with `env`, stdin closed, at most `timeoutMs` (default 15 s); one that fails or
 * prints no version gives no warning. Never throws.
 */
export async function engineVersionWarnings(binaries: ReadonlyMap<string, string>, env: Record<string, string | undefined>, timeoutMs = 15_000): Promise<string[]> {
  const asked = [...binaries].filter(([name]) => TESTED_CLIS[name]);
  const printed = await Promise.all(
    asked.map(async ([name, binary]) => {
      try {
        const r = await execa(binary, ['--version'], { env, extendEnv: false, reject: false, timeout: timeoutMs, stdin: 'ignore', all: true });
        return [name, r.exitCode === 0 ? String(r.all ?? '') : null] as const;
      } catch {
        return [name, null] as const;
      }
    }),
  );
  return printed.map(([name, text]) => versionWarning(name, text)).filter((w): w is string => w !== null);
}
