/**
 * Step `suite` (docs/workflows.md "The full suite"): once the check (and a phases test phase's red run) passed, the
 * task's full regression check — the repository's whole test suite, typically — runs on the tree as sealed, and must
 * exit 0 for the attempt to PASS. A task's own check is a filter, not proof: work that passes it can still break a test
 * elsewhere in the repository. A failing suite FAILs the attempt with its output, injected into the retry as a failed
 * check's is.
 *
 * It runs as the check runs (steps/check.ts taskCheckEnvironment: the same variables, sandbox plan, network, fresh
 * scratch dir, protected files read-only), with its own log (suite.log), time limit (`suite_timeout_s`; at the limit
 * its process group is killed) and the task's memory cap. Before it, the task dir is put back to the tree the seal
 * recorded (run/check-writes.ts), so nothing the check wrote — a marker, a rewritten test, a build output — reaches it.
 * The suite's own files are protected like the check's (run/protect.ts judgedCommands): a worker that weakened a test the
 * suite runs failed step guard before the check, and the suite runs the base's versions.
 */
import path from 'node:path';
import { runCheck } from '../check';
import { discardCheckWrites, putBackJudged } from '../check-writes';
import { setIdNote } from '../../process/set-id';
import { recordFiles } from '../attempt-record';
import { failureLine } from '../failure-line';
import { stepCaps } from '../containment';
import { judgedDeps, taskCheckEnvironment } from './check';
import { Cancelled, type Step } from './context';

export const suiteStep: Step = {
  name: 'suite',
  phase: 'checking',
  when: (rec, task) => rec.verdict === 'PASS' && task.spec.suite !== undefined && rec.check !== null,
  async run(ctx, task, rec, io) {
    const { spec } = task;
    const suite = spec.suite!;
    if (task.sealedState) {
      const note = await discardCheckWrites(task.state.dir, task.links, task.sealedState);
      if (note) ctx.emit({ type: 'task-note', key: spec.key, note: `before the suite: ${note}` });
    }
    const where = taskCheckEnvironment(ctx, task, rec.attempt, io, null);
    const logFile = recordFiles(rec).suite;
    const result = await runCheck({
      check: suite.command,
      taskDir: task.state.dir,
      logFile,
      timeoutMs: suite.timeoutMs,
      env: where.env,
      inherit: ctx.inheritedEnv,
      expectFiles: [],
      signal: task.abort.signal,
      sandbox: where.sandbox,
      ...stepCaps(spec),
    });
    const setId = setIdNote('the suite', result.receipt.setIdCleared);
    if (setId) ctx.emit({ type: 'task-note', key: spec.key, note: setId });
    if (result.receipt.cancelled) throw new Cancelled();
    rec.suite = {
      command: suite.command,
      passed: result.passed,
      receipt: result.receipt,
      output: result.output,
      exitCode: result.receipt.exitCode,
      durationMs: result.receipt.durationMs,
    };
    if (result.passed) {
      // Plain mode delivers the task dir: it is put back to the sealed tree the suite judged, as after the check.
      const back = putBackJudged(task.state.dir, task.sealedState, 'the suite', judgedDeps(task, path.join(rec.dir, 'after-suite')));
      if (back.note) ctx.emit({ type: 'task-note', key: spec.key, note: back.note });
      return back.failure ? { verdict: 'FAIL', reason: back.failure } : null;
    }
    return { verdict: 'FAIL', reason: suiteFailedReason(suite.command, result.reason.replace(/^the check /, ''), result.output) };
  },
};

/**
 * The failing judgement's reason when the suite did not pass: what ran, how it ended (`exited 1: <its failure line>`,
 * `timed out after 5 s`), and that the check alone passed. Pure.
 */
export function suiteFailedReason(command: string, how: string, output: string): string {
  const line = how.includes(':') ? '' : failureLine(output);
  return `the check passed, but the suite \`${command}\` ${how}${line ? `: ${line}` : ''}; the change must keep the repository's whole test suite passing`;
}
