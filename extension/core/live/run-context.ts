// Which run commands apply now, from the runs on this machine: the editor hides the others (context keys in
// package.json's menus), so the palette never offers Pause with no live run or Merge All with nothing passed.
import type { RunInfo } from './registry';

/** The context keys the editor sets, each true when at least one run allows the commands named. */
export interface RunContextKeys {
  /** A live run: Cancel Run. */
  'verdict.hasLiveRun': boolean;
  /** A live run that is not paused: Pause Run, Drain Run. */
  'verdict.hasActiveRun': boolean;
  /** A paused live run, or a run that is over with a task that did not pass: Resume Run. */
  'verdict.hasResumableRun': boolean;
  /** A worktree-mode run with a passed task holding committed work: Merge All Passed. */
  'verdict.hasPassedWork': boolean;
}

/** The context keys for `runs` (the registry's listing). Pure. */
export function runContextKeys(runs: readonly RunInfo[]): RunContextKeys {
  const live = runs.filter((r) => r.liveness === 'running');
  return {
    'verdict.hasLiveRun': live.length > 0,
    'verdict.hasActiveRun': live.some((r) => !r.state.paused),
    'verdict.hasResumableRun': live.some((r) => r.state.paused) || runs.some((r) => r.liveness !== 'running' && r.state.tasks.some((t) => t.status !== 'PASS')),
    'verdict.hasPassedWork': runs.some((r) => r.state.worktrees && r.state.tasks.some((t) => t.status === 'PASS' && t.commit)),
  };
}
