/**
 * Step `deliver` (worktree mode, after a PASS): the task branch moves to the sealed commit the check judged; files
 * the check wrote are not in it.
 */
import path from 'node:path';
import { advanceBranch } from '../../git/worktree';
import type { Step } from './context';

export const deliverStep: Step = {
  name: 'deliver',
  phase: 'checking',
  when: (rec, task) => rec.verdict === 'PASS' && rec.seal !== null && task.links !== null && task.state.branch !== null,
  async run(_ctx, task, rec) {
    const seal = rec.seal!;
    await advanceBranch(task.links!, task.state.branch!, seal, path.join(rec.dir, 'seal.index'));
    rec.commit = seal.sha;
    task.state.commit = seal.sha;
    if (!seal.changed) rec.reason = 'the check passed but the worker changed no files; the branch stays at base_ref';
    return null;
  },
};
