/**
 * Workflow `generate` (docs/workflows.md "Generated"): a planner whose check passed writes a tasks file; step
 * `generate` (step.ts) validates it as sealed, and once the planner is PASS its tasks join the run (join.ts).
 */
import type { Workflow } from '../workflow';
import { generateStep, plannedTasks } from './step';
import { joinGenerated } from './join';

export const generateWorkflow: Workflow = {
  name: 'generate',
  steps: [{ step: generateStep, after: 'red' }],
  statusPending: (task) => plannedTasks.has(task),
  onSettled({ run, graph }, task) {
    if (task.state.status === 'PASS' && plannedTasks.has(task)) joinGenerated(run, graph, task);
  },
};
