import path from 'node:path';
import type { MergeRequest } from '../git/merge';
import { loadFrozenManifest } from './frozen-manifest';
import type { RunState } from '../live/state';
import { runDir } from '../config/home';

/**
 * The merge requests for a worktree-mode run's PASSed tasks (all, or only `keys`), in manifest order, with each
 * task's check taken from the run's frozen manifest (so a manifest edited or deleted since still merges as it ran).
 * @throws Error when the run is not in worktree mode or its frozen manifest is unreadable
 */
export function mergeRequestsForRun(home: string, state: RunState, keys?: readonly string[]): MergeRequest[] {
  if (!state.worktrees || !state.repo) throw new Error(`run ${state.runId} is not a worktree-mode run; there are no task branches to merge`);
  const specs = new Map(loadFrozenManifest(home, state).tasks.map((t) => [t.key, t]));
  return state.tasks
    .filter((t) => t.status === 'PASS' && t.branch && (!keys || keys.includes(t.key)))
    .map((t) => {
      const spec = specs.get(t.key);
      // Never merge unchecked: a task missing from its own frozen manifest means the records were tampered with.
      if (!spec) throw new Error(`task ${t.key} of run ${state.runId} is not in its frozen manifest; it cannot be re-checked, so it is not merged`);
      return {
        key: t.key,
        repo: state.repo as string,
        branch: t.branch as string,
        worktree: t.dir,
        check: spec.check,
        checkTimeoutMs: spec.checkTimeoutMs,
        checkLog: path.join(runDir(home, state.runId), 'tasks', t.key, 'merge-check.log'),
      };
    });
}
