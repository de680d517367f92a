import fs from 'node:fs';
import path from 'node:path';
import type { MergeRequest, RecheckResult } from '../git/merge';
import { loadFrozenManifest } from './frozen-manifest';
import type { RunState } from '../live/state';
import { runDir } from '../config/home';
import type { TaskSpec } from '../manifest/types';
import { probeSandbox } from '../process/sandbox';
import { runCheck } from './check';
import { stepScratch } from './containment';
import { reservePort } from './ports';
import { checkEnvironment } from './steps/check';

/**
 * The merge requests for a worktree-mode run's PASSed tasks (all, or only `keys`), in manifest order, with each
 * task's check taken from the run's frozen manifest (so a manifest edited or deleted since still merges as it ran).
 * A best-of-N task merges its winner only (its branch holds the winner's commit): without `keys` its candidates are
 * left out; a candidate is merged only when `keys` names it.
 * @throws Error when the run is not in worktree mode or its frozen manifest is unreadable
 */
export function mergeRequestsForRun(home: string, state: RunState, keys?: readonly string[]): MergeRequest[] {
  if (!state.worktrees || !state.repo) throw new Error(`run ${state.runId} is not a worktree-mode run; there are no task branches to merge`);
  const specs = new Map(loadFrozenManifest(home, state).tasks.map((t) => [t.key, t]));
  return state.tasks
    .filter((t) => t.status === 'PASS' && t.branch && (keys ? keys.includes(t.key) : t.candidate === undefined))
    .map((t) => {
      const spec = specs.get(t.key);
      // Never merge unchecked: a task missing from its own frozen manifest means the records were tampered with.
      if (!spec) throw new Error(`task ${t.key} of run ${state.runId} is not in its frozen manifest; it cannot be re-checked, so it is not merged`);
      return { key: t.key, repo: state.repo as string, branch: t.branch as string, recheck: recheckFor(home, state, spec) };
    });
}

/**
 * The re-check of one task after its rebase: the task's check in the checkout `dir`, with the task's variables
 * (a fresh PORT, VERDICT_ATTEMPT=merge) and, where bubblewrap runs, in the same sandbox as the attempt's check — the
 * check runs what the worker wrote (its tests, its scripts), which must not get the user's full rights at merge time.
 * The log goes to `runs/<run>/tasks/<key>/merge-check.log`.
 */
export function recheckFor(home: string, state: RunState, spec: TaskSpec): (dir: string) => Promise<RecheckResult> {
  return async (dir) => {
    const probe = await probeSandbox();
    const bwrap = probe.kind === 'bwrap' ? probe.binary : null;
    // Never silently unsandboxed: the re-check runs what the worker wrote (its tests, its scripts).
    if (!bwrap && !spec.fullAccess) return { passed: false, output: '', reason: `no sandbox here (${probe.kind === 'none' ? probe.reason : 'unknown'}): the re-check would run code the worker wrote with your full rights, so it did not run` };
    const logFile = path.join(runDir(home, state.runId), 'tasks', spec.key, 'merge-check.log');
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const scratch = stepScratch(home, state.runId, spec.key, 0, 'check');
    const taskEnv = { PORT: String(await reservePort()), VERDICT_RUN_ID: state.runId, VERDICT_TASK_KEY: spec.key, VERDICT_TASK_DIR: dir, VERDICT_ATTEMPT: 'merge' };
    const where = checkEnvironment({ bwrap, containment: bwrap && !spec.fullAccess ? 'bwrap' : 'none', taskDir: dir, scratch, links: null, network: spec.network, taskEnv });
    try {
      const check = await runCheck({ check: spec.check, taskDir: dir, logFile, timeoutMs: spec.checkTimeoutMs, env: where.env, expectFiles: spec.expectFiles, sandbox: where.sandbox });
      return { passed: check.passed, output: check.output, reason: check.reason };
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  };
}
