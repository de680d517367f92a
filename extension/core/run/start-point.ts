/**
 * Where a dependent task's worktree starts (the task graph, `after`): from base_ref when it has no prerequisite,
 * from its one prerequisite's sealed commit, or from a merge of several prerequisites' commits made in the
 * repository's object store (`git merge-tree --write-tree`, then `git commit-tree`: no worktree, no index, no ref
 * touched). A conflict is an Error naming the files and the prerequisites that clash.
 */
import type { RepoInfo } from '../git/worktree';
import { gitFor } from '../git/safe-git';

/** A prerequisite that passed: its key and the commit its task branch holds. */
export interface PassedPrerequisite {
  key: string;
  commit: string;
}

/**
 * The commit a dependent's task branch starts from: `repo.baseSha` without prerequisites, the one prerequisite's
 * commit, or a new merge commit of all of them (parents in `after` order, one merge per further prerequisite).
 * @throws Error naming the conflicting files and the prerequisites when they do not merge cleanly
 */
export async function startPoint(repo: RepoInfo, dependent: string, prerequisites: readonly PassedPrerequisite[]): Promise<string> {
  if (!prerequisites.length) return repo.baseSha;
  const [first, ...rest] = prerequisites as [PassedPrerequisite, ...PassedPrerequisite[]];
  const git = gitFor(repo.root);
  let head = first.commit;
  const merged = [first.key];
  for (const next of rest) {
    // merge-tree exits 1 on a conflict and prints the tree, then one conflicted path per line (--name-only).
    const out = await git.raw(['merge-tree', '--write-tree', '--name-only', '--no-messages', head, next.commit]);
    const [tree, ...conflicts] = out.split('\n').filter(Boolean);
    if (!tree || conflicts.length) {
      throw new Error(
        `the prerequisites of ${dependent} do not merge: ${[...new Set(conflicts)].join(', ') || 'git merge-tree gave no tree'} conflict between ${merged.join(' + ')} and ${next.key} (make one task own those files, or put one after the other)`,
      );
    }
    merged.push(next.key);
    head = (
      await git.raw([...repo.identityArgs, 'commit-tree', tree, '-p', head, '-p', next.commit, '-m', `verdict: ${dependent} starts from ${merged.join(' + ')}`])
    ).trim();
  }
  return head;
}
