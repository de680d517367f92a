import path from 'node:path';
import { resolveHome, runDir } from '../core/config/home';
import { describeRun, listRuns, readState } from '../core/live/registry';
import type { Manifest } from '../core/manifest/types';
import { loadFrozenManifest } from '../core/run/frozen-manifest';
import { InputError, type Io } from './io';
import { loadEngines, reconcileAndReport, runCommand, type RunFlags } from './run-command';
import { statusInfo } from '../../schemas/status';

/**
 * `verdict resume RUN_ID`: reconciles dead runs, then starts a new run of the given run's unfinished tasks (every
 * task that did not PASS), from its frozen manifest — so it works even when the manifest file changed or is gone.
 * Returns the exit code of that run (0 when nothing was left to do).
 * @throws InputError for an unknown run id, a run that is still live, or a frozen manifest that no longer loads
 */
export async function resumeCommand(runId: string, flags: RunFlags, io: Io): Promise<number> {
  const home = resolveHome(flags.home);
  const { engines } = loadEngines(flags.config);
  await reconcileAndReport(home, engines, io);
  const stateFile = path.join(runDir(home, runId), 'state.json');
  const read = readState(stateFile);
  if (!('state' in read)) throw new InputError(`no run ${runId} under ${home} (${read.reason === 'missing' ? 'no state file' : read.reason})`);
  const info = describeRun(read.state, stateFile);
  if (info.liveness === 'running') throw new InputError(`run ${runId} is still running (pid ${read.state.pid} on ${read.state.host}); cancel it first`);
  const successor = listRuns(home).runs.find((r) => r.state.resumedFrom === runId);
  if (successor) {
    io.out(`run ${runId} was already resumed as run ${successor.state.runId} (${successor.liveness}); resume that one if it did not pass`);
    return 0;
  }
  let manifest: Manifest;
  try {
    manifest = loadFrozenManifest(home, read.state, new Set(engines.keys()));
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  // A best-of-N candidate whose task passed (another candidate won) stays as it ended.
  const won = new Set(read.state.tasks.filter((t) => t.select && t.status === 'PASS').map((t) => t.key));
  const left = read.state.tasks.filter((t) => statusInfo(t.status).resumable && !(t.candidate !== undefined && t.group !== undefined && won.has(t.group))).map((t) => t.key);
  if (!left.length) {
    io.out(`run ${runId}: every task passed; nothing to resume`);
    return 0;
  }
  io.out(`resuming ${left.length} task(s) of run ${runId}: ${left.join(', ')}`);
  manifest.tasks = manifest.tasks.filter((t) => left.includes(t.key));
  return (await runCommand(manifest, { ...flags, resumedFrom: runId }, io)).code;
}
