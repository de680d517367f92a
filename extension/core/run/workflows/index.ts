/**
 * The workflow table (docs/workflows.md "Where workflows live"): every workflow plugin of a run, in the order their
 * hooks are called. Adding a workflow is one folder run/workflows/<name>/ exporting a `Workflow` (workflow.ts) and one
 * entry here.
 */
import type { EvalRow } from '../../store/eval-row';
import type { AttemptRecord } from '../attempt-record';
import type { AttemptContext, Step, TaskRuntime } from '../steps/context';
import { DEFAULT_STEPS } from '../steps';
import type { Workflow, WorkflowHost } from './workflow';
import { generateWorkflow } from './generate';
import { critiqueWorkflow } from './critique';
import { phasesWorkflow } from './phases';

export type { Workflow, WorkflowHost, WorkflowStep } from './workflow';

/** Every registered workflow. */
export const WORKFLOWS: readonly Workflow[] = [phasesWorkflow, generateWorkflow, critiqueWorkflow];

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

/** True when a workflow has `task`'s check run on a fresh copy of the sealed tree (Workflow.checkOnCopy). */
export function checkOnCopy(task: TaskRuntime): boolean {
  return WORKFLOWS.some((w) => w.checkOnCopy?.(task) ?? false);
}

/** Calls every workflow's onSettled for a task that became final. */
export function workflowsSettled(host: WorkflowHost, task: TaskRuntime): void {
  for (const w of WORKFLOWS) w.onSettled?.(host, task);
}

/** A pool run's steps on the orchestrator: the pool's step, then every workflow's `poolSteps` in table order. */
export function poolAttemptSteps(poolStep: Step): Step[] {
  return [poolStep, ...WORKFLOWS.flatMap((w) => w.poolSteps ?? [])];
}

/**
 * Calls every workflow's onAttemptEnd for a settling attempt (all of them, in table order); returns the first text one
 * asks another attempt with, or null.
 */
export function workflowsAttemptEnd(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, how: { goOn: boolean; stopped: boolean }): string | null {
  let again: string | null = null;
  for (const w of WORKFLOWS) {
    const asked = w.onAttemptEnd?.(ctx, task, rec, how) ?? null;
    again ??= asked;
  }
  return again;
}

/** The prompt of `task`'s next attempt when a workflow asked it (Workflow.prompt), else null. */
export function workflowPrompt(task: TaskRuntime, failure: string): string | null {
  for (const w of WORKFLOWS) {
    const prompt = w.prompt?.(task, failure) ?? null;
    if (prompt !== null) return prompt;
  }
  return null;
}

/** What every workflow appends to the failure an ordinary retry of `task` is handed. */
export function workflowFailureNotes(task: TaskRuntime): string {
  return WORKFLOWS.map((w) => w.failureNote?.(task) ?? '').join('');
}

/** The eval rows every workflow adds for a settled attempt, in table order. */
export function workflowRows(rec: AttemptRecord): EvalRow[] {
  return WORKFLOWS.flatMap((w) => w.rows?.(rec) ?? []);
}

/** The fields every workflow adds to an attempt's receipt. */
export function workflowReceipt(rec: AttemptRecord): Record<string, unknown> {
  return Object.assign({}, ...WORKFLOWS.map((w) => w.receipt?.(rec) ?? {}));
}

/**
 * Calls every workflow's onResume for a task taken over from an earlier orchestrator.
 * @throws Error from the first that cannot restore what it kept
 */
export function workflowsResumed(ctx: AttemptContext, task: TaskRuntime): void {
  for (const w of WORKFLOWS) w.onResume?.(ctx, task);
}
