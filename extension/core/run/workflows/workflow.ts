/**
 * The contract of a workflow plugin (docs/workflows.md "Where workflows live"): its section of a manifest task (what
 * the loader checks and compiles into ordinary tasks and edges) and what it adds to a run beyond them. A workflow is
 * one folder run/workflows/<name>/ whose index.ts exports one `Workflow`; the table in run/workflows/index.ts
 * registers it. The loader, lint, the runner, the task graph and the attempt reach a workflow only through that table.
 * A workflow's static hooks (`steps`, `statusPending`, `onSettled`) hold for every run; what it keeps per run (its
 * decisions under way) lives in the {@link WorkflowRun} its `open` makes when a run starts.
 */
import type { RunState, TaskState } from '../../live/state';
import type { WorkflowSection } from '../../manifest/sections';
import type { TaskSpec } from '../../manifest/types';
import type { EvalRow } from '../../store/eval-row';
import type { AttemptRecord, FlatFields, StepName } from '../attempt-record';
import type { LiveRun } from '../live-run';
import type { ReaderEngine } from '../preflight';
import type { AttemptContext, Step, TaskRuntime } from '../steps/context';
import type { TaskGraph } from '../task-graph';

/**
 * What a workflow's run-time hooks may use: the live run and its task graph (enqueue, block, settle), and the work row
 * of a settled attempt with every workflow's columns (attempt-record.ts evalRow with run/workflows/index.ts
 * workflowRowColumns), for a row a workflow builds from an attempt's.
 */
export interface WorkflowHost {
  run: LiveRun;
  graph: TaskGraph;
  /** @throws Error when the record is not settled */
  workRow(rec: AttemptRecord): EvalRow;
}

/**
 * A step a workflow adds to every attempt, placed right after the default step named `after`, or right before the one
 * named `before` (anchored on a default step, so its place does not depend on the table's order).
 */
export type WorkflowStep =
  | {
      step: Step;
      /** The default step (steps/index.ts) this one follows. */
      after: StepName;
    }
  | {
      step: Step;
      /** The default step (steps/index.ts) this one precedes. */
      before: StepName;
    };

/** One workflow: every hook optional, each called for every task (a hook returns early for a task not its own). */
export interface Workflow {
  /** The workflow's name as docs/workflows.md spells it. */
  name: string;
  /**
   * Its section of a manifest task (section.ts of its folder: problems, engines, compile, lint rules), which the loader
   * and lint are handed through run/workflows/index.ts WORKFLOW_SECTIONS; absent: the workflow has no field of its own.
   */
  section?: WorkflowSection;
  /** Steps this workflow adds to an attempt; each decides in its own `when` whether it runs for a task. */
  steps?: readonly WorkflowStep[];
  /**
   * True while the task's status at the end of its attempt is not yet its final one (the attempt's receipt then
   * records `taskStatus: null`, and reconcile does not take it as final).
   */
  statusPending?(task: TaskRuntime): boolean;
  /**
   * Called when `task` became final, before its waiting dependents are released (so tasks this hook adds to the run
   * are there when they are). May end the task itself (endTask) when what it does fails.
   */
  onSettled?(host: WorkflowHost, task: TaskRuntime): void;
  /**
   * Steps a pool run (`verdict run --pool`) runs here, on the orchestrator, after the pool's own step (which runs the
   * attempt's default steps on a worker); each decides in its own `when` whether it runs for a task.
   */
  poolSteps?: readonly Step[];
  /**
   * Called as every attempt settles, after its steps and before what comes next is decided. May ask one more attempt
   * after a PASS that does not spend the retry budget: it returns the text that attempt is handed (as a failure is:
   * `TaskRuntime.failure`, see `prompt`), or null. `how.goOn` is false when the task cannot go on (stopped, the run
   * draining, an input rerun under it: no attempt is asked then); `how.stopped`: the task was stopped.
   */
  onAttemptEnd?(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, how: { goOn: boolean; stopped: boolean }): string | null;
  /**
   * The whole prompt of the next attempt when it is one this workflow asked (onAttemptEnd) and is handed `failure`;
   * null: not one of its (the ordinary retry prompt, run/prompt.ts retryPrompt). Only for engines that take the
   * failure in their prompt.
   */
  prompt?(task: TaskRuntime, failure: string): string | null;
  /**
   * The check run a FAIL's retry is shown instead of the attempt's check, when a run of this workflow's is what failed
   * it: its exit code and output, and the files it was run without (named in the failure text); null: the check's.
   */
  failedCheck?(rec: AttemptRecord): { exitCode: number | null; output: string; files: string[] } | null;
  /** Text appended to the failure an ordinary retry of `task` is handed ('' for none). */
  failureNote?(task: TaskRuntime): string;
  /**
   * The columns this workflow adds to a settled attempt's work row (evalRow, after `step`; and so to a row built from
   * it, a best-of-N group's select row), `{}` for an attempt not its own; absent: none.
   */
  rowColumns?(rec: AttemptRecord): Partial<EvalRow>;
  /** The eval rows this workflow adds for a settled attempt, after its work and review rows; absent: none. */
  rows?(rec: AttemptRecord): EvalRow[];
  /** Fields this workflow adds to an attempt's receipt.json (before its `rows`); absent: none. */
  receipt?(rec: AttemptRecord): Record<string, unknown>;
  /**
   * Called for each task that `verdict resume` / `verdict rerun` takes over from an earlier orchestrator, before its
   * task dir: restores what this workflow kept of the task.
   * @throws Error naming what could not be restored (the task then ends ERROR)
   */
  onResume?(ctx: AttemptContext, task: TaskRuntime): void;
  /**
   * True when `task`'s check must run on a fresh copy of the sealed tree (run/check-tree.ts) rather than in the task
   * dir: this workflow runs the check again on a changed copy, and the two runs must differ in those changes alone.
   */
  checkOnCopy?(task: TaskRuntime): boolean;
  /**
   * The engines this workflow's readers of `spec` may run on (critics, ranking reviewers, an inputs engine), in the
   * order they run, each with `here`: true when it runs on the orchestrator's machine even on a pool run (so its binary
   * must be on this machine's PATH). Read by the run's preflight (run/preflight.ts); absent: none.
   */
  readerEngines?(spec: TaskSpec): ReaderEngine[];
  /** What this workflow sends a pool worker with an attempt of a task of its own (`verdict run --pool`); absent: nothing. */
  pool?: WorkflowPoolPart;
  /**
   * Why running `task` again is refused, from its state entry (state.json), or null to let it run again: asked by the
   * `rerun` verb of a live run (said in the acknowledgment) and by `verdict rerun` of a run that ended (run/resume.ts).
   */
  refuseRerun?(task: TaskState): string | null;
  /** True when `verdict resume` of a run that ended (`run`) leaves `task` as it ended, though its status is resumable. */
  keptOnResume?(task: TaskState, run: RunState): boolean;
  /** Called once when a run starts (after its task graph is built): the workflow's part of that run. */
  open?(host: WorkflowHost): WorkflowRun;
}

/**
 * A workflow's part of a pool attempt's payload (pool/payload.ts `workflows`, keyed by the workflow's name): made on
 * the orchestrator, checked and used on the worker, which learns nothing else of the workflow. A worker that does not
 * know a workflow refuses a payload with its part, so no part is ever ignored unsaid.
 */
export interface WorkflowPoolPart {
  /**
   * On the orchestrator, as the payload of `task`'s attempt is made: the part, or null when the attempt needs none (the
   * payload then has no entry for this workflow). Only plain data: never a key, a path or a variable of this machine.
   * @throws Error when what the part needs cannot be resolved (the attempt then ends ERROR)
   */
  send(ctx: AttemptContext, task: TaskRuntime): Promise<unknown> | unknown;
  /**
   * On the worker: the part as it came, checked, in the shape `send` made (a copy; no field it does not know).
   * @throws BadJobError through `check.bad`, saying what the part should be
   */
  parse(part: unknown, check: PoolPartCheck): unknown;
  /** On the worker: the commits the (parsed) part names, fetched with the attempt's start commits. */
  commits?(part: unknown): string[];
  /** On the worker: the fields the part sets on the task's spec (which the worker builds from the payload). */
  spec?(part: unknown): Partial<TaskSpec>;
  /** On the worker: acts on the task built from the payload, before its attempt runs. */
  apply?(task: TaskRuntime, part: unknown): void;
  /**
   * On the orchestrator, as a pool attempt's record comes back: takes what this workflow's steps wrote into the
   * worker's record (`remote`, the worker's own word, flat: attempt-record.ts flatRecord) into the attempt's `rec`,
   * and writes its logs here.
   */
  taken?(remote: FlatFields, rec: AttemptRecord): void;
  /**
   * On the orchestrator: the commits `task`'s pool attempt starts from in place of its passed prerequisites' (a
   * critique's revision starts from the proposal), or null to leave them.
   */
  startFrom?(task: TaskRuntime): { key: string; commit: string }[] | null;
}

/** What a pool part's `parse` checks with: the payload's own rules for task keys and commits, and its error. */
export interface PoolPartCheck {
  /** Throws the payload's BadJobError: this part should be `want`. */
  bad(want: string): never;
  /** True for a task key as the manifest allows it (no leading dot, no `..`). */
  isKey(s: string): boolean;
  /** True for a full commit sha (40 or 64 hex digits). */
  isCommit(s: string): boolean;
}

/**
 * What {@link WorkflowRun.release} answers for a task waiting for its prerequisites: `'wait'` keeps it waiting; a
 * function takes it out of waiting and is then called, acting on the task instead of the graph's own gate (the task is
 * not pushed to the scheduler: the function ends it, or starts what decides it).
 */
export type WorkflowRelease = 'wait' | (() => void);

/**
 * One workflow's part of one run (made by {@link Workflow.open}). Every hook optional; each is called for every task
 * and answers only for the workflow's own (undefined, false or null otherwise), so the graph's own rules hold for the
 * rest.
 */
export interface WorkflowRun {
  /**
   * A task waiting for its prerequisites (`after`), called each time one of them may have become final: undefined when
   * the task is not this workflow's (the graph's gate then decides: push when all passed, BLOCKED when one did not),
   * else what to do with it (WorkflowRelease).
   */
  release?(task: TaskRuntime): WorkflowRelease | undefined;
  /**
   * The run drains (nothing more starts): true to keep this waiting task waiting instead of cancelling it, because a
   * task still running can still decide it.
   */
  keepWaiting?(task: TaskRuntime): boolean;
  /**
   * Its prerequisite `key` is rerun while `task` is neither final nor waiting (the workflow is deciding it from `key`'s
   * old work): true to stop `task` and have it wait for its prerequisites again, as a task reading `key` as an input is.
   */
  waitsAgainFor?(task: TaskRuntime, key: string): boolean;
  /** `task` was just stopped by the `stop` verb with `reason` (the same for what the workflow stops with it). */
  onStop?(task: TaskRuntime, reason: string): void;
  /** True when the run passes whatever `task` ends as (another task stands for it in the run's `allPassed`). */
  passNotNeeded?(task: TaskRuntime): boolean;
  /**
   * Null when nothing of this workflow's is under way in the run; else a promise that resolves once nothing is (what
   * starts meanwhile too). The run does not end before (work it starts may enqueue tasks again).
   */
  idle?(): Promise<void> | null;
}
