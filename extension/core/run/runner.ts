import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { EngineSpec, UsageReport } from '../../../engines/types';
import { expandArgv } from '../../../engines';
import { attemptDir, evalLogPath, runDir, worktreePath } from '../config/home';
import { addWorktree, advanceBranch, copyIncludes, sealWorktree, taskBranch, worktreeStepAccess, type Seal, type WorktreeLinks } from '../git/worktree';
import { StateFile, shortHost, type AttemptState, type RunState, type TaskState } from '../live/state';
import type { Manifest, TaskSpec } from '../manifest/types';
import { RingBuffer } from '../process/ring-buffer';
import { processStartTime, supervise, type Receipt } from '../process/supervisor';
import type { Containment, SandboxMode } from '../process/sandbox';
import { engineState, removeTaskScratch, scratchEnv, stepPlan, stepScratch, taskContainment } from './containment';
import { appendEvalRow } from '../store/eval-log';
import { accessPlanOf, reasoningEffortOf } from '../store/model-identity';
import { CHECK_OUTPUT_ROW_BYTES, labOf, tailBytes, type EvalRow, type Verdict } from '../store/eval-row';
import { runCheck } from './check';
import { reservePort } from './ports';
import { DEFAULT_POLICY, preflight } from './preflight';
import { writeFrozenManifest } from './frozen-manifest';
import { failureText, retryPrompt } from './prompt';
import { Scheduler } from './scheduler';
import { RunSpend, type RunSpendReport } from './spend';

/** Options of {@link runManifest}. */
export interface RunOptions {
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
  /** Environment for workers and checks (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** This run resumes the run with this id (recorded in state.json). */
  resumedFrom?: string;
  /** Lets a caller stop single tasks while the run goes on. */
  control?: RunControl;
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
}

/**
 * Stops single tasks of a run in this process: the running attempt's process groups are stopped (SIGTERM, grace,
 * SIGKILL), it is recorded CANCELLED and the task is not retried; a queued task never starts.
 */
export class RunControl {
  private readonly stoppers = new Map<string, () => void>();

  /** Stops task `key`; false when the run has no such task (or has not started yet). */
  stopTask(key: string): boolean {
    const stop = this.stoppers.get(key);
    stop?.();
    return stop !== undefined;
  }

  /** Called by the runner for each task. */
  bind(key: string, stop: () => void): void {
    this.stoppers.set(key, stop);
  }
}

/** State changes, in the order they happen. */
export type RunEvent =
  | { type: 'run-started'; runId: string; stateFile: string; tasks: number; maxParallel: number }
  | { type: 'attempt-started'; key: string; attempt: number; engine: string; model: string | null }
  | { type: 'attempt-checking'; key: string; attempt: number }
  | { type: 'attempt-finished'; key: string; attempt: number; verdict: Verdict; reason: string; durationMs: number; tokens: number | null; willRetry: boolean }
  | { type: 'task-cancelled'; key: string }
  /** The task was not run: SKIPPED by --baseline, or BUDGET_EXCEEDED (see TaskSummary.verdict). */
  | { type: 'task-skipped'; key: string; reason: string }
  | { type: 'task-note'; key: string; note: string }
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
  verdict: Verdict | 'SKIPPED' | 'BUDGET_EXCEEDED';
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
  /** True when every task passed. */
  allPassed: boolean;
  /** Records that could not be written (e.g. eval rows on a full disk); empty when every record is on disk. */
  recordErrors: string[];
  /** Spend (micro-USD), budget and Postgres outbox state: see RunSpendReport. */
  spend: RunSpendReport;
}

/** Rate-limited attempts are requeued at most this many times per task, with exponential backoff. */
const MAX_RATE_LIMIT_REQUEUES = 5;
const RATE_LIMIT_BASE_MS = 2000;
/**
 * Wait before requeueing a rate-limited attempt, ms: exponential from `baseMs` (×2 per rate limit of this task) with
 * full jitter on top, and never less than a Retry-After the engine printed (seconds, as HTTP's header;
 * RFC 9110 §10.2.3).
 */
export function rateLimitBackoffMs(count: number, logTail: string, baseMs: number): number {
  const exp = baseMs * 2 ** Math.max(0, count - 1);
  const backoff = exp + Math.floor(Math.random() * exp);
  const hinted = [...logTail.matchAll(/retry[-_ ]after["'\s:=]+(\d+(?:\.\d+)?)/gi)].pop()?.[1];
  return hinted ? Math.max(backoff, Math.ceil(Number(hinted) * 1000)) : backoff;
}

/** An engine that printed its final event but keeps running is stopped after this long, ms (then judged normally). */
export const FINAL_EVENT_GRACE_MS = 30_000;

/** Whether the engine's recent output holds its final event; parses only when new output arrived. */
function finalEventSeen(engine: EngineSpec, recent: RingBuffer): () => boolean {
  let checkedBytes = -1;
  let seen = false;
  return () => {
    if (seen || recent.totalBytes === checkedBytes) return seen;
    checkedBytes = recent.totalBytes;
    seen = engine.parseOutput(recent.text()).finalStatus !== null;
    return seen;
  };
}

interface TaskRuntime {
  spec: TaskSpec;
  /** Aborted to stop this task alone (RunControl.stopTask) or with the whole run. */
  abort: AbortController;
  engine: EngineSpec;
  state: TaskState;
  prepared: boolean;
  /** Worktree mode: the links git wrote for the task's worktree (restored before every git call of ours there). */
  links: WorktreeLinks | null;
  /** What contains this task's steps: bwrap, or none (unsandboxed run, or an allowed full_access task). */
  containment: Containment;
  /** Real attempts used (rate limits do not count). */
  used: number;
  rateLimited: number;
  failure: string | null;
  summary: TaskSummary;
}

/**
 * Runs a manifest end to end: preflight (nothing created when it fails), then the run's records under
 * `<home>/runs/<run_id>/`, then every task's attempts with exactly max_parallel busy, retries with the failure
 * injected, one eval row per attempt in `<home>/runs.jsonl`, and the orchestrator's commit of each PASS onto its
 * task branch in worktree mode. Lifecycle from DESIGN.md "One attempt".
 * @throws PreflightError before anything starts; other errors only for broken records (disk full, permissions)
 */
export async function runManifest(opts: RunOptions): Promise<RunSummary> {
  const { manifest, home } = opts;
  const env = opts.env ?? process.env;
  const pre = await preflight(manifest, opts.engines, env, home, {
    sandbox: opts.sandbox ?? DEFAULT_POLICY.sandbox,
    allowFullAccess: opts.allowFullAccess ?? DEFAULT_POLICY.allowFullAccess,
    configSource: opts.configSource ?? DEFAULT_POLICY.configSource,
  });
  const runId = newRunId();
  const dir = runDir(home, runId);
  fs.mkdirSync(dir, { recursive: true });
  writeFrozenManifest(home, runId, manifest);
  const maxParallel = opts.maxParallel ?? manifest.maxParallel;
  const startedAt = Date.now();

  const tasks: TaskRuntime[] = manifest.tasks.map((spec) => {
    const engine = opts.engines.get(spec.engine) as EngineSpec;
    const branch = manifest.worktrees ? taskBranch(runId, spec.key) : null;
    const taskDir = manifest.worktrees ? worktreePath(home, runId, spec.key) : path.join(manifest.workdir, spec.key);
    const model = spec.model ?? engine.defaultModel;
    return {
      spec,
      engine,
      abort: new AbortController(),
      prepared: false,
      links: null,
      containment: taskContainment(pre.containment, spec.fullAccess),
      used: 0,
      rateLimited: 0,
      failure: null,
      state: { key: spec.key, engine: spec.engine, model, taskType: spec.taskType, verified: spec.verified, status: 'queued', dir: taskDir, branch, commit: null, port: null, attempts: [] },
      summary: { key: spec.key, verdict: 'CANCELLED', attempts: 0, durationMs: 0, tokens: 0, verified: spec.verified, branch, commit: null, reason: '', checkOutput: '' },
    };
  });
  const state: RunState = {
    version: 1,
    runId,
    runName: manifest.runName,
    manifestFile: manifest.file,
    identity: opts.identity,
    host: shortHost(),
    pid: process.pid,
    status: 'running',
    startedAt,
    heartbeatAt: startedAt,
    endedAt: null,
    maxParallel,
    worktrees: manifest.worktrees,
    repo: pre.repo?.root ?? null,
    baseRef: manifest.worktrees ? manifest.baseRef : null,
    baseSha: pre.repo?.baseSha ?? null,
    containment: pre.containment.summary,
    ...(opts.resumedFrom ? { resumedFrom: opts.resumedFrom } : {}),
    tasks: tasks.map((t) => t.state),
  };
  const stateFile = new StateFile(path.join(dir, 'state.json'), state);
  await stateFile.save();
  stateFile.start();
  const emit = (e: RunEvent) => opts.onEvent?.(e);
  emit({ type: 'run-started', runId, stateFile: stateFile.file, tasks: tasks.length, maxParallel });
  emit({ type: 'run-note', note: pre.containment.summary });
  for (const t of tasks) {
    if (t.spec.fullAccess && pre.containment.bwrap) emit({ type: 'task-note', key: t.spec.key, note: 'full_access (allowed by your config): this task runs without the sandbox, with its engine\'s own sandbox off' });
  }

  /** A task that ends without (another) attempt because it or the run was stopped. */
  const markCancelled = (task: TaskRuntime) => {
    task.state.status = 'CANCELLED';
    task.summary.verdict = 'CANCELLED';
    task.summary.reason = 'stopped before this task finished';
    emit({ type: 'task-cancelled', key: task.spec.key });
    void stateFile.save();
  };
  const spend = new RunSpend(home, manifest.budgetUsd, opts.postgresUrl ?? null);
  const ctx: AttemptContext = { opts, env, runId, stateFile, binaries: pre.binaries, repo: pre.repo, bwrap: pre.containment.bwrap, emit, spend, recordErrors: [] };
  /** Per-engine concurrency: halved for the rest of the run each time that engine is rate-limited. */
  const engineLimits = new Map<string, number>();
  const scheduler = new Scheduler<TaskRuntime>(
    maxParallel,
    async (task) => {
      try {
        await runJob(task);
      } catch (e) {
        // A bug or an unwritable record must not leave the task looking CANCELLED: it ends ERROR, saying why.
        task.state.status = 'ERROR';
        task.summary.verdict = 'ERROR';
        task.summary.reason = `internal error: ${(e as Error).message}`;
        emit({ type: 'task-note', key: task.spec.key, note: task.summary.reason });
        void stateFile.save();
      }
    },
    (task) => markCancelled(task),
    { groupOf: (task) => task.spec.engine, limitOf: (engine) => engineLimits.get(engine) ?? maxParallel },
  );
  /** One scheduler job: the next attempt of `task` (or its baseline, budget stop or cancellation). */
  async function runJob(task: TaskRuntime): Promise<void> {
    if (task.abort.signal.aborted) return markCancelled(task);
    if (opts.baseline && !task.prepared && (await baselinePasses(ctx, task))) return;
    // Budget (issue 6): reserve this attempt's worst case, or end the task BUDGET_EXCEEDED without starting it.
    const reservation = spend.admit(task.spec.engine, task.state.model);
    if (typeof reservation === 'string') return budgetExceeded(ctx, task, reservation);
    const outcome = await runAttempt(ctx, task);
    spend.settle(reservation, outcome.costMicroUsd);
    if (outcome.rateLimited) {
      const before = engineLimits.get(task.spec.engine) ?? maxParallel;
      const after = Math.max(1, Math.floor(before / 2));
      engineLimits.set(task.spec.engine, after);
      if (after < before) emit({ type: 'task-note', key: task.spec.key, note: `engine ${task.spec.engine} was rate-limited: at most ${after} of its attempts run at once from now on` });
    }
    if (outcome.requeueAfterMs !== null) scheduler.push(task, outcome.requeueAfterMs);
  }
  const onAbort = () => {
    scheduler.close();
    for (const t of tasks) t.abort.abort();
  };
  for (const t of tasks) opts.control?.bind(t.spec.key, () => t.abort.abort());
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener('abort', onAbort);
  for (const t of tasks) scheduler.push(t);
  await scheduler.idle();
  opts.signal?.removeEventListener('abort', onAbort);
  for (const t of tasks) removeTaskScratch(home, runId, t.spec.key);

  const cancelled = opts.signal?.aborted === true;
  state.status = cancelled ? 'cancelled' : 'finished';
  state.endedAt = Date.now();
  await stateFile.close();
  const summaries = tasks.map((t) => t.summary);
  const summary: RunSummary = {
    runId,
    runName: manifest.runName,
    stateFile: stateFile.file,
    cancelled,
    durationMs: state.endedAt - startedAt,
    tasks: summaries,
    allPassed: summaries.every((s) => s.verdict === 'PASS'),
    recordErrors: ctx.recordErrors,
    spend: await spend.finish(),
  };
  emit({ type: 'run-finished', summary });
  return summary;
}

interface AttemptContext {
  opts: RunOptions;
  env: NodeJS.ProcessEnv;
  runId: string;
  stateFile: StateFile;
  binaries: Map<string, string>;
  repo: Awaited<ReturnType<typeof preflight>>['repo'];
  /** bubblewrap's path when the run is sandboxed, else null. */
  bwrap: string | null;
  emit: (e: RunEvent) => void;
  spend: RunSpend;
  /** Records that failed to write, reported in the summary. */
  recordErrors: string[];
}

/** Runs one attempt of `task` and records it. Returns when (and after how long) the task should run again. */
async function runAttempt(ctx: AttemptContext, task: TaskRuntime): Promise<{ requeueAfterMs: number | null; costMicroUsd: number | null; rateLimited: boolean }> {
  const { opts, runId, stateFile } = ctx;
  const { spec, engine } = task;
  const n = task.used + task.rateLimited + 1;
  /** A retry is an attempt after a judged one; an attempt after a rate limit alone is not. */
  const isRetry = task.used > 0;
  const recDir = attemptDir(opts.home, runId, spec.key, n);
  fs.mkdirSync(recDir, { recursive: true });
  const files = {
    prompt: path.join(recDir, 'prompt.md'),
    worker: path.join(recDir, 'worker.log'),
    check: path.join(recDir, 'check.log'),
    receipt: path.join(recDir, 'receipt.json'),
    failure: path.join(recDir, 'failure.md'),
    setup: path.join(recDir, 'setup.log'),
  };
  const startedAt = Date.now();
  const attempt: AttemptState = { attempt: n, phase: 'preparing', verdict: null, startedAt, endedAt: null, workerPid: null, workerStartTime: null, tokensIn: null, tokensOut: null, costMicroUsd: null, checkExitCode: null, dir: recDir, notes: '' };
  task.state.attempts.push(attempt);
  task.state.status = 'preparing';
  ctx.emit({ type: 'attempt-started', key: spec.key, attempt: n, engine: spec.engine, model: task.state.model });
  void stateFile.save();

  const taskEnv = (): Record<string, string> => ({
    PORT: String(task.state.port),
    VERDICT_RUN_ID: runId,
    VERDICT_TASK_KEY: spec.key,
    VERDICT_TASK_DIR: task.state.dir,
    VERDICT_ATTEMPT: String(n),
  });

  let verdict: Verdict;
  let reason = '';
  let worker: Receipt | null = null;
  let usage: UsageReport | null = null;
  let checkExit: number | null = null;
  let checkOutput = '';
  let checkReceipt: Receipt | null = null;
  let workerTail = '';
  let seal: Seal | null = null;
  const prompt = task.failure && engine.retryContext === 'prompt' ? retryPrompt(spec.spec, task.failure) : spec.spec;
  fs.writeFileSync(files.prompt, prompt);

  try {
    if (!task.prepared) {
      await prepareTask(ctx, task, files.setup, taskEnv);
      task.prepared = true;
    }
    if (task.abort.signal.aborted) throw new Cancelled();
    const boxed = task.containment === 'bwrap';
    const gitAccess = task.links && boxed ? worktreeStepAccess(task.links) : { writable: [], env: {} };
    const workerScratch = stepScratch(opts.home, runId, spec.key, n, 'worker');
    const state = engineState(engine, ctx.env);
    const workerEnv: Record<string, string> = { ...engine.env, ...taskEnv(), ...(boxed ? scratchEnv(workerScratch) : {}), ...gitAccess.env };
    if (task.failure) {
      fs.writeFileSync(files.failure, task.failure);
      workerEnv.VERDICT_FAILURE_FILE = files.failure;
    }
    const argv = expandArgv(engine, { spec: prompt, taskdir: task.state.dir, model: task.state.model, engineArgs: spec.engineArgs, fullAccess: spec.fullAccess, nested: boxed });
    task.state.status = 'running';
    attempt.phase = 'running';
    const recent = new RingBuffer(256 * 1024);
    const run = supervise({
      file: ctx.binaries.get(spec.engine) ?? engine.binary,
      args: argv,
      cwd: task.state.dir,
      env: workerEnv,
      logFile: files.worker,
      timeoutMs: spec.timeoutMs,
      signal: task.abort.signal,
      killGraceMs: opts.killGraceMs,
      onSpawn: (pid) => {
        attempt.workerPid = pid;
        attempt.workerStartTime = processStartTime(pid);
        void stateFile.save();
      },
      idleTimeoutMs: spec.watchdogMs ?? undefined,
      finalEvent: { seen: finalEventSeen(engine, recent), graceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
      onOutput: (chunk) => recent.push(chunk),
      sandbox: stepPlan(ctx.bwrap, task.containment, [task.state.dir, workerScratch, ...state.dirs, ...gitAccess.writable], spec.network, state.files),
    });
    const res = await run;
    worker = res.receipt;
    workerTail = res.tail;
    usage = engine.parseOutput(readLog(files.worker));
    attempt.tokensIn = usage.tokensIn;
    attempt.tokensOut = usage.tokensOut;
    attempt.costMicroUsd = usage.costMicroUsd;

    if (worker.cancelled) throw new Cancelled();
    if (worker.spawnError) {
      verdict = 'ERROR';
      reason = `the worker could not start: ${worker.spawnError}`;
    } else if (worker.stalled) {
      verdict = 'STALLED';
      reason = `the worker printed nothing for ${Math.round((spec.watchdogMs ?? 0) / 1000)} s and was stopped`;
    } else if (worker.timedOut) {
      verdict = 'TIMEOUT';
      reason = `the worker ran out of time after ${Math.round(spec.timeoutMs / 1000)} s and was stopped`;
    } else {
      // Seal: nothing of the worker is alive (its sandbox is gone); the commit records the tree the check will judge.
      if (task.links && task.state.branch) {
        seal = await sealWorktree(task.links, task.state.branch, path.join(recDir, 'seal.index'), `verdict: ${spec.key} (run ${runId}, attempt ${n})\n\n${spec.verified ?? ''}`.trim(), ctx.repo?.identityArgs ?? []);
        fs.rmSync(path.join(recDir, 'seal.index'), { force: true });
      }
      task.state.status = 'checking';
      attempt.phase = 'checking';
      ctx.emit({ type: 'attempt-checking', key: spec.key, attempt: n });
      void stateFile.save();
      const checkScratch = stepScratch(opts.home, runId, spec.key, n, 'check');
      const check = await runCheck({
        check: spec.check,
        taskDir: task.state.dir,
        logFile: files.check,
        timeoutMs: spec.checkTimeoutMs,
        env: { ...taskEnv(), ...(boxed ? scratchEnv(checkScratch) : {}), ...gitAccess.env },
        expectFiles: spec.expectFiles,
        signal: task.abort.signal,
        sandbox: stepPlan(ctx.bwrap, task.containment, [task.state.dir, checkScratch], spec.network),
      });
      checkReceipt = check.receipt;
      checkExit = check.receipt.exitCode;
      checkOutput = check.output;
      if (check.receipt.cancelled) throw new Cancelled();
      const errorClass = worker.exitCode !== 0 && !worker.stoppedAfterFinal ? engine.classifyError(workerTail) : null;
      const exitNote = worker.stoppedAfterFinal
        ? `the engine printed its final event but kept running; it was stopped after ${Math.round((opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS) / 1000)} s`
        : worker.exitCode !== 0 ? `the worker exited ${worker.exitCode ?? worker.signal}` : '';
      if (check.passed) {
        verdict = 'PASS';
        if (exitNote) reason = `${exitNote}, but the check passed`;
      } else if (errorClass === 'rate_limit') {
        verdict = 'RATE_LIMITED';
        reason = `the engine was rate-limited (${check.reason})`;
      } else {
        verdict = 'FAIL';
        reason = check.reason + (exitNote ? `; ${exitNote}${errorClass ? ` (${errorClass})` : ''}` : '');
      }
    }
    if (verdict === 'PASS' && seal && task.links && task.state.branch) {
      // The branch moves to exactly the tree the check judged; files the check wrote are not in it.
      await advanceBranch(task.links, task.state.branch, seal);
      task.state.commit = seal.sha;
      task.summary.commit = seal.sha;
      if (!seal.changed) reason = 'the check passed but the worker changed no files; the branch stays at base_ref';
    }
  } catch (e) {
    if (e instanceof Cancelled || task.abort.signal.aborted) {
      verdict = 'CANCELLED';
      reason = 'the run was cancelled';
    } else {
      verdict = 'ERROR';
      reason = (e as Error).message;
    }
  }

  const endedAt = Date.now();
  const durationMs = endedAt - startedAt;
  const rateLimited = verdict === 'RATE_LIMITED' && task.rateLimited < MAX_RATE_LIMIT_REQUEUES;
  if (rateLimited) task.rateLimited++;
  else task.used++;
  const retryable = verdict === 'FAIL' || verdict === 'TIMEOUT' || verdict === 'STALLED';
  const willRetry = rateLimited || (retryable && task.used < spec.maxAttempts && !task.abort.signal.aborted);
  if (retryable) {
    task.failure = failureText({ attempt: n, verdict, check: spec.check, checkExitCode: checkExit, checkOutput, workerTail, reason });
  }

  attempt.phase = 'done';
  attempt.verdict = verdict;
  attempt.endedAt = endedAt;
  attempt.checkExitCode = checkExit;
  attempt.notes = reason;
  fs.writeFileSync(files.receipt, JSON.stringify({ worker, check: checkReceipt, verdict, reason, usage, sandbox: task.containment, seal }, null, 2));
  for (const step of ['worker', 'check'] as const) fs.rmSync(path.join(opts.home, 'scratch', runId, spec.key, `${n}-${step}`), { recursive: true, force: true });
  const tokens = usage && usage.tokensIn !== null && usage.tokensOut !== null ? usage.tokensIn + usage.tokensOut : null;
  const row: EvalRow = {
    run_id: runId,
    task_key: spec.key,
    spec: spec.spec,
    worker_engine: spec.engine,
    verdict,
    duration_ms: durationMs,
    worker_tokens: tokens,
    model: task.state.model,
    task_type: spec.taskType,
    retry: isRetry,
    identity: opts.identity,
    notes: reason,
    attempt: n,
    harness: engine.harness,
    lab: labOf(task.state.model),
    reported_model: usage?.reportedModel ?? null,
    access_plan: accessPlanOf(ctx.env),
    reasoning_effort: reasoningEffortOf(spec.engineArgs),
    sandbox: task.containment,
    tokens_in: usage?.tokensIn ?? null,
    tokens_out: usage?.tokensOut ?? null,
    tokens_cached: usage?.tokensCached ?? null,
    tokens_reasoning: usage?.tokensReasoning ?? null,
    cost_microusd: ctx.spend.cost(usage, task.state.model),
    check_exit_code: checkExit,
    check_output: tailBytes(checkOutput, CHECK_OUTPUT_ROW_BYTES),
    worker_exit_code: worker?.exitCode ?? null,
    run_name: opts.manifest.runName,
    host: shortHost(),
    started_at: new Date(startedAt).toISOString(),
    ended_at: new Date(endedAt).toISOString(),
    branch: task.state.branch,
    commit: verdict === 'PASS' ? task.state.commit : null,
    prompt_path: files.prompt,
    worker_log: files.worker,
    check_log: files.check,
    receipt_path: files.receipt,
  };
  try {
    await appendEvalRow(evalLogPath(opts.home), row);
    ctx.spend.rowWritten();
  } catch (e) {
    // The attempt happened and its receipt is on disk; only the eval row is missing. Say so, loudly, and go on.
    const message = `the eval row of ${spec.key} attempt ${n} (${verdict}) could not be written: ${(e as Error).message}`;
    ctx.recordErrors.push(message);
    ctx.emit({ type: 'task-note', key: spec.key, note: message });
  }

  const s = task.summary;
  s.attempts = n;
  s.durationMs += durationMs;
  s.tokens = s.tokens === null || tokens === null ? null : s.tokens + tokens;
  s.verdict = verdict;
  s.reason = verdict === 'PASS' ? '' : reason;
  s.checkOutput = row.check_output;
  task.state.status = willRetry ? 'retry_queued' : verdict;
  ctx.emit({ type: 'attempt-finished', key: spec.key, attempt: n, verdict, reason, durationMs, tokens, willRetry });
  void stateFile.save();
  const costMicroUsd = row.cost_microusd;
  if (!willRetry) return { requeueAfterMs: null, costMicroUsd, rateLimited: verdict === 'RATE_LIMITED' };
  if (rateLimited) return { requeueAfterMs: rateLimitBackoffMs(task.rateLimited, workerTail, opts.rateLimitBaseMs ?? RATE_LIMIT_BASE_MS), costMicroUsd, rateLimited: true };
  return { requeueAfterMs: 0, costMicroUsd, rateLimited: false };
}

class Cancelled extends Error {}

/** Ends a task BUDGET_EXCEEDED: its next attempt was not started (no eval row: no worker ran). */
function budgetExceeded(ctx: AttemptContext, task: TaskRuntime, reason: string): void {
  task.state.status = 'BUDGET_EXCEEDED';
  task.summary.verdict = 'BUDGET_EXCEEDED';
  task.summary.reason = reason;
  ctx.emit({ type: 'task-skipped', key: task.spec.key, reason });
  void ctx.stateFile.save();
}

/**
 * --baseline: prepares the task dir and runs the check before any worker. True when the check already passes (the
 * task is then SKIPPED) or the dir could not be prepared (the task is then ERROR); false when the worker should run.
 * Records go to `tasks/<key>/baseline/`; no eval row is written, as no worker ran.
 */
async function baselinePasses(ctx: AttemptContext, task: TaskRuntime): Promise<boolean> {
  const { opts, stateFile } = ctx;
  const dir = path.join(runDir(opts.home, ctx.runId), 'tasks', task.spec.key, 'baseline');
  fs.mkdirSync(dir, { recursive: true });
  const env = (): Record<string, string> => ({ PORT: String(task.state.port), VERDICT_RUN_ID: ctx.runId, VERDICT_TASK_KEY: task.spec.key, VERDICT_TASK_DIR: task.state.dir, VERDICT_ATTEMPT: '0' });
  task.state.status = 'baseline';
  void stateFile.save();
  let reason: string;
  let status: 'SKIPPED' | 'ERROR';
  try {
    await prepareTask(ctx, task, path.join(dir, 'setup.log'), env);
    task.prepared = true;
    const scratch = stepScratch(opts.home, ctx.runId, task.spec.key, 0, 'check');
    const boxed = task.containment === 'bwrap';
    const check = await runCheck({
      check: task.spec.check,
      taskDir: task.state.dir,
      logFile: path.join(dir, 'check.log'),
      timeoutMs: task.spec.checkTimeoutMs,
      env: { ...env(), ...(boxed ? scratchEnv(scratch) : {}) },
      expectFiles: task.spec.expectFiles,
      signal: task.abort.signal,
      sandbox: stepPlan(ctx.bwrap, task.containment, [task.state.dir, scratch], task.spec.network),
    });
    if (!check.passed) return false;
    status = 'SKIPPED';
    reason = 'baseline: the check already passes on the untouched tree, so it cannot prove a worker did anything; the task was not run';
  } catch (e) {
    if (task.abort.signal.aborted) return false;
    status = 'ERROR';
    reason = `baseline: ${(e as Error).message}`;
  }
  task.state.status = status;
  task.summary.verdict = status;
  task.summary.reason = reason;
  ctx.emit({ type: 'task-skipped', key: task.spec.key, reason });
  void stateFile.save();
  return true;
}

/** Creates the task dir (plain folder or worktree + includes), assigns PORT, runs `setup` once. */
async function prepareTask(ctx: AttemptContext, task: TaskRuntime, setupLog: string, taskEnv: () => Record<string, string>): Promise<void> {
  const { manifest } = ctx.opts;
  task.state.port = await reservePort();
  if (ctx.repo && task.state.branch) {
    task.links = await addWorktree(ctx.repo, task.state.dir, task.state.branch, { signal: task.abort.signal });
    copyIncludes(ctx.repo.root, task.state.dir, manifest.include);
  } else {
    const moved = moveAsidePrevious(task.state.dir, ctx.runId);
    if (moved) ctx.emit({ type: 'task-note', key: task.spec.key, note: `the task dir held files from an earlier run; they were moved to ${moved} so they cannot pass this run's check` });
    fs.mkdirSync(task.state.dir, { recursive: true });
  }
  if (manifest.setup) {
    const scratch = stepScratch(ctx.opts.home, ctx.runId, task.spec.key, 0, 'setup');
    const boxed = task.containment === 'bwrap';
    const { receipt } = await supervise({
      file: 'bash',
      args: ['-c', manifest.setup],
      cwd: task.state.dir,
      env: { ...taskEnv(), ...(boxed ? scratchEnv(scratch) : {}) },
      logFile: setupLog,
      timeoutMs: task.spec.checkTimeoutMs,
      signal: task.abort.signal,
      killGraceMs: ctx.opts.killGraceMs,
      sandbox: stepPlan(ctx.bwrap, task.containment, [task.state.dir, scratch], task.spec.network),
    });
    if (receipt.cancelled) throw new Cancelled();
    if (receipt.exitCode !== 0) {
      throw new Error(`setup \`${manifest.setup}\` ${receipt.timedOut ? 'timed out' : `exited ${receipt.exitCode ?? receipt.signal}`}; see ${setupLog}`);
    }
  }
}

/**
 * Plain mode reuses `<workdir>/<key>`: files an earlier run left there could make this run's check pass with no work
 * done. A non-empty dir is renamed to `<workdir>/.verdict-previous/<runId>/<key>` (nothing is deleted).
 * Returns the new path, or null when there was nothing to move.
 */
function moveAsidePrevious(dir: string, runId: string): string | null {
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return null;
  }
  if (!entries.length) return null;
  const target = path.join(path.dirname(dir), '.verdict-previous', runId, path.basename(dir));
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.renameSync(dir, target);
  return target;
}

/** Worker logs above this size are parsed from their last bytes only, bytes. */
const MAX_PARSED_LOG_BYTES = 32 * 1024 * 1024;

function readLog(file: string): string {
  try {
    const size = fs.statSync(file).size;
    if (size <= MAX_PARSED_LOG_BYTES) return fs.readFileSync(file, 'utf8');
    const fd = fs.openSync(file, 'r');
    const buf = Buffer.alloc(MAX_PARSED_LOG_BYTES);
    fs.readSync(fd, buf, 0, buf.length, size - buf.length);
    fs.closeSync(fd);
    return buf.toString('utf8');
  } catch {
    return '';
  }
}

/** `YYYYMMDD-HHMMSS-xxxx` (UTC, 4 random hex): sortable by start time, unique across processes. */
export function newRunId(now = new Date()): string {
  const iso = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${iso}-${crypto.randomBytes(2).toString('hex')}`;
}
