/**
 * `verdict resume RUN` and `verdict rerun RUN TASK` of a run that is not live (docs/runs.md "Resume and rerun of a run that ended"): the same run goes on — same
 * run id, state.json, records folder, task branches and worktrees — under a new orchestrator. Tasks that passed keep
 * their status, branch and records; the others are queued again with fresh attempts numbered after their earlier ones,
 * and their eval rows carry the same run_id. One orchestrator per run: the new one holds the run's folder lock
 * (run/workdir-lock.ts lockRun) from before it reads the state until the run has ended.
 */
import path from 'node:path';
import { runDir } from '../config/home';
import { shortHost } from '../host/hostname';
import { describeRun, readState } from '../live/registry';
import type { RunState } from '../live/state';
import type { TaskState } from '../../../schemas/run-state';
import type { RunResume } from '../../../schemas/run-state';
import { statusInfo } from '../../../schemas/status';
import type { EngineSpec } from '../../../engines/types';
import type { WorkflowSection } from '../manifest/sections';
import { graphGate } from './decide';
import { reconcileDeadRuns } from './reconcile';
import { summaryFromRecords } from './run-launch';
import type { TaskSummary } from './run-types';
import { lockRun, selfHolder } from './workdir-lock';

/** What to continue: `resume` (every task that did not pass) or `rerun` of one task. */
export interface ContinueRequest {
  runId: string;
  verb: 'resume' | 'rerun';
  /** `rerun`: the task to run again (its BLOCKED dependents follow it). */
  task?: string;
  /** The run's budget_usd from now on (verdict resume --budget-usd); absent: the budget it had. */
  budgetUsd?: number;
  /** The run's budget_tokens from now on (--budget-tokens); absent: the budget it had. */
  budgetTokens?: number;
}

/**
 * What the workflows say of running a task of a run again, from its state entry: the workflow table's
 * (run/workflows/index.ts workflowRerunRules), handed in by the caller (the table reaches the live run).
 */
export interface RerunRules {
  /** Why `verdict rerun` of `task` is refused (the first workflow that refuses it), or null. */
  refuse(task: TaskState): string | null;
  /** True when `verdict resume` leaves `task` (of `state`) as it ended, whatever its status. */
  kept(task: TaskState, state: RunState): boolean;
}

/** A run taken over by this process (see takeRun): the runner continues it. */
export interface RunContinuation {
  /** The run's state as read under its lock (reconciled first); the runner takes this object over. */
  state: RunState;
  /** The tasks to run again; the others keep their status, records and branches. */
  again: ReadonlySet<string>;
  /** Summaries of every task as the records tell (for the tasks kept). */
  kept: ReadonlyMap<string, TaskSummary>;
  /** Appended to state.json's `resumes` once the runner owns the state. */
  resume: RunResume;
  /** Releases the run's lock (the runner calls it when the run has ended). */
  release: () => Promise<void>;
}

/**
 * Which tasks of `state` run again: for `resume` every task whose status is resumable (schemas/status.ts: all but
 * PASS and SKIPPED, BLOCKED included) except those a workflow keeps as they ended (`rules.kept`); for `rerun` the
 * task, unless a workflow refuses it (`rules.refuse`), and, transitively, its dependents that ended BLOCKED or that
 * read one of them as an input (state.json `inputs.entries`), whatever they ended.
 * Returns the keys in manifest order, or why nothing can run.
 */
export function tasksToRunAgain(state: RunState, req: Pick<ContinueRequest, 'verb' | 'task'>, rules: RerunRules): { again: string[] } | { refused: string } {
  if (req.verb === 'resume') {
    const again = state.tasks.filter((t) => statusInfo(t.status).resumable && !rules.kept(t, state)).map((t) => t.key);
    return again.length ? { again } : { refused: `every task of run ${state.runId} passed; nothing to resume` };
  }
  const task = state.tasks.find((t) => t.key === req.task);
  if (!task) return { refused: `run ${state.runId} has no task ${req.task} (tasks: ${state.tasks.map((t) => t.key).join(', ')})` };
  const refused = rules.refuse(task);
  if (refused !== null) return { refused };
  if (task.status === 'BLOCKED') {
    const gate = graphGate((task.after ?? []).map((k) => ({ key: k, status: state.tasks.find((t) => t.key === k)?.status ?? 'absent' })));
    if (gate.kind === 'blocked')
      return { refused: `${task.key} is BLOCKED by ${gate.by} (${gate.status}): rerun ${gate.by}, and ${task.key} runs again once it passes` };
  }
  const again = new Set([task.key]);
  for (let grew = true; grew;) {
    grew = false;
    for (const t of state.tasks) {
      if (again.has(t.key) || !(t.after ?? []).some((k) => again.has(k))) continue;
      // A task that read one of them as an input (a validator, a council's reviews and chair) judged work that is
      // about to be replaced: it runs again too, whatever it ended, or its verdict would stand over work it never saw.
      const readIt = t.inputs?.entries.some((e) => again.has(e.key)) ?? false;
      if (t.status !== 'BLOCKED' && !readIt) continue;
      again.add(t.key);
      grew = true;
    }
  }
  return { again: state.tasks.filter((t) => again.has(t.key)).map((t) => t.key) };
}

/** Why a run cannot be continued now (live elsewhere, nothing to run, unreadable); the message says which. */
export class ContinueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContinueError';
  }
}

/**
 * Takes run `req.runId` over for this process: its folder lock first (a second `verdict resume` of the same run is
 * refused here, naming the orchestrator that holds it), then reconciles it if its orchestrator died and no one has yet
 * (its unfinished attempts get INTERRUPTED rows; the command that calls this has usually reconciled every dead run
 * already, and then nothing is done twice), then reads its state and decides the tasks to run again.
 * @param rules what the workflows say of running a task again (tasksToRunAgain)
 * @param sections every workflow's section (run/workflows/index.ts WORKFLOW_SECTIONS), for reconcile's frozen manifest
 * @throws RunBusyError (run/workdir-lock.ts) when another orchestrator holds the run; ContinueError when it is live
 *   under an orchestrator that holds no lock, its state cannot be read, or nothing is left to run
 */
export async function takeRun(
  home: string,
  req: ContinueRequest,
  identity: string,
  engines: ReadonlyMap<string, EngineSpec>,
  rules: RerunRules,
  sections: readonly WorkflowSection[],
): Promise<RunContinuation> {
  const release = await lockRun(runDir(home, req.runId), selfHolder(req.runId, identity));
  try {
    const stateFile = path.join(runDir(home, req.runId), 'state.json');
    let read = readState(stateFile);
    if ('state' in read && describeRun(read.state, stateFile).liveness === 'orchestrator-died') {
      await reconcileDeadRuns(home, engines, sections, req.runId);
      read = readState(stateFile);
    }
    if (!('state' in read)) throw new ContinueError(`run ${req.runId}: ${read.reason === 'missing' ? 'no state file' : read.reason}`);
    const info = describeRun(read.state, stateFile);
    if (info.liveness === 'running')
      throw new ContinueError(
        `run ${req.runId} is live (pid ${read.state.pid} on ${read.state.host}); ${req.verb} of a live run goes through its control channel`,
      );
    const plan = tasksToRunAgain(read.state, req, rules);
    if ('refused' in plan) throw new ContinueError(plan.refused);
    const kept = new Map(summaryFromRecords(home, info).tasks.map((t) => [t.key, t]));
    const resume: RunResume = { verb: req.verb, by: identity, host: shortHost(), pid: process.pid, at: Date.now(), from: info.liveness, tasks: plan.again };
    return { state: read.state, again: new Set(plan.again), kept, resume, release };
  } catch (e) {
    await release();
    throw e;
  }
}

/**
 * The run's state, taken over: this orchestrator's pid and host, running again (not paused, not draining), the
 * containment now in force, the tasks to run again queued (their earlier attempts kept, so numbering continues), the
 * resume noted in `resumes`. Mutates and returns `cont.state`.
 */
export function reopenState(cont: RunContinuation, containment: string): RunState {
  const s = cont.state;
  s.pid = process.pid;
  s.host = shortHost();
  s.status = 'running';
  s.endedAt = null;
  s.heartbeatAt = Date.now();
  s.paused = false;
  s.draining = false;
  s.containment = containment;
  s.control ??= [];
  s.resumes = [...(s.resumes ?? []), cont.resume];
  for (const t of s.tasks) {
    if (!cont.again.has(t.key)) continue;
    t.status = 'queued';
    delete t.reason;
    // New work to come: what was done with the old (merged, discarded) no longer describes the task.
    delete t.merged;
    delete t.discarded;
  }
  return s;
}
