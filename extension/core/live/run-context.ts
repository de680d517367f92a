// Which run commands apply now, from the runs on this machine: the editor hides the others (context keys in
// package.json's menus), so the palette never offers Pause with no live run or Merge All with nothing passed, and a
// run's row in the runs view offers only what applies to that run (its context value).
import { runActionsFor } from '../../../schemas/run-actions';
import type { RunInfo } from './registry';
import type { RunState } from './state';

/** The context keys the editor sets, each true when at least one run allows the commands named. */
export interface RunContextKeys {
  /** A live run: Cancel Run. */
  'verdict.hasLiveRun': boolean;
  /** A live run that is neither paused nor draining: Pause Run, Drain Run. */
  'verdict.hasActiveRun': boolean;
  /** A paused live run, or a run that is over with a task `verdict resume` would run again: Resume Run. */
  'verdict.hasResumableRun': boolean;
  /** A worktree-mode run with a passed task holding committed work not yet merged or discarded: Merge All Passed. */
  'verdict.hasPassedWork': boolean;
}

/** The run actions (pause, resume, drain) that apply to a run now: schemas/run-actions.ts, the dashboard's rule. */
function actionsOf(r: RunInfo): ('pause' | 'resume' | 'drain')[] {
  return runActionsFor({ liveness: r.liveness, paused: r.state.paused === true, draining: r.state.draining === true, tasks: r.state.tasks });
}

/** True when a worktree-mode run has a passed task whose committed work is neither merged nor discarded yet. */
export function hasWorkToMerge(s: Pick<RunState, 'worktrees' | 'tasks'>): boolean {
  return s.worktrees && s.tasks.some((t) => t.status === 'PASS' && t.commit && !t.merged && !t.discarded);
}

/** The context keys for `runs` (the registry's listing). Pure. */
export function runContextKeys(runs: readonly RunInfo[]): RunContextKeys {
  const live = runs.filter((r) => r.liveness === 'running');
  return {
    'verdict.hasLiveRun': live.length > 0,
    'verdict.hasActiveRun': live.some((r) => actionsOf(r).includes('pause')),
    'verdict.hasResumableRun': runs.some((r) => actionsOf(r).includes('resume')),
    'verdict.hasPassedWork': runs.some((r) => hasWorkToMerge(r.state)),
  };
}

/**
 * A run row's context value in the runs view, which package.json's view/item/context menus match:
 * `run.<liveness>[.active|.paused|.draining][.resumable][.worktrees][.mergeable]` — `.active`: live and neither paused
 * nor draining (Pause, Drain); `.paused`: live and paused (Drain; Resume through `.resumable`); `.draining`: live and
 * draining (none of the three); `.resumable`: Resume applies (a paused live run, or one that is over with a task
 * `verdict resume` would run again); `.worktrees`: worktree mode; `.mergeable`: a passed task's work waits to be merged
 * (Merge All Passed). Pure.
 */
export function runContextValue(info: RunInfo): string {
  const s = info.state;
  const live = info.liveness === 'running';
  const mode = live ? (s.paused ? '.paused' : s.draining ? '.draining' : '.active') : '';
  const resumable = actionsOf(info).includes('resume');
  return `run.${info.liveness}${mode}${resumable ? '.resumable' : ''}${s.worktrees ? '.worktrees' : ''}${hasWorkToMerge(s) ? '.mergeable' : ''}`;
}
