import { postgresUrlOf, type PoolTrust } from '../core/config/config';
import { poolAttemptSteps } from '../core/run/workflows';
import { driverNotesFor } from '../core/run/steering';
import { containmentChoice } from '../core/config/settings';
import { resolveHome } from '../core/config/home';
import { resolveIdentity } from '../core/host/identity';
import { type ParsedText } from '../core/manifest/load';
import { MAX_PARALLEL } from '../core/manifest/limits';
import { formatProblem, ManifestError, type Manifest } from '../core/manifest/types';
import { PreflightError } from '../core/run/preflight';
import { runManifest, type RunSummary } from '../core/run/runner';
import type { EngineSpec } from '../../engines';
import { loadEngines } from './load-engines';
import { reconcileDeadRuns } from '../core/run/reconcile';
import type { ContinueRequest } from '../core/run/resume';
import { eventLine, verdictTable } from './format';
import { formatFinding, startGate, startGateLines, type StartGate } from '../core/manifest/lint';
import { InputError, UsageError, type Io } from './io';
import { dashboardForRun } from './hud/dashboard-for-run';
import { probeSandbox } from '../core/process/sandbox';
import { startSpawnHelper } from '../core/process/spawner';
import type { PoolDispatcher } from '../core/pool/dispatch';
import { lintManifestFile, lintParsed, loadManifest } from '../core/run/manifest';
import { WORKFLOW_SECTIONS } from '../core/run/workflows';

/** Flags shared by `verdict run` and `verdict demo`. */
export interface RunFlags {
  maxParallel?: string;
  identity?: string;
  home?: string;
  config?: string;
  /** Run every check on the untouched tree first; tasks whose check already passes are not run. */
  baseline?: boolean;
  /** Continue this run (verdict resume / rerun of a run that is not live) instead of starting a new one. */
  continueRun?: ContinueRequest;
  /** Reuse (or, with a display, start and open) the dashboard; false with --no-dashboard. Default true. */
  dashboard?: boolean;
  /** --no-sandbox: every step runs unsandboxed whatever the config says (see containmentChoice). */
  noSandbox?: boolean;
  /** --only: comma-separated task keys; the run has only these tasks (the editor's Test Explorer and Rerun Task). */
  only?: string;
  /** --pool URL: the attempts run on pool workers (core/pool) through this Postgres; needs a git remote (--remote). */
  pool?: string;
  /** --remote: the git remote every pool worker fetches from and pushes to (a URL, or a path on a shared filesystem). */
  remote?: string;
  /**
   * --force: start even when lint finds errors (core/manifest/lint.ts startGate); the run's state.json and every eval
   * row then record `forced: true`.
   */
  force?: boolean;
  /** A continued run's lint decision, made by resume-command.ts on the run's frozen manifest (what runs). */
  gate?: StartGate;
  /** resume / rerun of a run that ended: --budget-usd, its budget_usd from now on (text as given; checked there). */
  budgetUsd?: string;
  /** resume / rerun of a run that ended: --budget-tokens, its budget_tokens from now on. */
  budgetTokens?: string;
}

/**
 * Loads config, engines and the manifest, runs it with Ctrl-C handling (first: cancel; later ones: ignored while
 * the cleanup finishes) and prints events and the verdict table.
 * `adjust` may change the loaded manifest before it runs (the demo points it at its repository).
 * Returns the exit code: 0 every task passed, 1 some did not, 2 bad input, a lint error without --force (the errors
 * listed as file:line:column; nothing is created), or a preflight refusal.
 */
export async function runCommand(
  source: string | Manifest,
  flags: RunFlags,
  io: Io,
  adjust?: (m: Manifest) => void,
): Promise<{ code: number; summary: RunSummary | null }> {
  let maxParallel: number | undefined;
  if (flags.maxParallel !== undefined) {
    maxParallel = Number(flags.maxParallel);
    if (!Number.isInteger(maxParallel) || maxParallel < 1 || maxParallel > MAX_PARALLEL)
      throw new UsageError(`--max-parallel must be an integer from 1 to ${MAX_PARALLEL} (as the manifest's max_parallel), got "${flags.maxParallel}"`);
  }
  const { config, settings, engines } = loadEngines(flags.config);
  // The spawn helper and the sandbox probe start now, so their start-up (a Node process; two bubblewrap runs) overlaps
  // loading, linting and reconciling on this one instead of delaying the first attempt. preflight awaits the probe's
  // cached answer.
  startSpawnHelper();
  if (containmentChoice(settings, { noSandbox: flags.noSandbox }).sandbox !== 'off') void probeSandbox();
  let manifest: Manifest;
  // The file as its one parse left it: lint reads it instead of parsing the file again.
  let parsed: ParsedText | null = null;
  try {
    if (typeof source === 'string') {
      const loaded = loadManifest(source, { engines: new Set(engines.keys()), route: config.route ?? null });
      manifest = loaded.manifest;
      parsed = loaded.parsed;
      for (const w of loaded.warnings) io.err(formatProblem(w));
    } else manifest = source;
  } catch (e) {
    if (e instanceof ManifestError) {
      for (const p of e.problems) io.err(formatProblem(p));
      return { code: 2, summary: null };
    }
    throw e;
  }
  adjust?.(manifest);
  if (flags.only !== undefined) {
    const keys = flags.only
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean);
    const unknown = keys.filter((k) => !manifest.tasks.some((t) => t.key === k));
    if (!keys.length) throw new UsageError('--only needs at least one task key');
    if (unknown.length)
      throw new InputError(`${manifest.file} has no task ${unknown.map((k) => `"${k}"`).join(', ')} (tasks: ${manifest.tasks.map((t) => t.key).join(', ')})`);
    // A best-of-N task brings its candidates.
    manifest.tasks = manifest.tasks.filter((t) => keys.includes(t.key) || (t.candidate !== undefined && t.group !== undefined && keys.includes(t.group)));
  }
  // Lint errors refuse every start unless --force (the same rule for the editor and the MCP tools: startGate). A
  // continued run runs its frozen manifest, which resume-command.ts linted (the file may have changed since). The
  // loader already said what it refuses or warns about (invalid-manifest, unknown-field).
  const lintOptions = {
    engines,
    allowFullAccess: settings.allowFullAccess,
    ...(flags.continueRun ? {} : await budgetForecastOf(manifest, resolveHome(flags.home), engines)),
  };
  const findings = flags.continueRun
    ? []
    : (await (parsed ? lintParsed(parsed, lintOptions) : lintManifestFile(manifest.file, lintOptions))).filter(
        (f) => f.rule !== 'invalid-manifest' && f.rule !== 'unknown-field',
      );
  const gate = flags.gate ?? startGate(findings, flags.force === true);
  if (gate.refused) {
    for (const line of startGateLines(gate, `cannot start ${manifest.file}`)) io.err(line);
    return { code: 2, summary: null };
  }
  if (gate.forced && !flags.gate) for (const line of startGateLines(gate, `--force: starting ${manifest.file}`)) io.err(line);
  for (const f of findings) if (f.severity !== 'error') io.err(`lint: ${formatFinding(f)}`);
  // A continued run's command (resume-command.ts) reconciled already: once per command.
  if (!flags.continueRun) await reconcileAndReport(resolveHome(flags.home), engines, io);
  if (maxParallel === undefined && settings.maxParallel !== undefined && !('max_parallel' in (manifest.raw as object))) maxParallel = settings.maxParallel;
  // The config's caps for tasks the manifest gives none (core/run/containment.ts stepCaps has the built-in defaults).
  for (const t of manifest.tasks) {
    if (t.memoryMb === undefined && settings.memoryMb !== undefined) t.memoryMb = settings.memoryMb;
    if (t.logMaxMb === undefined && settings.logMaxMb !== undefined) t.logMaxMb = settings.logMaxMb;
  }
  const home = resolveHome(flags.home);
  // The steering profiles' driver rules for the run's models (core/run/steering.ts), for whoever writes the specs.
  for (const line of driverNotesFor(
    home,
    manifest.tasks.map((t) => t.model),
  ))
    io.err(line);
  const { identity } = resolveIdentity({ flag: flags.identity, cwd: process.cwd(), configDefault: settings.identity });

  if (flags.dashboard !== false) await dashboardForRun(home, io);

  const pool = await openPool(manifest, flags, settings.poolUrl, settings.poolTrust, io);
  if (typeof pool === 'number') return { code: pool, summary: null };

  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts === 1) {
      io.err('cancelling: stopping every worker process group, then recording the run (Ctrl-C again will not interrupt this)');
      controller.abort();
    } else io.err('still cleaning up; please wait');
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  try {
    const summary = await runManifest({
      manifest,
      home,
      identity,
      engines,
      maxParallel,
      signal: controller.signal,
      baseline: flags.baseline === true,
      continueRun: flags.continueRun,
      forced: gate.forced,
      // A pool run mirrors its rows to the pool's database unless another is configured: one scoreboard for the pool.
      postgresUrl: postgresUrlOf(config) ?? pool?.target.url ?? null,
      ...(settings.quotaMaxWaitH !== undefined ? { quotaMaxWaitMs: settings.quotaMaxWaitH * 3600_000 } : {}),
      ...(config.logins
        ? {
            logins: Object.fromEntries(
              Object.entries(config.logins).map(([name, l]) => [
                name,
                { engines: l.engines, maxParallel: l.max_parallel, ...(l.billing ? { billing: l.billing } : {}) },
              ]),
            ),
          }
        : {}),
      ...(pool ? { attemptSteps: poolAttemptSteps(pool.step()) } : {}),
      ...containmentChoice(settings, { noSandbox: flags.noSandbox }),
      onEvent: (e) => {
        const line = eventLine(e);
        if (line) io.out(line);
      },
    });
    io.out('');
    // From the run's state in memory: what state.json holds, not read back off the disk.
    io.out(verdictTable(summary));
    for (const e of summary.recordErrors) io.err(`error: ${e}`);
    return { code: summary.allPassed && !summary.recordErrors.length ? 0 : 1, summary };
  } catch (e) {
    if (e instanceof PreflightError) {
      io.err(flags.continueRun ? `cannot ${flags.continueRun.verb} run ${flags.continueRun.runId}:` : `cannot start ${manifest.file}:`);
      for (const p of e.problems) io.err(`  ${p}`);
      return { code: 2, summary: null };
    }
    throw e;
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    await pool?.close();
  }
}

/**
 * The pool of a run, started: `--pool` > the manifest's `pool` > the settings' (config `pool`, the editor's
 * `verdict.pool`), with the config's `pool.trust`; null for a local run; an exit code (2) when the pool cannot be
 * used (said on stderr, naming where the pool came from).
 */
async function openPool(
  manifest: Manifest,
  flags: RunFlags,
  settingsPool: string | undefined,
  trust: PoolTrust,
  io: Io,
): Promise<PoolDispatcher | null | number> {
  const url = flags.pool ?? manifest.pool ?? settingsPool ?? null;
  if (!url) return null;
  const from = flags.pool ? '--pool' : manifest.pool ? `"pool" in ${manifest.file}` : 'the settings ("pool" in the config file, or verdict.pool in VS Code)';
  const remote = flags.remote ?? manifest.remote ?? null;
  const problems: string[] = [];
  if (!manifest.worktrees) problems.push('a pool run needs worktree mode ("worktrees": true): base commits and task branches travel through a git remote');
  if (!remote) problems.push('a pool run needs a git remote every worker can fetch: --remote URL (or "remote" in the manifest)');
  const planners = manifest.tasks.filter((t) => t.generate).map((t) => t.key);
  if (planners.length) problems.push(`planners (\`generate\`: ${planners.join(', ')}) do not run on the pool yet: run them locally`);
  // Whichever names the pool (--pool, the settings, the manifest): a worker builds a full worktree, never a sparse or overlay one.
  if ((manifest.tree ?? 'worktree') !== 'worktree')
    problems.push(`"tree": "${manifest.tree}" is not supported on a worker pool yet (a worker builds a full worktree per attempt): use "tree": "worktree"`);
  if (manifest.include.length) problems.push('"include" copies files from this machine, which pool workers do not have: commit them to the remote instead');
  if (problems.length) {
    io.err(`cannot start ${manifest.file} on the pool (named by ${from}):`);
    for (const p of problems) io.err(`  ${p}`);
    return 2;
  }
  // pg and pg-boss are loaded only for a pool run.
  const [{ PoolDispatcher }, { hidePassword }] = await Promise.all([import('../core/pool/dispatch'), import('../core/pool/schema')]);
  // The trust is the config's alone (pool.trust), whichever names the pool: a manifest cannot turn the re-check off.
  const pool = new PoolDispatcher({ url, remote: remote as string, trust });
  if (trust === 'worker')
    io.err('pool: trust "worker" (the config\'s pool.trust): workers\' PASSes are taken as reported, their checks are not run again here');
  try {
    await pool.start();
  } catch (e) {
    await pool.close();
    io.err(`cannot start ${manifest.file} on the pool (named by ${from}): its database ${hidePassword(url)} cannot be reached: ${(e as Error).message}`);
    return 2;
  }
  return pool;
}

/** Reconciles runs whose orchestrator died (see reconcileDeadRuns) and says what it did, on stderr. */
export async function reconcileAndReport(home: string, engines: ReadonlyMap<string, EngineSpec>, io: Io): Promise<void> {
  for (const r of await reconcileDeadRuns(home, engines, WORKFLOW_SECTIONS)) {
    io.err(
      `reconciled run ${r.runId} (${r.runName}): its orchestrator died; ${r.interrupted.length} unfinished task(s) marked INTERRUPTED${r.killed.length ? `, ${r.killed.length} orphaned worker group(s) killed` : ''}${r.killedInits.length ? `, ${r.killedInits.length} sandbox(es) that outlived it killed` : ''}. Resume with: verdict resume ${r.runId}`,
    );
  }
}

/**
 * `{budgetForecast}` for lint's budget-forecast rule when the manifest sets a budget_usd (the run's or a task's): a
 * budget below what the eval log expects the run to cost is warned about at `verdict run` too, as by `verdict lint`.
 * Nothing without a budget (the forecast reads the eval log), or when the forecast cannot be made.
 */
async function budgetForecastOf(
  manifest: Manifest,
  home: string,
  engines: ReadonlyMap<string, EngineSpec>,
): Promise<{ budgetForecast?: (budgetMicroUsd: number, taskKey: string | null) => string | null }> {
  if (manifest.budgetUsd === null && !manifest.tasks.some((t) => t.budgetUsd !== undefined)) return {};
  const { budgetCheck, forecastOf } = await import('../core/scoreboard/plan');
  return forecastOf(manifest, home, engines).then(
    (f) => ({ budgetForecast: budgetCheck(f) }),
    () => ({}),
  );
}
