// An attempt's state in a few words, the same in the runs tree, the Test Explorer and the CLI. Pure; no Node, no DOM.
import type { StepName, Verdict } from './status';

/** What the label needs of an attempt (AttemptState and its page view both fit). */
export interface LabelledAttempt {
  phase: string;
  verdict: Verdict | null;
  step?: StepName | null;
}

/**
 * Where an attempt is while it runs (`running (work)`, the step from state.json), and once done its verdict with the
 * step it ended in (`FAIL at check`; a PASS went through every step, so it is just `PASS`). Older state files have no
 * step: then the phase or the verdict alone. `orchestratorDied`: the run's orchestrator is gone (registry liveness
 * `orchestrator-died`), so an attempt without a verdict is `interrupted at <step> (its orchestrator died)`.
 */
export function attemptLabel(a: LabelledAttempt, orchestratorDied = false): string {
  // No verdict and nobody left to give one: what the next reconcile records (INTERRUPTED), not "running".
  if (!a.verdict && orchestratorDied) return `interrupted${a.step ? ` at ${a.step}` : ''} (its orchestrator died)`;
  if (!a.verdict) return a.step ? `${a.phase} (${a.step})` : a.phase;
  return a.verdict !== 'PASS' && a.step ? `${a.verdict} at ${a.step}` : a.verdict;
}
