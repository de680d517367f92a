import path from 'node:path';
import { discardTaskWorktree } from '../core/git/discard';
import { DirtyTreeError, mergeQueue, mergeTarget, suiteStopLine, type MergeOutcome } from '../core/git/merge';
import { shortHost } from '../core/host/hostname';
import { resolveIdentity } from '../core/host/identity';
import { appendControl, type ControlVerb } from '../core/live/control';
import { describeRun, readState, type RunInfo } from '../core/live/registry';
import { resolveRun } from './runs-command';
import { deliveredBefore, mergeRequestsForRun } from '../core/run/merge-plan';
import { landedReason } from '../core/run/landed';
import { recordLanding } from '../core/run/task-landing';
import { statusInfo } from '../../schemas/status';
import { InputError, type Io } from './io';
import { loadEngines } from './load-engines';

/**
 * The CLI side of a run's control channel (docs/runs.md "Controlling a live run") and the commands that act
 * on one run's tasks: stop, pause, drain, resume (live), rerun, merge, discard, and the runs listing.
 */

/** How long a control verb waits for its acknowledgment in state.json, ms (a cancel waits for the run to end). */
export const ACK_WAIT_MS = 15_000;

/** Options of a control verb. */
export interface ControlOptions {
  home: string;
  identity?: string;
  /** Return once the command is appended, without waiting for its acknowledgment. */
  noWait?: boolean;
  /** Test hook: how long to wait for the acknowledgment, ms (default ACK_WAIT_MS). */
  waitMs?: number;
  /** The engine the verb names (`unwait`). */
  engine?: string;
}

/**
 * Sends one command to a live run through its control file and (unless noWait) waits for its acknowledgment in
 * state.json, printing it. Returns 0 done (or sent, with noWait), 1 refused or not acknowledged in time.
 * @throws InputError when the run is unknown or not live
 */
export async function sendControl(info: RunInfo, verb: ControlVerb, task: string | undefined, opts: ControlOptions, io: Io): Promise<number> {
  const { state } = info;
  if (info.liveness !== 'running') {
    // A run that is not live keeps its waits for whoever resumes it: that orchestrator answers unwait.
    const hint = verb === 'unwait' ? ` (\`verdict resume ${state.runId}\` takes it over, honouring its waits; unwait it once it runs)` : '';
    throw new InputError(`run ${state.runId} is not live (${info.liveness}); ${verb} acts on a running run${hint}`);
  }
  if (task !== undefined && !state.tasks.some((t) => t.key === task))
    throw new InputError(`run ${state.runId} has no task ${task} (tasks: ${state.tasks.map((t) => t.key).join(', ')})`);
  const by = resolveIdentity({ flag: opts.identity, cwd: process.cwd(), configDefault: loadEngines(undefined).settings.identity }).identity;
  const cmd = await appendControl(path.dirname(info.stateFile), {
    verb,
    ...(task !== undefined ? { task } : {}),
    ...(opts.engine !== undefined ? { engine: opts.engine } : {}),
    by,
    host: shortHost(),
  });
  const what = `${verb}${task !== undefined ? ` ${task}` : ''}${opts.engine !== undefined ? ` ${opts.engine}` : ''}`;
  if (opts.noWait) {
    io.out(`sent ${what} to run ${state.runId} (command ${cmd.id}); its acknowledgment will be in ${info.stateFile} (control)`);
    return 0;
  }
  const deadline = Date.now() + (opts.waitMs ?? ACK_WAIT_MS);
  for (;;) {
    const read = readState(info.stateFile);
    if ('state' in read) {
      const a = read.state.control?.find((c) => c.id === cmd.id);
      if (a) {
        io.out(`${what}: ${a.result}${a.reason ? ` — ${a.reason}` : ''} (run ${state.runId}, acknowledged after ${a.ackAt - cmd.at} ms)`);
        return a.result === 'done' ? 0 : 1;
      }
      const now = describeRun(read.state, info.stateFile).liveness;
      if (now !== 'running') {
        io.err(`${what}: run ${state.runId} ended (${now}) without acknowledging command ${cmd.id}`);
        return 1;
      }
    }
    if (Date.now() > deadline) {
      io.err(
        `${what}: sent to run ${state.runId} (command ${cmd.id}) but not acknowledged within ${Math.round((opts.waitMs ?? ACK_WAIT_MS) / 1000)} s; see control in ${info.stateFile}`,
      );
      return 1;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `verdict stop RUN [TASK]`: stops one task of a live run, or (without TASK) cancels the run. */
export function stopCommand(run: string, task: string | undefined, opts: ControlOptions, io: Io): Promise<number> {
  return sendControl(resolveRun(opts.home, run), task === undefined ? 'cancel' : 'stop', task, opts, io);
}

/**
 * `verdict unwait RUN ENGINE`: clears ENGINE's quota wait in a live run (run/quota-wait.ts) through its control channel;
 * the engine's tasks start again at once. Returns as sendControl does (0 done, also when the engine was not waiting).
 * @throws InputError when the run is unknown or not live
 */
export function unwaitCommand(run: string, engine: string, opts: ControlOptions, io: Io): Promise<number> {
  return sendControl(resolveRun(opts.home, run), 'unwait', undefined, { ...opts, engine }, io);
}

/**
 * `verdict merge RUN [TASK...] [--batch]`: the merge queue (rebase, re-check, the suite on the result, fast-forward;
 * core/git/merge.ts mergeQueue, or mergeBatch with `batch`) for the named tasks, or every task that passed, into the
 * repository's current branch; one line per task, and a last line naming the merge that broke the suite and where the
 * branch was left (suiteStopLine). Returns 0 when every one merged, else 1.
 * @throws InputError for an unknown run or a run not in worktree mode
 */
export async function mergeCommand(run: string, keys: string[], opts: { home: string; batch?: boolean }, io: Io): Promise<number> {
  const info = resolveRun(opts.home, run);
  const { state } = info;
  if (!state.worktrees || !state.repo) throw new InputError(`run ${state.runId} is not a worktree-mode run; there are no task branches to merge`);
  let failed = false;
  for (const key of keys) {
    const t = state.tasks.find((x) => x.key === key);
    if (!t) throw new InputError(`run ${state.runId} has no task ${key} (tasks: ${state.tasks.map((x) => x.key).join(', ')})`);
    const landed = landedReason(t);
    if (landed) io.out(`${key}: ${landed}`);
    else if (t.status !== 'PASS') {
      io.out(`${key}: NOT MERGED — it is ${t.status}; only a task that passed has work on its branch to merge`);
      failed = true;
    }
  }
  // A best-of-N candidate is merged through its task (the winner), or when named.
  if (!keys.length) {
    for (const t of state.tasks.filter((x) => x.candidate === undefined)) {
      const landed = landedReason(t);
      if (landed) io.out(`${t.key}: ${landed}`);
      else if (t.status !== 'PASS') io.out(`${t.key}: not merged — ${t.status}`);
    }
  }
  let requests;
  let before;
  try {
    requests = mergeRequestsForRun(opts.home, state, keys.length ? keys : undefined);
    // What earlier merges of this run delivered: a merge now must not undo it (docs/workflows.md).
    before = requests.length ? deliveredBefore(opts.home, state) : [];
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  if (!requests.length) {
    if (!keys.length)
      io.out(
        `nothing to merge: no task of run ${state.runId} passed${state.tasks.some((t) => t.merged || t.discarded) ? ' and is neither merged nor discarded' : ''}`,
      );
    // Only tasks already merged or discarded were named: nothing to do, nothing wrong.
    return failed || !keys.length ? 1 : 0;
  }
  try {
    const into = await mergeTarget(state.repo);
    const outcomes = await mergeQueue(requests, (o) => io.out(mergeLine(o)), { batch: opts.batch === true, merged: before });
    for (const o of outcomes) {
      if (o.status !== 'MERGED') continue;
      const why = await recordLanding(info.stateFile, o.key, { merged: { commit: o.sha, into, at: Date.now(), paths: o.paths } });
      if (why) io.err(`${o.key}: merged, but ${why}`);
    }
    const stop = suiteStopLine(outcomes, into);
    if (stop) io.out(stop);
    return failed || outcomes.some((o) => o.status !== 'MERGED') ? 1 : 0;
  } catch (e) {
    if (e instanceof DirtyTreeError) {
      io.err(e.message);
      return 1;
    }
    throw new InputError((e as Error).message);
  }
}

function mergeLine(o: MergeOutcome): string {
  if (o.status === 'MERGED') return `${o.key}: MERGED (now ${o.sha.slice(0, 10)})`;
  return `${o.key}: ${o.status} — ${o.reason}`;
}

/**
 * `verdict discard RUN TASK`: removes the task's worktree and deletes its branch (worktree mode), asking nothing.
 * Refused for a task a live run is still working on. Returns 0 discarded, 1 a live process works in the worktree.
 * @throws InputError for an unknown run or task, a plain-mode run, or a task still running
 */
export async function discardCommand(run: string, key: string, opts: { home: string }, io: Io): Promise<number> {
  const info = resolveRun(opts.home, run);
  const { state } = info;
  const task = state.tasks.find((t) => t.key === key);
  if (!task) throw new InputError(`run ${state.runId} has no task ${key} (tasks: ${state.tasks.map((t) => t.key).join(', ')})`);
  if (!state.worktrees || !state.repo || !task.branch)
    throw new InputError(`run ${state.runId} is a plain-mode run: ${key} has no worktree or branch (its folder is ${task.dir})`);
  if (info.liveness === 'running' && !statusInfo(task.status).final) {
    throw new InputError(`${key} of run ${state.runId} is ${task.status} in a live run; stop it first (verdict stop ${state.runId} ${key})`);
  }
  try {
    const r = await discardTaskWorktree(state.repo, task.dir, task.branch);
    const why = await recordLanding(info.stateFile, key, { discarded: { commit: r.sha ?? task.discarded?.commit ?? null, at: Date.now() } });
    if (why) io.err(`${key}: discarded, but ${why}`);
    io.out(
      `discarded ${key}: ${r.worktreeRemoved ? `worktree ${task.dir} removed` : 'no worktree left'}; ${r.branchDeleted ? `branch ${task.branch} deleted (it held ${r.sha}; recover with: git branch ${task.branch} ${r.sha})` : `branch ${task.branch} was already gone`}`,
    );
    return 0;
  } catch (e) {
    io.err(`${key}: ${(e as Error).message}`);
    return 1;
  }
}

/** The run a `verdict resume` names, when it is live (resume then unpauses it); null when it is not. */
export function liveRun(home: string, arg: string): RunInfo | null {
  const info = resolveRun(home, arg);
  return info.liveness === 'running' ? info : null;
}
