// The contract between a dashboard host (the VS Code webview panel, or `verdict hud` over HTTP + server-sent events)
// and the Svelte app in webview/. Two unions, named by direction; every message has a fixed `type`.
//
//   page → host  (PageToHost):  `ready` first; then requests. Every request carries `seq`; its reply says `replyTo`.
//   host → page  (HostToPage):  nothing until `ready`; then one `snapshot`, then `did-*` patches and replies.
//
// The host validates every PageToHost message with extension/core/dashboard/validate.ts (a malformed or unknown
// message is rejected and logged, never acted on). Types only: no DOM, no vscode, no Node, so both sides import it.

import type { AttemptState, RunLiveness, TaskState } from './run-state';
import type { PoolView } from './pool-view';
import type { SlotGroupView } from './slots-view';
import type { RunSpendState } from './spend';
export { spendLine, type RunSpendState } from './spend';
export { workTimeMs } from './work-time';

/** The worker pool's view model (one for the CLI, the dashboard and the runs tree). */
export type { PoolView, PoolWorkerView, PoolAttemptRef } from './pool-view';
/** The machine-wide engine and login limits with their slots in use (the dashboard's, beside `verdict runs`). */
export { slotsLine, type SlotGroupView } from './slots-view';

/** The status table (final, retryable, judged, bucket of every status): one source for every view. */
export {
  STATUS,
  resultCounts,
  roundCounts,
  runResult,
  statusInfo,
  taskResult,
  type StatusBucket,
  type StatusInfo,
  type StepName,
  type TaskResult,
  type TaskStatus,
  type Verdict,
} from './status';
/**
 * The order every view lists tasks in (the task graph's), best-of-N candidates grouped under their task, validated,
 * council and phases members under their lead.
 */
export {
  afterLabel,
  candidateLabel,
  graphOrder,
  groupedOrder,
  leadLines,
  memberLabel,
  oneLine,
  rowAfter,
  selectLines,
  type CandidateRow,
  type MemberRow,
  type TaskRow,
} from './task-order';

/** Safe id of a run or a task key: `[A-Za-z0-9._-]`, no leading dot (so never `..`). */
export const SAFE_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

/** One attempt as the page shows it (AttemptState without local paths or process identities). Times epoch ms. */
export type AttemptView = Omit<AttemptState, 'dir' | 'workerPid' | 'workerStartTime'>;

/** One task as the page shows it: TaskState without its local folder and port, with its attempts as views. */
export type TaskView = Omit<TaskState, 'dir' | 'port' | 'attempts'> & { attempts: AttemptView[] };

/**
 * One engine's quota wait as a page sees it (RunView `waits`; state.json's EngineWait, schemas/run-state.ts, without
 * its probe). Times epoch ms; `reason` is the words of the engine's own structured error event (data).
 */
export interface RunWaitView {
  until: number;
  reason: string;
  task?: string;
  attempt?: number;
  source?: string;
  reset?: number;
  why?: string;
}

/** One run as the live list, the library and the run document show it. Times epoch ms; cost micro-USD. */
export interface RunView {
  runId: string;
  runName: string;
  identity: string;
  host: string;
  manifestFile: string;
  liveness: RunLiveness;
  startedAt: number;
  endedAt: number | null;
  heartbeatAt: number;
  maxParallel: number;
  worktrees: boolean;
  /** The run is paused (no new attempt starts) or draining (nothing more starts); false in older records. */
  paused: boolean;
  draining: boolean;
  /**
   * Engines waiting for a quota reset (no attempt on them starts before `until`, epoch ms; `reason` is the words of the
   * engine's own structured error event, data), only those not yet over: show "waiting for <engine> until 14:05". Who
   * set it (`task`, `attempt`, `source`: which event of the engine), the reset the engine named (`reset`) and why
   * `until` is what it is (`why`: the engine's reset, shortened to the cap, confirmed by a probe) are absent in hosts and
   * records older than them. Absent in hosts older than the field.
   */
  waits?: Record<string, RunWaitView>;
  counts: { total: number; queued: number; active: number; passed: number; failed: number; other: number };
  /** Tokens in + out over attempts with known usage. */
  tokens: number;
  /** Known costs summed, micro-USD; null when no attempt reported one (unknown is never 0). */
  costMicroUsd: number | null;
  /**
   * Anonymous input names (state.json `inputNames`: scope → member key → letter), so the page shows which worker or
   * council member each letter stood for; the page is the user's, never a worker's. Absent when none were drawn.
   */
  inputNames?: Record<string, Record<string, string>>;
  /** What contained the run's steps (state.json `containment`) and capped their memory (`memoryCap`); absent in older records. */
  containment?: string;
  memoryCap?: string;
  /** Spent, reserved and budget (state.json `spend`; spendLine prints it); absent in older records. */
  spend?: RunSpendState;
  tasks: TaskView[];
}

/** A state file that could not be read (half-written, corrupt, foreign), with why. */
export interface SkippedView {
  runId: string;
  reason: string;
}

/** One scoreboard row: a (model, task_type) pair. Rates 0..1, null without evidence; duration ms; cost micro-USD. */
export interface ScoreRow {
  model: string;
  taskType: string;
  tier: 'proven' | 'probation' | 'untested';
  tasks: number;
  attempts: number;
  passRate: number | null;
  firstTryPassRate: number | null;
  medianDurationMs: number | null;
  medianTokens: number | null;
  medianCostMicroUsd: number | null;
  /** Attempts that ended ERROR or RATE_LIMITED: kept out of the rates. */
  engineErrors: number;
  lastSeen: string | null;
  /** Best-of-N groups the model had a candidate in, and how many its candidate won (the "won" column). */
  groups: number;
  won: number;
  /** Of those groups, how many a passing candidate of it lost on consensus (the "outvoted" column). */
  lostConsensus: number;
}

/** One reviewing model's reviews (eval rows with step `review`): counts of its answers; never attempts. */
export interface ReviewerRow {
  /** The reviewer's model; `(no model)` when its engine named none. */
  model: string;
  reviews: number;
  approve: number;
  changes: number;
  reject: number;
  /** Reviews with no valid answer. */
  errors: number;
  engines: string[];
}

/**
 * New output of one worker (its worker.log). `reset`: replace what the page holds (first read, a new attempt, or
 * bytes were dropped because the worker wrote faster than the ring keeps). `text` is at most OUTPUT_RING_BYTES.
 */
export interface OutputChunk {
  key: string;
  attempt: number;
  text: string;
  reset: boolean;
  /** The worker.log's size now, bytes. */
  totalBytes: number;
}

/**
 * What a page may ask its host to do to one task (buttons of the run document): `stop` and `rerun` go through the
 * run's control channel (as `verdict stop|rerun`), `merge` through the merge queue (as `verdict merge`), `open-diff`
 * opens VS Code's diff editor (the VS Code host only; the browser host serves the diff as text at `diff?run=&task=`),
 * `open-log` opens the task's live log in the editor (Follow Task Log; the VS Code host only: the browser page shows each
 * worker's output live under it).
 */
export type TaskAction = 'stop' | 'rerun' | 'merge' | 'open-diff' | 'open-log';

/** Every TaskAction, for validators. */
export const TASK_ACTIONS = ['stop', 'rerun', 'merge', 'open-diff', 'open-log'] as const satisfies readonly TaskAction[];

/**
 * What a page may ask its host to do to a whole run (buttons of the run document and the live list), as `verdict
 * pause|resume|drain`: `pause` (a live run starts no new attempt until resumed), `drain` (a live run starts nothing
 * more: its waiting tasks end CANCELLED "drained", the running ones finish, then it ends) and `resume` (a paused live
 * run starts attempts again; a run that ended or whose orchestrator died with tasks not passed goes on under a new
 * orchestrator, as `verdict resume RUN`). Which apply to a run now: schemas/run-actions.ts runActionsFor.
 */
export type RunAction = 'pause' | 'resume' | 'drain';

/** Every RunAction, for validators. */
export const RUN_ACTIONS = ['pause', 'resume', 'drain'] as const satisfies readonly RunAction[];
export { runActionsFor } from './run-actions';

/** Most bytes of a task's diff the browser host's `diff` endpoint returns; a longer diff is cut and says so. */
export const DIFF_MAX_BYTES = 512 * 1024;

/** What a `load-artifact` request may ask for. */
export type ArtifactKind = 'manifest' | 'prompt' | 'check-output' | 'worker-log';

/** Messages from the page to its host. */
export type PageToHost =
  /** First message of every page load: the host answers with `snapshot`. */
  | { type: 'ready' }
  /** The run whose document is open (null: none); the host then streams its workers' output. */
  | { type: 'select-run'; runId: string | null }
  /** Asks for one file of a run; `key`/`attempt` are required for every kind but `manifest`. Reply: did-load-artifact. */
  | { type: 'load-artifact'; seq: number; runId: string; artifact: ArtifactKind; key?: string; attempt?: number }
  /** Asks for the scoreboard. Reply: did-load-scoreboard. */
  | { type: 'load-scoreboard'; seq: number }
  /** Asks the host to act on one task of a run (see TaskAction). Reply: did-act, once the action is done or refused. */
  | { type: 'task-action'; seq: number; runId: string; key: string; action: TaskAction }
  /** Asks the host to pause, resume or drain a run (see RunAction). Reply: did-run-act, once it is done or refused. */
  | { type: 'run-action'; seq: number; runId: string; action: RunAction };

/** Messages from the host to the page. */
export type HostToPage =
  /**
   * Every run on the machine, the state files skipped, the records folder and which host this is; `pool`: the worker
   * pool this host follows (`verdict hud --pool`, the setting `verdict.pool`), null when it follows none or has not
   * read it yet (absent from hosts older than the field); `slots`: each machine-wide engine or login limit with its
   * slots in use now (absent from hosts older than the field).
   */
  | {
      type: 'snapshot';
      runs: RunView[];
      skipped: SkippedView[];
      home: string;
      host: 'vscode' | 'browser';
      pool?: PoolView | null;
      slots?: SlotGroupView[];
    }
  /** The slots in use under a machine-wide limit changed (read every second): every limited group, whole. */
  | { type: 'did-change-slots'; slots: SlotGroupView[] }
  /** The pool was read again (every few seconds while a pool is followed); null: the host follows no pool any more. */
  | { type: 'did-change-pool'; pool: PoolView | null }
  /** A run appeared or changed (whole run; runs are small). */
  | { type: 'did-change-run'; run: RunView }
  /** A run's folder went away. */
  | { type: 'did-remove-run'; runId: string }
  /** The list of skipped state files changed. */
  | { type: 'did-change-skipped'; skipped: SkippedView[] }
  /** New output of the selected run's workers since the last flush: one message per flush, one chunk per worker. */
  | { type: 'did-append-output'; runId: string; chunks: OutputChunk[] }
  /** Reply to load-artifact: the file's text (its last `maxBytes` when longer; `truncatedBytes` says how much was cut). */
  | {
      type: 'did-load-artifact';
      replyTo: number;
      runId: string;
      artifact: ArtifactKind;
      key: string | null;
      attempt: number | null;
      text: string | null;
      truncatedBytes: number;
      error: string | null;
    }
  /**
   * Reply to load-scoreboard. `source` names the module the rows came from; `quarantined` counts the attempts set
   * aside because no model was stamped on them (the script engine, a custom engine that names none).
   */
  | { type: 'did-load-scoreboard'; replyTo: number; rows: ScoreRow[]; reviews: ReviewerRow[]; source: string; quarantined: number; error: string | null }
  /**
   * Reply to task-action. `done`: it happened (a stop or rerun acknowledged in state.json, the branch merged, the diff
   * opened); `refused`: it did not, `message` says why (a refusal of the run, a conflict, a failing re-check…);
   * `sent`: a control command was appended but not acknowledged in time. `message` is one line for the page.
   */
  | { type: 'did-act'; replyTo: number; runId: string; key: string; action: TaskAction; result: 'done' | 'refused' | 'sent'; message: string }
  /**
   * Reply to run-action. `done`: the run acknowledged it in state.json (or, for `resume` of a run that ended, a new
   * orchestrator took the run over); `refused`: it did not, `message` says why; `sent`: the control command was
   * appended but not acknowledged in time. `message` is one line for the page.
   */
  | { type: 'did-run-act'; replyTo: number; runId: string; action: RunAction; result: 'done' | 'refused' | 'sent'; message: string }
  /** The host refused a message from the page (it was logged there too). */
  | { type: 'did-reject'; reason: string }
  /** The user asked the host for a view (VS Code: "Verdict: Show Scoreboard"); the page navigates there. */
  | { type: 'show-view'; view: 'live' | 'library' | 'scoreboard' };

/** Every `type` of PageToHost, for validators and exhaustive switches. */
export const PAGE_TO_HOST_TYPES = [
  'ready',
  'select-run',
  'load-artifact',
  'load-scoreboard',
  'task-action',
  'run-action',
] as const satisfies readonly PageToHost['type'][];

/** Bytes of worker output a host keeps and sends per worker (the ring); the page keeps the same. */
export const OUTPUT_RING_BYTES = 16 * 1024;

/** How often a host polls worker logs and flushes patches to a page, ms. */
export const PATCH_INTERVAL_MS = 50;
