import path from 'node:path';
import { attemptLabel } from '../../../schemas/attempt-label';
import { attemptDir } from '../config/home';
import type { RunInfo } from '../live/registry';
import { readFileTail } from './log-tail';

/** Most bytes of a worker's output a live log shows: the end of its worker.log. */
export const TASK_LOG_MAX_BYTES = 64 * 1024;

/**
 * One task's live log as text: a header (run, task, which attempt and its state, how many bytes came before what is
 * shown), then the last `maxBytes` of the latest attempt's worker.log — the worker's output as it arrives. A retry's
 * attempt replaces the previous one (the header says how that one ended). Reads only files under the run's folder
 * that its state names (a task of the run, its latest attempt); bounded by `maxBytes` whatever the worker wrote; a
 * character cut at the front edge becomes U+FFFD. Never throws: a task or log not there yet is said in the text.
 * @param home VERDICT_HOME
 * @param info the run as the registry lists it
 * @param key the task's key
 * @param maxBytes most bytes of the log shown (default TASK_LOG_MAX_BYTES)
 */
export function taskLogText(home: string, info: RunInfo, key: string, maxBytes = TASK_LOG_MAX_BYTES): string {
  const s = info.state;
  const task = s.tasks.find((t) => t.key === key);
  if (!task) return `# run ${s.runName} (${s.runId}) has no task ${key}\n`;
  const last = task.attempts[task.attempts.length - 1];
  // ASCII only: an editor marks unusual characters (a middle dot, a dash) in a log document.
  const head = `# ${s.runName} | ${key} | `;
  if (!last) return `${head}${task.status}: no attempt has started yet; its output shows here as it arrives.\n`;
  const previous = task.attempts.length > 1 ? task.attempts[task.attempts.length - 2] : undefined;
  const state = attemptLabel(last, info.liveness === 'orchestrator-died');
  const earlier = previous ? ` (attempt ${previous.attempt}: ${attemptLabel(previous)})` : '';
  const file = path.join(attemptDir(home, s.runId, key, last.attempt), 'worker.log');
  const tail = readFileTail(file, maxBytes);
  const lines = [`${head}attempt ${last.attempt} | ${state}${earlier}`];
  if (!tail) lines.push(`# worker.log not written yet (${file})`, '');
  else
    lines.push(
      `# the worker's output as it arrives${tail.truncatedBytes ? `; the first ${tail.truncatedBytes} bytes are not shown (the last ${maxBytes} are)` : ''}: ${file}`,
      '',
      tail.text,
    );
  return lines.join('\n');
}
