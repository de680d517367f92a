import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import lockfile from 'proper-lockfile';
import { TESTED_CLIS, type TestedCli } from '../../engines/tested-versions';

const pinned = (engine: 'codex' | 'opencode' | 'claude' | 'gemini' | 'grok') => {
  const cli = TESTED_CLIS[engine] as TestedCli;
  return { pkg: cli.pkg, version: cli.versions[cli.versions.length - 1] as string, printed: (cli.printed ?? cli.versions)[cli.versions.length - 1] as string };
};

/**
 * The agent CLIs the end-to-end tests install on demand, pinned to the newest version in engines/tested-versions.ts
 * (the table `verdict doctor` and the run start compare with), so the two cannot drift apart.
 */
export const AGENT_CLIS = {
  codex: pinned('codex'),
  opencode: pinned('opencode'),
  claude: pinned('claude'),
  gemini: pinned('gemini'),
  grok: pinned('grok'),
} as const;

/** A CLI the tests can install. */
export type AgentCliName = keyof typeof AGENT_CLIS;

/** The cache folder of one CLI: `$VERDICT_CLI_CACHE/<name>` or `~/.cache/verdict-test-clis/<name>`. */
export function cliCacheDir(name: AgentCliName): string {
  const root = process.env.VERDICT_CLI_CACHE || path.join(os.homedir(), '.cache', 'verdict-test-clis');
  return path.join(root, name);
}

/** The version string the installed binary prints, or null when it does not run. */
async function installedVersion(bin: string): Promise<string | null> {
  if (!fs.existsSync(bin)) return null;
  // A home of its own, so that even `--version` leaves nothing in the user's home; a temporary one, not inside the
  // cache, so that a cache another user installed (CI's root pass, read by its unprivileged pass) is only read.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-cli-version-'));
  try {
    const env = {
      HOME: home,
      XDG_CONFIG_HOME: path.join(home, '.config'),
      XDG_DATA_HOME: path.join(home, '.local/share'),
      XDG_CACHE_HOME: path.join(home, '.cache'),
      XDG_STATE_HOME: path.join(home, '.local/state'),
      CODEX_HOME: path.join(home, '.codex'),
      OPENCODE_DISABLE_AUTOUPDATE: '1',
    };
    const r = await execa(bin, ['--version'], { reject: false, stdin: 'ignore', timeout: 60000, all: true, env });
    return r.exitCode === 0 ? String(r.all ?? '').trim() : null;
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

const ensured = new Map<AgentCliName, Promise<string>>();

/**
 * Makes sure the pinned version of `name` is installed in its cache folder (one `npm i` the first time, reused
 * afterwards) and that its binary runs (`--version` names the pinned version). Once per process: tests that start
 * several runs at once share one check (two `npm i` into one folder at once would race; other processes wait on a
 * lock); a failed one is tried again.
 * Not a package dependency: only the end-to-end tests of real engines need it.
 * @returns the folder holding the binary, to put on PATH
 * @throws when npm fails or the installed binary does not run
 */
export function ensureCli(name: AgentCliName): Promise<string> {
  let pending = ensured.get(name);
  if (!pending) {
    pending = installCli(name);
    ensured.set(name, pending);
    pending.catch(() => ensured.delete(name));
  }
  return pending;
}

/** `ensureCli`'s work: checks the cached binary's version, installs the pinned package when it is not there. */
async function installCli(name: AgentCliName): Promise<string> {
  const { pkg, version, printed } = AGENT_CLIS[name];
  const prefix = cliCacheDir(name);
  const binDir = path.join(prefix, 'node_modules', '.bin');
  const bin = path.join(binDir, name);
  const matches = (v: string | null) => v !== null && v.includes(printed);
  if (matches(await installedVersion(bin))) return binDir;

  fs.mkdirSync(prefix, { recursive: true });
  // The end-to-end tier runs its files in parallel processes, and two of them may need one CLI at once: one `npm i` per
  // folder at a time across processes (`<prefix>.lock`, refreshed while held), the version looked at again under it.
  const release = await lockfile.lock(prefix, { realpath: false, stale: 30_000, retries: { retries: 1200, minTimeout: 200, maxTimeout: 500 } });
  try {
    if (matches(await installedVersion(bin))) return binDir;
    await npmInstall(prefix, pkg, version);
  } finally {
    await release();
  }
  const v = await installedVersion(bin);
  if (!matches(v)) throw new Error(`${bin} --version printed ${JSON.stringify(v)}, expected ${printed} (${pkg}@${version})`);
  return binDir;
}

/**
 * `npm i pkg@version` into `prefix`, a package of its own.
 * @throws Error with npm's output when it fails
 */
async function npmInstall(prefix: string, pkg: string, version: string): Promise<void> {
  // A package.json of its own keeps npm from walking up to some enclosing project.
  const manifest = path.join(prefix, 'package.json');
  if (!fs.existsSync(manifest)) fs.writeFileSync(manifest, JSON.stringify({ name: `verdict-test-${path.basename(prefix)}`, private: true }) + '\n');
  const r = await execa('npm', ['i', '--no-audit', '--no-fund', '--prefix', prefix, `${pkg}@${version}`], { reject: false, stdin: 'ignore', all: true });
  if (r.exitCode !== 0) throw new Error(`npm i ${pkg}@${version} into ${prefix} failed (exit ${r.exitCode}):\n${r.all}`);
}
