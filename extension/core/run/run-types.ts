/**
 * The shapes a run shares with its steps and callers: its settings, its events, and its summary. A module of its own
 * so that no step imports the runner (runner.ts re-exports them for callers).
 */
import type { EngineSpec } from '../../../engines/types';
import type { RunSpendState } from '../../../schemas/spend';
import type { TaskOutcome, Verdict } from '../../../schemas/status';
import type { RunState } from '../live/state';
import type { Manifest } from '../manifest/types';
import type { SandboxMode } from '../process/sandbox';
import type { RunSpendReport } from './spend';

/**
 * What a run is told by its caller, apart from the runner's own hooks (runner.ts RunOptions adds them): the part of the
 * options every step may read (steps/context.ts AttemptContext.opts).
 */
export interface RunSettings {
  manifest: Manifest;
  /** VERDICT_HOME, absolute. */
  home: string;
  identity: string;
  engines: ReadonlyMap<string, EngineSpec>;
  /** Overrides the manifest's max_parallel. */
  maxParallel?: number;
  /** Aborting cancels the run: queued tasks and running attempts end CANCELLED. */
  signal?: AbortSignal;
  /** Told of every state change, synchronously. */
  onEvent?: (e: RunEvent) => void;
  /** Grace between SIGTERM and SIGKILL, ms (default 5000). */
  killGraceMs?: number;
  /** First rate-limit backoff, ms (default 2000); doubles per rate limit of a task. */
  rateLimitBaseMs?: number;
  /** How long an engine may keep running after its final event, ms (default FINAL_EVENT_GRACE_MS). */
  finalGraceMs?: number;
  /**
   * The longest quota wait no probe confirmed, ms (the user config's `quota.max_wait_h`; default
   * DEFAULT_MAX_QUOTA_WAIT_MS, 6 h): a reset further away is shortened to it until a probe confirms it (run/quota-wait.ts).
   */
  quotaMaxWaitMs?: number;
  /** The user config's `logins` (run/slots.ts), beside the manifest's; absent: none. */
  logins?: Record<string, { engines: string[]; maxParallel: number; billing?: 'subscription' | 'metered' }>;
  /** Environment for workers and checks (default process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * Before a task's first attempt, run its check on the untouched task dir; when it already passes, the task is
   * SKIPPED (its check cannot prove the worker's work) and no worker runs.
   */
  baseline?: boolean;
  /** Mirror every eval row to this Postgres (table swarm_runs); null/absent: none. Never fails the run. */
  postgresUrl?: string | null;
  /**
   * Containment (see core/process/sandbox.ts): `auto` (default) runs every step in bubblewrap and refuses to start
   * where it cannot; `off` runs unsandboxed (the user said --no-sandbox / "sandbox": false / verdict.sandbox).
   */
  sandbox?: SandboxMode;
  /**
   * The user's config (allow_full_access) or setting (verdict.allowFullAccess) allows tasks with `full_access: true`;
   * without it such a task stops the run in preflight. Allowed tasks run without Verdict's sandbox and with the
   * engine's own sandbox flags off.
   */
  allowFullAccess?: boolean;
  /** Where `allow_full_access` is set (the config file in force, or its default path); named when refusing. */
  configSource?: string;
  /**
   * Unix sockets (or folders of them) every sandboxed step may reach (config `sockets`, absolute or `~/…` with the home
   * of `env`): bound back over the covers that keep the host's sockets out of reach. Absent: none.
   */
  sockets?: readonly string[];
  /** More places no sandboxed step may read (config `hide`, absolute or `~/…`); the manifest's `hide` is added. */
  hide?: readonly string[];
  /** Hidden places every sandboxed step may read (config `expose`, absolute or `~/…`). */
  expose?: readonly string[];
  /**
   * Tasks of earlier runs this one continues (a run that resumed another as a new run), by key (default: read from
   * `resumedFrom`'s chain of runs, run/prior.ts): an `after` naming a task that is not in
   * this run is settled by its entry here (a PASS releases the dependent, from its commit in worktree mode;
   * anything else blocks it). A key in neither blocks its dependents.
   */
  prior?: ReadonlyMap<string, PriorTask>;
  /**
   * The user started (or continued) this run over lint errors with `--force` / MCP `force: true` (core/manifest/lint.ts
   * startGate): state.json (`forced`, and the resume's entry), every attempt's view and every eval row this
   * orchestrator writes record `forced: true`.
   */
  forced?: boolean;
}

/** A task of an earlier run that a resumed run's tasks may come after. */
export interface PriorTask {
  status: string;
  /** The run it ended in. */
  runId: string;
  /** Worktree mode, after a PASS: the commit of its task branch. */
  commit: string | null;
}

/** State changes, in the order they happen. */
export type RunEvent =
  | { type: 'run-started'; runId: string; stateFile: string; tasks: number; maxParallel: number }
  | { type: 'attempt-started'; key: string; attempt: number; engine: string; model: string | null }
  | { type: 'attempt-checking'; key: string; attempt: number }
  /**
   * An attempt ended. `costMicroUsd`: its worker's cost (micro-USD), null when unknown; `spend`: the run's spend just
   * after it (spent · reserved · budget), only when the run has a budget_usd or budget_tokens.
   */
  | {
      type: 'attempt-finished';
      key: string;
      attempt: number;
      verdict: Verdict;
      reason: string;
      durationMs: number;
      tokens: number | null;
      willRetry: boolean;
      costMicroUsd?: number | null;
      spend?: RunSpendState;
    }
  | { type: 'task-cancelled'; key: string }
  /** The task was not run: SKIPPED by --baseline, or BUDGET_EXCEEDED (see TaskSummary.verdict). */
  | { type: 'task-skipped'; key: string; reason: string }
  | { type: 'task-note'; key: string; note: string }
  /** The task will not start: a task it comes `after` did not PASS (reason names it and its verdict). */
  | { type: 'task-blocked'; key: string; reason: string }
  /** A fact about the whole run, said once before any task starts (its containment). */
  | { type: 'run-note'; note: string }
  | { type: 'run-finished'; summary: RunSummary };

/** One task's outcome. */
export interface TaskSummary {
  key: string;
  /**
   * The last attempt's verdict; SKIPPED when --baseline found the check already passing; BUDGET_EXCEEDED when an
   * attempt was not started because it could pass the manifest's budget_usd.
   */
  verdict: TaskOutcome;
  attempts: number;
  /** Sum over attempts, ms. */
  durationMs: number;
  /** Sum over attempts of tokens in + out; null when any attempt's usage is unknown. */
  tokens: number | null;
  verified: string | null;
  branch: string | null;
  commit: string | null;
  /** Why the last attempt failed; empty on PASS. */
  reason: string;
  /** The last attempt's check output, verbatim tail (≤ 64 KiB); empty when no check ran. */
  checkOutput: string;
}

/** A run's outcome. */
export interface RunSummary {
  runId: string;
  runName: string;
  stateFile: string;
  cancelled: boolean;
  durationMs: number;
  tasks: TaskSummary[];
  /** True when every task passed (a best-of-N candidate counts through its task: the others need not pass). */
  allPassed: boolean;
  /** Records that could not be written (e.g. eval rows on a full disk); empty when every record is on disk. */
  recordErrors: string[];
  /** Spend (micro-USD), budget and Postgres outbox state: see RunSpendReport. */
  spend: RunSpendReport;
  /**
   * The run's state as it ended: the object state.json was last written from (the orchestrator's own, in memory), or
   * the one read back from state.json outside the orchestrator (run-launch.ts summaryFromRecords). The final tables
   * read their columns beyond the summary (steps, graph, workflow places) from it.
   */
  state: RunState;
}
