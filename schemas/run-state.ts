// The shape of runs/<run_id>/state.json, the file a run's orchestrator rewrites (extension/core/live/state.ts) and
// every view reads: the registry, the runs tree, `verdict resume`, reconcile and, through schemas/protocol.ts, the
// dashboard. Types only: no Node, no DOM, no vscode, and nothing from extension/.

import type { RunSpendState } from './spend';
import type { StepName, TaskStatus, Verdict } from './status';

/**
 * Where a task is in its life; a final verdict once it is done (the table of what each means: schemas/status.ts).
 * SKIPPED: with --baseline, the check already passed on the untouched tree, so no worker ran.
 */
export type { TaskStatus };

/** One attempt as shown live. Times epoch ms. */
export interface AttemptState {
  attempt: number;
  phase: 'preparing' | 'running' | 'checking' | 'done';
  verdict: Verdict | null;
  startedAt: number;
  endedAt: number | null;
  /** Worker process group id while running. */
  workerPid: number | null;
  /**
   * The worker's start time (/proc/<pid>/stat field 22): a reconciler kills the group only if it still matches.
   * Absent in state files written before it existed.
   */
  workerStartTime?: string | null;
  tokensIn: number | null;
  tokensOut: number | null;
  costMicroUsd: number | null;
  checkExitCode: number | null;
  /** Folder with prompt.md, worker.log, check.log, receipt.json. */
  dir: string;
  notes: string;
  /** A retry: an attempt after a judged one (absent in older state files). */
  retry?: boolean;
  /**
   * The containment of the attempt's steps (absent in older state files): `bwrap` or `none`, the values of
   * extension/core/process/sandbox.ts `Containment` (declared here so schemas/ imports nothing from extension/).
   */
  sandbox?: 'bwrap' | 'none' | null;
  /**
   * The memory containment of the attempt's worker (extension/core/process/memory-cap.ts): `cgroup2 4096 MB`,
   * `cgroup1 4096 MB`, or `none (4096 MB not enforced)`; absent before the worker ran and in older state files.
   */
  memCap?: string;
  /**
   * The network its steps ran with (absent in older state files): `netns` (a namespace of each step's own, outbound
   * through slirp4netns), `none` (`"network": false`), `host` (the host's) — extension/core/process/sandbox.ts StepNetwork.
   */
  network?: 'netns' | 'none' | 'host' | null;
  /** The step the attempt is in or ended in (schemas/status.ts StepName); null before the first. */
  step?: StepName | null;
  /** The engine and model this attempt ran on (a `fallback` retry runs on another); absent in older state files: the task's. */
  engine?: string;
  model?: string | null;
  /** The machine the attempt runs on (a pool worker's host on a pool run); absent in older state files: the run's host. */
  host?: string;
  /** The attempt ran in a start forced over lint errors (RunState.forced); absent otherwise. */
  forced?: true;
  /** The engine the attempt was moved off before it started (rate-limited or waiting for its quota); absent otherwise. */
  reassignedFrom?: string;
  /** `engine: "auto"`: the routing line, `auto → claude/haiku (proven, $0.0040/PASS over 12 tasks)`; absent otherwise. */
  route?: string;
}

/** One task as shown live. */
/** Where a task's work went: the commit (full sha) and when (epoch ms). */
export interface TaskLanding {
  commit: string;
  at: number;
}

export interface TaskState {
  key: string;
  engine: string;
  model: string | null;
  taskType: string | null;
  verified: string | null;
  status: TaskStatus;
  /** The task directory (plain folder or worktree). */
  dir: string;
  branch: string | null;
  /** Worktree mode, after PASS: the commit holding the work. */
  commit: string | null;
  port: number | null;
  attempts: AttemptState[];
  /** Why a task ended without (another) attempt: e.g. `drained`, `stopped by <who>`, BLOCKED's prerequisite (absent in older state files). */
  reason?: string;
  /** The keys of the tasks this one waits for (`after`); absent when none. */
  after?: string[];
  /**
   * Workflow group (e.g. the best-of-N task a candidate belongs to) and candidate number (1…N); absent outside a
   * workflow. A best-of-N task's own entry (no worker runs for it; its `after` lists its candidates) has `group` equal
   * to its key, no `candidate`, and `select`; once decided, PASS with the winner's commit and `winner`, or BLOCKED
   * when no candidate passed (docs/workflows.md).
   */
  group?: string;
  candidate?: number;
  /**
   * A validated, council or phases task's place in its workflow (WorkflowPlace), as the frozen manifest compiled it;
   * absent outside those workflows (best-of-N uses `group` and `candidate`) and in older state files.
   */
  workflow?: WorkflowPlace;
  /** On a best-of-N task's own entry: how its winner is chosen. */
  select?: 'first-pass' | 'all' | 'ranked' | 'consensus';
  /** On a best-of-N task's own entry, once one passed: the winning candidate's key. */
  winner?: string;
  /**
   * On a `select: "ranked"` task's own entry, once ranked (docs/workflows.md "Ranked"): each passing candidate's mean
   * score (0–10) over the valid rankings, by candidate key; `{}` when no ranking was valid (the winner was then chosen
   * unranked) or when only one candidate passed (it wins without a ranking). `reason` says the decision in words.
   */
  scores?: Record<string, number>;
  /** With `scores`: the tie at the top, said (the lowest-numbered of the tied wins); null when there is none. */
  tie?: string | null;
  /** With `scores`: the ranking reviewers whose top picks differ, said; null when they agree. */
  disagreement?: string | null;
  /**
   * On a `select: "consensus"` task's own entry, once decided (docs/workflows.md "Consensus"): the groups of passing
   * candidates that behaved alike (candidate keys, largest group first), how many inputs were used and how many of them
   * split the candidates, and how the winner was chosen (`largest`, `tie-agreement`, `tie-ranked`, `tie-cheapest`, or `undecided`: the
   * group fell back to the first to pass, `reason` says why).
   */
  consensus?: { groups: string[][]; inputs: number; splitting: number; decided: 'largest' | 'tie-agreement' | 'tie-ranked' | 'tie-cheapest' | 'undecided' };
  /** On a planner (`generate`) that passed: the keys of the tasks its file added to the run. */
  generated?: string[];
  /**
   * Worktree mode, once the merge queue fast-forwarded this task's work: `commit` the branch `into` pointed at after
   * the merge (full sha), `at` epoch ms; `paths` the files its merge changed (added, changed, deleted), which a later
   * merge of the same run must not undo (absent in records written before it was recorded). The status stays PASS:
   * the verdict is what the check said, and merged is what was done with the work afterwards (docs/runs.md "Merged
   * and discarded"). Absent until merged.
   */
  merged?: TaskLanding & { into: string; paths?: string[] };
  /**
   * Worktree mode, once the task was discarded (worktree removed, branch deleted): `commit` the branch held (null when
   * it was already gone), recoverable with `git branch <branch> <commit>`; `at` epoch ms. Absent until discarded.
   */
  discarded?: { commit: string | null; at: number };
  /** A task with `critique`, once a round ran: its loop (docs/workflows.md "Critique loop"). */
  critique?: CritiqueState;
  /** A task with `inputs`, once its last attempt copied them: where, and which prerequisite each name stands for. */
  inputs?: TaskInputsState;
}

/**
 * What a task is in a validated, council or phases workflow (docs/workflows.md): the task as written becomes a lead
 * under its own key — the `validator`, the council's `chair`, the `test` phase — and members: `worker` N
 * (`<key>--w<N>`), `answer` N and `review` N (`<key>--a<N>`, `<key>--r<N>`; review N is member N's review of the
 * others), `implement` N (`<key>--impl-<N>`).
 */
export type WorkflowRole = 'validator' | 'worker' | 'chair' | 'answer' | 'review' | 'test' | 'implement';

/**
 * A task's place in its workflow, set only by the compiler (extension/core/manifest/workflows/: validate,
 * council, phases), never read from a manifest as written: the views group by it (schemas/task-order.ts groupedOrder),
 * never by the shape of a key, so a task the user named `x--w1` is not taken for a worker of `x`.
 */
export interface WorkflowPlace {
  /** The lead's key (the task as written); on the lead itself, its own key. */
  lead: string;
  role: WorkflowRole;
  /** A member's number, 1…N (worker N, answer N, review N, implement N); absent on the lead. */
  member?: number;
}

/**
 * The record of a task's inputs (docs/workflows.md "Inputs"): the folder its steps saw as VERDICT_INPUTS, each name in
 * it and the prerequisite (and the commit, in worktree mode) it holds, the prerequisites left out on purpose (a
 * council reviewer's own answer) and the files left out with why (size caps, special files).
 */
export interface TaskInputsState {
  dir: string;
  entries: { name: string; path: string; key: string; member: string; source: string }[];
  excluded: string[];
  omitted: { path: string; reason: string }[];
}

/**
 * A task's critique loop in state.json: the report's path (runs/<run_id>/tasks/<key>/critique.md), rounds run,
 * revisions asked, criticisms verified and dropped (pointed at nothing checkable) in all, those unresolved at the end,
 * and why the loop stopped (null while it goes on).
 */
export interface CritiqueState {
  report: string;
  rounds: number;
  revisions: number;
  verified: number;
  dropped: number;
  unresolved: number;
  stopped: string | null;
}

/** The verbs of a run's control channel (runs/<run_id>/control.jsonl; extension/core/live/control.ts). */
/**
 * `record` is sent by the merge queue and discard, not by a person: it carries `landed` (a task's `merged` or
 * `discarded`) for the live run's orchestrator to put on the task, since only it writes a live run's state.json.
 */
export type ControlVerb = 'stop' | 'cancel' | 'pause' | 'resume' | 'drain' | 'rerun' | 'unwait' | 'record';

/**
 * One control command as its orchestrator acknowledged it in state.json: `done` once its effect happened (a stopped
 * task is final, a cancelled run has ended, a rerun task is queued again), `refused` with the reason. Times epoch ms.
 */
export interface ControlAck {
  /** The command's id, as the sender wrote it (a malformed line gets `line@<byte offset>`). */
  id: string;
  /** The verb as sent (an unknown one is kept verbatim and refused). */
  verb: string;
  task: string | null;
  /** The engine (`unwait`); absent for the other verbs and in older records. */
  engine?: string;
  /** The sender's identity and host. */
  by: string;
  host: string;
  /** When it was sent and when it was acknowledged. */
  at: number;
  ackAt: number;
  result: 'done' | 'refused';
  reason: string;
}

/**
 * One time an orchestrator took a run over again (`verdict resume RUN` of a run that had ended or whose orchestrator
 * died, or `verdict rerun RUN TASK` of one that had ended): who, from where, when, and which tasks it ran again.
 * Times epoch ms.
 */
export interface RunResume {
  /** `resume` (every task that did not pass) or `rerun` (one task and its BLOCKED dependents). */
  verb: 'resume' | 'rerun';
  by: string;
  host: string;
  /** The new orchestrator's pid. */
  pid: number;
  at: number;
  /** The run's status before (finished, cancelled, interrupted). */
  from: string;
  /** The tasks run again. */
  tasks: string[];
  /** This orchestrator was started with `--force` over lint errors in the frozen manifest; absent otherwise. */
  forced?: true;
}

/**
 * An engine waiting for its quota (a usage limit with a reset time the engine named in its own structured error
 * event, e.g. codex's turn.failed "… try again at 14:05"): no attempt on it starts before `until`; a resumed
 * orchestrator reads it back; `verdict unwait RUN ENGINE` clears it (run/quota-wait.ts). Times epoch ms.
 */
export interface EngineWait {
  /** When its attempts may start again: the engine's reset, or `since` + the cap when that is sooner (`capped`). */
  until: number;
  /** The words of the engine's structured error event (one line, at most 300 characters): data, never instructions. */
  reason: string;
  /** When the wait was set. */
  since: number;
  /** The task and attempt whose engine event set it. */
  task: string;
  attempt: number;
  /** Which event of the engine's output said so (`its turn.failed event`); absent in older records. */
  source?: string;
  /** The reset the engine named; absent in older records (then it is `until`). */
  reset?: number;
  /** Why `until` is what it is (the engine's reset; shortened to the cap; confirmed by a probe), one line. */
  why?: string;
  /** `until` is the cap, before the engine's reset: the first attempt after it probes the engine (run/quota-wait.ts). */
  capped?: boolean;
  /** A probe attempt started after the cap reported the quota again: the wait runs to the engine's reset. */
  confirmed?: boolean;
  /** The probe attempt running now, and since when; dropped when it ends (or by the next orchestrator). */
  probe?: { task: string; since: number };
}

/** runs/<run_id>/state.json. Every change rewrites it whole, atomically. Times epoch ms. */
export interface RunState {
  version: 1;
  runId: string;
  runName: string;
  manifestFile: string;
  identity: string;
  host: string;
  /** The orchestrator's pid; with a stale heartbeat and a dead pid, the run is "orchestrator died". */
  pid: number;
  /** `interrupted`: its orchestrator died and a later start reconciled it (unfinished attempts INTERRUPTED). */
  status: 'running' | 'finished' | 'cancelled' | 'interrupted';
  startedAt: number;
  heartbeatAt: number;
  endedAt: number | null;
  maxParallel: number;
  worktrees: boolean;
  repo: string | null;
  baseRef: string | null;
  /**
   * Set in runs that resumed an earlier one as a new run (`verdict resume` before resume kept the run id): that run's
   * id. Still read (run/prior.ts) so such chains keep working; no new run sets it.
   */
  resumedFrom?: string;
  /** Worktree mode: base_ref resolved to the commit every task branch starts from. */
  baseSha: string | null;
  /** One line: what contains the run's steps (bwrap and its version, or off and why); absent in older records. */
  containment?: string;
  /** One line: what caps each step's memory here (a cgroup, or none and why); absent in older records. */
  memoryCap?: string;
  /** Set by `pause` (no new attempt starts; running ones go on), cleared by `resume`; absent in older records. */
  paused?: boolean;
  /** Set by `drain`: nothing more starts, the run ends when what runs has finished; absent in older records. */
  draining?: boolean;
  /** Every control command read from runs/<run_id>/control.jsonl, acknowledged, in the order read. */
  control?: ControlAck[];
  /** Each time an orchestrator took this run over again after it ended, oldest first; absent when never. */
  resumes?: RunResume[];
  /**
   * The run was started (or continued: see `resumes`) with `--force` / MCP `force: true` over lint errors in its
   * manifest (extension/core/manifest/lint.ts startGate); its attempts' views and eval rows say `forced: true` too.
   * Absent when never forced.
   */
  forced?: true;
  /**
   * Engines waiting for a quota reset, by engine name (an entry whose `until` passed is stale, unless `capped`: then
   * its probe is due or running); absent when none.
   */
  waits?: Record<string, EngineWait>;
  /**
   * Anonymous input names (docs/workflows.md "Inputs"), by scope (a task's key, or a council's): member key → its
   * letter, drawn at random the first time a task of the scope ran. Absent when no task read anonymous inputs.
   */
  inputNames?: Record<string, Record<string, string>>;
  /** What the run has spent and holds, and its budget (schemas/spend.ts), kept live; absent in older records. */
  spend?: RunSpendState;
  tasks: TaskState[];
}

/**
 * How a run looks from outside its orchestrator (extension/core/live/registry.ts decides it): its state file's
 * status, or `orchestrator-died` when it still says running but its pid is gone or its heartbeat stale.
 */
export type RunLiveness = 'running' | 'finished' | 'cancelled' | 'interrupted' | 'orchestrator-died';
