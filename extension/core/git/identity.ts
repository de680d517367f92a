import type { SimpleGit } from 'simple-git';

/**
 * `-c user.name=… -c user.email=…` for commands that create commits (commit, rebase) when the repository has no
 * identity configured, so the orchestrator can always commit; empty when git already knows who commits.
 */
export async function fallbackIdentityArgs(git: SimpleGit): Promise<string[]> {
  const name = (await git.raw(['config', '--get', 'user.name']).catch(() => '')).trim();
  const email = (await git.raw(['config', '--get', 'user.email']).catch(() => '')).trim();
  return [...(name ? [] : ['-c', 'user.name=Verdict']), ...(email ? [] : ['-c', 'user.email=verdict@localhost'])];
}
