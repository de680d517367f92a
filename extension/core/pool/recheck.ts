/**
 * The orchestrator's re-check of a pool worker's PASS (docs/scale.md "Trust"): a worker machine reports the verdict
 * of a check it ran itself, and a compromised or misconfigured one can report PASS for a commit whose check fails. So
 * before the PASS counts, the orchestrator runs the task's check itself on the commit the worker reported, as the
 * attempt's check step runs it locally (run/steps/check.ts) and as the merge queue re-checks a branch
 * (run/merge-plan.ts): a detached worktree of that commit at the task's dir here (which a pool run otherwise leaves
 * empty, as run/workflows/critique/pool-step.ts uses it), the start commit's versions of the protected check inputs
 * (merge-plan.ts baseCheckInputs), the manifest's `setup`, the task's inputs copied from their commits, then the check
 * in its sandbox with the task's variables and `expect_files`. The worktree is removed whatever happens.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readWorktreeLinks } from '../git/worktree';
import { addDetachedWorktree, removeWorktreeLocked } from '../git/worktree-lock';
import { recordFiles, type AttemptRecord } from '../run/attempt-record';
import { runCheck } from '../run/check';
import { baseCheckInputs } from '../run/merge-plan';
import { reservePort } from '../run/ports';
import { judgedCommands, protectedSet } from '../run/protect';
import { suiteFailedReason } from '../run/steps/suite';
import { startPoint } from '../run/start-point';
import { taskCheckEnvironment } from '../run/steps/check';
import { stepCaps } from '../run/containment';
import { Cancelled, type AttemptContext, type AttemptIo, type TaskRuntime } from '../run/steps/context';
import { copyInputs } from '../run/steps/inputs';
import { runSetup } from '../run/steps/prepare';
import type { Receipt } from '../process/supervisor';
import type { AttemptJob } from './payload';

/** What the re-check found. */
export type Recheck =
  /** The check ran here: `passed` with its receipt and output (written to the attempt's check.log). */
  | { ran: true; passed: boolean; receipt: Receipt; output: string; exitCode: number | null; reason: string }
  /** It could not run here (git, setup, the start point): not the worker's fault, and no PASS either. */
  | { ran: false; reason: string };

/**
 * Runs the task's check here on `rec.commit` (see the module comment); its output goes to the attempt's check.log.
 * @param job the payload the attempt was sent with (its start point and inputs)
 * @throws Cancelled when the task was stopped meanwhile
 */
export async function recheckHere(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, io: AttemptIo, job: AttemptJob): Promise<Recheck> {
  const repo = ctx.repo;
  const commit = rec.commit;
  if (!repo || !commit) return { ran: false, reason: 'no repository or commit here to re-check' };
  const { spec } = task;
  const dir = task.state.dir;
  // Under the repository's worktree lock: the run's own adds may be registering beside the re-check (see git/worktree-lock.ts).
  const drop = () => removeWorktreeLocked(repo.root, dir, { commonDir: repo.commonDir }).catch(() => fs.rmSync(dir, { recursive: true, force: true }));
  const saved = { links: task.links, protected: task.protected, inputsDir: task.inputsDir, inputSources: task.inputSources, port: task.state.port };
  try {
    if (fs.existsSync(dir)) await drop();
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    const tampered = await recheckCheckout(repo, task, dir, commit, job);
    if (!Array.isArray(tampered)) return tampered;
    const port = await reservePort();
    task.state.port = port;
    if (job.inputs) {
      task.inputSources = job.inputs.entries;
      try {
        task.inputsDir = (await copyInputs(ctx, task)).dir;
      } catch (e) {
        return { ran: false, reason: `the task's inputs could not be copied here: ${(e as Error).message}` };
      }
    }
    const env = (): Record<string, string> => ({
      ...io.taskEnv(),
      PORT: String(port),
      VERDICT_TASK_DIR: dir,
      VERDICT_ATTEMPT: String(rec.attempt),
      ...(task.inputsDir ? { VERDICT_INPUTS: task.inputsDir } : {}),
    });
    try {
      await runSetup(ctx, task, dir, path.join(rec.dir, 'recheck-setup.log'), env());
    } catch (e) {
      if (e instanceof Cancelled) throw e;
      return { ran: false, reason: `setup failed here: ${(e as Error).message}` };
    }
    // Read-only to the check, as in the attempt's own check (run/steps/context.ts protectedPaths).
    task.protected = protectedSet(
      dir,
      judgedCommands(spec),
      spec.protect,
      null,
      spec.expectFiles.map((f) => path.normalize(f)),
    );
    const where = taskCheckEnvironment(ctx, task, rec.attempt, { ...io, taskEnv: env }, null);
    const check = await runCheck({
      check: spec.check,
      taskDir: dir,
      logFile: recordFiles(rec).check,
      timeoutMs: spec.checkTimeoutMs,
      env: where.env,
      inherit: ctx.inheritedEnv,
      expectFiles: spec.expectFiles,
      signal: task.abort.signal,
      sandbox: where.sandbox,
      ...stepCaps(spec),
    });
    if (check.receipt.cancelled) throw new Cancelled();
    const judged = checkVerdict(check, tampered);
    if (judged) return judged;
    // The full suite too (run/steps/suite.ts): a worker's word that it passed is no more believed than its check's.
    const suite = spec.suite ? await recheckSuite(ctx, task, rec, dir, where, spec.suite) : null;
    if (suite) return suite;
    return { ran: true, passed: true, receipt: check.receipt, output: check.output, exitCode: check.receipt.exitCode, reason: check.reason };
  } finally {
    task.links = saved.links;
    task.protected = saved.protected;
    task.inputsDir = saved.inputsDir;
    task.inputSources = saved.inputSources;
    task.state.port = saved.port;
    await drop();
  }
}

/**
 * A detached checkout of `commit` at `dir` for the re-check, its links set on the task, and the protected check inputs
 * the commit changes against the start point the worker was given (computed here: the commit's parents are the
 * worker's word), put back to that start point's versions.
 * @returns those paths, or the re-check that could not run when the checkout could not be made
 */
async function recheckCheckout(
  repo: NonNullable<AttemptContext['repo']>,
  task: TaskRuntime,
  dir: string,
  commit: string,
  job: AttemptJob,
): Promise<string[] | Recheck> {
  try {
    await addDetachedWorktree(repo.root, dir, commit, { commonDir: repo.commonDir });
    task.links = readWorktreeLinks(dir, repo.commonDir);
    const start = await startPoint(repo, task.spec.key, job.startFrom);
    return await baseCheckInputs(dir, start, task.spec);
  } catch (e) {
    return { ran: false, reason: `a checkout of ${commit.slice(0, 10)} could not be made here: ${(e as Error).message}` };
  }
}

/**
 * The re-check's result from the check's and `tampered`, the protected check inputs the commit changes (run with the
 * start commit's versions): a failed check fails naming them, a passed one still fails when there are any; null when
 * it passed and there are none. Pure.
 */
function checkVerdict(check: { passed: boolean; receipt: Receipt; output: string; reason: string }, tampered: string[]): Recheck | null {
  const list = tampered.slice(0, 10).join(', ') + (tampered.length > 10 ? `, … (${tampered.length})` : '');
  if (!check.passed)
    return {
      ran: true,
      passed: false,
      receipt: check.receipt,
      output: check.output,
      exitCode: check.receipt.exitCode,
      reason: tampered.length
        ? `${check.reason} (run with the start commit's versions of the protected check inputs the commit changes: ${list})`
        : check.reason,
    };
  if (tampered.length)
    return {
      ran: true,
      passed: false,
      receipt: check.receipt,
      output: check.output,
      exitCode: check.receipt.exitCode,
      reason: `the commit changes protected check inputs (${list}); the check passed with the start commit's versions of them`,
    };
  return null;
}

/**
 * Runs the task's full `suite` in the re-check's checkout `dir` with the check's environment and sandbox (`where`), its
 * output to the attempt's suite.log. Returns the failed re-check, or null when it passed.
 * @throws Cancelled when the task was stopped meanwhile
 */
async function recheckSuite(
  ctx: AttemptContext,
  task: TaskRuntime,
  rec: AttemptRecord,
  dir: string,
  where: { env: Record<string, string>; sandbox: Parameters<typeof runCheck>[0]['sandbox'] },
  suite: { command: string; timeoutMs: number },
): Promise<Recheck | null> {
  const ran = await runCheck({
    check: suite.command,
    taskDir: dir,
    logFile: recordFiles(rec).suite,
    timeoutMs: suite.timeoutMs,
    env: where.env,
    inherit: ctx.inheritedEnv,
    expectFiles: [],
    signal: task.abort.signal,
    sandbox: where.sandbox,
    ...stepCaps(task.spec),
  });
  if (ran.receipt.cancelled) throw new Cancelled();
  if (!ran.passed)
    return {
      ran: true,
      passed: false,
      receipt: ran.receipt,
      output: ran.output,
      exitCode: ran.receipt.exitCode,
      reason: suiteFailedReason(suite.command, ran.reason.replace(/^the check /, ''), ran.output),
    };
  return null;
}
