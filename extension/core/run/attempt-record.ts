/**
 * One record per attempt, and the three projections of it (one record, many projections): the attempt as
 * state.json shows it (attemptView), the eval row (evalRow, schemas/eval-row.schema.json) and the task's line of the
 * run summary (summarize). The runner and reconcile build records and call these same functions, so the cost, the
 * retry flag and every other fact appear once and agree everywhere.
 */
import path from 'node:path';
import type { UsageReport } from '../../../engines/types';
import type { StepName, Verdict } from '../../../schemas/status';
import type { Containment, StepNetwork } from '../process/sandbox';
import { memCapLabel } from '../process/memory-cap';
import type { Receipt } from '../process/supervisor';
import type { Seal } from '../git/worktree';
import type { Undelivered } from './undelivered';
import type { AttemptState, RunState, TaskState } from '../live/state';
import { CHECK_OUTPUT_ROW_BYTES, labOf, tailBytes, type EvalRow, type PoolColumn, type RouteColumn } from '../store/eval-row';
import type { ReviewRecord } from './reader-record';

export type { StepName };

/** One step as it happened. Times epoch ms. */
export interface StepRecord {
  step: StepName;
  startedAt: number;
  endedAt: number;
  /** What the step did, one line (e.g. the sealed commit, or why it stopped the attempt). */
  note: string;
}

/** What the check left: its receipt, verbatim output (tail) and exit code. */
export interface CheckRecord {
  receipt: Receipt;
  output: string;
  exitCode: number | null;
}

/** The full regression check (step `suite`): the command run, whether it passed, its receipt, output tail and time, ms. */
export interface SuiteRecord extends CheckRecord {
  command: string;
  passed: boolean;
  durationMs: number;
}

/**
 * One attempt, appended to by each step. Fixed at the start: who, what, where. Filled as it runs: the steps, the
 * worker's receipt and usage, the seal, the check. Settled at the end: verdict, reason, cost, commit.
 * Times epoch ms; cost integer micro-USD, null when unknown (never 0 for unknown).
 */
export interface AttemptRecord {
  runId: string;
  runName: string;
  identity: string;
  host: string;
  taskKey: string;
  /** The task's spec as written (the prompt may add the failure of the previous attempt). */
  spec: string;
  engine: string;
  harness: string;
  model: string | null;
  taskType: string | null;
  reasoningEffort: string | null;
  accessPlan: string | null;
  /** What contained the attempt's steps; null when unknown (an attempt reconciled from an older state file). */
  sandbox: Containment | null;
  /** The network its steps ran with (sandbox.ts stepNetwork); absent in records written before it was kept. */
  network?: StepNetwork | null;
  attempt: number;
  /** An attempt after a judged one; an attempt after a rate limit alone is not a retry. */
  retry: boolean;
  branch: string | null;
  /** The attempt's records folder: prompt.md, worker.log, check.log, receipt.json. */
  dir: string;
  startedAt: number;
  phase: AttemptState['phase'];
  steps: StepRecord[];
  /** The step running now (absent between steps): state.json's `step` shows it, so views see where the attempt is. */
  currentStep?: StepName;
  workerPid: number | null;
  workerStartTime: string | null;
  worker: Receipt | null;
  usage: UsageReport | null;
  seal: Seal | null;
  /**
   * Files the seal did not hold that were not there before the worker ran, moved out of the check's sight into the
   * attempt's record by step `seal` (run/undelivered.ts); absent when there were none.
   */
  undelivered?: Undelivered;
  /**
   * Plain mode: the symlinks the worker added or changed that lead out of the task dir, as `<path> -> <target>`
   * (run/steps/seal.ts escapingPlainLinks), judged after the check as a worktree seal's are; absent when none.
   */
  escapingLinks?: string[];
  /**
   * Plain mode: what setup installed in its dependency folders that the worker changed or deleted (run/setup-deps.ts,
   * relative paths as latin1 strings), judged after the check as the seal's other problems; absent when none.
   */
  setupChanged?: string[];
  check: CheckRecord | null;
  /** The full regression check on the sealed tree after the check passed (step `suite`); absent: none ran. */
  suite?: SuiteRecord;
  verdict: Verdict | null;
  reason: string;
  endedAt: number | null;
  /** Priced once (the CLI's own cost, else the catalog's price): what state.json, the summary and the row all show. */
  costMicroUsd: number | null;
  /** `subscription`: its engine is of a subscription login (cost null, counted in tokens); absent: billed per token. */
  billing?: 'subscription';
  /** The commit holding the work after a PASS (worktree mode), else null. */
  commit: string | null;
  /** What the check judged: the sealed commit, or the plain task dir's tree hash; null before the seal. */
  sealed: string | null;
  /** The row's kind (eval row `step`): `work` for a worker's attempt. */
  rowStep: string;
  /** Workflow group and candidate number (eval row `group`, `candidate`); null outside a workflow. */
  group: string | null;
  candidate: number | null;
  /** The reviews of this attempt (step `review`, run/review-record.ts), one per reviewer that ran; absent: none. */
  reviews?: ReviewRecord[];
  /** Pool runs (core/pool): the worker that held this attempt and was lost (its heartbeat expired); the attempt is INTERRUPTED. */
  lostWorker?: string;
  /**
   * Pool runs: the worker that reported the attempt (null: the orchestrator settled it), the trust in force and the
   * orchestrator's re-check of a reported PASS (pool/recheck.ts); `workerCheckOutput` is the worker's check output
   * when the re-check failed (`check` then holds the re-check). The eval row's `pool`.
   */
  pool?: { worker: string | null; trust: 'check' | 'worker'; recheck: { passed: boolean; exitCode: number | null } | null; workerCheckOutput?: string };
  /** The run was started over lint errors with --force (RunSettings.forced): the view and every row of the attempt say so. */
  forced?: true;
  /** The engine this attempt was moved off before it started (run/reassign.ts): the view and its rows say so. */
  reassignedFrom?: string;
  /** `engine: "auto"`: how the attempt was routed (run/route-choice.ts routeColumn); its work row's `route`. */
  route?: RouteColumn;
  /** What the workflow plugins keep on this attempt, one entry per workflow ({@link WorkflowRecords}); absent: none kept anything. */
  workflows?: WorkflowRecords;
}

/**
 * What the workflow plugins keep on an attempt, one optional entry per workflow under its name (Workflow.name). Empty
 * here: each workflow declares its own entry in its folder (run/workflows/<name>/record.ts augments this interface),
 * and only that folder's code reads or writes it, so the record names no workflow. An entry's fields keep the names
 * they had on the record before they moved here, so the flat record (flatRecord) is as it was.
 */
export interface WorkflowRecords {}

/**
 * An attempt's record as one flat object: each workflow's entry (`workflows`) spread among the record's own fields,
 * as a pool worker sends it back and verdict_pool_attempts.record stores it (pool/worker.ts) — the shape the record
 * had when it named the workflows' fields itself. A workflow reads its own fields back by name (Workflow.pool taken).
 */
export type FlatRecord = Omit<AttemptRecord, 'workflows'> & FlatFields;

/** A flat record's fields by name: how a workflow reads its own back from one (Workflow.pool taken). */
export interface FlatFields {
  readonly [field: string]: unknown;
}

/** The record as a {@link FlatRecord}: its own fields, then every workflow's entry spread after them. */
export function flatRecord(rec: AttemptRecord): FlatRecord {
  const { workflows, ...own } = rec;
  return Object.assign(own, ...Object.values(workflows ?? {})) as FlatRecord;
}

/** Tokens in + out, or null when either is unknown. */
export function recordTokens(rec: AttemptRecord): number | null {
  const u = rec.usage;
  return u && u.tokensIn !== null && u.tokensOut !== null ? u.tokensIn + u.tokensOut : null;
}

/** The attempt's record files. */
export function recordFiles(rec: Pick<AttemptRecord, 'dir'>): {
  prompt: string;
  worker: string;
  check: string;
  workerCheck: string;
  suite: string;
  receipt: string;
  failure: string;
  setup: string;
} {
  return {
    prompt: path.join(rec.dir, 'prompt.md'),
    worker: path.join(rec.dir, 'worker.log'),
    check: path.join(rec.dir, 'check.log'),
    // Pool runs: the check output the worker reported, when the orchestrator re-ran the check (check.log holds its own).
    workerCheck: path.join(rec.dir, 'worker-check.log'),
    suite: path.join(rec.dir, 'suite.log'),
    receipt: path.join(rec.dir, 'receipt.json'),
    failure: path.join(rec.dir, 'failure.md'),
    setup: path.join(rec.dir, 'setup.log'),
  };
}

/** Projection 1: the attempt as state.json shows it (and as reconcile later reads it back). */
export function attemptView(rec: AttemptRecord): AttemptState {
  return {
    attempt: rec.attempt,
    phase: rec.phase,
    // Only a settled attempt has a verdict to show: a step's judgement can still change (a later step's error) and the
    // task's status follows only at settle, so a reader never sees a verdict beside a status that says otherwise.
    verdict: rec.phase === 'done' ? rec.verdict : null,
    startedAt: rec.startedAt,
    endedAt: rec.endedAt,
    workerPid: rec.workerPid,
    workerStartTime: rec.workerStartTime,
    tokensIn: rec.usage?.tokensIn ?? null,
    tokensOut: rec.usage?.tokensOut ?? null,
    costMicroUsd: rec.costMicroUsd,
    checkExitCode: rec.check?.exitCode ?? null,
    dir: rec.dir,
    notes: rec.reason,
    retry: rec.retry,
    sandbox: rec.sandbox,
    ...(rec.worker?.memory ? { memCap: memCapLabel(rec.worker.memory) } : {}),
    ...(rec.network ? { network: rec.network } : {}),
    step: rec.currentStep ?? rec.steps[rec.steps.length - 1]?.step ?? null,
    engine: rec.engine,
    model: rec.model,
    host: rec.host,
    ...(rec.forced ? { forced: true as const } : {}),
    ...(rec.reassignedFrom ? { reassignedFrom: rec.reassignedFrom } : {}),
    ...(rec.route ? { route: rec.route.line } : {}),
  };
}

/** What every eval row says of where it comes from, taken from an attempt's record (a ranking's row: its group's). */
export type RowSource = Pick<
  AttemptRecord,
  | 'runId'
  | 'runName'
  | 'identity'
  | 'host'
  | 'taskKey'
  | 'spec'
  | 'taskType'
  | 'retry'
  | 'attempt'
  | 'accessPlan'
  | 'sandbox'
  | 'branch'
  | 'group'
  | 'candidate'
  | 'forced'
>;

/** The columns every eval row shares, whichever step it credits (work, review, critique, rank, select). */
export type RowBase = Pick<
  EvalRow,
  | 'run_id'
  | 'run_name'
  | 'identity'
  | 'host'
  | 'task_key'
  | 'spec'
  | 'task_type'
  | 'retry'
  | 'attempt'
  | 'access_plan'
  | 'sandbox'
  | 'branch'
  | 'group'
  | 'candidate'
  | 'forced'
>;

/**
 * The base of every eval row built from an attempt (evalRow, and through it selectRow; reviewRow, critiqueRow; rankRow
 * from its group's facts): the run, the task, the attempt and its sandbox; each builder adds its step's own columns.
 */
export function rowBase(rec: RowSource): RowBase {
  return {
    run_id: rec.runId,
    run_name: rec.runName,
    identity: rec.identity,
    host: rec.host,
    task_key: rec.taskKey,
    spec: rec.spec,
    task_type: rec.taskType,
    retry: rec.retry,
    attempt: rec.attempt,
    access_plan: rec.accessPlan,
    sandbox: rec.sandbox,
    branch: rec.branch,
    group: rec.group,
    candidate: rec.candidate,
    ...(rec.forced ? { forced: true as const } : {}),
  };
}

/** The columns workflows add to an attempt's work row (run/workflows/index.ts workflowRowColumns); none by default. */
export type RowColumns = (rec: AttemptRecord) => Partial<EvalRow>;

/**
 * Projection 2: the eval row (schemas/eval-row.schema.json). Only a settled record has one. `columns` are the
 * workflows' own columns of the row (placed after `step`), handed in by the caller that writes it: none by default (the
 * summary, and a record rebuilt from state.json, which keeps none of a workflow's).
 * @throws Error when the record has no verdict yet
 */
export function evalRow(rec: AttemptRecord, columns: RowColumns = () => ({})): EvalRow {
  if (rec.verdict === null || rec.endedAt === null) throw new Error(`attempt ${rec.attempt} of ${rec.taskKey} is not settled: no eval row yet`);
  const files = recordFiles(rec);
  const u = rec.usage;
  return {
    ...rowBase(rec),
    spec: rec.spec,
    worker_engine: rec.engine,
    verdict: rec.verdict,
    duration_ms: rec.endedAt - rec.startedAt,
    worker_tokens: recordTokens(rec),
    model: rec.model,
    notes: rec.reason,
    harness: rec.harness,
    lab: labOf(rec.model),
    reported_model: u?.reportedModel ?? null,
    reasoning_effort: rec.reasoningEffort,
    ...(rec.worker?.memory ? { mem_cap: rec.worker.memory.kind, memory_mb: rec.worker.memory.limitMb } : {}),
    network: rec.network ?? null,
    tokens_in: u?.tokensIn ?? null,
    tokens_out: u?.tokensOut ?? null,
    tokens_cached: u?.tokensCached ?? null,
    tokens_reasoning: u?.tokensReasoning ?? null,
    ...(u && u.tokensCacheWrite !== null ? { tokens_cache_write: u.tokensCacheWrite } : {}),
    ...(rec.billing ? { billing: rec.billing } : {}),
    cost_microusd: rec.costMicroUsd,
    check_exit_code: rec.check?.exitCode ?? null,
    check_output: tailBytes(rec.check?.output ?? '', CHECK_OUTPUT_ROW_BYTES),
    worker_exit_code: rec.worker?.exitCode ?? null,
    started_at: new Date(rec.startedAt).toISOString(),
    ended_at: new Date(rec.endedAt).toISOString(),
    commit: rec.verdict === 'PASS' ? rec.commit : null,
    prompt_path: files.prompt,
    worker_log: files.worker,
    check_log: files.check,
    receipt_path: files.receipt,
    prev_hash: null, // set by appendEvalRow under the log's lock
    sealed: rec.check ? rec.sealed : null,
    step: rec.rowStep,
    ...columns(rec),
    ...(rec.suite
      ? {
          suite: {
            command: rec.suite.command,
            passed: rec.suite.passed,
            exit_code: rec.suite.exitCode,
            timed_out: rec.suite.receipt.timedOut,
            duration_ms: rec.suite.durationMs,
            log: files.suite,
          },
        }
      : {}),
    ...(rec.pool && rec.rowStep === 'work' ? { pool: poolColumn(rec.pool) } : {}),
    ...(rec.reassignedFrom ? { reassigned_from: rec.reassignedFrom } : {}),
    ...(rec.route && rec.rowStep === 'work' ? { route: rec.route } : {}),
  };
}

/** The eval row's `pool` of a pool attempt's record. */
function poolColumn(p: NonNullable<AttemptRecord['pool']>): PoolColumn {
  return {
    worker: p.worker,
    trust: p.trust,
    recheck: p.recheck ? { passed: p.recheck.passed, exit_code: p.recheck.exitCode } : null,
    ...(p.workerCheckOutput !== undefined ? { worker_check_output: tailBytes(p.workerCheckOutput, POOL_WORKER_OUTPUT_BYTES) } : {}),
  };
}

/** Bytes of the worker's own check output kept in a row whose re-check disagreed (the whole is worker-check.log). */
const POOL_WORKER_OUTPUT_BYTES = 16 * 1024;

/** A task's line in the run summary, as far as its attempts tell (see TaskSummary in runner.ts). */
export interface AttemptsSummary {
  attempts: number;
  /** Sum over attempts, ms. */
  durationMs: number;
  /** Sum over attempts of tokens in + out; null when any attempt's usage is unknown. */
  tokens: number | null;
  verdict: Verdict;
  /** Why the last attempt did not pass; empty on PASS. */
  reason: string;
  /** The last attempt's check output, the row's tail. */
  checkOutput: string;
  commit: string | null;
}

/**
 * Projection 3: a task's summary from its settled attempts, in order.
 * @throws Error when `records` is empty or holds an unsettled attempt
 */
export function summarize(records: AttemptRecord[]): AttemptsSummary {
  const last = records[records.length - 1];
  if (!last) throw new Error('summarize: no attempts');
  let durationMs = 0;
  let tokens: number | null = 0;
  for (const rec of records) {
    const row = evalRow(rec);
    durationMs += row.duration_ms;
    tokens = tokens === null || row.worker_tokens === null ? null : tokens + row.worker_tokens;
  }
  const row = evalRow(last);
  return {
    attempts: last.attempt,
    durationMs,
    tokens,
    verdict: row.verdict,
    reason: row.verdict === 'PASS' ? '' : row.notes,
    checkOutput: row.check_output,
    commit: row.commit,
  };
}

/**
 * Rebuilds the record of an attempt from what state.json kept of it (reconcile, after the orchestrator died): the
 * identity facts from the run and the task, the usage and cost the view held. `spec` comes from the frozen manifest,
 * `harness` from the engine table; the host is the one that wrote the state.
 */
export function recordFromView(run: RunState, task: TaskState, view: AttemptState, spec: string, harness: string): AttemptRecord {
  return {
    runId: run.runId,
    runName: run.runName,
    identity: run.identity,
    host: run.host,
    taskKey: task.key,
    spec,
    engine: view.engine ?? task.engine,
    harness,
    model: view.model === undefined ? task.model : view.model,
    taskType: task.taskType,
    reasoningEffort: null,
    accessPlan: null,
    sandbox: view.sandbox ?? null,
    attempt: view.attempt,
    // Older state files lack the flag; an attempt after the first was then most likely a retry.
    retry: view.retry ?? view.attempt > 1,
    branch: task.branch,
    dir: view.dir,
    startedAt: view.startedAt,
    phase: view.phase,
    steps: [],
    workerPid: view.workerPid,
    workerStartTime: view.workerStartTime ?? null,
    worker: null,
    usage:
      view.tokensIn === null && view.tokensOut === null
        ? null
        : {
            tokensIn: view.tokensIn,
            tokensOut: view.tokensOut,
            tokensCached: null,
            tokensCacheWrite: null,
            tokensReasoning: null,
            costMicroUsd: null,
            reportedModel: null,
            finalStatus: null,
            finalError: null,
          },
    seal: null,
    check: null,
    verdict: view.verdict,
    reason: view.notes,
    endedAt: view.endedAt,
    costMicroUsd: view.costMicroUsd,
    commit: null,
    sealed: null,
    rowStep: 'work',
    group: task.group ?? null,
    candidate: task.candidate ?? null,
    ...(view.forced ? { forced: true as const } : {}),
    ...(view.reassignedFrom ? { reassignedFrom: view.reassignedFrom } : {}),
  };
}
