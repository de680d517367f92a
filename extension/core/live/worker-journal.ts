/**
 * The worker journal: `workers.jsonl` beside a state file, one line per worker started — the task key and the attempt's
 * state view at its spawn (pid and start time included) — appended at once, before the orchestrator does anything else;
 * and one line per sandbox init the spawn helper holds (`{"init":{pid,startTime}}`, any step's: worker, check, critic),
 * which reconcile kills if it outlived the orchestrator and the helper.
 *
 * Why not state.json itself: crash recovery needs the pid of every live worker on disk the moment it exists, and
 * state.json holds every task of the run, so writing it at each spawn cost the main thread time in proportion to the
 * run's size at every attempt (300 tasks: ~2 ms of JSON per write, the run quadratic). One appended line costs the
 * same for any run; state.json is then written on its usual schedule (≤ 1 write per STATE_WRITE_GAP_MS) and holds the
 * pid ≤ 100 ms later. A reconciler reads both: {@link mergeWorkerJournal} puts back what state.json had not got yet.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AttemptState, RunState } from '../../../schemas/run-state';

/** One journal line: the attempt's view as it was right after its worker started. */
export interface WorkerEntry {
  key: string;
  view: AttemptState;
}

/** A sandbox's init (PID 1 of a step's PID namespace, as the host sees it): its pid and /proc start time (field 22). */
export interface SandboxInit {
  pid: number;
  startTime: string | null;
}

/** The other kind of journal line: a sandbox's init, recorded once the spawn helper holds it (StateFile.recordSandboxInit). */
export interface InitEntry {
  init: SandboxInit;
}

/** `<dir of stateFile>/workers.jsonl`. */
export function workerJournalFile(stateFile: string): string {
  return path.join(path.dirname(stateFile), 'workers.jsonl');
}

/**
 * Opens the journal for appending (created if missing); the writer keeps the descriptor for the run.
 * @throws Error from the filesystem
 */
export function openWorkerJournal(file: string): number {
  return fs.openSync(file, 'a');
}

/**
 * Appends one entry to the journal open at `fd` (one line; O_APPEND: it lands after everything written before).
 * No fsync: the journal only matters while the machine is up (after a reboot no recorded worker is alive).
 * @throws Error from the filesystem; the caller then writes the state at once instead
 */
export function appendWorker(fd: number, entry: WorkerEntry | InitEntry): void {
  const line = Buffer.from(`${JSON.stringify(entry)}\n`);
  let written = 0;
  while (written < line.length) written += fs.writeSync(fd, line, written);
}

/** Each line of the journal parsed as JSON, in order; [] when there is none. A line cut short (a crash, a full disk) is skipped. */
function journalLines(file: string): unknown[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  const out: unknown[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a line cut short: its writer fell back to writing the state at once (a worker) or warned (an init)
    }
  }
  return out;
}

/** The journal's worker entries in order; [] when there is none. A line that is not a whole entry is skipped. */
export function readWorkerJournal(file: string): WorkerEntry[] {
  return journalLines(file).filter((e): e is WorkerEntry => {
    const w = e as Partial<WorkerEntry> | null;
    return typeof w?.key === 'string' && !!w.view && Number.isInteger(w.view.attempt) && typeof w.view.workerPid === 'number';
  });
}

/** The sandbox inits the journal names, in order; [] when there is none. Worker lines, and lines cut short, are skipped. */
export function readSandboxInits(file: string): SandboxInit[] {
  const out: SandboxInit[] = [];
  for (const e of journalLines(file)) {
    const init = (e as Partial<InitEntry> | null)?.init;
    if (init && Number.isInteger(init.pid) && init.pid > 1 && (typeof init.startTime === 'string' || init.startTime === null))
      out.push({ pid: init.pid, startTime: init.startTime });
  }
  return out;
}

/**
 * Puts into `state` (in place) what the journal knows and state.json did not yet: a worker whose attempt state.json
 * shows without a pid (the write was still waiting for its turn) gets the journal's view of that attempt; an attempt
 * state.json has not recorded at all is added to its task. An attempt state.json already shows with a pid, or done,
 * is newer than its journal line and kept. Returns how many attempts it changed.
 */
export function mergeWorkerJournal(state: RunState, entries: readonly WorkerEntry[]): number {
  let changed = 0;
  for (const { key, view } of entries) {
    const task = state.tasks.find((t) => t.key === key);
    if (!task) continue;
    const i = task.attempts.findIndex((a) => a.attempt === view.attempt);
    if (i === -1) {
      task.attempts.push(view);
      task.attempts.sort((a, b) => a.attempt - b.attempt);
      changed++;
    } else if (task.attempts[i]!.phase !== 'done' && !task.attempts[i]!.workerPid) {
      task.attempts[i] = view;
      changed++;
    }
  }
  return changed;
}
