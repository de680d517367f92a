/**
 * Step `seal` (worktree mode): with nothing of the worker alive (its sandbox is gone), the orchestrator records the
 * tree as a commit on top of the task branch, built with its own index (core/git/worktree.ts sealWorktree). The check
 * then judges exactly this tree, and a PASS moves the branch to exactly this commit.
 */
import path from 'node:path';
import fs from 'node:fs';
import { sealWorktree } from '../../git/worktree';
import type { Step } from './context';

export const sealStep: Step = {
  name: 'seal',
  when: (rec, task) => rec.verdict === null && task.links !== null && task.state.branch !== null,
  async run(ctx, task, rec) {
    const { spec } = task;
    const index = path.join(rec.dir, 'seal.index');
    const message = `verdict: ${spec.key} (run ${ctx.runId}, attempt ${rec.attempt})\n\n${spec.verified ?? ''}`.trim();
    try {
      rec.seal = await sealWorktree(task.links!, task.state.branch!, index, message, ctx.repo?.identityArgs ?? []);
    } finally {
      fs.rmSync(index, { force: true });
    }
    if (rec.seal.submodules.length) {
      return { verdict: 'FAIL', reason: `the worker changed files inside submodule(s) ${rec.seal.submodules.join(', ')}; work inside a submodule cannot be kept on the task branch, so it would be lost — keep deliverables outside submodules` };
    }
    return null;
  },
};
