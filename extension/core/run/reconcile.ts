import fs from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import type { EngineSpec } from '../../../engines/types';
import { evalLogPath } from '../config/home';
import { shortHost } from '../host/hostname';
import { withLock } from '../fs/lock';
import { loadFrozenManifest } from './frozen-manifest';
import type { WorkflowSection } from '../manifest/sections';
import { processStartTime } from '../process/start-time';
import { signalGroup } from '../process/supervisor';
import { appendEvalRow, type EvalRowInput } from '../store/eval-log';
import { canonicalJson } from '../store/chain';
import { readCompleteLines } from '../store/log-lines';
import { listRuns, readState } from '../live/registry';
import { mergeWorkerJournal, readSandboxInits, readWorkerJournal, workerJournalFile, type SandboxInit } from '../live/worker-journal';
import type { RunState } from '../live/state';
import { statusInfo, VERDICTS } from '../../../schemas/status';
import type { Verdict } from '../../../schemas/status';
import { attemptView, evalRow, recordFromView } from './attempt-record';

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
  /**
   * Sandbox inits (PID 1 of a step's PID namespace) still alive with their recorded pid and start time, SIGKILLed
   * (which ends every process of their namespace). Only a step that traced its init and cleared its parent-death
   * signal, with the spawn helper SIGKILLed too, leaves one.
   */
  killedInits: number[];
}

/**
 * Reconciles every run under `home` whose orchestrator died (still "running", heartbeat stale, pid gone): kills the
 * sandbox inits its worker journal names that are still alive (same pid and start time), kills its
 * recorded worker process groups that are still the same processes (pid and start time both match, so a reused pid
 * is never killed; both only for a run of this host: another's pids are not this machine's), records each unfinished attempt as INTERRUPTED (state and an eval row), marks unfinished tasks
 * INTERRUPTED and the run `interrupted`. Worktrees and branches are kept; `verdict resume` runs the tasks again.
 * Safe to call from several processes at once: each run is reconciled under a lock on its state file, once.
 * Never throws for one broken run; the others are still reconciled. `only`: that run alone (the others are left).
 */
export async function reconcileDeadRuns(
  home: string,
  engines: ReadonlyMap<string, EngineSpec>,
  sections: readonly WorkflowSection[],
  only?: string,
): Promise<ReconcileReport[]> {
  const reports: ReconcileReport[] = [];
  for (const info of listRuns(home).runs.filter((r) => r.liveness === 'orchestrator-died' && (only === undefined || r.state.runId === only))) {
    try {
      const report = await withLock(info.stateFile, async () => {
        const read = readState(info.stateFile);
        if (!('state' in read) || read.state.status !== 'running') return null; // someone else got here first
        const journal = workerJournalFile(info.stateFile);
        // First what outlived its sandbox's bwrap and the spawn helper: it could still write a task dir. Only on the
        // run's own host: another host's pids (a shared home) name unrelated processes here.
        const here = read.state.host === shortHost();
        const killedInits = here ? killSandboxInits(readSandboxInits(journal)) : [];
        // Workers started after the state's last write are in the journal (live/worker-journal.ts).
        mergeWorkerJournal(read.state, readWorkerJournal(journal));
        return { ...(await reconcileRun(home, read.state, info.stateFile, engines, sections, here)), killedInits };
      });
      if (report) reports.push(report);
    } catch (e) {
      process.emitWarning(`cannot reconcile ${info.stateFile}: ${(e as Error).message}`);
    }
  }
  return reports;
}

/** `here`: the run's host is this one (its recorded worker pids are this machine's; else none is signalled). */
async function reconcileRun(
  home: string,
  state: RunState,
  stateFile: string,
  engines: ReadonlyMap<string, EngineSpec>,
  sections: readonly WorkflowSection[],
  here: boolean,
): Promise<ReconcileReport> {
  const report: ReconcileReport = { runId: state.runId, runName: state.runName, killed: [], spared: [], interrupted: [], killedInits: [] };
  const specs = frozenSpecs(home, state, sections);
  const now = Date.now();
  // The run's rows already in the eval log (rowKey), read once when a receipt's rows must be checked against them.
  let logged: Set<string> | null = null;
  for (const task of state.tasks) {
    // Anything not final was cut short when the orchestrator died.
    if (statusInfo(task.status).final) continue;
    let passed: string | null | undefined; // the commit of a settled PASS that ended the task (null: plain mode)
    for (const attempt of task.attempts.filter((a) => a.phase !== 'done')) {
      // An attempt that settled (its receipt is written before its eval row and its state) while the state on disk
      // still showed it running: a later attempt's journal line can be all that shows it ended. Its rows are in the
      // log, or, when the orchestrator died before they got there, in the receipt: those are appended now.
      const settled = settledReceipt(attempt.dir, attempt.startedAt);
      if (settled) {
        task.attempts[task.attempts.indexOf(attempt)] = {
          ...attempt,
          phase: 'done',
          verdict: settled.verdict,
          notes: settled.reason,
          endedAt: attempt.endedAt ?? now,
        };
        const last = attempt.attempt === Math.max(...task.attempts.map((a) => a.attempt));
        if (last && settled.taskStatus === 'PASS')
          passed = (settled.rows.find((r) => r.step === 'work')?.commit as string | null | undefined) ?? task.commit ?? null;
        logged ??= loggedRows(evalLogPath(home), state.runId);
        for (const row of settled.rows) {
          if (logged.has(rowKey(row))) continue;
          try {
            await appendEvalRow(evalLogPath(home), row);
          } catch (e) {
            process.emitWarning(`cannot append the eval row kept in ${path.join(attempt.dir, 'receipt.json')}: ${(e as Error).message}`);
          }
        }
        continue;
      }
      if (attempt.workerPid && here) {
        const same = attempt.workerStartTime != null && processStartTime(attempt.workerPid) === attempt.workerStartTime;
        if (same) {
          signalGroup(attempt.workerPid, 'SIGKILL');
          report.killed.push(attempt.workerPid);
        } else if (processStartTime(attempt.workerPid) !== null) report.spared.push(attempt.workerPid);
      }
      const rec = recordFromView(
        state,
        task,
        attempt,
        specs.get(task.key) ?? '',
        engines.get(attempt.engine ?? task.engine)?.harness ?? attempt.engine ?? task.engine,
      );
      rec.phase = 'done';
      rec.verdict = 'INTERRUPTED';
      rec.endedAt = now;
      rec.reason = 'the orchestrator died during this attempt; reconciled by a later start';
      task.attempts[task.attempts.indexOf(attempt)] = attemptView(rec);
      await appendEvalRow(evalLogPath(home), evalRow(rec));
    }
    // Its last attempt passed and ended the task (deliver had run): the task passed; resume leaves it as it is.
    if (passed !== undefined) {
      task.status = 'PASS';
      task.commit = passed;
      continue;
    }
    report.interrupted.push(task.key);
    task.status = 'INTERRUPTED';
  }
  state.status = 'interrupted';
  state.endedAt = now;
  await writeFileAtomic(stateFile, JSON.stringify(state, null, 1));
  return report;
}

/**
 * SIGKILLs each recorded sandbox init that is still the same process (pid and /proc start time both match; a reused
 * pid is never touched, an init recorded without a start time is never killed). The kernel then kills every process
 * of its PID namespace. Returns the pids killed.
 */
export function killSandboxInits(inits: readonly SandboxInit[]): number[] {
  const killed: number[] = [];
  for (const init of inits) {
    if (init.startTime === null || processStartTime(init.pid) !== init.startTime) continue;
    try {
      process.kill(init.pid, 'SIGKILL');
      killed.push(init.pid);
    } catch {
      // gone meanwhile
    }
  }
  return killed;
}

/**
 * The verdict, reason, eval rows (`rows`, written by run/attempt.ts settle before it appends them; [] in receipts
 * of older versions) and the status settle gave the task (`taskStatus`; null when unknown) of the attempt whose folder is `dir` and which started at `startedAt` (epoch ms), from its
 * receipt.json; null when there is no readable receipt with a verdict, or when the receipt is another attempt's (a
 * folder reused by a later attempt of the same number: one a crash kept out of the state, then a resume): its
 * `startedAt` differs, or, in a receipt of an older version without one, it was written before the attempt began.
 */
function settledReceipt(dir: string, startedAt: number): { verdict: Verdict; reason: string; rows: EvalRowInput[]; taskStatus: string | null } | null {
  try {
    const file = path.join(dir, 'receipt.json');
    const receipt = JSON.parse(fs.readFileSync(file, 'utf8')) as {
      startedAt?: unknown;
      taskStatus?: unknown;
      verdict?: unknown;
      reason?: unknown;
      rows?: unknown;
    };
    // The receipt names its attempt's start; one of an older version is judged by its time of writing.
    if (typeof receipt.startedAt === 'number' ? receipt.startedAt !== startedAt : fs.statSync(file).mtimeMs < startedAt) return null;
    if (typeof receipt.verdict !== 'string' || !(VERDICTS as readonly string[]).includes(receipt.verdict)) return null;
    const rows = Array.isArray(receipt.rows) ? (receipt.rows.filter((r) => r && typeof r === 'object' && !Array.isArray(r)) as EvalRowInput[]) : [];
    return {
      verdict: receipt.verdict as Verdict,
      reason: typeof receipt.reason === 'string' ? receipt.reason : '',
      rows,
      taskStatus: typeof receipt.taskStatus === 'string' ? receipt.taskStatus : null,
    };
  } catch {
    return null;
  }
}

/** A row as it is whatever chain it joined: its canonical form with prev_hash null. */
function rowKey(row: object): string {
  return canonicalJson({ ...row, prev_hash: null });
}

/** The {@link rowKey} of every row of run `runId` in the eval log (only lines that name the run are parsed). */
function loggedRows(logFile: string, runId: string): Set<string> {
  const keys = new Set<string>();
  const needle = JSON.stringify(runId);
  readCompleteLines(logFile, 0, ({ text }) => {
    if (!text.includes(needle)) return;
    try {
      const row = JSON.parse(text) as unknown;
      if (row && typeof row === 'object' && (row as { run_id?: unknown }).run_id === runId) keys.add(rowKey(row));
    } catch {
      // a corrupt line is no row
    }
  });
  return keys;
}

/** Each task's spec from the run's frozen manifest; empty when it cannot be read (the rows then carry no spec). */
function frozenSpecs(home: string, state: RunState, sections: readonly WorkflowSection[]): Map<string, string> {
  try {
    return new Map(loadFrozenManifest(home, state, sections).tasks.map((t) => [t.key, t.spec]));
  } catch {
    return new Map();
  }
}
