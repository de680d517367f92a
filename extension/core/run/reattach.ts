/**
 * Taking over a task dir an earlier orchestrator of the same run prepared (`verdict resume`, `verdict rerun` of a run
 * that ended): the worktree or plain folder is used as its last attempt left it, as a retry in the same process would
 * be. What the first orchestrator kept in memory is read back from where no step can write (VERDICT_HOME is hidden
 * from every step): the worktree's link files (`runs/<id>/tasks/<key>/worktree-links.json`, written by prepare) and the
 * protected check inputs (their snapshot folder `runs/<id>/tasks/<key>/protected/`).
 */
import { overlayMountsUnder, readMountInfo } from '../git/overlay';
import { removeOverlayTree } from '../git/overlay-tree';
import fs from 'node:fs';
import path from 'node:path';
import { runDir } from '../config/home';
import { readWorktreeLinks, restoreWorktreeLinks, type WorktreeLinks } from '../git/worktree';
import { reservePort } from './ports';
import { judgedCommands, protectedSetFromSnapshot } from './protect';
import { loadSnapshot, saveSnapshot, takeSnapshot, type DirSnapshot } from './dir-snapshot';
import { loadSealedState, sealedStateFile } from './check-writes';
import { guardsOn } from './guards';
import { preparedFilesFile } from './undelivered';
import { loadSetupDeps, setupDepsFile } from './setup-deps';
import type { AttemptContext, TaskRuntime } from './steps/context';

/** `runs/<runId>/tasks/<key>/worktree-links.json`. */
export function linksFile(home: string, runId: string, key: string): string {
  return path.join(runDir(home, runId), 'tasks', key, 'worktree-links.json');
}

/** Keeps a fresh worktree's links (as git wrote them) for a later orchestrator of the run. Never throws. */
export function saveLinks(file: string, links: WorktreeLinks): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(links, null, 1));
  } catch {
    // a later resume falls back to checking the links as they are (trustedLinks)
  }
}

/**
 * The worktree's links to trust: the ones saved when it was made, or (a run from before they were saved) the ones on
 * disk, accepted only in the exact form git writes them (`.git` naming an admin dir of this repository whose `gitdir`
 * names `<dir>/.git` back and whose `commondir` leads to the repository).
 * @throws Error naming the file that is not in git's form
 */
export function trustedLinks(file: string, dir: string, commonDir: string): WorktreeLinks {
  try {
    const saved = JSON.parse(fs.readFileSync(file, 'utf8')) as WorktreeLinks;
    if (saved.dir === dir && saved.commonDir === commonDir) return saved;
  } catch {
    // not saved (an older run): check the ones on disk
  }
  const links = readWorktreeLinks(dir, commonDir);
  const altered = (what: string) =>
    new Error(
      `${what} is not as git wrote it (a worker may have changed it before its orchestrator died); discard the task (verdict discard) and resume again`,
    );
  if (path.resolve(links.adminDir, links.gitdirFile.trim()) !== path.join(dir, '.git')) throw altered(path.join(links.adminDir, 'gitdir'));
  if (path.resolve(links.adminDir, links.commondirFile.trim()) !== commonDir) throw altered(path.join(links.adminDir, 'commondir'));
  return { ...links, worktreeConfig: false };
}

/**
 * Takes the task dir over when it exists (true): links restored (worktree mode), a fresh PORT, the protected set read
 * back from its snapshot; the task counts as prepared (setup is not run again). False when there is no task dir (the
 * task never started, or its worktree was removed: prepare makes it, run/steps/prepare.ts).
 * @throws Error when the worktree's links cannot be trusted
 */
export async function reattachTask(ctx: AttemptContext, task: TaskRuntime): Promise<boolean> {
  const { home } = ctx.opts;
  const key = task.spec.key;
  // No task dir (it never started, or its worktree was removed): prepare makes one (on the task's branch when it has one).
  if (!fs.existsSync(task.state.dir)) return false;
  if (ctx.repo && task.state.branch) {
    const links = trustedLinks(linksFile(home, ctx.runId, key), task.state.dir, ctx.repo.commonDir);
    // An overlay tree no longer mounted (the machine restarted): the folder holds only `.git`, and sealing it would
    // commit every file as deleted. It is removed; prepare makes a new one from the task's branch.
    if (links.overlay && !overlayMountsUnder(readMountInfo(), task.state.dir).includes(path.resolve(task.state.dir))) {
      await removeOverlayTree(ctx.repo.root, ctx.repo.commonDir, task.state.dir);
      return false;
    }
    restoreWorktreeLinks(links);
    task.links = links;
  }
  task.state.port = await reservePort();
  task.protected = protectedSetFromSnapshot(path.join(runDir(home, ctx.runId), 'tasks', key, 'protected'), judgedCommands(task.spec), task.spec.protect);
  // The guards' base (plain mode) and the tree the last attempt sealed, as the first orchestrator kept them.
  const taskRun = path.join(runDir(home, ctx.runId), 'tasks', key);
  if (!ctx.repo && guardsOn(task.spec)) task.guardBase = loadSnapshot(path.join(taskRun, 'guard-base.json')) ?? baseFromNow(ctx, task, taskRun);
  task.sealedState = loadSealedState(sealedStateFile(taskRun));
  // Plain mode: what setup installed, as the first orchestrator recorded it (none kept: setup made no such folder).
  if (!ctx.repo) task.setupDeps = loadSetupDeps(setupDepsFile(taskRun));
  // A run from before the record of what setup made was kept: nothing counts as there before the worker (said so).
  if (task.links && !fs.existsSync(preparedFilesFile(taskRun)))
    ctx.emit({
      type: 'task-note',
      key,
      note: "no record of the files setup made was kept (a run from an earlier Verdict): every file the sealed commit does not hold, setup's included, is moved out of the check's sight; discard the task and run it again if its check needs them",
    });
  task.prepared = true;
  return true;
}

/** A plain task dir whose guard base was not kept (a run from before it was): judged from now on, and said so. */
function baseFromNow(ctx: AttemptContext, task: TaskRuntime, taskRun: string): DirSnapshot {
  ctx.emit({ type: 'task-note', key: task.spec.key, note: 'no record of the task dir after setup was kept; the guards judge only what changes from now on' });
  const base = takeSnapshot(task.state.dir, path.join(taskRun, 'guard-base'));
  saveSnapshot(base, path.join(taskRun, 'guard-base.json'));
  return base;
}
