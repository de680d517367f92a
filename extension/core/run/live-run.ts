/**
 * A run being set up and what its parts share once it is: {@link openRun} does preflight, takes the run's locks,
 * writes (or reopens) state.json and builds the context every attempt reads and the tasks' runtimes; the task graph
 * (task-graph.ts), the attempt loop (attempt-loop.ts), the control handler (control-handler.ts) and the teardown
 * (teardown.ts) all work on the {@link LiveRun} it returns.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { EngineSpec } from '../../../engines/types';
import { runDir, worktreePath } from '../config/home';
import { taskBranch } from '../git/worktree';
import { shortHost } from '../host/hostname';
import { StateFile, type RunState } from '../live/state';
import type { Manifest, TaskSpec } from '../manifest/types';
import { memoryCapMechanism } from '../process/memory-cap';
import { startSpawnHelper } from '../process/spawner';
import { sandboxView, taskContainment } from './containment';
import { writeFrozenManifest } from './frozen-manifest';
import { DEFAULT_POLICY, PreflightError, preflight, type Preflight, type ReaderEngines } from './preflight';
import { engineVersionWarnings } from './engine-versions';
import { priorTasks } from './prior';
import { DEFAULT_MAX_QUOTA_WAIT_MS, EngineWaits, wakeTime } from './quota-wait';
import { ContinueError, reopenState, takeRun, type RerunRules, type RunContinuation } from './resume';
import type { RunOptions } from './run-options';
import type { PriorTask, RunEvent } from './run-types';
import { continuedBudgets, priorSpend, RunSpend, subscriptionEngines } from './spend';
import { loadRouteEvidence } from './route-choice';
import type { GroupStats } from '../scoreboard/group-stats';
import { freshRuntime, type AttemptContext, type TaskRuntime } from './steps/context';
import { lockRun, lockWorkdir, RunBusyError, selfHolder, WorkdirBusyError } from './workdir-lock';
import { spendLine } from '../../../schemas/spend';
import type { WorkflowSection } from '../manifest/sections';

/** One live run as its parts share it. */
export interface LiveRun {
  opts: RunOptions;
  manifest: Manifest;
  home: string;
  runId: string;
  /** The run's records folder, `<home>/runs/<run_id>/`. */
  dir: string;
  state: RunState;
  stateFile: StateFile;
  /** What every attempt of the run reads (steps/context.ts). */
  ctx: AttemptContext;
  emit: (e: RunEvent) => void;
  /** Every task of the run, in the manifest's order (generated tasks appended as they join), and by key. */
  tasks: TaskRuntime[];
  byKey: Map<string, TaskRuntime>;
  /** Every key of the run's frozen manifest (a resumed run holds only some of them) and of the tasks planners added. */
  frozenKeys: Set<string>;
  /** Tasks of the earlier runs a run resumed as a new run continues, by key: they settle `after` along that chain. */
  prior: ReadonlyMap<string, PriorTask>;
  /** The run this one continues (resume, rerun of a run not live), or null for a new run. */
  cont: RunContinuation | null;
  spend: RunSpend;
  /** engine "auto": the scoreboard's rows when the run started, the evidence of its routing (run/route-choice.ts). */
  routeEvidence: GroupStats[];
  /** The engines' quota waits (run/quota-wait.ts), kept in state.json. */
  waits: EngineWaits;
  maxParallel: number;
  /** ms since the epoch (a continued run's first start). */
  startedAt: number;
  /** Release the run folder's lock, and in plain mode the workdir's. */
  releaseRun: () => Promise<void>;
  releaseWorkdir: (() => Promise<void>) | null;
  /** The run was cancelled (its signal, or the `cancel` verb): nothing more starts. */
  cancelled: boolean;
  /** The task's runtime for a spec of this run (a generated task joining it too). */
  runtimeOf(spec: TaskSpec): TaskRuntime;
}

/**
 * Sets the run up: preflight (nothing created when it fails; `readers`: the engines of the workflows' readers of a task), the run's and (plain mode) the workdir's locks, the
 * continued run taken over (`rerun`: what the workflows say of running its tasks again; `sections`: every workflow's
 * section, run/workflows/index.ts WORKFLOW_SECTIONS, for what reads a manifest during the run), the frozen manifest, state.json written and its heartbeat started, the run's opening notes said.
 * @throws PreflightError before anything is created (also when the run or the workdir is held by another)
 */
export async function openRun(opts: RunOptions, readers: ReaderEngines, rerun: RerunRules, sections: readonly WorkflowSection[]): Promise<LiveRun> {
  const { manifest, home } = opts;
  const env = opts.env ?? process.env;
  startHelperEarly(opts);
  const pre = await preflight(
    manifest,
    opts.engines,
    env,
    home,
    {
      sandbox: opts.sandbox ?? DEFAULT_POLICY.sandbox,
      allowFullAccess: opts.allowFullAccess ?? DEFAULT_POLICY.allowFullAccess,
      configSource: opts.configSource ?? DEFAULT_POLICY.configSource,
      enginesElsewhere: opts.attemptSteps !== undefined,
    },
    readers,
  );
  const { cont, runId, releaseRun, releaseWorkdir } = await takeLocks(opts, rerun, sections);
  const dir = runDir(home, runId);
  fs.mkdirSync(dir, { recursive: true });
  if (!cont) writeFrozenManifest(home, runId, manifest);
  const maxParallel = opts.maxParallel ?? manifest.maxParallel;
  const startedAt = cont?.state.startedAt ?? Date.now();
  const runtimeOf = (spec: TaskSpec) => taskRuntime(opts, runId, cont, pre, spec);
  const tasks: TaskRuntime[] = manifest.tasks.map(runtimeOf);
  const state = openState(opts, runId, cont, pre, maxParallel, startedAt, tasks);
  const stateFile = new StateFile(path.join(dir, 'state.json'), state);
  const waits = new EngineWaits(state, opts.quotaMaxWaitMs ?? DEFAULT_MAX_QUOTA_WAIT_MS);
  await stateFile.save();
  stateFile.start();
  const emit = (e: RunEvent) => opts.onEvent?.(e);
  await sayOpening(emit, opts, runId, stateFile, pre, cont, waits, tasks, maxParallel, env);
  const spend = await openSpend(opts, cont, emit);
  // engine "auto": the scoreboard as it stands now is the evidence of every routing decision of this run.
  const routeEvidence = manifest.tasks.some((t) => t.route) ? await loadRouteEvidence(home) : { rows: [], note: null };
  if (routeEvidence.note) emit({ type: 'run-note', note: routeEvidence.note });
  // Spent, reserved and budget in state.json as they change (every view reads them there); the run's notes at 50 %,
  // 80 % and 100 % of the budget.
  state.spend = spend.snapshot();
  spend.onChange = (s, note) => {
    state.spend = s;
    void stateFile.saveRun();
    if (note) emit({ type: 'run-note', note });
  };
  // The whole manifest's keys as it compiled them (the frozen copy holds the whole text): not read back from that copy.
  const frozenKeys = new Set(manifest.taskKeys ?? manifest.tasks.map((t) => t.key));
  const byKey = new Map(tasks.map((t) => [t.spec.key, t]));
  const ctx = attemptContext(opts, env, runId, cont, pre, stateFile, emit, spend, () => [...new Set([...frozenKeys, ...byKey.keys()])], sections);
  // Runs that resumed an earlier one as a new run (before resume kept the id) still settle `after` along that chain.
  const prior = opts.prior ?? (state.resumedFrom ? priorTasks(home, state.resumedFrom) : new Map<string, PriorTask>());
  return {
    opts,
    manifest,
    home,
    runId,
    dir,
    state,
    stateFile,
    ctx,
    emit,
    tasks,
    byKey,
    frozenKeys,
    prior,
    cont,
    spend,
    waits,
    maxParallel,
    startedAt,
    releaseRun,
    releaseWorkdir,
    cancelled: false,
    runtimeOf,
    routeEvidence: routeEvidence.rows,
  };
}

/**
 * Starts the spawn helper so that its Node start-up overlaps preflight instead of delaying the first attempt (a no-op
 * when it already runs; none when the steps run elsewhere). Only a head start: when it cannot start, the first step's
 * spawn says why. Never throws.
 */
function startHelperEarly(opts: RunOptions): void {
  if (!opts.attemptSteps) {
    try {
      startSpawnHelper();
    } catch {
      // reported by the first spawn
    }
  }
}

/**
 * The run's locks: one orchestrator per run (a continued run is taken over under its folder lock, refused while
 * another holds it; a new run gets a new id and its folder's lock) and, in plain mode, the workdir, this run's alone.
 * Returns the continuation (null for a new run), the run's id and the locks' releases (`releaseWorkdir` null in
 * worktree mode). A workdir already held releases the run's lock again. `rerun`: what the workflows say of running a
 * continued run's tasks again (run/resume.ts tasksToRunAgain).
 * @throws PreflightError when the run or the workdir is held by another, or the run cannot be continued
 */
async function takeLocks(
  opts: RunOptions,
  rerun: RerunRules,
  sections: readonly WorkflowSection[],
): Promise<{
  cont: RunContinuation | null;
  runId: string;
  releaseRun: () => Promise<void>;
  releaseWorkdir: (() => Promise<void>) | null;
}> {
  const { manifest, home } = opts;
  let cont: RunContinuation | null = null;
  try {
    cont = opts.continueRun ? await takeRun(home, opts.continueRun, opts.identity, opts.engines, rerun, sections) : null;
  } catch (e) {
    if (e instanceof RunBusyError || e instanceof ContinueError) throw new PreflightError([e.message]);
    throw e;
  }
  const runId = cont?.state.runId ?? newRunId();
  const releaseRun = cont?.release ?? (await lockRun(runDir(home, runId), selfHolder(runId, opts.identity)));
  // Plain mode: the workdir is this run's alone (refused before anything is created when another run holds it).
  let releaseWorkdir: (() => Promise<void>) | null = null;
  if (!manifest.worktrees) {
    try {
      releaseWorkdir = await lockWorkdir(manifest.workdir, selfHolder(runId, opts.identity));
    } catch (e) {
      await releaseRun();
      if (e instanceof WorkdirBusyError) throw new PreflightError([e.message]);
      throw e;
    }
  }
  return { cont, runId, releaseRun, releaseWorkdir };
}

/**
 * The run's state.json content: a continued run's reopened (reopenState, with this host's memory cap), else a new
 * one (newState). A continued run forced over lint errors says so too: in its resume's entry, and on the run (it ran
 * forced once). `startedAt` in ms since the epoch.
 */
function openState(
  opts: RunOptions,
  runId: string,
  cont: RunContinuation | null,
  pre: Preflight,
  maxParallel: number,
  startedAt: number,
  tasks: TaskRuntime[],
): RunState {
  const state = cont
    ? Object.assign(reopenState(cont, pre.containment.summary), { memoryCap: memoryCapMechanism().line })
    : newState(opts, runId, pre, maxParallel, startedAt, tasks);
  if (cont && opts.forced) {
    state.forced = true;
    const resume = state.resumes?.at(-1);
    if (resume) resume.forced = true;
  }
  return state;
}

/**
 * The run's spend: a continued run goes on under the budgets it had (or those its resume gave) and from what it spent,
 * never from 0 (said in a run note when it has a budget); the spend history of earlier runs loaded (per-task budgets
 * read it). Emits through `emit`.
 */
async function openSpend(opts: RunOptions, cont: RunContinuation | null, emit: (e: RunEvent) => void): Promise<RunSpend> {
  const { manifest, home } = opts;
  const budgets = continuedBudgets(manifest, cont?.state ?? null, opts.continueRun);
  const spend = new RunSpend(home, budgets.usd, opts.postgresUrl ?? null, {
    budgetTokens: budgets.tokens,
    subscription: subscriptionEngines(manifest.logins, opts.logins),
  });
  if (cont) {
    spend.seed(priorSpend(cont.state));
    const line = spendLine(spend.snapshot());
    if (line && (budgets.usd !== null || budgets.tokens !== null))
      emit({ type: 'run-note', note: `budget: the run goes on from what it spent before: ${line}` });
  }
  await spend.loadHistory(
    home,
    manifest.tasks.some((t) => t.budgetUsd !== undefined || t.budgetTokens !== undefined),
  );
  return spend;
}

/**
 * What every attempt of the run reads (steps/context.ts): the preflight's binaries, repository (a continued run's
 * task branches start where the run's did, whatever base_ref names now) and containment, the sandbox's view (the
 * config's, the manifest's and the config file's `hide`), and `taskKeys`, every key of the run as it stands.
 */
function attemptContext(
  opts: RunOptions,
  env: NodeJS.ProcessEnv,
  runId: string,
  cont: RunContinuation | null,
  pre: Preflight,
  stateFile: StateFile,
  emit: (e: RunEvent) => void,
  spend: RunSpend,
  taskKeys: () => string[],
  sections: readonly WorkflowSection[],
): AttemptContext {
  const repo = pre.repo && cont?.state.baseSha ? { ...pre.repo, baseSha: cont.state.baseSha } : pre.repo;
  const hide = [...(opts.hide ?? []), ...(opts.manifest.hide ?? []), ...(opts.configSource ? [opts.configSource] : [])];
  return {
    opts,
    env,
    runId,
    stateFile,
    binaries: pre.binaries,
    repo,
    bwrap: pre.containment.bwrap,
    netstack: pre.containment.netstack,
    view: sandboxView({ sockets: opts.sockets, hide, expose: opts.expose }, env),
    emit,
    spend,
    recordErrors: [],
    stateBaselines: new Map(),
    inheritedEnv: { ...process.env },
    taskKeys,
    sections,
  };
}

/** A task's runtime: a continued run's task keeps its state object (attempts, branch, commit) and, unless run again, its summary. */
function taskRuntime(opts: RunOptions, runId: string, cont: RunContinuation | null, pre: Preflight, spec: TaskSpec): TaskRuntime {
  const { manifest, home } = opts;
  const engine = opts.engines.get(spec.engine) as EngineSpec;
  const branch = manifest.worktrees ? taskBranch(runId, spec.key) : null;
  const taskDir = manifest.worktrees ? worktreePath(home, runId, spec.key) : path.join(manifest.workdir, spec.key);
  const model = spec.model ?? engine.defaultModel;
  // One run again is queued by reopenState.
  const earlier = cont?.state.tasks.find((t) => t.key === spec.key);
  const kept = earlier && !cont?.again.has(spec.key) ? cont?.kept.get(spec.key) : undefined;
  // A run started before state.json carried it gets the task's workflow place from the frozen manifest it compiles.
  if (earlier && spec.workflow && !earlier.workflow) earlier.workflow = spec.workflow;
  return {
    ...freshRuntime(),
    spec,
    engine,
    containment: taskContainment(pre.containment, spec.fullAccess),
    used: 0,
    failure: null,
    startFrom: [],
    state: earlier ?? {
      key: spec.key,
      engine: spec.engine,
      model,
      taskType: spec.taskType,
      verified: spec.verified,
      status: 'queued',
      dir: taskDir,
      branch,
      commit: null,
      port: null,
      attempts: [],
      ...(spec.after.length ? { after: spec.after } : {}),
      ...(spec.group !== undefined ? { group: spec.group } : {}),
      ...(spec.candidate !== undefined ? { candidate: spec.candidate } : {}),
      ...(spec.select !== undefined ? { select: spec.select } : {}),
      ...(spec.workflow !== undefined ? { workflow: spec.workflow } : {}),
    },
    summary: kept ?? {
      key: spec.key,
      verdict: 'CANCELLED',
      attempts: 0,
      durationMs: 0,
      tokens: 0,
      verified: spec.verified,
      branch,
      commit: earlier?.commit ?? null,
      reason: '',
      checkOutput: '',
    },
  };
}

/** A new run's state.json. */
function newState(opts: RunOptions, runId: string, pre: Preflight, maxParallel: number, startedAt: number, tasks: TaskRuntime[]): RunState {
  const { manifest } = opts;
  return {
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
    memoryCap: memoryCapMechanism().line,
    paused: false,
    draining: false,
    control: [],
    ...(opts.forced ? { forced: true as const } : {}),
    tasks: tasks.map((t) => t.state),
  };
}

/** The run's first events: started, its containment and memory cap, engine versions it was not tested with, uncommitted changes left out, engines still waiting, full_access tasks. */
async function sayOpening(
  emit: (e: RunEvent) => void,
  opts: RunOptions,
  runId: string,
  stateFile: StateFile,
  pre: Preflight,
  cont: RunContinuation | null,
  waits: EngineWaits,
  tasks: TaskRuntime[],
  maxParallel: number,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  emit({ type: 'run-started', runId, stateFile: stateFile.file, tasks: tasks.length, maxParallel });
  emit({ type: 'run-note', note: pre.containment.summary });
  // Where no cgroup can be had the steps run without a memory limit: said here once, and in every row (mem_cap).
  emit({ type: 'run-note', note: memoryCapMechanism().line });
  for (const warning of await engineVersionWarnings(pre.binaries, env)) emit({ type: 'run-note', note: warning });
  if (pre.repo && pre.repo.uncommitted > 0 && !cont) {
    emit({
      type: 'run-note',
      note: `worktrees start from ${pre.repo.baseSha.slice(0, 10)} (base_ref ${opts.manifest.baseRef}); ${pre.repo.uncommitted} uncommitted change(s) in ${pre.repo.root} are not in them (commit them first to include them)`,
    });
  }
  for (const [engine, w] of waits.active(Date.now())) {
    emit({
      type: 'run-note',
      note: `engine ${engine} waits for its quota until ${wakeTime(w.until)} (${w.task} attempt ${w.attempt}: "${w.reason}"); no attempt on it starts before then${w.capped ? ', and the first after it probes the engine' : ''} (verdict unwait ${runId} ${engine} clears it)`,
    });
  }
  for (const t of tasks) {
    if (t.spec.fullAccess && pre.containment.bwrap)
      emit({
        type: 'task-note',
        key: t.spec.key,
        note: "full_access (allowed by your config): this task runs without the sandbox, with its engine's own sandbox off",
      });
  }
}

/** `YYYYMMDD-HHMMSS-xxxx` (UTC, 4 random hex): sortable by start time, unique across processes. */
export function newRunId(now = new Date()): string {
  const iso = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${iso}-${crypto.randomBytes(2).toString('hex')}`;
}
