/**
 * What the steps of an attempt share: the run's context (one per run) and the task's runtime (one per task), plus
 * the Step contract. A step is one module under run/steps/; the loop that runs them is run/attempt.ts.
 */
import type { EngineSpec } from '../../../../engines/types';
import type { WorktreeLinks, RepoInfo } from '../../git/worktree';
import type { TaskState, StateFile } from '../../live/state';
import type { TaskSpec } from '../../manifest/types';
import type { Containment } from '../../process/sandbox';
import type { SandboxView } from '../containment';
import type { AttemptRecord, StepName } from '../attempt-record';
import type { StepPhase } from '../../../../schemas/status';
import type { RoutedAttempt } from '../route-choice';
import type { Judgement } from '../decide';
import { hasByteEscape } from '../../fs/byte-names';
import type { ProtectedSet } from '../protect';
import type { DirSnapshot } from '../dir-snapshot';
import type { SetupDeps } from '../setup-deps';
import type { SealedState } from '../check-writes';
import type { StateSnapshot } from '../state-guard';
import type { RunEvent, RunSettings, TaskSummary } from '../run-types';
import type { RunSpend } from '../spend';
import type { WorkflowSection } from '../../manifest/sections';
import type { PassedPrerequisite } from '../start-point';

/** One per run: what every attempt of it needs. */
export interface AttemptContext {
  opts: RunSettings;
  env: NodeJS.ProcessEnv;
  runId: string;
  stateFile: StateFile;
  /** Engine name → absolute path of its binary (found in preflight). */
  binaries: Map<string, string>;
  /** Worktree mode: the repository; null in plain mode. */
  repo: RepoInfo | null;
  /** bubblewrap's path when the run is sandboxed, else null. */
  bwrap: string | null;
  /** slirp4netns's path for steps with `"network": true`; null when none is installed (no such task then runs). */
  netstack: string | null;
  /** What the user's config adds to every sandbox of the run (run/containment.ts sandboxView); absent: nothing. */
  view?: SandboxView;
  emit: (e: RunEvent) => void;
  spend: RunSpend;
  /** Records that failed to write, reported in the summary. */
  recordErrors: string[];
  /** Per engine: its guarded settings as they were before the run's first worker of that engine (run/state-guard.ts). */
  stateBaselines: Map<string, StateSnapshot>;
  /**
   * The environment every step inherits (supervise's `inherit`): process.env as the run found it at its start, copied
   * once; absent: process.env at each spawn.
   */
  inheritedEnv?: Readonly<NodeJS.ProcessEnv>;
  /** Every task key the run has now (generated tasks included); absent: the manifest's. Read by step `generate`. */
  taskKeys?: () => string[];
  /**
   * Every workflow's section (run/workflows/index.ts WORKFLOW_SECTIONS, handed in by whoever opens the run: the table
   * reaches this file), for what reads a manifest during a run: step `generate` and the join of its tasks.
   */
  sections: readonly WorkflowSection[];
}

/** One per task: its spec, live state and what its attempts so far have left. */
export interface TaskRuntime {
  spec: TaskSpec;
  /** Aborted to stop this task alone (RunControl.stopTask) or with the whole run. */
  abort: AbortController;
  engine: EngineSpec;
  state: TaskState;
  /** The task dir exists and `setup` ran (prepared once per task, by its first attempt or the baseline). */
  prepared: boolean;
  /** Worktree mode: the links git wrote for the task's worktree (restored before every git call of ours there). */
  links: WorktreeLinks | null;
  /** What contains this task's steps: bwrap, or none (unsandboxed run, or an allowed full_access task). */
  containment: Containment;
  /** The check inputs the worker may not change (run/protect.ts), taken when the task was prepared. */
  protected: ProtectedSet | null;
  /** Plain mode: the task dir as prepared (after setup), the base the guards judge the worker's changes against. */
  guardBase: DirSnapshot | null;
  /**
   * Plain mode: what setup left in its dependency folders (run/setup-deps.ts), judged at each seal; null when setup
   * made none (or in worktree mode, where run/undelivered.ts keeps setup's output).
   */
  setupDeps?: SetupDeps | null;
  /**
   * Plain mode, when setup made no dependency folder: the work's own (its node_modules), as the last seal found them
   * (run/setup-deps.ts recordSetupDeps), judged after a passing check and suite; null or absent otherwise.
   */
  sealedDeps?: SetupDeps | null;
  /** The tree the last attempt sealed: the task dir is put back to it before the next attempt (run/check-writes.ts). */
  sealedState: SealedState | null;
  /** Attempts that counted against max_attempts (rate limits that were requeued do not). */
  used: number;
  rateLimited: number;
  /**
   * Steps along its engine chain (`engine`, then `fallback`) taken without spending an attempt, because its engine
   * was rate-limited or waiting for its quota (run/reassign.ts); absent: none.
   */
  moved?: number;
  /** The engine its next attempt was moved off (run/reassign.ts), recorded in that attempt's row; cleared when it starts. */
  reassignedFrom?: string | null;
  /** `engine: "auto"`: the routing decision of its next (or running) attempt (run/route-choice.ts routeAttempt). */
  routed?: RoutedAttempt;
  /** The failure text of the last judged attempt, injected into the next one. */
  failure: string | null;
  /** The task's settled attempts, in order. */
  records: AttemptRecord[];
  /**
   * Worktree mode: the passed prerequisites (`after`) whose commits the task branch starts from, set by the runner
   * when the task is released; empty: base_ref.
   */
  startFrom: PassedPrerequisite[];
  summary: TaskSummary;
  /** A task with `inputs`: the folder its prerequisites' sealed work was copied to (VERDICT_INPUTS), set by step `inputs`. */
  inputsDir?: string | null;
  /**
   * On a pool worker, a task with `inputs`: what its payload names to copy, each a path under VERDICT_INPUTS (the
   * neutral name, in its folder) and the sealed commit it holds (pool/payload.ts); absent elsewhere.
   */
  inputSources?: { path: string; commit: string }[];
  /**
   * Why this task's attempt is being stopped to run again (an input it reads was rerun while it ran: it would judge
   * work that no longer stands), set by the runner; the attempt then ends CANCELLED with this reason, is not counted
   * against max_attempts, and the task waits for its inputs again. Null or absent otherwise.
   */
  restart?: string | null;
  /**
   * Why the budget stopped this task while readers of its own ran outside any attempt (a best-of-N group's ranking
   * reviewers or inputs engine: run/attempt-loop.ts stopSpenders): the stop then ends it BUDGET_EXCEEDED with this
   * reason (resumable), not CANCELLED. Null or absent otherwise.
   */
  budgetStop?: string | null;
}

/** The part of a TaskRuntime every new task starts with, whoever runs it (the runner, a pool worker): nothing prepared, sealed or recorded yet. */
export function freshRuntime(): Pick<TaskRuntime, 'abort' | 'prepared' | 'links' | 'protected' | 'guardBase' | 'sealedState' | 'rateLimited' | 'records'> {
  return { abort: new AbortController(), prepared: false, links: null, protected: null, guardBase: null, sealedState: null, rateLimited: 0, records: [] };
}

/** What one attempt's steps share besides the record: its prompt, environment and sandbox choice. */
export interface AttemptIo {
  /** The worker's prompt: the spec, plus the previous failure for engines that take it in the prompt. */
  prompt: string;
  /** PORT, VERDICT_RUN_ID, VERDICT_TASK_KEY, VERDICT_TASK_DIR, VERDICT_ATTEMPT, VERDICT_CANDIDATE (1…N) for a best-of-N candidate, VERDICT_INPUTS for a task with inputs. */
  taskEnv: () => Record<string, string>;
  /** The steps run in bubblewrap. */
  boxed: boolean;
  /**
   * The check runs on a fresh copy of the sealed tree (run/check-tree.ts), not the task dir: a workflow runs it again
   * on a changed copy (Workflow.checkOnCopy), and the two runs must differ in those changes alone.
   */
  checkOnCopy: boolean;
  /** The worker's retained output tail (for the engine's error class and the failure text). */
  workerTail: string;
  /** Projects the record into state.json's view and saves it (coalesced, this task's part alone: see StateFile.saveTask). It changes nothing but this task's state. */
  sync: () => void;
}

/**
 * One step of an attempt. `when` says whether it runs for this record (e.g. seal only in worktree mode, deliver only
 * after a PASS); `run` does it, appending what it learnt to the record, and returns a judgement to settle the
 * attempt's verdict (a verdict other than PASS ends the attempt) or null to go on.
 */
export interface Step {
  name: StepName;
  /** The phase the task and the attempt show while it runs (schemas/status.ts StepPhase): a workflow's step says its own. */
  phase: StepPhase;
  when(rec: AttemptRecord, task: TaskRuntime): boolean;
  run(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, io: AttemptIo): Promise<Judgement | null>;
}

/** Thrown by a step when the task was stopped while it ran; the attempt is then CANCELLED. */
export class Cancelled extends Error {}

/**
 * Absolute paths of the task's protected files and of its inputs folder, for the sandbox's read-only binds. A protected
 * file whose name is not valid UTF-8 cannot be named to bubblewrap (its arguments are text) and is left out: the guard
 * still compares it after the worker, and a retry gets it back.
 */
export function protectedPaths(task: TaskRuntime): string[] {
  // A protected symlink (a venv's `.venv/bin/python` -> python3 -> /usr/bin/python3) is not bound: bubblewrap cannot
  // bind onto a link (it failed every step that had one); its target is compared by the guard instead (protect.ts
  // records `symlink:<target>`), so a changed link still fails the attempt.
  const files = task.protected
    ? [...task.protected.files].filter(([rel, key]) => !hasByteEscape(rel) && !key.startsWith('symlink:')).map(([rel]) => `${task.state.dir}/${rel}`)
    : [];
  // The task's inputs (its prerequisites' sealed work) are read-only to its worker and its check alike.
  return task.inputsDir ? [...files, task.inputsDir] : files;
}
