/**
 * Step `seal` (worktree mode): with nothing of the worker alive (its sandbox is gone), the orchestrator records the
 * tree as a commit on top of the task branch, built with its own index (core/git/worktree.ts sealWorktree). The check
 * then judges exactly this tree, and a PASS moves the branch to exactly this commit.
 */
import path from 'node:path';
import fs from 'node:fs';
import { pointHeadAt, sealWorktree, type Seal } from '../../git/worktree';
import type { AttemptContext, Step } from './context';
import { treeHash } from '../tree-hash';
import { saveSealedState, sealedCommit, sealedDir, sealedStateFile } from '../check-writes';
import { runDir } from '../../config/home';

export const sealStep: Step = {
  name: 'seal',
  when: (rec) => rec.verdict === null,
  async run(ctx, task, rec) {
    const { spec } = task;
    if (!task.links || !task.state.branch) {
      // Plain mode: the record of what the check is about to judge is a hash of the task dir.
      rec.sealed = treeHash(task.state.dir);
      task.sealedState = sealedDir(task.state.dir, taskRunDir(ctx, spec.key));
      saveSealedState(sealedStateFile(taskRunDir(ctx, spec.key)), task.sealedState);
      return null;
    }
    const index = path.join(rec.dir, 'seal.index');
    const message = `verdict: ${spec.key} (run ${ctx.runId}, attempt ${rec.attempt})\n\n${spec.verified ?? ''}`.trim();
    try {
      rec.seal = await sealWorktree(task.links!, task.state.branch!, index, message, ctx.repo?.identityArgs ?? [], { timeoutMs: spec.checkTimeoutMs, expectFiles: spec.expectFiles });
    } catch (e) {
      fs.rmSync(index, { force: true });
      if (/timed out after \d+ ms/.test((e as Error).message)) throw new Error(`sealing the worktree took longer than ${Math.round(spec.checkTimeoutMs / 1000)} s (check_timeout_s) and was stopped; the worker left files too large for git to record`);
      throw e;
    }
    rec.sealed = rec.seal.sha;
    if (rec.seal.rewritten?.length) {
      const list = rec.seal.rewritten;
      ctx.emit({ type: 'task-note', key: spec.key, note: `git converted ${list.slice(0, 5).join(', ')}${list.length > 5 ? `, … (${list.length})` : ''} when sealing (.gitattributes or core.autocrlf): written again as the commit holds them, and checked so` });
    }
    // What the check writes is discarded before the next attempt: back to exactly this tree (run/check-writes.ts).
    task.sealedState = await sealedCommit(task.links!, rec.seal.sha, index, taskRunDir(ctx, spec.key));
    saveSealedState(sealedStateFile(taskRunDir(ctx, spec.key)), task.sealedState);
    // The seal's index stays for deliver (it holds exactly the sealed tree); settle removes it.
    // The check compares with the task branch, whatever HEAD or index the worker left.
    await pointHeadAt(task.links!, rec.seal.parent);
    // What the branch could not hold is judged after the check (whose output a retry needs): see sealProblems.
    return null;
  },
};

/** `runs/<id>/tasks/<key>/`: what the orchestrator keeps about a task, out of every step's sight. */
export function taskRunDir(ctx: AttemptContext, key: string): string {
  return path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', key);
}

/**
 * Why the sealed commit cannot stand for the work the check is about to judge, one line each (empty when it can):
 * work inside a submodule, a folder made into a repository of its own, an expected file that exists but that git
 * ignores (a missing one is the check's and expect_files' to report). A PASS with any of these is a FAIL.
 */
export function sealProblems(seal: Seal, taskDir: string): string[] {
  const problems: string[] = [];
  if (seal.submodules.length) problems.push(`the worker changed files inside submodule(s) ${seal.submodules.join(', ')}; work inside a submodule cannot be kept on the task branch, so it would be lost — keep deliverables outside submodules`);
  if (seal.nested.length) problems.push(`the worker made ${seal.nested.join(', ')} a git repository of its own; the task branch would hold only a link to commits it does not have`);
  const ignored = seal.unsealed.filter((f) => fs.existsSync(path.join(taskDir, f)));
  if (ignored.length) problems.push(`expected file(s) ${ignored.join(', ')} are ignored by git, so the sealed commit and the task branch do not hold them`);
  return problems;
}
