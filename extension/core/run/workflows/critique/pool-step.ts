/**
 * A pool run's critique round (docs/scale.md "Workflows on the pool"): the attempt ran on a worker; its critics run
 * here, on the orchestrator, as run/workflows/critique/step.ts runs them locally, on a detached worktree of the proposal's
 * sealed commit (fetched from the remote before the PASS was counted) made for the round and removed after it. The
 * revision the round asks is the task's next attempt, dispatched to the pool like any other, starting from the
 * proposal (dispatch.ts jobOf).
 */
import fs from 'node:fs';
import path from 'node:path';
import { readWorktreeLinks } from '../../../git/worktree';
import { addDetachedWorktree, removeWorktreeLocked } from '../../../git/worktree-lock';
import { critiqueStep } from './step';
import type { Step } from '../../steps/context';

/**
 * The step after the pool's `work` step of a task with `critique`: a worktree of the passed proposal in the task's dir
 * here (`task.state.dir`, which a pool run otherwise leaves empty), the local critique step over it, the worktree
 * removed whatever happened (the proposal stays on its branch and the remote).
 */
export function critiqueHereStep(): Step {
  return {
    name: 'critique',
    phase: 'checking',
    when: (rec, task) => critiqueStep.when(rec, task),
    async run(ctx, task, rec, io) {
      if (!ctx.repo || !rec.commit) throw new Error('a critique round on the pool needs the passed commit here');
      const dir = task.state.dir;
      const { root, commonDir } = ctx.repo;
      // Under the repository's worktree lock: the run's own adds may be registering beside this step (see git/worktree-lock.ts).
      const drop = () => removeWorktreeLocked(root, dir, { commonDir }).catch(() => fs.rmSync(dir, { recursive: true, force: true }));
      if (fs.existsSync(dir)) await drop();
      fs.mkdirSync(path.dirname(dir), { recursive: true });
      await addDetachedWorktree(root, dir, rec.commit, { commonDir });
      task.links = readWorktreeLinks(dir, commonDir);
      try {
        return await critiqueStep.run(ctx, task, rec, io);
      } finally {
        task.links = null;
        await drop();
      }
    },
  };
}
