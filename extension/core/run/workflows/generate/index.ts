/**
 * Workflow `generate` (docs/workflows.md "Generated"): a planner (its section: section.ts, rule.ts) whose check passed
 * writes a tasks file; step `generate` (step.ts) validates it as sealed (file.ts), and once the planner is PASS its
 * tasks join the run (join.ts).
 */
import type { Workflow } from '../workflow';
import { generateStep, plannedTasks } from './step';
import { joinGenerated } from './join';
import { generateSection } from './section';

export const generateWorkflow: Workflow = {
  name: 'generate',
  section: generateSection,
  // Before `suite`, a step every attempt has (so after the check and any step a workflow puts after it).
  steps: [{ step: generateStep, before: 'suite' }],
  statusPending: (task) => plannedTasks.has(task),
  onSettled({ run, graph }, task) {
    if (task.state.status === 'PASS' && plannedTasks.has(task)) joinGenerated(run, graph, task);
  },
  // A planner whose tasks joined the run (state.json `generated`): running it again would add them twice.
  refuseRerun: (task) =>
    task.generated?.length ? `${task.key} is a planner whose tasks already joined the run (${task.generated.join(', ')}); rerun those instead` : null,
};
