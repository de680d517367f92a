/**
 * Runs one read-only model engine on a task's work — a reviewer (run/steps/review.ts) or a critic
 * (run/steps/critique.ts): in its own sandbox where the task dir is read-only and VERDICT_HOME hidden, started in its
 * own scratch dir (project files the worker wrote there — AGENTS.md, CLAUDE.md, .claude/settings.json with hooks,
 * opencode.json, .codex/ — must not configure or instruct it; it reads the task dir by its path), with its engine's
 * guarded settings put back after it, as after a worker. What it answers is read from its final message by the caller.
 */
import path from 'node:path';
import { expandArgv } from '../../../../engines';
import type { EngineSpec, UsageReport } from '../../../../engines/types';
import { restoreWorktreeLinks, worktreeStepAccess } from '../../git/worktree';
import { RingBuffer } from '../../process/ring-buffer';
import { supervise, type Receipt } from '../../process/supervisor';
import { runDir } from '../../config/home';
import type { EngineChoice } from '../../manifest/types';
import { engineState, hiddenFromSteps, scratchEnv, stepPlan } from '../containment';
import { restoreState, snapshotState, type StateSnapshot } from '../state-guard';
import { Cancelled, type AttemptContext, type AttemptIo, type TaskRuntime } from './context';
import { FINAL_EVENT_GRACE_MS, finalEventSeen, readLog } from './work';

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
  /** Why the run cannot have answered (could not start, stalled, timed out); null otherwise. */
  failure: string | null;
  /** Appended to an unreadable answer's error: the engine's non-zero exit and its error class; '' when it exited 0. */
  exitNote: string;
}

/** One read-only run: who, with which prompt, writing where. */
export interface ReaderRequest {
  choice: EngineChoice;
  /** What the run is called in notes (`reviewer 2`, `critic 1`). */
  role: string;
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
 * @throws Cancelled when the task was stopped; Error when it could not be set up (the caller records it)
 */
export async function runReader(ctx: AttemptContext, task: TaskRuntime, io: AttemptIo, req: ReaderRequest): Promise<ReaderRun> {
  const { opts } = ctx;
  const { spec } = task;
  const engine = opts.engines.get(req.choice.engine) as EngineSpec;
  const model = req.choice.model ?? engine.defaultModel;
  const state = engineState(engine, ctx.env);
  const gitAccess = task.links && io.boxed ? worktreeStepAccess(task.links) : { writable: [], env: {} };
  const env: Record<string, string> = { ...engine.env, ...io.taskEnv(), ...(io.boxed ? scratchEnv(req.scratch) : {}), ...gitAccess.env, ...req.env };
  const argv = expandArgv(engine, { spec: req.prompt, taskdir: req.scratch, model, engineArgs: [], fullAccess: false, nested: io.boxed });
  let guard: StateSnapshot | null = null;
  if (io.boxed && state.guarded.length) {
    guard = ctx.stateBaselines.get(engine.name) ?? snapshotState(state.guarded, path.join(runDir(opts.home, ctx.runId), 'engine-state', engine.name));
    ctx.stateBaselines.set(engine.name, guard);
  }
  const recent = new RingBuffer(256 * 1024);
  const { receipt, tail } = await supervise({
    file: ctx.binaries.get(engine.name) ?? engine.binary,
    args: argv,
    cwd: req.scratch,
    env,
    logFile: req.logFile,
    timeoutMs: spec.timeoutMs,
    signal: task.abort.signal,
    killGraceMs: opts.killGraceMs,
    idleTimeoutMs: spec.watchdogMs ?? undefined,
    finalEvent: { seen: finalEventSeen(engine, recent), graceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
    onOutput: (chunk) => recent.push(chunk),
    sandbox: stepPlan(ctx.bwrap, task.containment, {
      // Read-only: the task dir (bound back over the hidden workdir / VERDICT_HOME) and the worktree's git objects.
      writable: [req.scratch, ...state.dirs],
      network: spec.network,
      privateFiles: state.files,
      readOnly: [task.state.dir, ...gitAccess.writable],
      hidden: hiddenFromSteps(opts.home, opts.manifest.worktrees ? null : opts.manifest.workdir),
    }),
  });
  const putBack = guard ? restoreState(guard) : [];
  if (putBack.length) ctx.emit({ type: 'task-note', key: spec.key, note: `${req.role} changed ${engine.name}'s own settings; put back: ${putBack.join(', ')}` });
  if (task.links) restoreWorktreeLinks(task.links);
  if (receipt.cancelled) throw new Cancelled();
  const log = readLog(req.logFile);
  const usage = engine.parseOutput(log);
  const seconds = (ms: number) => Math.round(ms / 1000);
  let failure: string | null = null;
  const who = req.role.replace(/ \d+$/, '');
  if (receipt.spawnError) failure = `the ${who} could not start: ${receipt.spawnError}`;
  else if (receipt.stalled) failure = `the ${who} printed nothing for ${seconds(spec.watchdogMs ?? 0)} s and was stopped`;
  else if (receipt.timedOut) failure = `the ${who} ran out of time after ${seconds(spec.timeoutMs)} s and was stopped`;
  const errorClass = receipt.exitCode !== 0 && !receipt.stoppedAfterFinal ? engine.classifyError(tail) : null;
  return {
    engine,
    model,
    receipt,
    usage,
    costMicroUsd: ctx.spend.cost(usage, model),
    message: failure ? null : engine.finalMessage(log),
    failure,
    exitNote: receipt.exitCode !== 0 ? `; the ${who} exited ${receipt.exitCode ?? receipt.signal}${errorClass ? ` (${errorClass})` : ''}` : '',
  };
}

