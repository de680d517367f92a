/**
 * The --baseline run of a task: its check on the untouched task dir, before any worker (a check that already passes
 * cannot prove a worker did anything).
 */
import fs from 'node:fs';
import path from 'node:path';
import { runDir } from '../config/home';
import { setIdNote } from '../process/set-id';
import { runCheck } from './check';
import { preparedState } from './check-writes';
import { hiddenFromSteps, stepCaps, stepScratch } from './containment';
import { endTask } from './end-task';
import { checkEnvironment } from './steps/check';
import type { AttemptContext, TaskRuntime } from './steps/context';
import { prepareTask } from './steps/prepare';

/**
 * --baseline: prepares the task dir and runs the check before any worker. True when the check already passes (the
 * task is then SKIPPED) or the dir could not be prepared (the task is then ERROR); false when the worker should run.
 * Records go to `tasks/<key>/baseline/`; no eval row is written, as no worker ran.
 */
export async function baselinePasses(ctx: AttemptContext, task: TaskRuntime): Promise<boolean> {
  const { opts, stateFile } = ctx;
  const dir = path.join(runDir(opts.home, ctx.runId), 'tasks', task.spec.key, 'baseline');
  fs.mkdirSync(dir, { recursive: true });
  const env = (): Record<string, string> => ({
    PORT: String(task.state.port),
    VERDICT_RUN_ID: ctx.runId,
    VERDICT_TASK_KEY: task.spec.key,
    VERDICT_TASK_DIR: task.state.dir,
    VERDICT_ATTEMPT: '0',
  });
  task.state.status = 'baseline';
  void stateFile.save();
  let reason: string;
  let status: 'SKIPPED' | 'ERROR';
  try {
    await prepareTask(ctx, task, path.join(dir, 'setup.log'), env);
    const scratch = stepScratch(opts.home, ctx.runId, task.spec.key, 0, 'check');
    // VERDICT_HOME (other tasks' worktrees and records) and a plain run's workdir hidden, as from every check.
    const where = checkEnvironment({
      run: ctx,
      containment: task.containment,
      taskDir: task.state.dir,
      scratch,
      links: task.links,
      network: task.spec.network,
      taskEnv: env(),
      hidden: hiddenFromSteps(opts.home, opts.manifest.worktrees ? null : opts.manifest.workdir),
    });
    // What the baseline's check writes is discarded before attempt 1, as any check's is before a retry.
    const prepared = await preparedState(task.state.dir, task.links, path.dirname(dir));
    const check = await runCheck({
      check: task.spec.check,
      taskDir: task.state.dir,
      logFile: path.join(dir, 'check.log'),
      timeoutMs: task.spec.checkTimeoutMs,
      env: where.env,
      expectFiles: task.spec.expectFiles,
      signal: task.abort.signal,
      sandbox: where.sandbox,
      ...stepCaps(task.spec),
    });
    const setId = setIdNote('the baseline check', check.receipt.setIdCleared);
    if (setId) ctx.emit({ type: 'task-note', key: task.spec.key, note: setId });
    if (!check.passed) {
      task.sealedState = prepared;
      return false;
    }
    status = 'SKIPPED';
    reason = 'baseline: the check already passes on the untouched tree, so it cannot prove a worker did anything; the task was not run';
  } catch (e) {
    if (task.abort.signal.aborted) return false;
    status = 'ERROR';
    reason = `baseline: ${(e as Error).message}`;
  }
  endTask(ctx, task, status, reason);
  return true;
}
