import fs from 'node:fs';
import path from 'node:path';
import type { MergeRequest } from '../git/merge';
import type { RunState } from '../live/state';
import { runDir } from '../config/home';

const DEFAULT_CHECK_TIMEOUT_S = 300;

/**
 * The merge requests for a worktree-mode run's PASSed tasks (all, or only `keys`), in manifest order, with each
 * task's check taken from the run's frozen manifest (so a manifest edited or deleted since still merges as it ran).
 * @throws Error when the run is not in worktree mode or its frozen manifest is unreadable
 */
export function mergeRequestsForRun(home: string, state: RunState, keys?: readonly string[]): MergeRequest[] {
  if (!state.worktrees || !state.repo) throw new Error(`run ${state.runId} is not a worktree-mode run; there are no task branches to merge`);
  const frozenFile = path.join(runDir(home, state.runId), 'manifest.json');
  let frozen: { manifest?: { tasks?: { key?: string; check?: string; check_timeout_s?: number }[] } };
  try {
    frozen = JSON.parse(fs.readFileSync(frozenFile, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read the frozen manifest ${frozenFile}: ${(e as Error).message}`);
  }
  const specs = new Map((frozen.manifest?.tasks ?? []).map((t) => [t.key, t]));
  return state.tasks
    .filter((t) => t.status === 'PASS' && t.branch && (!keys || keys.includes(t.key)))
    .map((t) => {
      const spec = specs.get(t.key);
      return {
        key: t.key,
        repo: state.repo as string,
        branch: t.branch as string,
        worktree: t.dir,
        check: spec?.check ?? 'true',
        checkTimeoutMs: (spec?.check_timeout_s ?? DEFAULT_CHECK_TIMEOUT_S) * 1000,
        checkLog: path.join(runDir(home, state.runId), 'tasks', t.key, 'merge-check.log'),
      };
    });
}
