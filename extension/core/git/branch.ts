import { gitFor } from './safe-git';

/**
 * Creates branch `branch` at commit `sha` in the repository at `root`, only if it does not exist yet (update-ref
 * with an empty old value, git-update-ref(1): git refuses when the ref exists, so an existing branch is never moved). Touches no
 * worktree and no index. Used for a best-of-N task's branch, which holds its winner's commit.
 * @throws Error with git's message when the branch exists or the commit is unknown
 */
export async function createBranchAt(root: string, branch: string, sha: string, message: string): Promise<void> {
  await gitFor(root).raw(['update-ref', '-m', message, `refs/heads/${branch}`, sha, '']);
}

/**
 * The commit branch `branch` points at in the repository at `root`, or null when there is no such branch.
 * @throws never (a git failure reads as no branch)
 */
export async function branchHead(root: string, branch: string): Promise<string | null> {
  try {
    // --quiet: a missing branch prints nothing (simple-git may then resolve with empty output rather than reject).
    const sha = (await gitFor(root).raw(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`])).trim();
    return sha || null;
  } catch {
    return null;
  }
}
