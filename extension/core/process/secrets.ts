/**
 * What no sandboxed step may read of the user's secrets (sandbox.ts `bwrapCommand` covers them; supervisor.ts drops the
 * variables). The world is read-only but visible to a step: a worker read Verdict's own config file, which holds the
 * Postgres URL with its password, connected, and rewrote its FAIL row to PASS in the shared scoreboard. So, in every
 * sandbox, the places where credentials live are empty — a folder an empty read-only tmpfs, a file an empty read-only
 * file — and the environment variables that look like credentials are not passed on, but for those the step's own
 * engine declares (its API key: EngineSpec.credentialEnv).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The places under a home where credentials live, hidden in every sandbox: ssh and gpg keys, cloud logins (AWS,
 * Azure, gcloud), Kubernetes and Docker configs, netrc, PostgreSQL's password file, npm's and PyPI's tokens, git's
 * stored credentials, GitHub CLI's token, Verdict's own config folder (its Postgres URLs) and Ringer's.
 */
export const HOME_SECRETS: readonly string[] = [
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.config/gcloud',
  '.kube',
  '.docker',
  '.netrc',
  '.pgpass',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.config/git/credentials',
  '.config/gh',
  '.config/verdict',
  '.ringer',
  '.config/ringer',
];

/**
 * Environment variables that name a credential's place elsewhere (each hidden like the places above when absolute);
 * `dir` marks those that name the folder holding it. KUBECONFIG is a list (`:`). Sources: each tool's documentation
 * (ssh-agent's GNUPGHOME, gcloud's CLOUDSDK_CONFIG, gh's GH_CONFIG_DIR, docker's DOCKER_CONFIG, the AWS CLI's
 * AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE, npm's NPM_CONFIG_USERCONFIG, curl's NETRC, libpq's PGPASSFILE and
 * PGSERVICEFILE, Google's GOOGLE_APPLICATION_CREDENTIALS, Verdict's VERDICT_CONFIG, Ringer's RINGER_CONFIG).
 */
const ENV_SECRETS: readonly string[] = [
  'GNUPGHOME',
  'CLOUDSDK_CONFIG',
  'GH_CONFIG_DIR',
  'DOCKER_CONFIG',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'NPM_CONFIG_USERCONFIG',
  'npm_config_userconfig',
  'NETRC',
  'PGPASSFILE',
  'PGSERVICEFILE',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'KUBECONFIG',
  'VERDICT_CONFIG',
  'RINGER_CONFIG',
];

/** Under $XDG_CONFIG_HOME (when it is set and not ~/.config, already in {@link HOME_SECRETS}): the same folders. */
const XDG_SECRETS: readonly string[] = ['verdict', 'ringer', 'gh', 'git/credentials'];

/**
 * Every place a step must not read for `homes` (the step's HOME, the orchestrator's, the account's) and `env` (the
 * step's environment and the orchestrator's), plus `extra` (a config's and a manifest's `hide`, the config file in
 * force), each absolute, once, as named (not resolved). A variable of `own` (the step's engine's credentials:
 * GOOGLE_APPLICATION_CREDENTIALS for gemini) names no place: that engine reads its login there. Pure.
 */
export function secretPlaces(
  homes: readonly string[],
  envs: readonly NodeJS.ProcessEnv[],
  extra: readonly string[] = [],
  own: readonly string[] = [],
): string[] {
  const out = new Set<string>();
  for (const h of homes) for (const rel of HOME_SECRETS) out.add(path.join(h, rel));
  for (const env of envs) {
    const xdg = env.XDG_CONFIG_HOME;
    if (xdg && path.isAbsolute(xdg)) for (const rel of XDG_SECRETS) out.add(path.join(xdg, rel));
    for (const name of ENV_SECRETS) {
      if (own.includes(name)) continue;
      for (const p of (env[name] ?? '').split(name === 'KUBECONFIG' ? ':' : '\0')) if (p && path.isAbsolute(p)) out.add(path.resolve(p));
    }
  }
  for (const p of extra) if (path.isAbsolute(p)) out.add(path.resolve(p));
  return [...out];
}

/** What a sandbox hides of {@link secretPlaces}: folders (an empty tmpfs each) and files (an empty file each), and what it shows back. */
export interface SecretCovers {
  /** Real paths of folders to cover, outermost first; none inside another. */
  dirs: string[];
  /** Real paths of files to cover, none inside a covered folder. */
  files: string[];
  /** Real paths inside a covered place that `expose` shows again (bound back read-only). */
  back: string[];
}

/**
 * The covers for `places` that exist here, at their real paths (bubblewrap cannot mount through a link; a dotfile that
 * is a link to a dotfiles repository is covered where it leads): not one that is, or holds, a path of `keep` (the
 * step's own folders, its working folder, its command: covering them would break the step; they are its own), nor one
 * that is, or lies inside, a path of `expose` (the user's config lets every step read it); an exposed path inside a
 * covered one is shown back. Never throws.
 */
export function secretCovers(places: readonly string[], keep: readonly string[], expose: readonly string[] = []): SecretCovers {
  const real = (p: string): string | null => {
    if (!fs.existsSync(p)) return null;
    try {
      return fs.realpathSync.native(p);
    } catch {
      return null;
    }
  };
  const within = (p: string, dir: string) => p === dir || p.startsWith(dir === '/' ? '/' : `${dir}/`);
  const kept = keep.flatMap((k) => [path.resolve(k), real(k)]).filter((k): k is string => k !== null);
  const shown = expose.flatMap((e) => [path.resolve(e), real(e)]).filter((e): e is string => e !== null);
  const dirs: string[] = [];
  const files: string[] = [];
  for (const p of new Set(places.map(real).filter((p): p is string => p !== null))) {
    if (p === '/' || kept.some((k) => within(k, p)) || shown.some((e) => within(p, e))) continue;
    let st: fs.Stats;
    try {
      st = fs.statSync(p);
    } catch {
      continue;
    }
    (st.isDirectory() ? dirs : files).push(p);
  }
  const outer = [...new Set(dirs)].sort((a, b) => a.length - b.length).filter((d, i, all) => !all.slice(0, i).some((o) => within(d, o)));
  const inCovered = (p: string) => outer.some((d) => within(p, d));
  const back = [...new Set(shown.filter((e) => fs.existsSync(e) && inCovered(e)))];
  return { dirs: outer, files: [...new Set(files)].filter((f) => !inCovered(f)), back };
}

let empty: string | null = null;

/**
 * An empty, read-only regular file of this process, bound over each secret file (an empty file reads as such: npm,
 * curl and git go on without the credentials; /dev/null bound there would refuse to open, its mount being nodev).
 * Made once, in a private folder of the OS temporary folder, removed when the process exits. Throws only when it
 * cannot be made.
 */
export function emptyFile(): string {
  if (empty && fs.existsSync(empty)) return empty;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-empty-'));
  const file = path.join(dir, 'empty');
  fs.writeFileSync(file, '', { mode: 0o444 });
  if (!empty) {
    process.on('exit', () => {
      try {
        if (empty) fs.rmSync(path.dirname(empty), { recursive: true, force: true });
      } catch {
        // left in the temporary folder
      }
    });
  }
  empty = fs.realpathSync.native(file);
  return empty;
}

/**
 * True when an environment variable looks like a credential and is not passed to a sandboxed step: a name ending in
 * TOKEN, SECRET, SECRET_KEY, PASSWORD, PASSWD, PASSPHRASE, API_KEY / APIKEY, ACCESS_KEY, PRIVATE_KEY or CREDENTIAL(S)
 * (GITHUB_TOKEN, NPM_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY…), any AWS_* variable, DATABASE_URL, libpq's
 * PGPASSWORD, MySQL's MYSQL_PWD, Kerberos' KRB5CCNAME, or a value that is a URL with a password in it
 * (`postgres://user:pw@host`, `redis://:pw@host`) — but not the proxy variables (`https_proxy`…), whose credentials
 * the engines need to reach their APIs. Pure.
 */
export function looksLikeCredential(name: string, value: string): boolean {
  const n = name.toUpperCase();
  if (/(^|_)(TOKEN|SECRET|SECRET_KEY|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)$/.test(n)) return true;
  if (n.startsWith('AWS_') || ['DATABASE_URL', 'PGPASSWORD', 'MYSQL_PWD', 'KRB5CCNAME'].includes(n)) return true;
  if (/^(HTTPS?|FTP|ALL|NO)_PROXY$/.test(n)) return false;
  return /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]+@/i.test(value);
}
