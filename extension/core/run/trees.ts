/**
 * The run's `tree` choice (docs/manifest.md "Trees", docs/trees.md): what each task's worktree is made
 * of, what a worker may write in it, and the overlays' end when the run ends.
 */
import path from 'node:path';
import type { Manifest } from '../manifest/types';
import { coneFolders, type TreeChoice } from '../git/worktree';
import { sparseCone } from '../git/sparse-cone';
import { lowerLayer, releaseOverlays, removeOverlayTree } from '../git/overlay-tree';
import { probeOverlay, type OverlayProbe } from '../git/overlay';
import { processesIn } from '../process/in-use';
import type { AttemptContext, TaskRuntime } from './steps/context';

let probed: Promise<OverlayProbe> | null = null;

/** Whether this machine can mount overlay trees (probed once per process: a real mount in a temporary folder). */
export function overlaySupport(): Promise<OverlayProbe> {
  probed ??= probeOverlay();
  return probed;
}

/**
 * Why `manifest`'s `tree` cannot run here, one line each (empty when it can): sparse and overlay need worktree mode;
 * every sparse task needs `sparse` folders that make a cone; overlay needs the mount to work (see overlaySupport).
 */
export async function treeProblems(manifest: Manifest): Promise<string[]> {
  const tree = manifest.tree ?? 'worktree';
  if (tree === 'worktree') return [];
  if (!manifest.worktrees) return [`"tree": "${tree}" needs worktree mode ("worktrees": true)`];
  if (manifest.pool) return [`"tree": "${tree}" is not supported on a worker pool yet; use "tree": "worktree"`];
  const problems: string[] = [];
  if (tree === 'sparse') {
    for (const t of manifest.tasks) {
      if (!t.sparse?.length) problems.push(`task ${t.key}: "tree": "sparse" needs its folders: give the task (or the run) "sparse": ["src/…/**"]`);
      else {
        try {
          sparseCone(t.sparse);
        } catch (e) {
          problems.push(`task ${t.key}: ${(e as Error).message}`);
        }
      }
    }
  }
  if (tree === 'overlay') {
    const probe = await overlaySupport();
    if (!probe.ok)
      problems.push(`"tree": "overlay" cannot run on this machine: ${probe.reason} (see verdict doctor; "tree": "sparse" or "worktree" work everywhere)`);
  }
  return problems;
}

/** The tree `task`'s worktree is made as, starting at commit `startSha`. @throws Error from the lower layer's checkout */
export async function treeChoice(ctx: AttemptContext, task: TaskRuntime, startSha: string): Promise<TreeChoice> {
  const tree = ctx.opts.manifest.tree ?? 'worktree';
  if (tree === 'sparse') return { kind: 'sparse', cone: sparseCone(task.spec.sparse ?? []) };
  if (tree === 'overlay' && ctx.repo) return { kind: 'overlay', lower: await lowerLayer(ctx.repo.commonDir, startSha, path.dirname(task.state.dir)) };
  return { kind: 'worktree' };
}

/**
 * Where a worker may write in its tree: the task dir, or for a sparse tree only its cone folders, the rest of the task
 * dir bound read-only (so nothing outside the cone can differ from the sealed commit when the check runs).
 * @throws Error when a cone folder became a symlink or a file (see coneFolders)
 */
export function workerTreeAccess(task: TaskRuntime): { writable: string[]; readOnlyDirs: string[] } {
  const cone = task.links ? coneFolders(task.links) : [];
  return cone.length ? { writable: cone, readOnlyDirs: [task.state.dir] } : { writable: [task.state.dir], readOnlyDirs: [] };
}

/**
 * At the end of a run with overlay trees: each task's overlay is unmounted and removed with its worktree registration
 * (its branch stays), then the lower layers. A tree a live process works in (a user's shell or editor in a task that
 * failed) is kept mounted with its layers, as `verdict clean` keeps it, and said so: removing it would delete what was
 * written there. Returns one note per problem or kept tree; never throws.
 */
export async function releaseTrees(ctx: AttemptContext, tasks: readonly TaskRuntime[]): Promise<string[]> {
  if ((ctx.opts.manifest.tree ?? 'worktree') !== 'overlay') return [];
  const notes: string[] = [];
  const kept = new Set<string>();
  for (const t of tasks) {
    if (!t.links?.overlay) continue;
    const inside = processesIn(t.state.dir);
    if (inside.length) {
      kept.add(path.dirname(t.state.dir));
      notes.push(
        `${t.spec.key}: kept mounted at ${t.state.dir}: a live process works in it (${inside
          .slice(0, 3)
          .map((p) => `pid ${p.pid} ${p.command}`)
          .join(', ')}); \`verdict clean --run ${ctx.runId}\` removes it once it is left`,
      );
      continue;
    }
    try {
      await removeOverlayTree(ctx.repo?.root ?? null, ctx.repo?.commonDir ?? null, t.state.dir);
      t.links = null;
    } catch (e) {
      notes.push(`${t.spec.key}: ${(e as Error).message}`);
    }
  }
  // The lower layers, and any mount a task that never finished preparing left.
  for (const root of new Set(tasks.map((t) => path.dirname(t.state.dir)))) {
    if (kept.has(root)) continue;
    try {
      await releaseOverlays(root);
    } catch (e) {
      notes.push((e as Error).message);
    }
  }
  return notes;
}
