/**
 * Which expected files a repository's ignore rules leave out of a commit, asked of `git check-ignore` through
 * simple-git. The editor lints on every pause in typing, so answers are cached per repository and path list
 * while the files git reads them from are unchanged (mtime and size of every `.gitignore` on the paths' way
 * down from the top folder, `info/exclude`, the index, and the default global excludes file
 * `$XDG_CONFIG_HOME/git/ignore`). A `core.excludesFile` elsewhere is not watched: edits to it show after the
 * next change to one of those files or a restart. Git runs through gitFor untrusted (check-ignore needs no filter;
 * the repository's fsmonitor, hooks and filters stay off); in an untrusted workspace lint does not call this at all.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { gitFor as GitFor } from '../../git/safe-git';

interface Repo {
  top: string;
  gitDir: string;
}

const MAX_CACHED = 64;
const repos = new Map<string, Repo>();
const answers = new Map<string, { fingerprint: string; ignored: Set<string> }>();

/**
 * The subset of `paths` (relative to the top folder of the repository holding `dir`) that git ignores.
 * Tracked files are never ignored (git's own rule). Empty when `dir` is not inside a git repository or git fails.
 */
export async function ignoredPaths(dir: string, paths: string[]): Promise<Set<string>> {
  const repo = await findRepo(dir);
  if (!repo || !paths.length) return new Set();
  const key = `${repo.top}\0${[...paths].sort().join('\0')}`;
  const fingerprint = fingerprintOf(repo, paths);
  const cached = answers.get(key);
  if (cached && cached.fingerprint === fingerprint) return cached.ignored;
  let ignored: Set<string>;
  try {
    ignored = new Set(await (await safeGit())(repo.top, { trusted: false }).checkIgnore(paths));
  } catch {
    return new Set();
  }
  if (answers.size >= MAX_CACHED) answers.delete(answers.keys().next().value as string);
  answers.set(key, { fingerprint, ignored });
  return ignored;
}

async function findRepo(dir: string): Promise<Repo | null> {
  const known = repos.get(dir);
  if (known) return known;
  if (!fs.existsSync(dir)) return null;
  try {
    const [top, gitDir] = (await (await safeGit())(dir, { trusted: false }).revparse(['--show-toplevel', '--absolute-git-dir'])).trim().split('\n');
    if (!top || !gitDir) return null;
    const repo = { top, gitDir };
    repos.set(dir, repo);
    return repo;
  } catch {
    return null; // not a repository (not cached: `git init` may follow)
  }
}

function fingerprintOf(repo: Repo, paths: string[]): string {
  const dirs = new Set<string>();
  for (const p of paths) {
    for (let d = path.posix.dirname(p); ; d = path.posix.dirname(d)) {
      dirs.add(d);
      if (d === '.' || d === '/') break;
    }
  }
  const config = process.env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  const files = [
    ...[...dirs].map((d) => path.join(repo.top, d, '.gitignore')),
    path.join(repo.gitDir, 'info', 'exclude'),
    path.join(repo.gitDir, 'index'),
    path.join(config, 'git', 'ignore'),
  ];
  return files
    .map((f) => {
      const s = fs.statSync(f, { throwIfNoEntry: false });
      return s ? `${s.mtimeMs}:${s.size}` : '-';
    })
    .join('|');
}

/** git/safe-git.ts's gitFor, imported on first use: simple-git is loaded only when a lint has git to ask. */
async function safeGit(): Promise<typeof GitFor> {
  return (await import('../../git/safe-git')).gitFor;
}
