/**
 * The shared lower layer of a run's overlay trees and the end of a task's overlay (docs/trees.md).
 * The lower layer of commit C is `<worktrees>/<run>/.lower/<C>/`: one checkout of C, written once (`read-tree -u
 * --reset` with an index of its own, `.lower/<C>.index`, whose stat data every task's index starts from) and never
 * written again — overlayfs writes only to the upper layers, and VERDICT_HOME is hidden from every step. That index is
 * split (git-update-index(1) "SPLIT INDEX"): `.lower/<C>.index` holds a few KB, its shared base
 * `.lower/<C>.git/sharedindex.<id>` every entry; each task's index is a copy of the first, its admin dir gets a hard
 * link to the second (worktree.ts WorktreeLinks.sharedIndex). `.lower/<C>.git/` is a git dir of its own (a HEAD;
 * GIT_COMMON_DIR names the repository), so the base never lands in the repository's own `.git`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { withLock } from '../fs/lock';
import { runGit } from './safe-git';
import { removeWorktreeLocked } from './worktree-lock';
import { makeFreshDir, markTopDir } from '../process/top-dir';
import { isolateRunRoot, releaseRunRoot, unmountOverlay, overlayMountsUnder, readMountInfo } from './overlay';

/** A lower layer: the checkout and its index (absolute paths). */
export interface LowerLayer {
  dir: string;
  index: string;
  /** The index's shared base (`sharedindex.<id>`); null when git wrote the index whole. */
  sharedIndex: string | null;
}

/** Lower layers being made by this process, by folder: tasks starting together wait for the one checkout. */
const making = new Map<string, Promise<LowerLayer>>();

/**
 * The lower layer of `sha` under `runRoot` (`<worktrees>/<run>`), made when it is not there yet (a `.done` marker
 * says it is complete; a half-made one is made again). Safe to call from many tasks at once, in one process or
 * several (a file lock per layer).
 * @throws Error with git's message; or when the commit has a `.gitmodules` (submodules need a worktree of their own)
 */
export function lowerLayer(commonDir: string, sha: string, runRoot: string): Promise<LowerLayer> {
  const dir = path.join(runRoot, '.lower', sha);
  const gitDir = `${dir}.git`;
  const index = `${dir}.index`;
  const known = making.get(dir);
  if (known) return known;
  const made = (async () => {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    // Before any overlay of the run is mounted below it (see isolateRunRoot).
    await isolateRunRoot(runRoot);
    await markTopDir(path.dirname(dir));
    await withLock(`${dir}.lock`, async () => {
      if (fs.existsSync(`${dir}.done`)) return;
      for (const p of [dir, gitDir, index]) fs.rmSync(p, { recursive: true, force: true });
      // Its name is the commit's, the same in every run: a fresh one for the allocator (see makeFreshDir).
      makeFreshDir(dir);
      fs.mkdirSync(gitDir);
      fs.writeFileSync(path.join(gitDir, 'HEAD'), `${sha}\n`);
      await runGit(dir, ['read-tree', '-u', '--reset', sha], {
        env: { GIT_DIR: gitDir, GIT_COMMON_DIR: commonDir, GIT_WORK_TREE: dir, GIT_INDEX_FILE: index },
        config: ['core.splitIndex=true'],
      });
      if (fs.existsSync(path.join(dir, '.gitmodules')))
        throw new Error(`overlay trees do not take submodules, and ${sha.slice(0, 10)} has a .gitmodules; use "tree": "worktree" for this repository`);
      fs.writeFileSync(`${dir}.done`, '');
    });
    const shared = fs.readdirSync(gitDir).filter((f) => /^sharedindex\.[0-9a-f]+$/.test(f));
    return { dir, index, sharedIndex: shared.length === 1 ? path.join(gitDir, shared[0] as string) : null };
  })();
  making.set(dir, made);
  made.catch(() => making.delete(dir));
  return made;
}

/**
 * Ends a task's overlay tree once nothing of it runs: unmounts `dir`, removes its upper layer, its worktree
 * registration (under the repository's worktree lock) and the folder. The task branch stays; what the worker left
 * unsealed goes with the upper layer. Nothing is removed before every sandbox that copied the mount has started
 * (unmountOverlay: removing the mount point would fail their start). Returns what happened to the mount.
 * @throws Error when the mount cannot be unmounted (the folder is then left alone)
 */
export async function removeOverlayTree(repoRoot: string | null, commonDir: string | null, dir: string): Promise<'unmounted' | 'detached' | 'not-mounted'> {
  const how = await unmountOverlay(dir);
  fs.rmSync(path.join(path.dirname(dir), '.overlay', path.basename(dir)), { recursive: true, force: true });
  if (repoRoot && commonDir && fs.existsSync(repoRoot)) await removeWorktreeLocked(repoRoot, dir, { commonDir });
  fs.rmSync(dir, { recursive: true, force: true });
  // The task's index link and the worker's own git objects (see addWorktree, worktreeStepAccess).
  fs.rmSync(path.join(path.dirname(dir), '.index', path.basename(dir)), { force: true });
  fs.rmSync(path.join(path.dirname(dir), '.objects', path.basename(dir)), { recursive: true, force: true });
  return how;
}

/**
 * Unmounts every overlay mount under `runRoot` (a crashed run's, found in /proc/self/mountinfo), then removes the
 * run's lower layers and upper layers and unmounts the run folder's private bind (isolateRunRoot), if any. Returns the
 * overlay mount points unmounted.
 * @throws Error naming the mount point that could not be unmounted (nothing is removed then)
 */
export async function releaseOverlays(runRoot: string): Promise<string[]> {
  const points = overlayMountsUnder(readMountInfo(), runRoot);
  for (const p of points) await unmountOverlay(p);
  if (overlayMountsUnder(readMountInfo(), runRoot).length) throw new Error(`overlay mounts under ${runRoot} are still there after unmounting`);
  fs.rmSync(path.join(runRoot, '.overlay'), { recursive: true, force: true });
  fs.rmSync(path.join(runRoot, '.lower'), { recursive: true, force: true });
  await releaseRunRoot(runRoot);
  return points;
}
