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
import { supervise } from '../../process/supervisor';
import {
  engineState,
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
import { attemptView, recordFiles } from '../attempt-record';
import { protectedPaths, type Step } from './context';
import { restoreProtected } from '../protect';
import { discardCheckWrites, saveSealedState, sealedStateFile } from '../check-writes';
import { taskRunDir } from './seal';
import { usageMeter, withCutPart } from '../usage-meter';
import { usageTokens } from '../spend';

/** An engine that printed its final event but keeps running is stopped after this long, ms (then judged normally). */
export const FINAL_EVENT_GRACE_MS = 30_000;

export const workStep: Step = {
  name: 'work',
  when: (rec) => rec.verdict === null,
  async run(ctx, task, rec, io) {
    const { opts } = ctx;
    const { spec, engine } = task;
    const files = recordFiles(rec);
    // A retry starts from the tree the last attempt sealed: what its check wrote is discarded first.
    if (task.sealedState) {
      const sealed = task.sealedState;
      task.sealedState = null;
      saveSealedState(sealedStateFile(taskRunDir(ctx, spec.key)), null);
      const note = await discardCheckWrites(task.state.dir, task.links, sealed);
      if (note) ctx.emit({ type: 'task-note', key: spec.key, note: `before attempt ${rec.attempt}: ${note}` });
    }
    // A retry starts from the check's own inputs: whatever an earlier attempt did to them is put back first.
    const restored = task.protected && rec.attempt > 1 ? restoreProtected(task.state.dir, task.protected) : [];
    if (restored.length)
      ctx.emit({ type: 'task-note', key: spec.key, note: `restored protected check inputs before attempt ${rec.attempt}: ${restored.join(', ')}` });
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
    let guard: StateSnapshot | null = null;
    if (io.boxed && state.guarded.length) {
      guard = ctx.stateBaselines.get(engine.name) ?? snapshotState(state.guarded, path.join(runDir(opts.home, ctx.runId), 'engine-state', engine.name));
      ctx.stateBaselines.set(engine.name, guard);
    }
    // The budget counts the worker's spend as its engine reports it, while it runs (spend.ts progress).
    const meter = usageMeter(
      engine,
      () => readLog(files.worker),
      (usage) => ctx.spend.progress(spec.key, usage, task.state.model, engine),
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
      // A reader of inputs runs other tasks' code: its output reaches the log through the spawn helper's relay, which
      // that code cannot open again through /proc (SuperviseOptions.relayOutput).
      relayOutput: spec.inputs !== undefined,
      sandbox: stepPlan(ctx, task.containment, {
        writable: [...tree.writable, scratch, ...view.writable, ...gitAccess.writable],
        privateDirs: view.privateDirs,
        sharedPaths: view.sharedPaths,
        readOnlyDirs: tree.readOnlyDirs,
        network: spec.network,
        privateFiles: state.files,
        // Its engine's API keys are the only credentials in its environment (secrets.ts).
        credentialEnv: engine.credentialEnv ?? [],
        // the failure file of the previous attempt is the only record the worker may read
        // In the writable admin dir: the submodules' git dirs (their config is what the seal's own git reads there) and
        // an overlay's shared index base.
        readOnly: [...protectedPaths(task), ...(env.VERDICT_FAILURE_FILE ? [env.VERDICT_FAILURE_FILE] : []), ...(task.links ? adminReadOnly(task.links) : [])],
        // A reader of inputs sees no other engine's state dirs either (another engine's member left its session there).
        hidden: [
          ...hiddenFromSteps(opts.home, opts.manifest.worktrees ? null : opts.manifest.workdir),
          ...gitHidden,
          ...(spec.inputs
            ? otherEnginesState(opts.engines.values(), engine, ctx.env, [
                ...state.dirs,
                task.state.dir,
                scratch,
                ctx.binaries.get(task.state.engine) ?? engine.binary,
              ])
            : []),
        ],
      }),
    }).finally(() => meter.stop());
    rec.worker = receipt;
    io.workerTail = tail;
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
    const log = readLog(files.worker);
    rec.usage = engine.parseOutput(log);
    // A log cut to its log_max_mb no longer holds the usage its middle reported: the meter read it around each cut.
    const cut = receipt.logCutBytes ? meter.cutPart() : null;
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
    return judgeWork(receipt, { timeoutMs: spec.timeoutMs, watchdogMs: spec.watchdogMs, finalGraceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS });
  },
};

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

/** A raw log, or its last MAX_PARSED_LOG_BYTES when larger; '' when unreadable. Never throws. */
export function readLog(file: string): string {
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
