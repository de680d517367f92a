import { resolveHome } from '../core/config/home';
import { listRuns } from '../core/live/registry';
import type { Manifest } from '../core/manifest/types';
import type { Finding } from '../core/manifest/findings';
import { FROZEN_MANIFEST_FIX, loadAndLintFrozenManifest } from '../core/run/frozen-manifest';
import { startGate, startGateLines } from '../core/manifest/lint';
import { tasksToRunAgain } from '../core/run/resume';
import { workflowRerunRules } from '../core/run/workflows';
import { InputError, type Io } from './io';
import { resolveRun } from './runs-command';
import { reconcileAndReport, runCommand, type RunFlags } from './run-command';
import { loadEngines } from './load-engines';
import { WORKFLOW_SECTIONS } from '../core/run/workflows';

/**
 * `verdict resume RUN` / `verdict rerun RUN TASK` of a run that is not live: reconciles dead runs, then continues the
 * same run in the foreground (run/resume.ts): same run id, tasks that did not pass (`resume`) or the one task and its
 * BLOCKED dependents (`rerun`) run again from the run's frozen manifest, so it works even when the manifest file
 * changed or is gone. Returns the run's exit code (0 when every task of it passed; 0 when nothing was left to resume),
 * 2 when another orchestrator holds the run or lint finds an error in the frozen manifest and --force was not given
 * (manifest/lint.ts startGate; with --force the run and its rows record forced: true).
 * @throws InputError for an unknown run, a rerun the run's graph refuses, or a frozen manifest that no longer loads
 */
export async function continueCommand(run: string, verb: 'resume' | 'rerun', task: string | undefined, flags: RunFlags, io: Io): Promise<number> {
  const budgets = budgetOverrides(flags);
  const home = resolveHome(flags.home);
  const { engines, settings } = loadEngines(flags.config);
  await reconcileAndReport(home, engines, io);
  const { state } = resolveRun(home, run);
  const runId = state.runId;
  // A run resumed as a new run before resume kept the id: that newer run is the one to resume.
  const successor = listRuns(home).runs.find((r) => r.state.resumedFrom === runId);
  if (successor) {
    io.out(`run ${runId} was already resumed as run ${successor.state.runId} (${successor.liveness}); ${verb} that one`);
    return verb === 'resume' ? 0 : 2;
  }
  const plan = tasksToRunAgain(state, { verb, task }, workflowRerunRules);
  if ('refused' in plan) {
    if (verb === 'resume') {
      io.out(`run ${runId}: ${plan.refused}`);
      return 0;
    }
    throw new InputError(plan.refused);
  }
  // Lint errors refuse a resume as they refuse a run (manifest/lint.ts startGate), judged on what would run: the frozen
  // manifest (parsed once, loaded and linted from that parse), its findings placed in runs/<run_id>/manifest.json.
  let loaded: { manifest: Manifest; findings: Finding[] };
  try {
    loaded = await loadAndLintFrozenManifest(home, state, { engines, allowFullAccess: settings.allowFullAccess, sections: WORKFLOW_SECTIONS });
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  const { manifest } = loaded;
  const gate = startGate(loaded.findings, flags.force === true);
  const frozen = `its frozen manifest, from ${state.manifestFile}`;
  if (gate.refused) {
    for (const line of startGateLines(gate, `cannot ${verb} run ${runId} (${frozen})`, { fix: FROZEN_MANIFEST_FIX })) io.err(line);
    return 2;
  }
  if (gate.forced)
    for (const line of startGateLines(gate, `--force: ${verb === 'resume' ? 'resuming' : 'running again'} run ${runId} (${frozen})`)) io.err(line);
  io.out(`${verb === 'resume' ? 'resuming' : 'running again'} ${plan.again.length} task(s) of run ${runId} (same run): ${plan.again.join(', ')}`);
  return (await runCommand(manifest, { ...flags, gate, continueRun: { runId, verb, ...(task !== undefined ? { task } : {}), ...budgets } }, io)).code;
}

/**
 * --budget-usd and --budget-tokens of resume / rerun, checked as the manifest's budget_usd and budget_tokens are (a
 * number of US dollars more than 0, at most 1,000,000; a whole number of tokens from 1 to 10^12).
 * @throws InputError naming the flag and the value
 */
export function budgetOverrides(flags: Pick<RunFlags, 'budgetUsd' | 'budgetTokens'>): { budgetUsd?: number; budgetTokens?: number } {
  const out: { budgetUsd?: number; budgetTokens?: number } = {};
  if (flags.budgetUsd !== undefined) {
    const v = Number(flags.budgetUsd);
    if (flags.budgetUsd.trim() === '' || !Number.isFinite(v) || v <= 0 || v > 1_000_000)
      throw new InputError(`--budget-usd: must be a number of US dollars more than 0 and at most 1000000, got ${JSON.stringify(flags.budgetUsd)}`);
    out.budgetUsd = v;
  }
  if (flags.budgetTokens !== undefined) {
    const v = Number(flags.budgetTokens);
    if (!/^\d+$/.test(flags.budgetTokens.trim()) || !Number.isSafeInteger(v) || v < 1 || v > 1e12)
      throw new InputError(`--budget-tokens: must be a whole number of tokens from 1 to 1000000000000, got ${JSON.stringify(flags.budgetTokens)}`);
    out.budgetTokens = v;
  }
  return out;
}
