import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import type { EngineSpec } from '../../../engines/types';
import { evalLogPath } from '../config/home';
import { withLock } from '../git/lock';
import { loadFrozenManifest } from '../run/frozen-manifest';
import { processStartTime, signalGroup } from '../process/supervisor';
import { appendEvalRow } from '../store/eval-log';
import { labOf, type EvalRow } from '../store/eval-row';
import { listRuns, readState } from './registry';
import { shortHost, type RunState, type TaskState } from './state';
import { statusInfo } from '../../../schemas/status';

/** What reconciling one dead run did. */
export interface ReconcileReport {
  runId: string;
  runName: string;
  /** Worker process groups that were still alive (same pid and start time) and were killed. */
  killed: number[];
  /** Recorded pids that now belong to another process (pid reused) and were left alone. */
  spared: number[];
  /** Tasks that had not finished: their running attempts were recorded INTERRUPTED. */
  interrupted: string[];
}


/**
 * Reconciles every run under `home` whose orchestrator died (still "running", heartbeat stale, pid gone): kills its
 * recorded worker process groups that are still the same processes (pid and start time both match, so a reused pid
 * is never killed), records each unfinished attempt as INTERRUPTED (state and an eval row), marks unfinished tasks
 * INTERRUPTED and the run `interrupted`. Worktrees and branches are kept; `verdict resume` runs the tasks again.
 * Safe to call from several processes at once: each run is reconciled under a lock on its state file, once.
 * Never throws for one broken run; the others are still reconciled.
 */
export async function reconcileDeadRuns(home: string, engines: ReadonlyMap<string, EngineSpec>): Promise<ReconcileReport[]> {
  const reports: ReconcileReport[] = [];
  for (const info of listRuns(home).runs.filter((r) => r.liveness === 'orchestrator-died')) {
    try {
      const report = await withLock(info.stateFile, async () => {
        const read = readState(info.stateFile);
        if (!('state' in read) || read.state.status !== 'running') return null; // someone else got here first
        return reconcileRun(home, read.state, info.stateFile, engines);
      });
      if (report) reports.push(report);
    } catch (e) {
      process.emitWarning(`cannot reconcile ${info.stateFile}: ${(e as Error).message}`);
    }
  }
  return reports;
}

async function reconcileRun(home: string, state: RunState, stateFile: string, engines: ReadonlyMap<string, EngineSpec>): Promise<ReconcileReport> {
  const report: ReconcileReport = { runId: state.runId, runName: state.runName, killed: [], spared: [], interrupted: [] };
  const specs = frozenSpecs(home, state);
  const now = Date.now();
  for (const task of state.tasks) {
    // Anything not final was cut short when the orchestrator died.
    if (statusInfo(task.status).final) continue;
    report.interrupted.push(task.key);
    const attempt = task.attempts.find((a) => a.phase !== 'done');
    if (attempt) {
      if (attempt.workerPid) {
        const same = attempt.workerStartTime != null && processStartTime(attempt.workerPid) === attempt.workerStartTime;
        if (same) {
          signalGroup(attempt.workerPid, 'SIGKILL');
          report.killed.push(attempt.workerPid);
        } else if (processStartTime(attempt.workerPid) !== null) report.spared.push(attempt.workerPid);
      }
      attempt.phase = 'done';
      attempt.verdict = 'INTERRUPTED';
      attempt.endedAt = now;
      attempt.notes = 'the orchestrator died during this attempt; reconciled by a later start';
      await appendEvalRow(evalLogPath(home), interruptedRow(state, task, attempt.attempt, attempt.dir, attempt.startedAt, now, specs.get(task.key) ?? '', engines));
    }
    task.status = 'INTERRUPTED';
  }
  state.status = 'interrupted';
  state.endedAt = now;
  await writeFileAtomic(stateFile, JSON.stringify(state, null, 1));
  return report;
}

/** Each task's spec from the run's frozen manifest; empty when it cannot be read (the rows then carry no spec). */
function frozenSpecs(home: string, state: RunState): Map<string, string> {
  try {
    return new Map(loadFrozenManifest(home, state).tasks.map((t) => [t.key, t.spec]));
  } catch {
    return new Map();
  }
}

function interruptedRow(state: RunState, task: TaskState, attempt: number, attemptDir: string, startedAt: number, endedAt: number, spec: string, engines: ReadonlyMap<string, EngineSpec>): EvalRow {
  return {
    run_id: state.runId,
    task_key: task.key,
    spec,
    worker_engine: task.engine,
    verdict: 'INTERRUPTED',
    duration_ms: endedAt - startedAt,
    worker_tokens: null,
    model: task.model,
    task_type: task.taskType,
    retry: attempt > 1,
    identity: state.identity,
    notes: 'the orchestrator died during this attempt; reconciled by a later start',
    attempt,
    harness: engines.get(task.engine)?.harness ?? task.engine,
    lab: labOf(task.model),
    access_plan: null,
    sandbox: null,
    reasoning_effort: null,
    reported_model: null,
    tokens_in: null,
    tokens_out: null,
    tokens_cached: null,
    tokens_reasoning: null,
    cost_microusd: null,
    check_exit_code: null,
    check_output: '',
    worker_exit_code: null,
    run_name: state.runName,
    host: shortHost(),
    started_at: new Date(startedAt).toISOString(),
    ended_at: new Date(endedAt).toISOString(),
    branch: task.branch,
    commit: null,
    prompt_path: path.join(attemptDir, 'prompt.md'),
    worker_log: path.join(attemptDir, 'worker.log'),
    check_log: path.join(attemptDir, 'check.log'),
    receipt_path: path.join(attemptDir, 'receipt.json'),
  };
}
