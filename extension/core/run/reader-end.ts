/**
 * Whether a reader ended on its own (pure; docs/containment.md "Readers"). A reader — a reviewer, a critic, a ranking
 * reviewer, a task that reads other tasks' work through `inputs` (council reviewers and chair, validators) — answers in
 * its output or in a file, while it runs code the worker wrote (the tests of the work it reads). That code can write
 * into the reader's output or its file and then end the engine (SIGKILL, SIGSTOP until Verdict stops it), so that the
 * last word is the code's, not the reader's. An answer therefore counts only from a reader that ended on its own: it
 * exited 0, by no signal, neither stopped by Verdict (time limit, watchdog, still running after its final event) nor
 * cut off by the spawn helper's death. Sandboxed, bubblewrap reports a step killed by signal N as exit 128 + N.
 */
import os from 'node:os';
import type { EngineErrorClass } from '../../../engines/types';

/** What readerEnd needs of a reader's receipt (core/process/supervisor.ts Receipt). */
export interface ReaderReceipt {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stalled: boolean;
  stoppedAfterFinal: boolean;
  spawnError: string | null;
}

/** The limits readerEnd names, ms. */
export interface ReaderLimits {
  timeoutMs: number;
  watchdogMs: number | null;
  finalGraceMs: number;
}

const SIGNAL_NAMES = new Map<number, string>(Object.entries(os.constants.signals).map(([name, n]) => [n, name]));

/**
 * Why the reader's answer does not count (one line, naming it as `who`: `the reviewer`, `the critic`, `the ranking
 * reviewer`, `the worker`), or null when it ended on its own (exit 0). `errorClass` is its engine's reading of a
 * non-zero exit (rate_limit, auth…), named when given. The order: could not start, stalled, timed out, kept running
 * after its final event, killed by a signal, exited non-zero.
 */
export function readerEnd(receipt: ReaderReceipt, who: string, limits: ReaderLimits, errorClass: EngineErrorClass | null = null): string | null {
  const seconds = (ms: number) => Math.round(ms / 1000);
  if (receipt.spawnError) return `${who} could not start: ${receipt.spawnError}`;
  if (receipt.stalled) return `${who} printed nothing for ${seconds(limits.watchdogMs ?? 0)} s and was stopped`;
  if (receipt.timedOut) return `${who} ran out of time after ${seconds(limits.timeoutMs)} s and was stopped`;
  const notCounted = 'so it did not end on its own: its answer is not counted, whatever its output or files hold';
  if (receipt.stoppedAfterFinal)
    return `${who} printed its final event but kept running and was stopped after ${seconds(limits.finalGraceMs)} s, ${notCounted}`;
  if (receipt.signal) return `${who} was killed by ${receipt.signal}, ${notCounted}`;
  if (receipt.exitCode !== 0) {
    const code = receipt.exitCode;
    const bySignal = code !== null && code > 128 ? SIGNAL_NAMES.get(code - 128) : undefined;
    const how = bySignal ? ` (128 + ${bySignal}: killed by a signal)` : errorClass ? ` (${errorClass})` : '';
    return `${who} exited ${code ?? 'without a code'}${how}, ${notCounted}`;
  }
  return null;
}
