import fs from 'node:fs';
import path from 'node:path';
import type { Delivered, IntegrationSuite, MergeRequest, RecheckResult } from '../git/merge';
import { loadFrozenManifest } from './frozen-manifest';
import { WORKFLOW_SECTIONS } from './workflows';
import { readyToMerge } from './landed';
import type { RunState } from '../live/state';
import { runDir } from '../config/home';
import type { TaskSpec } from '../manifest/types';
import { probeNetstack, probeSandbox, type BwrapPlan } from '../process/sandbox';
import { runCheck } from './check';
import { hiddenFromSteps, stepCaps, stepScratch } from './containment';
import { reservePort } from './ports';
import { checkEnvironment } from './steps/check';
import { changedScripts, judgedCommands, newFileRefused, protectedPaths, readConfigText, runnerScripts } from './protect';
import { gitFor } from '../git/safe-git';
import { copyIncludes } from '../git/worktree';
import { supervise } from '../process/supervisor';

/**
 * The merge requests for a worktree-mode run's PASSed tasks (all, or only `keys`), in manifest order, with each
 * task's check taken from the run's frozen manifest (so a manifest edited or deleted since still merges as it ran).
 * A task with a `suite` carries it (suiteFor), run on the integration branch after its merge.
 * A best-of-N task merges its winner only (its branch holds the winner's commit): without `keys` its candidates are
 * left out; a candidate is merged only when `keys` names it. A task recorded merged or discarded is never requested.
 * @throws Error when the run is not in worktree mode or its frozen manifest is unreadable
 */
export function mergeRequestsForRun(home: string, state: RunState, keys?: readonly string[]): MergeRequest[] {
  if (!state.worktrees || !state.repo) throw new Error(`run ${state.runId} is not a worktree-mode run; there are no task branches to merge`);
  const manifest = loadFrozenManifest(home, state, WORKFLOW_SECTIONS);
  const specs = new Map(manifest.tasks.map((t) => [t.key, t]));
  const prepare = { setup: manifest.setup, include: manifest.include };
  return (
    state.tasks
      // A task already merged or discarded (state.json `merged`, `discarded`) is left alone: merging it again changes nothing.
      .filter((t) => t.status === 'PASS' && t.branch && !t.merged && !t.discarded && (keys ? keys.includes(t.key) : readyToMerge(t)))
      .map((t) => {
        const spec = specs.get(t.key);
        // Never merge unchecked: a task missing from its own frozen manifest means the records were tampered with.
        if (!spec) throw new Error(`task ${t.key} of run ${state.runId} is not in its frozen manifest; it cannot be re-checked, so it is not merged`);
        return {
          key: t.key,
          repo: state.repo as string,
          branch: t.branch as string,
          recheck: recheckFor(home, state, spec, prepare),
          suite: spec.suite ? suiteFor(home, state, spec, prepare) : null,
        };
      })
  );
}

/**
 * The tasks of the run that earlier merges delivered (state.json `merged` with its `paths`), for the merge queue's
 * guard (git/merge.ts MergeOptions `merged`): each with its re-check, built from the frozen manifest as when it was
 * merged, the paths its merge changed, and where it went. A record without `paths` (written before they were
 * recorded) is left out. Tasks of other runs are not: the guard covers one run.
 * @throws Error when the run is not in worktree mode, its frozen manifest is unreadable, or a merged task is not in it
 */
export function deliveredBefore(home: string, state: RunState): Delivered[] {
  const done = state.tasks.filter((t) => t.merged?.paths?.length);
  if (!done.length || !state.worktrees || !state.repo) return [];
  const manifest = loadFrozenManifest(home, state, WORKFLOW_SECTIONS);
  const specs = new Map(manifest.tasks.map((t) => [t.key, t]));
  const prepare = { setup: manifest.setup, include: manifest.include };
  return done.map((t) => {
    const spec = specs.get(t.key);
    const merged = t.merged as NonNullable<typeof t.merged>;
    if (!spec) throw new Error(`task ${t.key} of run ${state.runId} is not in its frozen manifest; its merge cannot be re-checked, so nothing is merged`);
    return {
      req: { key: t.key, repo: state.repo as string, branch: t.branch ?? '', recheck: recheckFor(home, state, spec, prepare) },
      paths: merged.paths as string[],
      merged: { commit: merged.commit, into: merged.into },
    };
  });
}

/**
 * The re-check of one task after its rebase: the task's check in the checkout `dir`, with the task's variables
 * (a fresh PORT, VERDICT_ATTEMPT=merge) and, where bubblewrap runs, in the same sandbox as the attempt's check — the
 * check runs what the worker wrote (its tests, its scripts), which must not get the user's full rights at merge time.
 * It runs with the base's versions of the protected check inputs (baseCheckInputs): a branch that changed
 * one is judged by the real tests, and even when it passes them it is not merged, since merging would bring the
 * changed inputs along. Before it, the checkout is prepared as step `prepare` prepares a task's worktree: `include`
 * copied from the repository, then `setup` run there in that sandbox (log `merge-setup.log`), so the check sees what
 * the attempt's check could: the commit and what setup made, nothing a worker left (docs/architecture.md "What a PASS
 * guarantees"). The log goes to `runs/<run>/tasks/<key>/merge-check.log`.
 */
export function recheckFor(
  home: string,
  state: RunState,
  spec: TaskSpec,
  prepare: { setup: string | null; include: string[] } = { setup: null, include: [] },
): (dir: string, base: string) => Promise<RecheckResult> {
  return async (dir, base) => {
    const { run, none } = await mergeSandbox();
    // Never silently unsandboxed: the re-check runs what the worker wrote (its tests, its scripts).
    if (!run.bwrap && !spec.fullAccess)
      return {
        passed: false,
        output: '',
        reason: `no sandbox here (${none}): the re-check would run code the worker wrote with your full rights, so it did not run`,
      };
    const tampered = await baseCheckInputs(dir, base, spec);
    const logFile = path.join(runDir(home, state.runId), 'tasks', spec.key, 'merge-check.log');
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const scratch = stepScratch(home, state.runId, spec.key, 0, 'check');
    const taskEnv = await mergeTaskEnv(state, spec, dir, 'merge');
    const where = mergeStepEnvironment(home, spec, run, dir, scratch, taskEnv);
    try {
      const unprepared = await prepareMergeCheckout(home, state, spec, prepare, dir, run, taskEnv, path.join(path.dirname(logFile), 'merge-setup.log'));
      if (unprepared) return unprepared;
      const check = await runCheck({
        check: spec.check,
        taskDir: dir,
        logFile,
        timeoutMs: spec.checkTimeoutMs,
        env: where.env,
        expectFiles: spec.expectFiles,
        sandbox: where.sandbox,
        ...stepCaps(spec),
      });
      return recheckVerdict(check, tampered);
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  };
}

/**
 * The sandbox merge-time steps run in, as probed here: bubblewrap's and slirp4netns's binaries (`run`, null for one
 * that is not there), and why there is no bubblewrap (`none`: the probe's reason, else "unknown").
 */
async function mergeSandbox(): Promise<{ run: { bwrap: string | null; netstack: string | null }; none: string }> {
  const probe = await probeSandbox();
  const bwrap = probe.kind === 'bwrap' ? probe.binary : null;
  const net = await probeNetstack();
  const netstack = net.kind === 'slirp4netns' ? net.binary : null;
  return { run: { bwrap, netstack }, none: probe.kind === 'none' ? probe.reason : 'unknown' };
}

/** The task's variables for a merge-time step in the checkout `dir`: a fresh PORT, and VERDICT_ATTEMPT `attempt`. */
async function mergeTaskEnv(state: RunState, spec: TaskSpec, dir: string, attempt: 'merge' | 'merge-suite'): Promise<Record<string, string>> {
  return {
    PORT: String(await reservePort()),
    VERDICT_RUN_ID: state.runId,
    VERDICT_TASK_KEY: spec.key,
    VERDICT_TASK_DIR: dir,
    VERDICT_ATTEMPT: attempt,
  };
}

/**
 * Where a merge-time step (the re-check, the checkout's setup, the suite) runs in the checkout `dir`: checkEnvironment
 * with the task's network and variables (`taskEnv`) and `scratch` for its temporary files, in the check's sandbox when
 * `run.bwrap` is there and the task is not full_access; VERDICT_HOME hidden as from the attempt's check (the checkout
 * and the scratch dir are bound back). No worktree links: the checkout is a detached one of the merge queue's.
 */
function mergeStepEnvironment(
  home: string,
  spec: TaskSpec,
  run: { bwrap: string | null; netstack: string | null },
  dir: string,
  scratch: string,
  taskEnv: Record<string, string>,
): { env: Record<string, string>; sandbox: BwrapPlan | null } {
  return checkEnvironment({
    run,
    containment: run.bwrap && !spec.fullAccess ? 'bwrap' : 'none',
    taskDir: dir,
    scratch,
    links: null,
    network: spec.network,
    taskEnv,
    hidden: hiddenFromSteps(home, null),
  });
}

/**
 * The re-check's result from the check's outcome and `tampered`, the protected check inputs the branch changes (paths,
 * run with the base's versions): a failed check fails with its reason, naming them; a passed one still fails when there
 * are any, since merging would bring the branch's versions along; else it passes with the check's reason.
 */
function recheckVerdict(check: { passed: boolean; output: string; reason: string }, tampered: string[]): RecheckResult {
  const list = tampered.slice(0, 10).join(', ') + (tampered.length > 10 ? `, … (${tampered.length})` : '');
  if (!check.passed)
    return {
      passed: false,
      output: check.output,
      reason: tampered.length ? `${check.reason} (run with the base's versions of the protected check inputs the branch changes: ${list})` : check.reason,
    };
  if (tampered.length)
    return {
      passed: false,
      output: check.output,
      reason: `the branch changes protected check inputs (${list}); the check passed with the base's versions of them, but merging would bring the branch's along (a task meant to change them says "protect": [])`,
    };
  return { passed: true, output: check.output, reason: check.reason };
}

/**
 * Prepares a merge checkout `dir` as step `prepare` prepares a task's worktree: `include` copied from the repository,
 * then `setup` run there in the check's sandbox (log `setupLog`, limit the task's check_timeout_s). Returns null when
 * ready, else the failed result to report.
 */
async function prepareMergeCheckout(
  home: string,
  state: RunState,
  spec: TaskSpec,
  prepare: { setup: string | null; include: string[] },
  dir: string,
  run: { bwrap: string | null; netstack: string | null },
  taskEnv: Record<string, string>,
  setupLog: string,
): Promise<RecheckResult | null> {
  if (prepare.include.length) copyIncludes(state.repo as string, dir, prepare.include);
  if (!prepare.setup) return null;
  const setupScratch = stepScratch(home, state.runId, spec.key, 0, 'setup');
  try {
    const setupWhere = mergeStepEnvironment(home, spec, run, dir, setupScratch, taskEnv);
    const { receipt, tail } = await supervise({
      file: 'bash',
      args: ['-c', prepare.setup],
      cwd: dir,
      env: setupWhere.env,
      logFile: setupLog,
      timeoutMs: spec.checkTimeoutMs,
      tailBytes: 64 * 1024,
      sandbox: setupWhere.sandbox,
      ...stepCaps(spec),
    });
    if (receipt.exitCode !== 0)
      return {
        passed: false,
        output: tail,
        reason: `setup \`${prepare.setup}\` ${receipt.timedOut ? 'timed out' : `exited ${receipt.exitCode ?? receipt.signal}`} in the merge checkout; see ${setupLog}`,
      };
    return null;
  } finally {
    fs.rmSync(setupScratch, { recursive: true, force: true });
  }
}

/**
 * The task's suite as the merge queue runs it on a commit of the integration branch (git/merge.ts IntegrationSuite):
 * in a fresh checkout of the commit, prepared as the re-check's is (include, setup), in the check's sandbox with the
 * task's network and variables (VERDICT_ATTEMPT=merge-suite), time limit `suite_timeout_s`. Never silently unsandboxed:
 * the integration branch holds code workers wrote. Its log is `runs/<run>/merge-suite/<commit>.log`, named in a
 * failure's reason. Not the task's `expect_files`: the suite judges the repository, not one task's deliverables.
 */
export function suiteFor(
  home: string,
  state: RunState,
  spec: TaskSpec,
  prepare: { setup: string | null; include: string[] } = { setup: null, include: [] },
): IntegrationSuite {
  const suite = spec.suite!;
  return {
    command: suite.command,
    run: async (dir, commit) => {
      const { run, none } = await mergeSandbox();
      if (!run.bwrap && !spec.fullAccess)
        return {
          passed: false,
          output: '',
          reason: `no sandbox here (${none}): the suite would run code workers wrote with your full rights, so it did not run`,
        };
      const logFile = path.join(runDir(home, state.runId), 'merge-suite', `${commit}.log`);
      fs.mkdirSync(path.dirname(logFile), { recursive: true });
      const scratch = stepScratch(home, state.runId, spec.key, 0, 'check');
      const taskEnv = await mergeTaskEnv(state, spec, dir, 'merge-suite');
      try {
        const unprepared = await prepareMergeCheckout(home, state, spec, prepare, dir, run, taskEnv, path.join(path.dirname(logFile), `${commit}-setup.log`));
        if (unprepared) return unprepared;
        const where = mergeStepEnvironment(home, spec, run, dir, scratch, taskEnv);
        const r = await runCheck({
          check: suite.command,
          taskDir: dir,
          logFile,
          timeoutMs: suite.timeoutMs,
          env: where.env,
          expectFiles: [],
          sandbox: where.sandbox,
          ...stepCaps(spec),
        });
        return { passed: r.passed, output: r.output, reason: r.passed ? '' : `${r.reason.replace(/^the check /, 'it ')}; see ${logFile}` };
      } finally {
        fs.rmSync(scratch, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Puts the base's versions of the task's protected check inputs into the merge checkout `dir` (whose HEAD is the
 * rebased branch): the protected set is computed on the base's tree by the attempt's rules (run/protect.ts
 * protectedPaths: the check's scripts and named folders, existing tests at conventional places, the test runner's own
 * files the base has, `protect`), every one the branch changed or deleted is checked out from the base, and a file the
 * branch added that the test runner would load (newFileRefused: a new conftest.py under pytest) is removed. Returns those paths (with " (new)" for the
 * removed ones), and each package.json script the check or suite runs that the branch changed (run/protect.ts
 * changedScripts, left as the branch has it), sorted; empty when the branch left every check input alone.
 * @throws Error with git's message
 */
export async function baseCheckInputs(dir: string, base: string, spec: TaskSpec): Promise<string[]> {
  const git = gitFor(dir, { trusted: true });
  const files = (await git.raw(['ls-tree', '-r', '-z', '--name-only', base])).split('\0').filter(Boolean);
  const fileSet = new Set(files);
  const dirs = new Set(
    files.flatMap((f) =>
      f
        .split('/')
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join('/')),
    ),
  );
  const kindOf = (rel: string): 'file' | 'dir' | null => (fileSet.has(rel) ? 'file' : dirs.has(rel) ? 'dir' : null);
  const guarded = new Set(
    protectedPaths(
      files,
      kindOf,
      judgedCommands(spec),
      spec.protect,
      spec.expectFiles.map((f) => path.normalize(f)),
    ),
  );
  const isForbidden = newFileRefused(judgedCommands(spec), spec.protect, (rel) => readConfigText(path.join(dir, rel)));
  const diff = (await git.raw(['diff', '--name-status', '-z', '--no-renames', base, 'HEAD'])).split('\0').filter(Boolean);
  const changed: string[] = [];
  const added: string[] = [];
  for (let i = 0; i + 1 < diff.length; i += 2) {
    const [status, file] = [diff[i] as string, diff[i + 1] as string];
    if (guarded.has(file)) changed.push(file);
    else if (status === 'A' && isForbidden(file)) added.push(file);
  }
  for (let i = 0; i < changed.length; i += 200) await git.raw(['checkout', base, '--', ...changed.slice(i, i + 200).map((f) => `:(literal)${f}`)]);
  for (const f of added) fs.rmSync(path.join(dir, f), { force: true });
  // A package.json script the check or the suite runs (`npm test`) is protected entry by entry: the branch's is kept
  // (the file may hold the work), and a change to one is named, so the branch is not merged.
  const scripts = spec.protect !== null && spec.protect.length === 0 ? [] : runnerScripts(judgedCommands(spec));
  const scriptChanges = scripts.length
    ? changedScripts(await git.show([`${base}:package.json`]).catch(() => null), await git.show(['HEAD:package.json']).catch(() => null), scripts)
    : [];
  return [...changed, ...added.map((f) => `${f} (new)`), ...scriptChanges].sort();
}
