import { runGit } from '../core/git/safe-git';

/** One file a task changed relative to its base: git's status letter (A, M, D, R…) and the path. */
export interface ChangedFile {
  status: string;
  path: string;
}

const cache = new Map<string, ChangedFile[]>();

/**
 * Files that differ between `base` and `head` in `repo` (`git diff --name-status`); cached per commit pair, since
 * commits never change. Empty when either commit is unknown to the repository. Names only: git reads no file content,
 * so it runs untrusted (no filter, no diff program; safe-git.ts) whether or not the workspace is trusted. Started by
 * the spawn helper (`runGit`), not forked from the extension host, whose fork costs with its memory.
 */
export async function changedFiles(repo: string, base: string, head: string): Promise<ChangedFile[]> {
  const key = `${repo}\0${base}\0${head}`;
  const hit = cache.get(key);
  if (hit) return hit;
  let out: string;
  try {
    out = await runGit(repo, ['diff', '--name-status', '--no-renames', base, head], { trusted: false });
  } catch {
    return [];
  }
  const files = out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [status = '?', ...rest] = line.split('\t');
      return { status, path: rest.join('\t') };
    });
  cache.set(key, files);
  return files;
}
