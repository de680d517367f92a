import fs from 'node:fs';
import path from 'node:path';
import { processesIn } from '../process/in-use';
import { removeWorktreeLocked } from './worktree-lock';
import { unmountOverlay } from './overlay';

/** What discarding one task did. */
export interface DiscardReport {
  /** The worktree folder was there and is gone. */
  worktreeRemoved: boolean;
  /** The branch existed and was deleted; `sha` is the commit it held (so it can be recovered: `git branch B sha`). */
  branchDeleted: boolean;
  sha: string | null;
}

/**
 * Discards one task of a worktree-mode run: removes its worktree `dir` from `repo` (`git worktree remove --force
 * --force` under the per-repository worktree lock, then the folder itself, its per-task object dir and index; an
 * overlay tree is unmounted first and its upper layer removed), prunes, and deletes `branch`, merged or not. Asks nothing: the caller decided (the CLI is told so; the extension asks first).
 * @throws Error when a live process works in `dir` (nothing is touched then), an overlay mounted there cannot be
 *   unmounted, or git refuses to delete the branch
 */
export async function discardTaskWorktree(repo: string, dir: string, branch: string): Promise<DiscardReport> {
  const inside = fs.existsSync(dir) ? processesIn(dir) : [];
  if (inside.length)
    throw new Error(
      `kept: a live process works in ${dir} (${inside
        .slice(0, 3)
        .map((p) => `pid ${p.pid} ${p.command}`)
        .join(', ')}${inside.length > 3 ? ', …' : ''})`,
    );
  const existed = fs.existsSync(dir);
  // An overlay tree still mounted (kept at its run's end while someone worked in it, or left by a crash): unmounted
  // first, since its mount point cannot be removed (EBUSY); its upper layer goes with it below.
  await unmountOverlay(dir);
  // All under the lock: `branch -D` and `worktree prune` read every registration, and die on one a run's
  // `worktree add` is still writing (git/worktree-lock.ts).
  const sha = await removeWorktreeLocked(repo, dir, { branch, branchMustGo: true });
  // Keys never start with a dot: the run's worktrees folder holds `.objects/<key>` and `.index/<key>` beside them.
  const key = path.basename(dir);
  fs.rmSync(path.join(path.dirname(dir), '.objects', key), { recursive: true, force: true });
  fs.rmSync(path.join(path.dirname(dir), '.index', key), { force: true });
  fs.rmSync(path.join(path.dirname(dir), '.overlay', key), { recursive: true, force: true });
  return { worktreeRemoved: existed, branchDeleted: sha !== null, sha };
}
