/**
 * Workflow `phases` (docs/workflows.md "Phases"), its run-time part: red before green. The test phase of a task with
 * `phases` (compiled by its section, manifest/workflows/phases/: TaskSpec `red`) has its check run on a fresh copy of
 * the sealed tree (checkOnCopy), then once more by step `red` (red-step.ts, placed after `check`) on a copy with
 * every phase file put back as it was before its implementation (red.ts), where it must fail. On a pool run the phase
 * files and their start commits travel in the attempt's payload (pool-part.ts).
 */
import type { Workflow } from '../workflow';
import { redLog, redStep } from './red-step';
import { phasesPoolPart } from './pool-part';

export const phasesWorkflow: Workflow = {
  name: 'phases',
  steps: [{ step: redStep, after: 'check' }],
  checkOnCopy: (task) => task.spec.red !== undefined,
  // A red run that passed is what failed the attempt: its output is the one a retry is shown.
  failedCheck: (rec) => (rec.red?.exitCode === 0 ? { exitCode: rec.red.exitCode, output: rec.red.output, files: rec.red.files } : null),
  receipt: (rec) => (rec.red ? { red: rec.red } : {}),
  rowColumns: (rec) =>
    rec.red ? { red: { files: rec.red.files, exit_code: rec.red.exitCode, timed_out: rec.red.receipt.timedOut, check_log: redLog(rec) } } : {},
  pool: phasesPoolPart,
};
