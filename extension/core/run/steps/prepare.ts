/**
 * Step `prepare`: once per task, make its directory — a worktree on the task branch (plus `include` files) or a plain
 * `<workdir>/<key>/` — reserve its PORT and run the manifest's `setup` there, sandboxed like the worker.
 */
import fs from 'node:fs';
import path from 'node:path';
import { addWorktree, copyIncludes } from '../../git/worktree';
import { branchHead } from '../../git/branch';
import { supervise } from '../../process/supervisor';
import { hiddenFromSteps, sandboxScratch, scratchEnv, stepCaps, stepPlan } from '../containment';
import { setIdNote } from '../../process/set-id';
import { reservePort } from '../ports';
import { startPoint } from '../start-point';
import { treeChoice } from '../trees';
import { judgedCommands, protectedSet } from '../protect';
import { showName } from '../../fs/byte-names';
import { saveSnapshot, symlinksIn, takeSnapshot } from '../dir-snapshot';
import { guardsOn } from '../guards';
import { runDir } from '../../config/home';
import { linksFile, saveLinks } from '../reattach';
import { Cancelled, type AttemptContext, type Step, type TaskRuntime } from './context';
import { preparedFilesFile, recordPreparedFiles } from '../undelivered';
import { recordSetupDeps, saveSetupDeps, setupDepsFile } from '../setup-deps';
import { savePreparedLinks } from './seal';

export const prepareStep: Step = {
  name: 'prepare',
  phase: 'preparing',
  when: (rec, task) => rec.verdict === null && !task.prepared,
  async run(ctx, task, rec, io) {
    await prepareTask(ctx, task, path.join(rec.dir, 'setup.log'), io.taskEnv);
    return null;
  },
};

/**
 * Creates the task dir (worktree + includes, or a plain folder with an earlier run's files moved aside), assigns
 * PORT, runs `setup` once. Marks the task prepared.
 * @throws Cancelled when the task was stopped; Error naming the git failure or the setup's exit and log
 */
export async function prepareTask(ctx: AttemptContext, task: TaskRuntime, setupLog: string, taskEnv: () => Record<string, string>): Promise<void> {
  const { manifest } = ctx.opts;
  task.state.port = await reservePort();
  if (ctx.repo && task.state.branch) {
    // A task of a continued run (verdict resume) whose worktree was removed since gets a new one on its own branch:
    // its head is the task's start point or its last PASS (only those ever move it).
    const own = task.state.attempts.length > 1 ? await branchHead(ctx.repo.root, task.state.branch) : null;
    // A task with `after` starts from what its prerequisites delivered (start-point.ts), not from base_ref.
    const from = own ?? (await startPoint(ctx.repo, task.spec.key, task.startFrom));
    if (own)
      ctx.emit({ type: 'task-note', key: task.spec.key, note: `its worktree was removed: a new one on its branch ${task.state.branch} (${own.slice(0, 10)})` });
    else if (from !== ctx.repo.baseSha)
      ctx.emit({
        type: 'task-note',
        key: task.spec.key,
        note: `starts from ${task.startFrom.map((p) => p.key).join(' + ')} (${from.slice(0, 10)}), not from base_ref`,
      });
    const tree = await treeChoice(ctx, task, from);
    task.links = await addWorktree(from === ctx.repo.baseSha ? ctx.repo : { ...ctx.repo, baseSha: from }, task.state.dir, task.state.branch, {
      signal: task.abort.signal,
      existingBranch: own !== null,
      tree,
    });
    // Read back by a later orchestrator of this run (verdict resume), before any worker could change them.
    saveLinks(linksFile(ctx.opts.home, ctx.runId, task.spec.key), task.links);
    copyIncludes(ctx.repo.root, task.state.dir, manifest.include);
  } else {
    const moved = moveAsidePrevious(task.state.dir, ctx.runId);
    if (moved)
      ctx.emit({
        type: 'task-note',
        key: task.spec.key,
        note: `the task dir held files from an earlier run; they were moved to ${moved} so they cannot pass this run's check`,
      });
    fs.mkdirSync(task.state.dir, { recursive: true });
    markMade(task.state.dir);
  }
  if (manifest.setup) await runSetup(ctx, task, task.state.dir, setupLog, taskEnv());
  // Plain mode: the symlinks there before any worker (setup's), which the seal leaves alone (steps/seal.ts escapingPlainLinks).
  if (!task.links) savePreparedLinks(path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', task.spec.key), symlinksIn(task.state.dir));
  // What is there now that the start commit does not hold (include, setup's node_modules or build) may be read by the
  // check; anything else the seal does not hold will be the worker's, moved out of the check's sight (run/undelivered.ts).
  if (task.links)
    await recordPreparedFiles(task.links, preparedFilesFile(path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', task.spec.key)), {
      checkoutOnly: !manifest.setup && !manifest.include.length && !task.links.hasSubmodules,
    });
  task.protected = protectedSet(
    task.state.dir,
    judgedCommands(task.spec),
    task.spec.protect,
    path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', task.spec.key, 'protected'),
    task.spec.expectFiles.map((f) => path.normalize(f)),
  );
  if (task.protected.files.size)
    ctx.emit({
      type: 'task-note',
      key: task.spec.key,
      note: `${task.protected.files.size} check input(s) protected from the worker (${[...task.protected.files.keys()].slice(0, 3).map(showName).join(', ')}${task.protected.files.size > 3 ? ', …' : ''})`,
    });
  // Plain mode: what setup installed (node_modules, a virtual environment) stays setup's (run/setup-deps.ts).
  if (!task.links && manifest.setup) {
    task.setupDeps = recordSetupDeps(task.state.dir);
    if (task.setupDeps) saveSetupDeps(setupDepsFile(path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', task.spec.key)), task.setupDeps);
  }
  // Plain mode has no commit to diff against: the guards judge the dir against this record of it.
  if (!ctx.repo && guardsOn(task.spec)) {
    const base = path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', task.spec.key, 'guard-base');
    task.guardBase = takeSnapshot(task.state.dir, base);
    saveSnapshot(task.guardBase, `${base}.json`);
  }
  task.prepared = true;
}

/**
 * Runs the manifest's `setup` (when it has one) in `dir` with the task's variables `env`, sandboxed like the worker
 * (only `dir` and a scratch dir writable), time-limited by the check's limit, its output in `log`. Used by prepare and
 * by a pool run's re-check of a worker's PASS (pool/recheck.ts).
 * @throws Cancelled when the task was stopped; Error naming the setup's exit (or time-out) and its log
 */
export async function runSetup(ctx: AttemptContext, task: TaskRuntime, dir: string, log: string, env: Record<string, string>): Promise<void> {
  const { manifest } = ctx.opts;
  if (!manifest.setup) return;
  const boxed = task.containment === 'bwrap';
  const scratch = sandboxScratch(ctx.opts.home, ctx.runId, task.spec.key, 0, 'setup', boxed);
  const { receipt } = await supervise({
    file: 'bash',
    args: ['-c', manifest.setup],
    cwd: dir,
    env: { ...env, ...(boxed ? scratchEnv(scratch) : {}) },
    inherit: ctx.inheritedEnv,
    logFile: log,
    timeoutMs: task.spec.checkTimeoutMs,
    signal: task.abort.signal,
    killGraceMs: ctx.opts.killGraceMs,
    ...stepCaps(task.spec),
    sandbox: stepPlan(ctx, task.containment, {
      writable: [dir, scratch],
      network: task.spec.network,
      hidden: hiddenFromSteps(ctx.opts.home, manifest.worktrees ? null : manifest.workdir),
    }),
  });
  const setId = setIdNote('setup', receipt.setIdCleared);
  if (setId) ctx.emit({ type: 'task-note', key: task.spec.key, note: setId });
  if (receipt.cancelled) throw new Cancelled();
  if (receipt.exitCode !== 0) {
    throw new Error(`setup \`${manifest.setup}\` ${receipt.timedOut ? 'timed out' : `exited ${receipt.exitCode ?? receipt.signal}`}; see ${log}`);
  }
}

/** `<workdir>/.verdict-made/<key>`: Verdict made `<workdir>/<key>` (out of every step's sight: the workdir is hidden). */
function madeMarker(dir: string): string {
  return path.join(path.dirname(dir), '.verdict-made', path.basename(dir));
}

function markMade(dir: string): void {
  fs.mkdirSync(path.dirname(madeMarker(dir)), { recursive: true });
  fs.writeFileSync(madeMarker(dir), '');
}

/**
 * Plain mode reuses `<workdir>/<key>`: files an earlier run left there could make this run's check pass with no work
 * done. A non-empty dir that an earlier run made is renamed to `<workdir>/.verdict-previous/<runId>/<key>` (nothing is
 * deleted). One Verdict did not make (a manifest whose workdir is `~/.local` and key `bin`) is never touched.
 * Returns the new path, or null when there was nothing to move.
 * @throws Error when the dir holds files Verdict did not put there
 */
function moveAsidePrevious(dir: string, runId: string): string | null {
  // The common case, a task dir not made yet, without the cost of an error object.
  if (!fs.existsSync(dir)) return null;
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch {
    return null;
  }
  if (!entries.length) return null;
  if (!fs.existsSync(madeMarker(dir))) {
    throw new Error(
      `the task dir ${dir} already holds files that no Verdict run made there; they are left alone — give this manifest another "workdir", or move them away yourself`,
    );
  }
  const target = path.join(path.dirname(dir), '.verdict-previous', runId, path.basename(dir));
  fs.mkdirSync(path.dirname(target), { recursive: true });
  fs.renameSync(dir, target);
  return target;
}
