/**
 * The phases workflow's part of a pool attempt's payload (pool/payload.ts `workflows.phases`): a test phase's phase
 * files, each with the commit its implement task started from, resolved on the orchestrator (redStarts), so that the
 * worker's step `red` puts each file back as it was there without this run's records; the worker's red run comes back
 * in its record (`taken`).
 */
import fs from 'node:fs';
import type { TaskSpec } from '../../../manifest/types';
import type { PoolPartCheck, WorkflowPoolPart } from '../workflow';
import { redLog, redStarts } from './red-step';
import { remoteRed, setRed } from './record';

/** One phase file of the part: its path in the task dir, its implement task's key, and that task's start commit. */
export interface PoolRed {
  file: string;
  /** The implement task's key (for the record's words only). */
  implement: string;
  start: string;
}

/** The part of a test phase's attempt: its phase files (at most 50, the manifest's limit); none for any other task. */
export const phasesPoolPart: WorkflowPoolPart = {
  send: async (ctx, task) => (task.spec.red ? redStarts(ctx, task.spec.red) : null),
  parse: (part, check) => redOf(part, check),
  commits: (part) => (part as PoolRed[]).map((r) => r.start),
  // The worker's red run: its record, and its output as the attempt's red.log here.
  taken: (remote, rec) => {
    const red = remoteRed(remote);
    if (red === undefined) return;
    setRed(rec, red);
    fs.writeFileSync(redLog(rec), red.output);
  },
  spec: (part): Partial<TaskSpec> => ({ red: (part as PoolRed[]).map((r) => ({ file: r.file, implement: r.implement, start: r.start })) }),
};

/**
 * The part, checked: 1 to 50 entries, each exactly {file, implement, start}; a file a relative path inside the task dir
 * (no `..`, no absolute path, no empty part), an implement key as the manifest's keys are, a start a full commit sha.
 * @throws BadJobError (check.bad) naming the first entry that is wrong
 */
function redOf(v: unknown, check: PoolPartCheck): PoolRed[] {
  const want = '[{file, implement, start}] (at most 50)';
  if (!Array.isArray(v) || !v.length || v.length > 50) return check.bad(want);
  for (const e of v as unknown[]) {
    const entry = e as Record<string, unknown> | null;
    if (
      !entry ||
      typeof entry !== 'object' ||
      Array.isArray(entry) ||
      Object.keys(entry).length !== 3 ||
      typeof entry.file !== 'string' ||
      typeof entry.implement !== 'string' ||
      typeof entry.start !== 'string'
    )
      return check.bad(want);
    if (!check.isKey(entry.implement)) check.bad(`implement keys as task keys are (got ${JSON.stringify(entry.implement).slice(0, 80)})`);
    const parts = entry.file.split('/');
    if (entry.file.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..'))
      check.bad(`files inside the task dir (got ${JSON.stringify(entry.file).slice(0, 80)})`);
    if (!check.isCommit(entry.start)) check.bad(`start commits are full commit shas (got ${JSON.stringify(entry.start).slice(0, 80)})`);
  }
  return (v as PoolRed[]).map((e) => ({ file: e.file, implement: e.implement, start: e.start }));
}
