// Which run-wide buttons (pause, resume, drain) apply to a run now: one rule for the dashboard in both hosts, the
// same as the runs tree's menus (extension/vscode/runs-tree.ts contextValue and package.json's when clauses) and what
// the orchestrator accepts (extension/core/run/control-handler.ts, extension/core/run/resume.ts tasksToRunAgain).
// Pure: no DOM, no Node.
import type { RunLiveness } from './run-state';
import { statusInfo, type TaskStatus } from './status';

/** The parts of a run (RunView, or a RunState with its liveness) the rule reads. */
export interface RunActionInput {
  liveness: RunLiveness;
  paused: boolean;
  draining: boolean;
  tasks: readonly { key: string; status: TaskStatus; group?: string; candidate?: number; select?: string }[];
}

/**
 * The run actions that apply to `run` now, in button order:
 * - a live run that is neither paused nor draining: `pause`, `drain`;
 * - a live paused run: `resume`, `drain` (a drain ends the pause too);
 * - a live draining run: none (nothing more starts; it ends when its running tasks have);
 * - a run that is not live (ended, cancelled, interrupted, or its orchestrator died) with a task `verdict resume`
 *   would run again (a resumable status, schemas/status.ts; not a candidate of a best-of-N task another candidate won):
 *   `resume`; otherwise none.
 * Returns a new array; `[]` when nothing applies.
 */
export function runActionsFor(run: RunActionInput): ('pause' | 'resume' | 'drain')[] {
  if (run.liveness === 'running') {
    if (run.draining) return [];
    return run.paused ? ['resume', 'drain'] : ['pause', 'drain'];
  }
  const won = new Set(run.tasks.filter((t) => t.select && t.status === 'PASS').map((t) => t.key));
  const again = run.tasks.some((t) => statusInfo(t.status).resumable && !(t.candidate !== undefined && t.group !== undefined && won.has(t.group)));
  return again ? ['resume'] : [];
}
