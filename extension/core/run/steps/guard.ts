/**
 * Step `guard`: built-in checks of the worker's output that need no user script, run on the sealed tree before the
 * check. Today: the protected check inputs (run/protect.ts) — a worker that changed or deleted one FAILs, naming it,
 * whatever the check would say ("ran 0 tests" is not a pass).
 */
import { protectedChanges } from '../protect';
import type { Step } from './context';

export const guardStep: Step = {
  name: 'guard',
  when: (rec, task) => rec.verdict === null && task.protected !== null && task.protected.files.size > 0,
  async run(_ctx, task) {
    const changed = protectedChanges(task.state.dir, task.protected!);
    if (!changed.length) return null;
    return {
      verdict: 'FAIL',
      reason: `the worker changed protected check inputs: ${changed.join(', ')}; the check relies on them, so they may not change (the task's "protect" setting says what is protected)`,
    };
  },
};
