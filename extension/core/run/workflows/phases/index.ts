/**
 * Workflow `phases` (docs/workflows.md "Phases"), its run-time part: red before green. The test phase of a task with
 * `phases` (compiled by its section, section.ts: TaskSpec `red`) has its check run on a fresh copy of
 * the sealed tree (checkOnCopy), then once more by step `red` (red-step.ts, placed after `check`) on a copy with
 * every phase file put back as it was before its implementation (red.ts), where it must fail; the red run is kept in
 * the attempt's record under `workflows.phases` (record.ts). On a pool run the phase
 * files and their start commits travel in the attempt's payload (pool-part.ts).
 */
import type { Workflow } from '../workflow';
import { redLog, redStep } from './red-step';
import { phasesPoolPart } from './pool-part';
import { redRun } from './record';
import { phasesSection } from './section';

export const phasesWorkflow: Workflow = {
  name: 'phases',
  section: phasesSection,
  steps: [{ step: redStep, after: 'check' }],
  checkOnCopy: (task) => task.spec.red !== undefined,
  // A red run that passed is what failed the attempt: its output is the one a retry is shown.
  failedCheck: (rec) => {
    const red = redRun(rec);
    return red?.exitCode === 0 ? { exitCode: red.exitCode, output: red.output, files: red.files } : null;
  },
  receipt: (rec) => {
    const red = redRun(rec);
    return red ? { red } : {};
  },
  rowColumns: (rec) => {
    const red = redRun(rec);
    return red ? { red: { files: red.files, exit_code: red.exitCode, timed_out: red.receipt.timedOut, check_log: redLog(rec) } } : {};
  },
  pool: phasesPoolPart,
};
