import { resolveHome } from '../core/config/home';
import { listRuns } from '../core/live/registry';
import type { Manifest } from '../core/manifest/types';
import { loadFrozenManifest } from '../core/run/frozen-manifest';
import { tasksToRunAgain } from '../core/run/resume';
import { InputError, type Io } from './io';
import { resolveRun } from './control-command';
import { reconcileAndReport, runCommand, type RunFlags } from './run-command';
import { loadEngines } from './load-engines';

/**
 * `verdict resume RUN` / `verdict rerun RUN TASK` of a run that is not live: reconciles dead runs, then continues the
 * same run in the foreground (run/resume.ts): same run id, tasks that did not pass (`resume`) or the one task and its
 * BLOCKED dependents (`rerun`) run again from the run's frozen manifest, so it works even when the manifest file
 * changed or is gone. Returns the run's exit code (0 when every task of it passed; 0 when nothing was left to resume),
 * 2 when another orchestrator holds the run.
 * @throws InputError for an unknown run, a rerun the run's graph refuses, or a frozen manifest that no longer loads
 */
export async function continueCommand(run: string, verb: 'resume' | 'rerun', task: string | undefined, flags: RunFlags, io: Io): Promise<number> {
  const home = resolveHome(flags.home);
  const { engines } = loadEngines(flags.config);
  await reconcileAndReport(home, engines, io);
  const { state } = resolveRun(home, run);
  const runId = state.runId;
  // A run resumed as a new run before resume kept the id: that newer run is the one to resume.
  const successor = listRuns(home).runs.find((r) => r.state.resumedFrom === runId);
  if (successor) {
    io.out(`run ${runId} was already resumed as run ${successor.state.runId} (${successor.liveness}); ${verb} that one`);
    return verb === 'resume' ? 0 : 2;
  }
  const plan = tasksToRunAgain(state, { verb, task });
  if ('refused' in plan) {
    if (verb === 'resume') {
      io.out(`run ${runId}: ${plan.refused}`);
      return 0;
    }
    throw new InputError(plan.refused);
  }
  let manifest: Manifest;
  try {
    manifest = loadFrozenManifest(home, state, new Set(engines.keys()));
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  io.out(`${verb === 'resume' ? 'resuming' : 'running again'} ${plan.again.length} task(s) of run ${runId} (same run): ${plan.again.join(', ')}`);
  return (await runCommand(manifest, { ...flags, continueRun: { runId, verb, ...(task !== undefined ? { task } : {}) } }, io)).code;
}
