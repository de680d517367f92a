/**
 * What the phases workflow keeps on an attempt (attempt-record.ts `workflows.phases`, declared here so the core record
 * names no workflow): the red run of a test phase's check (step `red`, red-step.ts). Its field keeps the name it had
 * on the record, so the record a pool worker sends (attempt-record.ts flatRecord) is as it was.
 */
import type { AttemptRecord, CheckRecord, FlatFields } from '../../attempt-record';

/** The red run of a phases test check (step `red`): the files it ran without, and the check's receipt and output there. */
export interface RedRecord extends CheckRecord {
  files: string[];
}

/** The phases workflow's entry of an attempt's record. */
export interface PhasesRecord {
  /** The test phase's check run on the tree without the implementation (step `red`); absent: none ran. */
  red?: RedRecord;
}

declare module '../../attempt-record' {
  interface WorkflowRecords {
    /** The phases workflow's (run/workflows/phases/record.ts). */
    phases?: PhasesRecord;
  }
}

/** The attempt's red run (step `red`), or undefined when none ran. */
export function redRun(rec: Pick<AttemptRecord, 'workflows'>): RedRecord | undefined {
  return rec.workflows?.phases?.red;
}

/** Keeps the attempt's red run in its record. */
export function setRed(rec: AttemptRecord, red: RedRecord): void {
  const workflows = (rec.workflows ??= {});
  workflows.phases = { ...workflows.phases, red };
}

/** The red run a pool worker's record holds (its `red`, the worker's word), or undefined when it holds none. */
export function remoteRed(remote: FlatFields): RedRecord | undefined {
  return remote.red as RedRecord | undefined;
}
