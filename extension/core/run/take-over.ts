/**
 * Taking over the tasks of a run an earlier orchestrator left (`verdict resume`, `verdict rerun` of a run that ended:
 * run/resume.ts), once the run is open again: what each task's workflows kept, and its task dir.
 */
import { endTask } from './end-task';
import { reattachTask } from './reattach';
import type { AttemptContext, TaskRuntime } from './steps/context';
import { workflowsResumed } from './workflows';

/**
 * Before the run goes on: each task to run again takes back what its workflows kept (Workflow.onResume) and
 * takes over its task dir (run/reattach.ts), or is left to prepare afresh when it never had one. A task whose loop or
 * dir cannot be taken over ends ERROR, saying why (its dependents are then BLOCKED by it, as in any run). Never throws.
 */
export async function takeOverTasks(ctx: AttemptContext, tasks: readonly TaskRuntime[]): Promise<void> {
  for (const task of tasks) {
    try {
      // What a workflow kept of the task goes on where it was (Workflow.onResume).
      workflowsResumed(ctx, task);
      if (await reattachTask(ctx, task))
        ctx.emit({
          type: 'task-note',
          key: task.spec.key,
          note: `goes on in ${task.state.dir} as its last attempt left it (attempt ${task.state.attempts.length + 1} next)`,
        });
    } catch (e) {
      endTask(ctx, task, 'ERROR', `cannot take the task over: ${(e as Error).message}`, { save: false });
    }
  }
}
