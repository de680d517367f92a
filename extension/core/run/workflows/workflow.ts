/**
 * The contract of a workflow plugin (docs/workflows.md "Where workflows live"): what a workflow adds to a run beyond
 * the manifest's compiled tasks and edges. A workflow is one folder run/workflows/<name>/ whose index.ts exports one
 * `Workflow`; the table in run/workflows/index.ts registers it. The runner, the task graph and the attempt reach a
 * workflow only through that table.
 */
import type { StepName } from '../attempt-record';
import type { LiveRun } from '../live-run';
import type { Step, TaskRuntime } from '../steps/context';
import type { TaskGraph } from '../task-graph';

/** What a workflow's run-time hooks may use: the live run and its task graph (enqueue, block, settle). */
export interface WorkflowHost {
  run: LiveRun;
  graph: TaskGraph;
}

/** A step a workflow adds to every attempt, placed right after the default step named `after`. */
export interface WorkflowStep {
  step: Step;
  /** The default step (steps/index.ts) this one follows. */
  after: StepName;
}

/** One workflow: every hook optional, each called for every task (a hook returns early for a task not its own). */
export interface Workflow {
  /** The workflow's name as docs/workflows.md spells it. */
  name: string;
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
}
