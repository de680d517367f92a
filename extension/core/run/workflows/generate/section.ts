/**
 * Workflow `generate`'s section of a task (docs/workflows.md "Generated"): a planner whose worker writes a file of tasks
 * that join the run. rule.ts says what is wrong with a planner in a manifest; file.ts validates the file it wrote
 * (loaded by the plugin's step, run/workflows/generate/, not from here: file.ts lints, and lint loads this table).
 */
import type { WorkflowSection } from '../../../manifest/sections/section';
import { generateProblems } from './rule';

export const generateSection: WorkflowSection = {
  name: 'generate',
  code: 'generate',
  problems: (tasks) => generateProblems(tasks),
};
