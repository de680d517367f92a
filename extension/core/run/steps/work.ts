/**
 * Step `work`: the worker — the engine's argv (the spec one argv element), in its sandbox, with its time limit,
 * no-output watchdog and final-event grace. Judged here when it was cancelled, could not start, stalled or timed out.
 */
import fs from 'node:fs';
import path from 'node:path';
import { changedFiles, putBackNote, restoreState, snapshotState, type StateSnapshot } from '../state-guard';
import { runDir } from '../../config/home';
import { expandArgv } from '../../../../engines';
import type { EngineSpec } from '../../../../engines/types';
import { unknownEventTypes } from '../../../../engines/jsonl';
import { TESTED_CLIS } from '../../../../engines/tested-versions';
import { adminReadOnly, restoreWorktreeLinks, worktreeStepAccess } from '../../git/worktree';
import { workerTreeAccess } from '../trees';
import { RingBuffer } from '../../process/ring-buffer';
import { supervise, type Receipt } from '../../process/supervisor';
import type { BwrapPlan } from '../../process/sandbox';
import {
  engineState,
  type EngineState,
  hiddenForAnonymity,
  hiddenFromSteps,
  otherEnginesState,
  readerStateView,
  sandboxScratch,
  scratchEnv,
  stepCaps,
  stepPlan,
} from '../containment';
import { setIdNote } from '../../process/set-id';
import { judgeWork } from '../decide';
import { attemptView, recordFiles, type AttemptRecord } from '../attempt-record';
import { protectedPaths, type AttemptContext, type Step, type TaskRuntime } from './context';
import { restoreProtected } from '../protect';
import { discardCheckWrites, saveSealedState, sealedStateFile } from '../check-writes';
import { taskRunDir } from './seal';
import { usageMeter, withCutPart, type UsageMeter } from '../usage-meter';
import { usageTokens } from '../spend';

/** An engine that printed its final event but keeps running is stopped after this long, ms (then judged normally). */
export const FINAL_EVENT_GRACE_MS = 30_000;

export const workStep: Step = {
  name: 'work',
  phase: 'running',
  when: (rec) => rec.verdict === null,
  async run(ctx, task, rec, io) {
    const { opts } = ctx;
    const { spec, engine } = task;
    const files = recordFiles(rec);
    await startFromCleanTree(ctx, task, rec);
    // A reader of anonymous inputs gets no git at all: the repository's git dir would name their authors.
    const gitHidden = hiddenForAnonymity(spec.inputs, task.links?.commonDir ?? null);
    const gitAccess = task.links && io.boxed && !gitHidden.length ? worktreeStepAccess(task.links) : { writable: [], env: {} };
    // A sparse tree: only its cone folders are writable (run/trees.ts).
    const tree = workerTreeAccess(task);
    const scratch = sandboxScratch(opts.home, ctx.runId, spec.key, rec.attempt, 'worker', io.boxed);
    const state = engineState(engine, ctx.env);
    // A reader of inputs (council reviewers and chair, validators) sees no session another task left in the engine's
    // state (it would say whose work an input is); other workers share the state dirs whole (docs/sandbox.md).
    const view = spec.inputs ? readerStateView(state) : { writable: state.dirs, privateDirs: [], sharedPaths: [] };
    const env: Record<string, string> = { ...engine.env, ...io.taskEnv(), ...(io.boxed ? scratchEnv(scratch) : {}), ...gitAccess.env };
    if (task.failure) {
      fs.writeFileSync(files.failure, task.failure);
      env.VERDICT_FAILURE_FILE = files.failure;
    }
    // engine_args are written for the task's own engine; a fallback engine runs without them.
    const argv = expandArgv(engine, {
      spec: io.prompt,
      taskdir: task.state.dir,
      model: task.state.model,
      engineArgs: task.state.engine === spec.engine ? spec.engineArgs : [],
      fullAccess: spec.fullAccess,
      nested: io.boxed,
      root: process.getuid?.() === 0,
    });
    const recent = new RingBuffer(256 * 1024);
    // The engine's own settings (what its next, unsandboxed session obeys) are put back after the step.
    const guard = io.boxed && state.guarded.length ? engineStateBaseline(ctx, engine, state) : null;
    // The budget counts the worker's spend as its engine reports it, while it runs (spend.ts progress).
    const meter = usageMeter(engine, { read: (upTo) => readLog(files.worker, upTo), size: () => logSize(files.worker) }, (usage) =>
      ctx.spend.progress(spec.key, usage, task.state.model, engine),
    );
    const { receipt, tail } = await supervise({
      file: ctx.binaries.get(task.state.engine) ?? engine.binary,
      args: argv,
      cwd: task.state.dir,
      env,
      inherit: ctx.inheritedEnv,
      logFile: files.worker,
      timeoutMs: spec.timeoutMs,
      signal: task.abort.signal,
      killGraceMs: opts.killGraceMs,
      ...stepCaps(spec),
      onSpawn: (pid, startTime) => {
        rec.workerPid = pid;
        rec.workerStartTime = startTime;
        io.sync();
        // Crash recovery finds the worker by this pid: in the worker journal at once, in state.json on its schedule.
        ctx.stateFile.recordWorker(spec.key, attemptView(rec));
      },
      idleTimeoutMs: spec.watchdogMs ?? undefined,
      finalEvent: { seen: finalEventSeen(engine, recent), graceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
      onOutput: (chunk) => {
        recent.push(chunk);
        meter.onOutput();
      },
      onCompact: meter.compaction,
      // The engine's output is read for its usage, model and errors: it reaches the log through the spawn helper's
      // socket relay, which no tool the engine runs can open again through /proc/<engine>/fd/1 to write forged events
      // into it, truncate it, or (a pipe) read them out of it (SuperviseOptions.relayOutput).
      relayOutput: true,
      sandbox: workerPlan(ctx, task, { tree, scratch, view, state, gitHidden, gitWritable: gitAccess.writable, failureFile: env.VERDICT_FAILURE_FILE }),
    }).finally(() => meter.stop());
    rec.worker = receipt;
    io.workerTail = tail;
    afterWorker(ctx, task, rec, receipt, guard);
    readUsage(ctx, task, rec, meter, receipt.logCutBytes);
    return judgeWork(receipt, { timeoutMs: spec.timeoutMs, watchdogMs: spec.watchdogMs, finalGraceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS });
  },
};

/**
 * Before a retry's worker: the tree the last attempt sealed loses what its check wrote (the sealed state is then
 * forgotten, in memory and on disk), and the check's own inputs get back whatever an earlier attempt did to them.
 * Each says so in a task note.
 */
async function startFromCleanTree(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord): Promise<void> {
  const { spec } = task;
  if (task.sealedState) {
    const sealed = task.sealedState;
    task.sealedState = null;
    saveSealedState(sealedStateFile(taskRunDir(ctx, spec.key)), null);
    const note = await discardCheckWrites(task.state.dir, task.links, sealed);
    if (note) ctx.emit({ type: 'task-note', key: spec.key, note: `before attempt ${rec.attempt}: ${note}` });
  }
  const restored = task.protected && rec.attempt > 1 ? restoreProtected(task.state.dir, task.protected) : [];
  if (restored.length)
    ctx.emit({ type: 'task-note', key: spec.key, note: `restored protected check inputs before attempt ${rec.attempt}: ${restored.join(', ')}` });
}

/**
 * The snapshot of `engine`'s guarded settings the run took before its first sandboxed step on it (taken now, under
 * the run's engine-state folder, when this is that step), kept in `ctx.stateBaselines`.
 */
function engineStateBaseline(ctx: AttemptContext, engine: EngineSpec, state: EngineState): StateSnapshot {
  const guard =
    ctx.stateBaselines.get(engine.name) ?? snapshotState(state.guarded, path.join(runDir(ctx.opts.home, ctx.runId), 'engine-state', engine.name), state.dirs);
  ctx.stateBaselines.set(engine.name, guard);
  return guard;
}

/** What the worker's sandbox is made of besides the task (workStep.run works these out before it starts the worker). */
interface WorkerMounts {
  /** The task tree's writable and read-only folders (workerTreeAccess). */
  tree: { writable: string[]; readOnlyDirs: string[] };
  scratch: string;
  /** The engine's state dirs as this worker sees them (whole, or a reader's view). */
  view: { writable: string[]; privateDirs: string[]; sharedPaths: string[] };
  state: EngineState;
  /** Git folders hidden from a reader of anonymous inputs. */
  gitHidden: string[];
  /** The worktree's git folders the worker writes (worktreeStepAccess). */
  gitWritable: string[];
  /** The previous attempt's failure file, when there is one. */
  failureFile: string | undefined;
}

/** The worker's sandbox (stepPlan: null when the task runs unsandboxed). */
function workerPlan(ctx: AttemptContext, task: TaskRuntime, m: WorkerMounts): BwrapPlan | null {
  const { opts } = ctx;
  const { spec, engine } = task;
  return stepPlan(ctx, task.containment, {
    writable: [...m.tree.writable, m.scratch, ...m.view.writable, ...m.gitWritable],
    privateDirs: m.view.privateDirs,
    sharedPaths: m.view.sharedPaths,
    readOnlyDirs: m.tree.readOnlyDirs,
    network: spec.network,
    privateFiles: m.state.files,
    // Its engine's API keys are the only credentials in its environment (secrets.ts).
    credentialEnv: engine.credentialEnv ?? [],
    // the failure file of the previous attempt is the only record the worker may read
    // In the writable admin dir: the submodules' git dirs (their config is what the seal's own git reads there) and
    // an overlay's shared index base.
    readOnly: [...protectedPaths(task), ...(m.failureFile ? [m.failureFile] : []), ...(task.links ? adminReadOnly(task.links) : [])],
    // A reader of inputs sees no other engine's state dirs either (another engine's member left its session there).
    hidden: [
      ...hiddenFromSteps(opts.home, opts.manifest.worktrees ? null : opts.manifest.workdir),
      ...m.gitHidden,
      ...(spec.inputs
        ? otherEnginesState(opts.engines.values(), engine, ctx.env, [
            ...m.state.dirs,
            task.state.dir,
            m.scratch,
            ctx.binaries.get(task.state.engine) ?? engine.binary,
          ])
        : []),
    ],
  });
}

/**
 * After the worker, whatever its verdict: a note when it had a set-id bit cleared, its engine's settings put back from
 * `guard` (a note and a step entry when any changed), and the worktree's git links restored.
 */
function afterWorker(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, receipt: Receipt, guard: StateSnapshot | null): void {
  const { spec, engine } = task;
  const setId = setIdNote('the worker', receipt.setIdCleared);
  if (setId) ctx.emit({ type: 'task-note', key: spec.key, note: setId });
  const changes = guard ? changedFiles(guard) : [];
  const putBack = guard ? restoreState(guard) : [];
  if (putBack.length) {
    ctx.emit({ type: 'task-note', key: spec.key, note: putBackNote(engine, 'the worker', putBack, changes) });
    rec.steps.push({ step: 'work', startedAt: Date.now(), endedAt: Date.now(), note: `engine settings put back: ${putBack.join(', ')}` });
  }
  // Whatever the verdict (a TIMEOUT skips the seal), nothing of ours may later run git through links the worker
  // rewrote (`.git` pointing at a git dir of its own, with filters or an fsmonitor in its config).
  if (task.links) restoreWorktreeLinks(task.links);
}

/**
 * The worker's usage and cost into `rec`, read from its log (plus what `meter` read of a part cut off when
 * `logCutBytes`), with notes for a cut log and for event types the engine's parser does not know; then the budget
 * told the worker spent nothing more, and the engine's billing recorded.
 */
function readUsage(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, meter: UsageMeter, logCutBytes: number | undefined): void {
  const { spec, engine } = task;
  const log = readLog(recordFiles(rec).worker);
  rec.usage = engine.parseOutput(log);
  // A log cut to its log_max_mb no longer holds the usage its middle reported: the meter read it around each cut.
  const cut = logCutBytes ? meter.cutPart() : null;
  if (cut && Object.keys(cut).length) {
    rec.usage = withCutPart(rec.usage, cut);
    const note = `the worker's log was cut to its log_max_mb; its usage adds what the cut part reported (read before the cut) to what the log holds`;
    ctx.emit({ type: 'task-note', key: spec.key, note: `attempt ${rec.attempt}: ${note}` });
    rec.steps.push({ step: 'work', startedAt: Date.now(), endedAt: Date.now(), note });
  }
  const unknown = engine.eventTypes ? unknownEventTypes(log, engine.eventTypes) : [];
  if (unknown.length) {
    const tested = TESTED_CLIS[engine.name]?.versions.join(', ');
    const note = `unknown event type(s) from ${engine.name}: ${unknown.join(', ')}${tested ? ` (Verdict was tested with ${engine.name} ${tested})` : ''}; their lines are kept in the worker log and the usage was read from the events Verdict knows`;
    ctx.emit({ type: 'task-note', key: spec.key, note: `attempt ${rec.attempt}: ${note}` });
    rec.steps.push({ step: 'work', startedAt: Date.now(), endedAt: Date.now(), note });
  }
  rec.costMicroUsd = ctx.spend.cost(rec.usage, task.state.model, engine);
  // Its engine spends nothing more in this attempt: the budget knows what it cost (spend.ts workerEnded).
  ctx.spend.workerEnded(spec.key, rec.costMicroUsd, usageTokens(rec.usage));
  Object.assign(rec, ctx.spend.billingOf(engine.name));
}

/** Whether the engine's recent output holds its final event; parses only when new output arrived (work and review). */
export function finalEventSeen(engine: EngineSpec, recent: RingBuffer): () => boolean {
  let checkedBytes = -1;
  let seen = false;
  return () => {
    if (seen || recent.totalBytes === checkedBytes) return seen;
    checkedBytes = recent.totalBytes;
    seen = engine.parseOutput(recent.text()).finalStatus !== null;
    return seen;
  };
}

/** Worker logs above this size are parsed from their last bytes only, bytes. */
const MAX_PARSED_LOG_BYTES = 32 * 1024 * 1024;

/**
 * A raw log, or its last MAX_PARSED_LOG_BYTES when larger; '' when unreadable. Never throws.
 * @param upTo read only the log's first `upTo` bytes (of those, the last MAX_PARSED_LOG_BYTES); absent: all of it
 */
export function readLog(file: string, upTo?: number): string {
  try {
    const size = upTo === undefined ? fs.statSync(file).size : Math.max(0, upTo);
    if (upTo === undefined && size <= MAX_PARSED_LOG_BYTES) return fs.readFileSync(file, 'utf8');
    const fd = fs.openSync(file, 'r');
    try {
      const buf = Buffer.alloc(Math.min(size, MAX_PARSED_LOG_BYTES));
      const n = fs.readSync(fd, buf, 0, buf.length, size - buf.length);
      return buf.subarray(0, n).toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

/** The log's size in bytes, 0 when it cannot be read. Never throws. */
export function logSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}
