/**
 * Which submodule checkouts of a worktree still use a git dir Verdict made. Git answers "does this submodule hold
 * work?" (`git status --ignore-submodules=none`, and every git that diffs the worktree) by running `git status` inside
 * the submodule with that submodule's own config, which may name a clean filter git runs on any file whose stat
 * changed. The git dirs `initSubmodules` made live under `<adminDir>/modules/` (read-only to every step); a worker
 * writes its tree, so it can put a git dir of its own in a submodule's place (`<path>/.git` a folder, or a file
 * pointing elsewhere) or make a folder a repository that `add -A` records as a gitlink. Git must not be run in those.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runGit } from './safe-git';

/**
 * The gitlinks (paths, relative to `workTree`) of the index `indexFile` of git dir `gitDir` whose checkout git would
 * enter with a config Verdict did not make: `<workTree>/<path>/.git` is not a regular file naming a folder under
 * `<gitDir>/modules/`, or, checked the same way one level down with that folder as git dir and its own index, a
 * submodule of the submodule is not. `commonDir` is the repository's (GIT_COMMON_DIR at the top level only).
 * Reading the indexes runs no program (`ls-files --stage`).
 * @throws Error with git's message when an index cannot be read
 */
export async function untrustedGitlinks(workTree: string, gitDir: string, indexFile: string, commonDir?: string): Promise<string[]> {
  const env: Record<string, string> = { GIT_DIR: gitDir, GIT_INDEX_FILE: indexFile, ...(commonDir ? { GIT_COMMON_DIR: commonDir } : {}) };
  const out = await runGit(workTree, ['ls-files', '--stage', '-z'], { env, noDrivers: true });
  const links = out
    .split('\0')
    .filter((e) => e.startsWith('160000 '))
    .map((e) => e.slice(e.indexOf('\t') + 1));
  const bad: string[] = [];
  for (const rel of links) {
    const own = ownGitDir(path.join(workTree, rel), path.join(gitDir, 'modules'));
    if (own === null) bad.push(rel);
    else if (own && fs.existsSync(path.join(own, 'index')) && (await untrustedGitlinks(path.join(workTree, rel), own, path.join(own, 'index'))).length)
      bad.push(rel);
  }
  return bad;
}

/**
 * The git dir `<checkout>/.git` names when it is a regular file naming a folder under `modules` (absolute); '' when
 * there is no `.git` (an uninitialised or removed checkout: git does not enter it); null for anything else.
 */
function ownGitDir(checkout: string, modules: string): string | null {
  const dotGit = path.join(checkout, '.git');
  const st = fs.lstatSync(dotGit, { throwIfNoEntry: false });
  if (!st) return '';
  if (!st.isFile()) return null;
  const m = /^gitdir: (.+?)\n?$/.exec(fs.readFileSync(dotGit, 'utf8'));
  if (!m?.[1]) return null;
  try {
    const target = fs.realpathSync.native(path.resolve(checkout, m[1]));
    const root = fs.realpathSync.native(modules);
    return target.startsWith(`${root}${path.sep}`) && fs.statSync(target).isDirectory() ? target : null;
  } catch {
    return null; // a git dir that is not there: git would fail on it; nothing of it is the branch's either
  }
}
