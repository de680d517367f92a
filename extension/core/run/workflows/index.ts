/**
 * The workflow table (docs/workflows.md "Where workflows live"): every workflow plugin, in the order the loader checks
 * and compiles their sections and a run calls their hooks. Adding a workflow is one folder run/workflows/<name>/
 * exporting a `Workflow` (workflow.ts: its section and its run-time hooks) and one entry here.
 */
import type { EvalRow } from '../../store/eval-row';
import type { TaskSpec } from '../../manifest/types';
import { evalRow, type AttemptRecord, type FlatFields } from '../attempt-record';
import type { AttemptContext, Step, TaskRuntime } from '../steps/context';
import { DEFAULT_STEPS } from '../steps';
import type { ReaderEngine } from '../preflight';
import type { RerunRules } from '../resume';
import type { TaskState } from '../../live/state';
import type { PoolPartCheck, Workflow, WorkflowHost, WorkflowRelease, WorkflowRun } from './workflow';
import { generateWorkflow } from './generate';
import { critiqueWorkflow } from './critique';
import { phasesWorkflow } from './phases';
import { bestOfNWorkflow } from './best-of-n';
import { validateWorkflow } from './validate';
import { councilWorkflow } from './council';
import type { WorkflowSection } from '../../manifest/sections';

export type { PoolPartCheck, Workflow, WorkflowHost, WorkflowPoolPart, WorkflowRelease, WorkflowRun, WorkflowStep } from './workflow';

/** Every registered workflow. */
export const WORKFLOWS: readonly Workflow[] = [bestOfNWorkflow, generateWorkflow, validateWorkflow, councilWorkflow, phasesWorkflow, critiqueWorkflow];

/**
 * Every workflow's section of a manifest task, in table order: what the loader and lint are handed (manifest/load.ts
 * ParseOptions.sections, manifest/lint.ts LintOptions.sections; run/manifest.ts binds it for every caller above the run).
 */
export const WORKFLOW_SECTIONS: readonly WorkflowSection[] = WORKFLOWS.flatMap((w) => (w.section ? [w.section] : []));

/**
 * The steps of an attempt: `base` with each workflow's steps inserted right after (`after`) or right before (`before`)
 * the step each names, in table order.
 * @throws Error when a workflow names a step that `base` does not have
 */
export function withWorkflowSteps(base: readonly Step[], workflows: readonly Workflow[] = WORKFLOWS): Step[] {
  const steps = [...base];
  for (const w of workflows) {
    for (const anchored of w.steps ?? []) {
      const [anchor, side] = 'after' in anchored ? [anchored.after, 'follows'] : [anchored.before, 'precedes'];
      const at = steps.findIndex((s) => s.name === anchor);
      if (at < 0) throw new Error(`workflow ${w.name}: its step ${anchored.step.name} ${side} step ${anchor}, which the attempt does not have`);
      steps.splice('after' in anchored ? at + 1 : at, 0, anchored.step);
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

/**
 * Every workflow's part of one run (Workflow.open), asked as one: by the task graph (settled, release, keepWaiting,
 * waitsAgainFor), the control handler (onStop; refuseRerun, from Workflow.refuseRerun), the run's end (passNotNeeded) and the coordinator
 * (quiet). The first workflow in table order that answers for a task decides where only one answer can hold.
 */
export class RunWorkflows {
  private readonly runs: WorkflowRun[];

  /** Opens every workflow of `workflows` for the run of `host` (its task graph built). */
  constructor(
    private readonly host: WorkflowHost,
    private readonly workflows: readonly Workflow[] = WORKFLOWS,
  ) {
    this.runs = workflows.map((w) => w.open?.(host) ?? {});
  }

  /** `task` became final: every workflow's onSettled, before its waiting dependents are released. */
  settled(task: TaskRuntime): void {
    for (const w of this.workflows) w.onSettled?.(this.host, task);
  }

  /** A waiting task: the first workflow's answer for it (WorkflowRun.release), or undefined when none takes it. */
  release(task: TaskRuntime): WorkflowRelease | undefined {
    for (const r of this.runs) {
      const answer = r.release?.(task);
      if (answer !== undefined) return answer;
    }
    return undefined;
  }

  /** True when a workflow keeps this waiting task waiting through a drain (WorkflowRun.keepWaiting). */
  keepWaiting(task: TaskRuntime): boolean {
    return this.runs.some((r) => r.keepWaiting?.(task) ?? false);
  }

  /** True when a rerun of `key` stops `task` to wait for it again (WorkflowRun.waitsAgainFor). */
  waitsAgainFor(task: TaskRuntime, key: string): boolean {
    return this.runs.some((r) => r.waitsAgainFor?.(task, key) ?? false);
  }

  /** Why a rerun of `task` is refused (the first workflow to refuse it, from its state entry: Workflow.refuseRerun), or null. */
  refuseRerun(task: TaskRuntime): string | null {
    return firstRefusal(this.workflows, task.state);
  }

  /** `task` was stopped by the `stop` verb: each workflow stops what goes with it. */
  onStop(task: TaskRuntime, reason: string): void {
    for (const r of this.runs) r.onStop?.(task, reason);
  }

  /** True when the run passes whatever `task` ends as (WorkflowRun.passNotNeeded). */
  passNotNeeded(task: TaskRuntime): boolean {
    return this.runs.some((r) => r.passNotNeeded?.(task) ?? false);
  }

  /**
   * Resolves once neither the scheduler nor any workflow has anything under way: what a workflow does after the
   * scheduler went idle (a ranking) may enqueue tasks (the group's dependents), which are waited for in turn.
   */
  async quiet(): Promise<void> {
    await this.host.graph.scheduler.idle();
    for (;;) {
      const busy = this.runs.map((r) => r.idle?.() ?? null).filter((p): p is Promise<void> => p !== null);
      if (!busy.length) return;
      await Promise.all(busy);
      await this.host.graph.scheduler.idle();
    }
  }
}

/**
 * What the workflows say of running a task of a run again, from its state entry (run/resume.ts RerunRules): the first
 * workflow's refusal (Workflow.refuseRerun), in table order; kept when any workflow keeps it (Workflow.keptOnResume).
 */
export const workflowRerunRules: RerunRules = {
  refuse: (task) => firstRefusal(WORKFLOWS, task),
  kept: (task, state) => WORKFLOWS.some((w) => w.keptOnResume?.(task, state) ?? false),
};

/** Why running `task` again is refused: the first of `workflows` (in order) that refuses it, or null. */
function firstRefusal(workflows: readonly Workflow[], task: TaskState): string | null {
  for (const w of workflows) {
    const why = w.refuseRerun?.(task) ?? null;
    if (why !== null) return why;
  }
  return null;
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

/** The check run a FAIL's retry is shown in place of the attempt's check (Workflow.failedCheck), or null. */
export function workflowFailedCheck(rec: AttemptRecord): { exitCode: number | null; output: string; files: string[] } | null {
  for (const w of WORKFLOWS) {
    const shown = w.failedCheck?.(rec) ?? null;
    if (shown) return shown;
  }
  return null;
}

/** What every workflow appends to the failure an ordinary retry of `task` is handed. */
export function workflowFailureNotes(task: TaskRuntime): string {
  return WORKFLOWS.map((w) => w.failureNote?.(task) ?? '').join('');
}

/** The columns every workflow adds to a settled attempt's work row (Workflow.rowColumns), in table order. */
export function workflowRowColumns(rec: AttemptRecord): Partial<EvalRow> {
  return Object.assign({}, ...WORKFLOWS.map((w) => w.rowColumns?.(rec) ?? {})) as Partial<EvalRow>;
}

/**
 * The work row of a settled attempt (attempt-record.ts evalRow) with every workflow's columns.
 * @throws Error when the record is not settled
 */
export function workRow(rec: AttemptRecord): EvalRow {
  return evalRow(rec, workflowRowColumns);
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

/** The engines every workflow's readers of `spec` may run on (Workflow.readerEngines), in table order. */
export function workflowReaderEngines(spec: TaskSpec): ReaderEngine[] {
  return WORKFLOWS.flatMap((w) => w.readerEngines?.(spec) ?? []);
}

/** Every workflow's part of a pool attempt's payload (Workflow.pool), keyed by workflow name; none: an empty object. */
export async function poolPartsOf(ctx: AttemptContext, task: TaskRuntime): Promise<Record<string, unknown>> {
  const parts: Record<string, unknown> = {};
  for (const w of WORKFLOWS) {
    const part = w.pool ? await w.pool.send(ctx, task) : null;
    if (part !== null && part !== undefined) parts[w.name] = part;
  }
  return parts;
}

/** The commits `task`'s pool attempt starts from in place of its prerequisites' (Workflow.pool startFrom), or null. */
export function poolStartFrom(task: TaskRuntime): { key: string; commit: string }[] | null {
  for (const w of WORKFLOWS) {
    const from = w.pool?.startFrom?.(task) ?? null;
    if (from) return from;
  }
  return null;
}

/**
 * On a pool worker: the payload's `workflows` object checked, each part by its workflow's `parse`.
 * @throws BadJobError (through `check`) for a part of a workflow this worker does not have, or one its workflow refuses
 */
export function parsePoolParts(parts: Record<string, unknown>, check: (name: string) => PoolPartCheck): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, part] of Object.entries(parts)) {
    const w = WORKFLOWS.find((x) => x.name === name && x.pool);
    if (!w?.pool)
      return check(name).bad(
        `the part of a workflow this worker runs (${WORKFLOWS.filter((x) => x.pool)
          .map((x) => x.name)
          .join(', ')})`,
      );
    out[name] = w.pool.parse(part, check(name));
  }
  return out;
}

/** On a pool worker: what the payload's parts do to the attempt (each workflow's commits, spec fields and apply), for the parts present. */
export function poolPartUses(parts: Record<string, unknown>): {
  commits: string[];
  spec: Partial<TaskSpec>;
  apply: (task: TaskRuntime) => void;
} {
  const present = WORKFLOWS.filter((w) => w.pool && Object.hasOwn(parts, w.name));
  return {
    commits: present.flatMap((w) => w.pool?.commits?.(parts[w.name]) ?? []),
    spec: Object.assign({}, ...present.map((w) => w.pool?.spec?.(parts[w.name]) ?? {})) as Partial<TaskSpec>,
    apply: (task) => {
      for (const w of present) w.pool?.apply?.(task, parts[w.name]);
    },
  };
}

/** On the orchestrator: every workflow's share of a pool attempt's record taken back (Workflow.pool taken). */
export function poolRecordTaken(remote: FlatFields, rec: AttemptRecord): void {
  for (const w of WORKFLOWS) w.pool?.taken?.(remote, rec);
}
