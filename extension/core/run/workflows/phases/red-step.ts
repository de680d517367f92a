/**
 * Step `red` (the test phase of `phases` only: docs/workflows.md "Phases", "red before green"): once the check passed
 * on the sealed tree, the same check runs once more on the red tree (red.ts: the sealed tree with every phase file
 * put back as it was before its implement task ran) and must fail there. Tests that pass without the code test nothing
 * of it: the attempt is then FAIL with that reason, retried like any check failure.
 *
 * The red run is made as like the check as Verdict can: both run on a fresh copy of the sealed tree made the same way
 * at the same path (run/check-tree.ts), bound (sandboxed) at the task dir's own path, with the same variables, sandbox plan,
 * a fresh scratch dir at the same path and the same time limit. What still tells them apart is written in
 * docs/workflows.md.
 */
import path from 'node:path';
import { runCheck } from '../../check';
import { setIdNote } from '../../../process/set-id';
import { copyCheckTree, removeCheckTree } from '../../check-tree';
import { implementStart, putBack, redPassedReason, startContentAt, startContentInBase, type StartContent } from './red';
import type { AttemptRecord } from '../../attempt-record';
import { setRed } from './record';
import { taskCheckEnvironment } from '../../steps/check';
import { taskRunDir } from '../../steps/seal';
import { stepCaps } from '../../containment';
import { Cancelled, type AttemptContext, type Step } from '../../steps/context';

/** The red run's output beside the attempt's check.log: `<attempt dir>/red.log` (the work row's `red.check_log`). */
export function redLog(rec: Pick<AttemptRecord, 'dir'>): string {
  return path.join(rec.dir, 'red.log');
}

export const redStep: Step = {
  name: 'red',
  phase: 'checking',
  when: (rec, task) => rec.verdict === 'PASS' && task.spec.red !== undefined && rec.check !== null,
  async run(ctx, task, rec, io) {
    const { spec } = task;
    const files = spec.red!;
    // What to put back is read first, so the copy is as fresh when the red run starts as the check's was.
    const starts: StartContent[] = [];
    for (const f of files) starts.push(await startOf(ctx, f));
    // A fresh copy of the sealed tree at the path the check's copy had (the task dir was never written by the check).
    const tree = await copyCheckTree(taskRunDir(ctx, spec.key), task.state.dir, task.inputsDir ?? null);
    try {
      for (const [n, f] of files.entries()) {
        const start = starts[n] as StartContent;
        if (ctx.repo) putBack(tree.dir, f.file, start);
        else {
          const entry = task.state.inputs?.entries.find((e) => e.key === f.implement);
          if (!entry || !tree.inputs) throw new Error(`red before green: ${f.implement} is not among the inputs of ${spec.key}`);
          putBack(path.join(tree.inputs, ...entry.path.split('/')), f.file, start);
        }
      }
      const where = taskCheckEnvironment(ctx, task, rec.attempt, io, tree);
      const logFile = redLog(rec);
      const check = await runCheck({
        check: spec.check,
        taskDir: where.sandbox ? task.state.dir : tree.dir,
        logFile,
        timeoutMs: spec.checkTimeoutMs,
        env: where.env,
        expectFiles: [],
        signal: task.abort.signal,
        sandbox: where.sandbox,
        ...stepCaps(spec),
      });
      const setId = setIdNote("the red run's check", check.receipt.setIdCleared);
      if (setId) ctx.emit({ type: 'task-note', key: spec.key, note: setId });
      if (check.receipt.cancelled) throw new Cancelled();
      if (check.receipt.spawnError)
        throw new Error(`red before green: the check could not start on the tree without the implementation: ${check.receipt.spawnError}`);
      const names = files.map((f) => f.file);
      setRed(rec, { files: names, receipt: check.receipt, output: check.output, exitCode: check.receipt.exitCode });
      if (check.receipt.exitCode === 0 && !check.receipt.timedOut) return { verdict: 'FAIL', reason: redPassedReason(spec.check, names) };
      ctx.emit({
        type: 'task-note',
        key: spec.key,
        note: `red before green: the check ${check.receipt.timedOut ? 'timed out' : `exited ${check.receipt.exitCode ?? check.receipt.signal}`} on the tree without ${names.join(', ')}, as it must`,
      });
      return null;
    } finally {
      await removeCheckTree(tree.root);
    }
  },
};

/** A phase file as it was before its implement task ran (red.ts). */
async function startOf(ctx: AttemptContext, f: { file: string; implement: string; start?: string }): Promise<StartContent> {
  if (!ctx.repo) return startContentInBase(taskRunDir(ctx, f.implement), f.file);
  return startContentAt(ctx.repo.root, f.start ?? (await implementStartOf(ctx, f.implement)), f.file);
}

/**
 * Worktree mode: the commit the implement task `implement` started from (red.ts implementStart), from its passed
 * commit in this run's state.
 * @throws Error when it has no passed commit in this run
 */
async function implementStartOf(ctx: AttemptContext, implement: string): Promise<string> {
  const commit = ctx.stateFile.state.tasks.find((t) => t.key === implement)?.commit;
  if (!commit) throw new Error(`red before green: ${implement} has no passed commit in this run`);
  return implementStart(ctx.repo!.root, commit, implement, ctx.runId);
}

/** A pool job's `red` (core/pool/payload.ts): each phase file with its implement task's start commit, resolved here. */
export async function redStarts(
  ctx: AttemptContext,
  red: readonly { file: string; implement: string; start?: string }[],
): Promise<{ file: string; implement: string; start: string }[]> {
  const out: { file: string; implement: string; start: string }[] = [];
  for (const f of red) out.push({ file: f.file, implement: f.implement, start: f.start ?? (await implementStartOf(ctx, f.implement)) });
  return out;
}
