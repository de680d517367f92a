/**
 * The workflow table (docs/workflows.md "Where workflows live"): every workflow plugin of a run, in the order their
 * hooks are called. Adding a workflow is one folder run/workflows/<name>/ exporting a `Workflow` (workflow.ts) and one
 * entry here.
 */
import type { Step, TaskRuntime } from '../steps/context';
import { DEFAULT_STEPS } from '../steps';
import type { Workflow, WorkflowHost } from './workflow';
import { generateWorkflow } from './generate';

export type { Workflow, WorkflowHost, WorkflowStep } from './workflow';

/** Every registered workflow. */
export const WORKFLOWS: readonly Workflow[] = [generateWorkflow];

/**
 * The steps of an attempt: `base` with each workflow's steps inserted right after the step each names (in table order).
 * @throws Error when a workflow names a step that `base` does not have
 */
export function withWorkflowSteps(base: readonly Step[], workflows: readonly Workflow[] = WORKFLOWS): Step[] {
  const steps = [...base];
  for (const w of workflows) {
    for (const { step, after } of w.steps ?? []) {
      const at = steps.findIndex((s) => s.name === after);
      if (at < 0) throw new Error(`workflow ${w.name}: its step ${step.name} follows step ${after}, which the attempt does not have`);
      steps.splice(at + 1, 0, step);
    }
  }
  return steps;
}

/** The local attempt's steps: the default steps (steps/index.ts) and every workflow's, in order (docs/attempt.md "The steps"). */
export const ATTEMPT_STEPS: readonly Step[] = withWorkflowSteps(DEFAULT_STEPS);

/** True when a workflow holds `task`'s status open past its attempt (its receipt then says `taskStatus: null`). */
export function statusPending(task: TaskRuntime): boolean {
  return WORKFLOWS.some((w) => w.statusPending?.(task) ?? false);
}

/** Calls every workflow's onSettled for a task that became final. */
export function workflowsSettled(host: WorkflowHost, task: TaskRuntime): void {
  for (const w of WORKFLOWS) w.onSettled?.(host, task);
}
