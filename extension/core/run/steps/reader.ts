/**
 * Runs one read-only model engine on a task's work — a reviewer (run/steps/review.ts) or a critic
 * (run/workflows/critique/step.ts): in its own sandbox where the task dir is read-only and VERDICT_HOME hidden, started in its
 * own scratch dir (project files the worker wrote there — AGENTS.md, CLAUDE.md, .claude/settings.json with hooks,
 * opencode.json, .codex/ — must not configure or instruct it; it reads the task dir by its path), with its engine's
 * guarded settings put back after it, as after a worker. What it answers is read from its final message by the caller.
 * superviseReadOnly, the supervised run itself, is shared with the ranking reviewers (run/workflows/best-of-n/ranking.ts).
 */
import path from 'node:path';
import { expandArgv } from '../../../../engines';
import type { EngineSpec, UsageReport } from '../../../../engines/types';
import { restoreWorktreeLinks, worktreeReadAccess } from '../../git/worktree';
import { RingBuffer } from '../../process/ring-buffer';
import { supervise, type Receipt } from '../../process/supervisor';
import { runDir } from '../../config/home';
import type { EngineChoice } from '../../manifest/types';
import type { Containment } from '../../process/sandbox';
import { engineState, hiddenFromSteps, otherEnginesState, readerStateView, scratchEnv, stepCaps, stepPlan } from '../containment';
import { setIdNote } from '../../process/set-id';
import { readerEnd } from '../reader-end';
import { changedFiles, putBackNote, restoreState, snapshotState, type StateSnapshot } from '../state-guard';
import { Cancelled, type AttemptContext, type AttemptIo, type TaskRuntime } from './context';
import { FINAL_EVENT_GRACE_MS, finalEventSeen, logSize, readLog } from './work';
import { usageMeter, withCutPart } from '../usage-meter';
import { usageTokens, type ReaderStep } from '../spend';

/** What one read-only engine run left: its receipt, usage and cost, its final message, or why it gave none. */
export interface ReaderRun {
  engine: EngineSpec;
  /** The model asked for (the choice's, else the engine's default); null when the engine chose. */
  model: string | null;
  receipt: Receipt;
  usage: UsageReport;
  /** Integer micro-USD; null when unknown. */
  costMicroUsd: number | null;
  /** The engine's final message (engines/*: finalMessage); null when it gave none. */
  message: string | null;
  /**
   * Why its answer does not count (could not start, stalled, timed out, kept running after its final event, killed by
   * a signal, exited non-zero: run/reader-end.ts); null when it ended on its own. `message` is then null.
   */
  failure: string | null;
}

/**
 * Thrown by runReader when the task was stopped while its reader ran (a stop, the run cancelled, the spend past a
 * budget): a Cancelled that carries what the reader left — its receipt, and the usage and cost read from its log so far
 * (`failure` says it was stopped, `message` is null) — so that its row keeps what it spent.
 */
export class ReaderStopped extends Cancelled {
  constructor(readonly run: ReaderRun) {
    super(run.failure ?? 'stopped');
  }
}

/** One read-only run: who, with which prompt, writing where. */
export interface ReaderRequest {
  choice: EngineChoice;
  /** What the run is called in notes (`reviewer 2`, `critic 1`). */
  role: string;
  /** Which reader it is, for its budget (spend.ts ReaderStep: REVIEWER, or a workflow's own). */
  reader: ReaderStep;
  prompt: string;
  /** The run's scratch dir (writable, where it starts; removed by the caller). */
  scratch: string;
  /** Where its raw output goes. */
  logFile: string;
  /** Variables beside the task's (VERDICT_REVIEWER, VERDICT_REVIEW_MATERIAL…). */
  env: Record<string, string>;
}

/**
 * Runs `req.choice`'s engine once over `task`'s dir, read-only, under the task's time limit and watchdog.
 * @throws Cancelled when the task was stopped (ReaderStopped, with what it spent, once it had started); Error when it
 *   could not be set up (the caller records it)
 */
export async function runReader(ctx: AttemptContext, task: TaskRuntime, io: AttemptIo, req: ReaderRequest): Promise<ReaderRun> {
  const { opts } = ctx;
  const { spec } = task;
  const engine = opts.engines.get(req.choice.engine) as EngineSpec;
  const model = req.choice.model ?? engine.defaultModel;
  const gitAccess = task.links && io.boxed ? worktreeReadAccess(task.links) : { readOnly: [], env: {} };
  // Its cost counts against budget_usd (the run's and the task's) like an attempt's: reserved before it starts (waiting
  // while a step of its engine that nothing prices runs), settled with its cost, or charged its reservation when that
  // stays unknown. Past the budget it does not start.
  const reservation = await ctx.spend.admitReader(engine, model, spec, req.reader, task.abort.signal, (note) => ctx.emit({ type: 'run-note', note }));
  if (reservation === null) throw new Cancelled();
  if (typeof reservation === 'string') throw new Error(`not started: ${reservation}`);
  let costMicroUsd: number | null = null;
  let tokens: number | null = null;
  try {
    const run = await readOnce(ctx, task, io, req, engine, model, gitAccess, (usage) => ctx.spend.readerProgress(reservation, usage, model, engine));
    costMicroUsd = run.costMicroUsd;
    tokens = usageTokens(run.usage);
    return run;
  } catch (e) {
    // Stopped while it ran: what it spent until then is what it cost.
    if (e instanceof ReaderStopped) {
      costMicroUsd = e.run.costMicroUsd;
      tokens = usageTokens(e.run.usage);
    }
    throw e;
  } finally {
    ctx.spend.settle(reservation, costMicroUsd, tokens);
  }
}

/** runReader's supervised run, once its cost is reserved. */
async function readOnce(
  ctx: AttemptContext,
  task: TaskRuntime,
  io: AttemptIo,
  req: ReaderRequest,
  engine: EngineSpec,
  model: string | null,
  gitAccess: { readOnly: string[]; env: Record<string, string> },
  onUsage: (usage: UsageReport) => void,
): Promise<ReaderRun> {
  const { opts } = ctx;
  const { spec } = task;
  const { receipt, tail, cutUsage } = await superviseReadOnly(ctx, {
    engine,
    model,
    prompt: req.prompt,
    scratch: req.scratch,
    logFile: req.logFile,
    env: { ...engine.env, ...io.taskEnv(), ...(io.boxed ? scratchEnv(req.scratch) : {}), ...gitAccess.env, ...req.env },
    timeouts: spec,
    signal: task.abort.signal,
    containment: task.containment,
    // Read-only: the task dir (bound back over the hidden workdir / VERDICT_HOME) and the worktree's admin dir; the
    // repository's objects only, never the worker's (worktreeReadAccess): the reviewer's own git shows the real diff.
    readOnly: [task.state.dir, ...gitAccess.readOnly],
    hidden: hiddenFromSteps(opts.home, opts.manifest.worktrees ? null : opts.manifest.workdir),
    noteKey: spec.key,
    role: req.role,
    onUsage,
  });
  if (task.links) restoreWorktreeLinks(task.links);
  const log = readLog(req.logFile);
  const usage = uncutUsage(engine.parseOutput(log), cutUsage);
  if (receipt.cancelled) {
    const why: unknown = task.abort.signal.reason;
    const failure = `stopped before it answered (${typeof why === 'string' ? why : 'the run was cancelled'})`;
    throw new ReaderStopped({ engine, model, receipt, usage, costMicroUsd: ctx.spend.cost(usage, model, engine), message: null, failure });
  }
  const who = req.role.replace(/ \d+$/, '');
  // An answer counts only from a reader that ended on its own (exit 0): code it ran may have written into its output
  // and then killed it (run/reader-end.ts).
  const errorClass = receipt.exitCode !== 0 && !receipt.stoppedAfterFinal ? engine.classifyError(tail) : null;
  const failure = readerEnd(
    receipt,
    `the ${who}`,
    { timeoutMs: spec.timeoutMs, watchdogMs: spec.watchdogMs, finalGraceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
    errorClass,
  );
  return {
    engine,
    model,
    receipt,
    usage,
    costMicroUsd: ctx.spend.cost(usage, model, engine),
    message: failure ? null : engine.finalMessage(log),
    failure,
  };
}

/** One read-only engine run as review, critique and ranking make it (see {@link superviseReadOnly}). */
export interface ReadOnlyRun {
  engine: EngineSpec;
  model: string | null;
  prompt: string;
  /** Its working directory and only writable dir besides `writable` and its own view of the engine's state (readerStateView). */
  scratch: string;
  /** More folders it may write (an inputs engine's TMPDIR); absent: none. */
  writable?: string[];
  /** true: the `hidden` folders are read-only too, not throwaway writable ones (BwrapPlan hiddenReadOnly). */
  hiddenReadOnly?: boolean;
  logFile: string;
  /** The whole environment added to the inherited one (engine.env included). */
  env: Record<string, string>;
  /** Inherited variables it must not get (a ranking reviewer: every VERDICT_*). */
  unsetEnv?: readonly string[];
  /** The task's limits: ms, whether it has the network, and its caps (MB: stepCaps). */
  timeouts: { timeoutMs: number; watchdogMs: number | null; network: boolean | 'host'; memoryMb?: number; logMaxMb?: number };
  signal: AbortSignal;
  /** 'bwrap' sandboxes it (when bubblewrap is here); 'none' runs it as it is. */
  containment: Containment;
  /** Shown read-only inside the sandbox (bound back over `hidden`). */
  readOnly: string[];
  /** Hidden from it (tmpfs). */
  hidden: string[];
  /** The task a note about put-back engine settings is on, and who it names (`reviewer 2`). */
  noteKey: string;
  role: string;
  /**
   * Told its usage so far as its engine streams it (engines with streamUsage; run/usage-meter.ts), for the budget
   * (RunSpend.readerProgress); absent: its usage is read only when it ends. Must not throw.
   */
  onUsage?: (usage: UsageReport) => void;
}

/**
 * Supervises one read-only engine run: its argv for the prompt, started in `scratch` under the task's time limit and
 * watchdog, sandboxed (scratch writable; the engine's state dirs its own empty folders with only the login and settings
 * shared, containment.ts readerStateView; its private files copied), with its engine's
 * guarded settings put back after it (a note says what was). Its stdout and stderr reach `logFile` through a socket the
 * spawn helper relays (SuperviseOptions.relayOutput), never as the file itself. Returns the receipt and the output's
 * tail, and when the log was cut to its log_max_mb what its cut parts reported (`cutUsage`, counts only: the log
 * alone holds less; see uncutUsage); the log is in `logFile`. Shared by runReader (reviewers, critics) and run/workflows/best-of-n/ranking.ts (ranking
 * reviewers).
 */
export async function superviseReadOnly(
  ctx: AttemptContext,
  run: ReadOnlyRun,
): Promise<{ receipt: Receipt; tail: string; cutUsage: Partial<UsageReport> | null }> {
  const { opts } = ctx;
  const { engine } = run;
  const boxed = run.containment === 'bwrap';
  const state = engineState(engine, ctx.env);
  const view = readerStateView(state);
  const argv = expandArgv(engine, {
    spec: run.prompt,
    taskdir: run.scratch,
    model: run.model,
    engineArgs: [],
    fullAccess: false,
    nested: boxed,
    root: process.getuid?.() === 0,
  });
  let guard: StateSnapshot | null = null;
  if (boxed && state.guarded.length) {
    guard =
      ctx.stateBaselines.get(engine.name) ?? snapshotState(state.guarded, path.join(runDir(opts.home, ctx.runId), 'engine-state', engine.name), state.dirs);
    ctx.stateBaselines.set(engine.name, guard);
  }
  const recent = new RingBuffer(256 * 1024);
  // Its usage counts as it streams (run.onUsage: the budget stops a reader that keeps spending), and the log is read
  // around its compactions: what the part cut out of it reported still counts (usage-meter.ts).
  const onUsage = run.onUsage;
  const meter = usageMeter(engine, { read: (upTo) => readLog(run.logFile, upTo), size: () => logSize(run.logFile) }, (usage) => onUsage?.(usage));
  const result = await supervise({
    file: ctx.binaries.get(engine.name) ?? engine.binary,
    args: argv,
    cwd: run.scratch,
    env: run.env,
    ...(run.unsetEnv ? { unsetEnv: run.unsetEnv } : {}),
    logFile: run.logFile,
    timeoutMs: run.timeouts.timeoutMs,
    signal: run.signal,
    killGraceMs: opts.killGraceMs,
    idleTimeoutMs: run.timeouts.watchdogMs ?? undefined,
    finalEvent: { seen: finalEventSeen(engine, recent), graceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
    onOutput: (chunk) => {
      recent.push(chunk);
      if (onUsage) meter.onOutput();
    },
    onCompact: meter.compaction,
    // Its output reaches the log through a socket the spawn helper relays: code the reader runs cannot open it again
    // through /proc/<engine pid>/fd/1 and write an answer into it.
    relayOutput: true,
    // It runs the worker's code: under the task's memory and output caps as the worker was.
    ...stepCaps(run.timeouts),
    sandbox: stepPlan(ctx, run.containment, {
      writable: [run.scratch, ...(run.writable ?? []), ...view.writable],
      network: run.timeouts.network,
      privateFiles: state.files,
      credentialEnv: engine.credentialEnv ?? [],
      readOnly: run.readOnly,
      // Nor the sessions other engines left (they would say whose work it reads).
      hidden: [
        ...run.hidden,
        ...otherEnginesState(opts.engines.values(), engine, ctx.env, [...state.dirs, run.scratch, ctx.binaries.get(engine.name) ?? engine.binary]),
      ],
      privateDirs: view.privateDirs,
      sharedPaths: view.sharedPaths,
      ...(run.hiddenReadOnly ? { hiddenReadOnly: true } : {}),
    }),
  }).finally(() => meter.stop());
  const setId = setIdNote(run.role, result.receipt.setIdCleared);
  if (setId) ctx.emit({ type: 'task-note', key: run.noteKey, note: setId });
  const changes = guard ? changedFiles(guard) : [];
  const putBack = guard ? restoreState(guard) : [];
  if (putBack.length) ctx.emit({ type: 'task-note', key: run.noteKey, note: putBackNote(engine, run.role, putBack, changes) });
  // A log cut to its log_max_mb no longer holds the usage its middle reported: what the meter read around the cuts.
  return { ...result, cutUsage: result.receipt.logCutBytes ? meter.cutPart() : null };
}

/** The usage read from a reader's log with what its cut parts reported (`cutUsage`, see withCutPart) added. */
export function uncutUsage(parsed: UsageReport, cutUsage: Partial<UsageReport> | null): UsageReport {
  return withCutPart(parsed, cutUsage);
}
