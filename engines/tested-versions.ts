/**
 * The CLI versions Verdict has been tested with, per built-in engine: each was run for real against the project's
 * scripted model server by the e2e tier (test/e2e/real-engines.e2e.test.ts, real-claude, real-gemini), which installs
 * exactly these (test/helpers/agent-clis.ts reads this table; real-grok too). Pure: no process is spawned here.
 */

/** One engine's tested CLI: its npm package and the versions proven. */
export interface TestedCli {
  pkg: string;
  versions: readonly string[];
  /**
   * What `--version` prints for each of those versions, when it is not the package version (grok-cli 0.0.34 prints
   * 1.0.1); the comparison is made with these. Absent: the package versions.
   */
  printed?: readonly string[];
  /** How it was tested: `e2e` (the real CLI run by the e2e tier) or `captures` (its parser on captured output only). */
  how: 'e2e' | 'captures';
}

/** Tested versions by engine name. */
export const TESTED_CLIS: Readonly<Record<string, TestedCli>> = {
  codex: { pkg: '@openai/codex', versions: ['0.171.0'], how: 'e2e' },
  opencode: { pkg: 'opencode-ai', versions: ['1.18.33'], how: 'e2e' },
  claude: { pkg: '@anthropic-ai/claude-code', versions: ['2.1.332'], how: 'e2e' },
  gemini: { pkg: '@google/gemini-cli', versions: ['0.61.0'], how: 'e2e' },
  grok: { pkg: '@vibe-kit/grok-cli', versions: ['0.0.34'], printed: ['1.0.1'], how: 'e2e' },
};

/** How a CLI version compares with the tested ones. */
export type VersionStatus = 'tested' | 'untested' | 'untested-major' | 'unknown';

/** The first `x.y.z` in what `--version` printed (`2.1.332 (Claude Code)`, `codex-cli 0.171.0`), or null. */
export function cliVersion(printed: string): string | null {
  return /(\d+)\.(\d+)\.(\d+)/.exec(printed)?.[0] ?? null;
}

/**
 * The part of a version a breaking change moves: the major, or for 0.x versions major and minor (semver: anything may
 * change before 1.0.0, and these CLIs break on minor releases there), e.g. `2` for 2.1.332, `0.61` for 0.61.0.
 */
function breakingPart(version: string): string {
  const [major, minor] = version.split('.');
  return major === '0' ? `0.${minor}` : String(major);
}

/**
 * Whether `printed` (a CLI's `--version` output) names a tested version of `engine`'s CLI (as the CLI prints it,
 * TestedCli.printed): `tested`, `untested` (same
 * major as a tested one), `untested-major` (no tested version shares its major — see breakingPart), or `unknown` (no
 * table entry for the engine, or no version in the output). Never throws.
 */
export function versionStatus(engine: string, printed: string | null): { version: string | null; status: VersionStatus; tested: readonly string[] } {
  const entry = TESTED_CLIS[engine];
  const version = printed === null ? null : cliVersion(printed);
  const known = entry?.printed ?? entry?.versions ?? [];
  if (!entry || version === null) return { version, status: 'unknown', tested: known };
  if (known.includes(version)) return { version, status: 'tested', tested: known };
  const part = breakingPart(version);
  return { version, status: known.some((v) => breakingPart(v) === part) ? 'untested' : 'untested-major', tested: known };
}

/** `claude 3.0.1 is an untested major version (Verdict was tested with 2.1.332): …` for an untested major, else null. */
export function versionWarning(engine: string, printed: string | null): string | null {
  const s = versionStatus(engine, printed);
  if (s.status !== 'untested-major') return null;
  return `engine ${engine}: its CLI is ${s.version}, a major version Verdict has not been tested with (tested: ${s.tested.join(', ')}); its flags, events or usage fields may have changed — check the first attempt's log and row`;
}
