/**
 * Step `check`: the task's check on the sealed tree, in its own sandbox with its own time limit, then expect_files;
 * judge() turns the worker's receipt, the check and the engine's error class into the attempt's verdict.
 */
import path from 'node:path';
import { worktreeReadAccess, type WorktreeLinks } from '../../git/worktree';
import type { Containment } from '../../process/sandbox';
import type { BwrapPlan } from '../../process/sandbox';
import { runCheck, type CheckResult } from '../check';
import { hiddenForAnonymity, hiddenFromSteps, sandboxScratch, scratchEnv, stepCaps, stepPlan, type SandboxedRun } from '../containment';
import { setIdNote } from '../../process/set-id';
import { judge } from '../decide';
import { recordFiles } from '../attempt-record';
import { FINAL_EVENT_GRACE_MS } from './work';
import { restoredWords, sealProblems, undeliveredWords } from './seal';
import { escapingLinksReason } from '../../git/worktree';
import { protectedPaths, type AttemptContext, type AttemptIo, type Step, type TaskRuntime } from './context';
import { copyCheckTree, removeCheckTree, type CheckTree } from '../check-tree';
import { putBackJudged } from '../check-writes';
import { setupDepsReason, type SetupDeps } from '../setup-deps';
import { taskRunDir } from './seal';

/**
 * The dependency folders a plain task's put-back judges (check-writes.ts putBackJudged): setup's record, else the
 * work's own as the seal found them, else none; what is new there goes under `aside`.
 */
export function judgedDeps(task: TaskRuntime, aside: string): { record: SetupDeps; aside: string; whose: 'setup' | 'work' } | null {
  if (task.setupDeps) return { record: task.setupDeps, aside, whose: 'setup' };
  return task.sealedDeps ? { record: task.sealedDeps, aside, whose: 'work' } : null;
}

export const checkStep: Step = {
  name: 'check',
  phase: 'checking',
  when: (rec) => rec.verdict === null,
  async run(ctx, task, rec, io) {
    const { spec } = task;
    ctx.emit({ type: 'attempt-checking', key: spec.key, attempt: rec.attempt });
    io.sync();
    // A workflow that runs the check again on a changed copy of the tree (Workflow.checkOnCopy) has this check run on
    // a fresh copy too (run/check-tree.ts), made as that one will be, so the two differ in its changes alone.
    const tree = io.checkOnCopy ? await copyCheckTree(taskRunDir(ctx, spec.key), task.state.dir, task.inputsDir ?? null) : null;
    let check: CheckResult;
    try {
      const where = taskCheckEnvironment(ctx, task, rec.attempt, io, tree);
      check = await runCheck({
        check: spec.check,
        taskDir: tree && !where.sandbox ? tree.dir : task.state.dir,
        judgeDir: tree?.dir,
        logFile: recordFiles(rec).check,
        timeoutMs: spec.checkTimeoutMs,
        env: where.env,
        inherit: ctx.inheritedEnv,
        expectFiles: spec.expectFiles,
        signal: task.abort.signal,
        sandbox: where.sandbox,
        ...stepCaps(spec),
      });
    } finally {
      if (tree) await removeCheckTree(tree.root);
    }
    rec.check = { receipt: check.receipt, output: check.output, exitCode: check.receipt.exitCode };
    const setId = setIdNote('the check', check.receipt.setIdCleared);
    if (setId) ctx.emit({ type: 'task-note', key: spec.key, note: setId });
    const worker = rec.worker!;
    // A CLI may exit 0 after its API failed (grok-cli 0.0.34 prints the failure as its last message): its own report of
    // an error is read as a failed run's is.
    const failed = worker.exitCode !== 0 || rec.usage?.finalStatus === 'error';
    const errorClass = failed && !worker.stoppedAfterFinal ? task.engine.classifyError(io.workerTail) : null;
    const judged = judge(
      worker,
      { passed: check.passed, cancelled: check.receipt.cancelled, reason: check.reason },
      errorClass,
      { timeoutMs: spec.timeoutMs, watchdogMs: spec.watchdogMs, finalGraceMs: ctx.opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
      spec.inputs !== undefined,
    );
    const problems = rec.seal
      ? sealProblems(rec.seal, task.state.dir, rec.undelivered)
      : [
          ...(rec.escapingLinks?.length ? [escapingLinksReason(rec.escapingLinks)] : []),
          ...(rec.setupChanged?.length ? [setupDepsReason(rec.setupChanged)] : []),
        ];
    // The check judged the tree; the branch must be able to hold what it judged, or the PASS would be a lie.
    if (judged.verdict === 'PASS' && problems.length) return { verdict: 'FAIL', reason: problems.join('; ') };
    // Plain mode delivers the task dir itself: it is put back to the sealed tree the check judged (a check on a copy
    // left the task dir alone).
    if (judged.verdict === 'PASS' && !tree) {
      const back = putBackJudged(task.state.dir, task.sealedState, 'the check', judgedDeps(task, path.join(rec.dir, 'after-check')));
      if (back.note) ctx.emit({ type: 'task-note', key: spec.key, note: back.note });
      if (back.failure) return { verdict: 'FAIL', reason: back.failure };
    }
    // A failing check may have looked for what was moved out of its sight: the retry is told where it went and why,
    // and which of setup's files it deleted or changed were put back for the check.
    const u = rec.undelivered;
    const moved = [
      ...(u?.count ? [`${undeliveredWords(u)}; a file the check reads must be committed (not under a path git ignores), or made by the check itself`] : []),
      ...(u?.restored?.length ? [restoredWords(u.restored, u.dir)] : []),
    ];
    if (judged.verdict === 'FAIL' && (problems.length || moved.length)) return { verdict: 'FAIL', reason: [judged.reason, ...problems, ...moved].join('; ') };
    return judged;
  },
};

/**
 * The task's check environment (a fresh scratch dir at the same path every time). With `tree` (a check tree,
 * run/check-tree.ts): sandboxed, the copies are bound at the task dir's and the inputs folder's own paths, so every run
 * sees the same paths, variables and sandbox; unsandboxed (nothing can be bound), the variables that name the task dir
 * and the inputs name the copies, which are at one path for every run of the task.
 */
export function taskCheckEnvironment(
  ctx: AttemptContext,
  task: TaskRuntime,
  attempt: number,
  io: AttemptIo,
  tree: CheckTree | null,
): { env: Record<string, string>; sandbox: BwrapPlan | null } {
  const { spec } = task;
  const scratch = sandboxScratch(ctx.opts.home, ctx.runId, spec.key, attempt, 'check', task.containment === 'bwrap' && ctx.bwrap !== null);
  const substitute = tree
    ? [{ source: tree.dir, at: task.state.dir }, ...(tree.inputs && task.inputsDir ? [{ source: tree.inputs, at: task.inputsDir }] : [])]
    : [];
  const where = checkEnvironment({
    run: ctx,
    containment: task.containment,
    taskDir: task.state.dir,
    scratch,
    links: task.links,
    network: spec.network,
    taskEnv: io.taskEnv(),
    readOnly: protectedPaths(task),
    hidden: [
      ...hiddenFromSteps(ctx.opts.home, ctx.opts.manifest.worktrees ? null : ctx.opts.manifest.workdir),
      ...hiddenForAnonymity(spec.inputs, task.links?.commonDir ?? null),
    ],
    substitute,
  });
  if (!tree || where.sandbox) return where;
  return { sandbox: null, env: { ...where.env, VERDICT_TASK_DIR: tree.dir, ...(tree.inputs ? { VERDICT_INPUTS: tree.inputs } : {}) } };
}

/**
 * Where and with what a check runs — the one recipe for the attempt's check and the baseline: the task's variables,
 * a scratch dir for temporary files when sandboxed, read access to the worker's git objects in worktree mode, and a
 * sandbox whose only writable places are the task dir and that scratch dir (and, in it, `readOnly` files — the
 * protected check inputs — stay read-only: the check runs code the worker wrote).
 */
export function checkEnvironment(o: {
  run: SandboxedRun;
  containment: Containment;
  taskDir: string;
  scratch: string;
  links: WorktreeLinks | null;
  network: boolean | 'host';
  taskEnv: Record<string, string>;
  readOnly?: string[];
  hidden?: string[];
  substitute?: { source: string; at: string }[];
}): { env: Record<string, string>; sandbox: BwrapPlan | null } {
  const boxed = o.containment === 'bwrap' && o.run.bwrap !== null;
  // The worktree's admin dir stays readable to the check, read-only; the worker's own git objects do not (see
  // worktreeReadAccess: one it planted could stand in for a base blob).
  const git = o.links && boxed ? worktreeReadAccess(o.links) : { env: {}, readOnly: [] };
  return {
    env: { ...o.taskEnv, ...(boxed ? scratchEnv(o.scratch) : {}), ...git.env },
    sandbox: stepPlan(o.run, o.containment, {
      writable: [o.taskDir, o.scratch],
      network: o.network,
      readOnly: [...git.readOnly, ...(o.readOnly ?? [])],
      hidden: o.hidden ?? [],
      ...(o.substitute?.length ? { substitute: o.substitute } : {}),
    }),
  };
}
