import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { fallbackIdentityArgs } from './identity';
import { withLock } from '../fs/lock';
import { explainGitFailure } from './git-errors';
import { gitFor } from './safe-git';

/** One passed task to merge into the repository's current branch. */
export interface MergeRequest {
  key: string;
  /** Main working tree of the repository (where the current branch is checked out). */
  repo: string;
  /** The task branch, `verdict/<run_id>/<key>`. */
  branch: string;
  /**
   * The task's check, run again on the rebased result in `dir` (a fresh checkout of the rebased branch, never the
   * worker's own worktree); `base` is the commit it was rebased onto (the current branch's head). The caller decides
   * how it runs (its sandbox, environment, log, and the base's versions of the check's inputs: run/merge-plan.ts).
   */
  recheck: (dir: string, base: string) => Promise<RecheckResult>;
}

/** What the re-check after the rebase said. */
export interface RecheckResult {
  passed: boolean;
  /** Verbatim output (tail). */
  output: string;
  /** One line: why it did not pass. */
  reason: string;
}

/**
 * What happened to one task in the merge queue. MERGED: rebased, re-checked and fast-forwarded; BLOCKED: the rebase
 * conflicted (files listed) or git refused; CHECK_FAILED: rebased but the check fails on the result, nothing merged;
 * MISSING: the task branch is gone; REFUSED: the working tree became dirty, nothing touched.
 */
export type MergeOutcome =
  | { key: string; status: 'MERGED'; sha: string }
  | { key: string; status: 'BLOCKED'; conflicts: string[]; reason: string }
  | { key: string; status: 'CHECK_FAILED'; output: string; reason: string }
  | { key: string; status: 'MISSING' | 'REFUSED'; reason: string };

/** Thrown when the repository's working tree has changes to tracked files: merging would touch the user's work. */
export class DirtyTreeError extends Error {
  constructor(readonly repo: string, readonly files: string[]) {
    super(`${repo} has uncommitted changes (${files.slice(0, 5).join(', ')}${files.length > 5 ? ', …' : ''}); commit or stash them first — Verdict never merges into a dirty working tree`);
    this.name = 'DirtyTreeError';
  }
}

/**
 * The branch checked out in `repo`, after checking the working tree is clean (untracked files are allowed; a merge
 * that would overwrite one fails on its own and is reported as BLOCKED).
 * @throws DirtyTreeError, or Error when HEAD is detached
 */
export async function mergeTarget(repo: string): Promise<string> {
  const git = gitFor(repo, { trusted: true });
  const dirty = (await git.raw(['status', '--porcelain', '--untracked-files=no'])).split('\n').filter(Boolean).map((l) => l.slice(3));
  if (dirty.length) throw new DirtyTreeError(repo, dirty);
  const branch = (await git.raw(['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => '')).trim();
  if (!branch) throw new Error(`${repo} has a detached HEAD; check out the branch the task branches should be merged into`);
  return branch;
}

/**
 * The merge queue: one task at a time, in order — rebase its branch onto the current branch, run its check on the
 * result, then fast-forward the current branch. A conflict or a failing re-check stops that task only; the queue goes
 * on. The working tree is checked before every task; once dirty, the rest are REFUSED. Git runs through gitFor as
 * trusted (merging is reached only from the CLI or a trusted workspace; the rebase checks files out, so filters stay on).
 * @throws DirtyTreeError (or a detached-HEAD Error) before the first task, touching nothing
 */
export async function mergeQueue(requests: MergeRequest[], onOutcome: (o: MergeOutcome) => void = () => undefined): Promise<MergeOutcome[]> {
  const outcomes: MergeOutcome[] = [];
  if (requests[0]) await mergeTarget(requests[0].repo);
  for (const req of requests) {
    let outcome: MergeOutcome;
    try {
      outcome = await mergeTask(req);
    } catch (e) {
      outcome = e instanceof DirtyTreeError ? { key: req.key, status: 'REFUSED', reason: e.message } : { key: req.key, status: 'BLOCKED', conflicts: [], reason: (e as Error).message };
    }
    outcomes.push(outcome);
    onOutcome(outcome);
  }
  return outcomes;
}

/**
 * Merges one task (see mergeQueue). Never leaves a rebase half-done: a conflicting rebase is aborted.
 * @throws DirtyTreeError when the working tree is dirty; Error for a detached HEAD
 */
export async function mergeTask(req: MergeRequest): Promise<MergeOutcome> {
  const git = gitFor(req.repo, { trusted: true });
  await mergeTarget(req.repo);
  if (!(await git.raw(['rev-parse', '--verify', '--quiet', `refs/heads/${req.branch}`]).catch(() => '')).trim()) {
    return { key: req.key, status: 'MISSING', reason: `branch ${req.branch} no longer exists (deleted by hand?); nothing to merge, and nothing on the current branch was touched` };
  }
  const target = (await git.revparse(['HEAD'])).trim();
  const dir = await checkoutForMerge(git, req);
  try {
    const wt = gitFor(dir, { trusted: true });
    if ((await wt.raw(['status', '--porcelain'])).trim()) {
      return { key: req.key, status: 'BLOCKED', conflicts: [], reason: `a fresh checkout of ${req.branch} is not clean (a filter or line-ending rule changes its files), so it cannot be rebased safely` };
    }
    try {
      await wt.raw([...(await fallbackIdentityArgs(wt)), 'rebase', '--quiet', target]);
    } catch (e) {
      const conflicts = (await wt.raw(['diff', '--name-only', '--diff-filter=U']).catch(() => '')).split('\n').filter(Boolean);
      await wt.raw(['rebase', '--abort']).catch(() => undefined);
      return { key: req.key, status: 'BLOCKED', conflicts, reason: conflicts.length ? `rebase onto the current branch conflicts in ${conflicts.join(', ')}` : `rebase failed: ${(e as Error).message.trim()}` };
    }
    const check = await req.recheck(dir, target);
    if (!check.passed) return { key: req.key, status: 'CHECK_FAILED', output: check.output, reason: `after the rebase ${check.reason}; nothing was merged` };
    try {
      await git.raw(['merge', '--ff-only', '--quiet', req.branch]);
    } catch (e) {
      return { key: req.key, status: 'BLOCKED', conflicts: [], reason: `fast-forward refused: ${explainGitFailure((e as Error).message, { root: req.repo, branch: req.branch })}` };
    }
    return { key: req.key, status: 'MERGED', sha: (await git.revparse(['HEAD'])).trim() };
  } finally {
    await git.raw(['worktree', 'remove', '--force', dir]).catch(() => fs.rmSync(dir, { recursive: true, force: true }));
  }
}

/**
 * A temporary worktree checked out on the task branch: the rebase and the re-check see exactly what the branch holds,
 * never files the worker or the check left untracked (or ignored) in the task's own worktree, and never git files the
 * worker could write there.
 */
async function checkoutForMerge(git: SimpleGit, req: MergeRequest): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `verdict-merge-${req.key}-`));
  const commonDir = path.resolve(req.repo, (await git.revparse(['--git-common-dir'])).trim());
  // The task's own worktree may still have the branch checked out; `--force` lets a second worktree check it out.
  await withLock(path.join(commonDir, 'verdict-worktree'), () => git.raw(['worktree', 'add', '--quiet', '--force', dir, req.branch]));
  return dir;
}
