/**
 * The git commands that read every registered worktree of a repository (`worktree add`, `worktree remove`, `worktree
 * prune`, `branch -D`), run under the repository's worktree lock `<git common dir>/verdict-worktree` and within a time
 * limit. Each such command opens every registration's HEAD through its `commondir`: beside a run that adds worktrees it
 * can read one another `worktree add` is still writing and die, and a worker can make its own registration's HEAD a
 * FIFO, which holds the command until it is killed. Adds share the lock (withSharedLock) and one refused as half-written
 * is tried again alone; removes, prunes and branch deletions take it alone (withLock), so they never run beside an add.
 */
import fs from 'node:fs';
import path from 'node:path';
import { withLock, withSharedLock } from '../fs/lock';
import { explainGitFailure } from './git-errors';
import { repairedWords, repairRegistrationHeads } from './registration-heads';
import { runGit } from './safe-git';

/**
 * How long each git command that reads the registrations may take, ms. `git worktree add` opens every registered
 * worktree's HEAD, and a worker may write its own (it commits there): a FIFO put there holds every add of the
 * repository until it is killed, and the lock with it.
 */
export const REGISTER_TIMEOUT_MS = 60_000;

/**
 * git's refusal when it read a registration that another `worktree add` was still writing: an empty `commondir` (git
 * reads every registered worktree's HEAD through it, and dies on an empty one: "failed to read
 * .git/worktrees/t15/commondir: Success"). It comes before the refused add has made anything. Matched by the path git
 * names, "…/worktrees/<name>/commondir: <why>", not by its words: git speaks the user's language.
 */
const HALF_WRITTEN_REGISTRATION = /\/worktrees\/[^/\s]+\/commondir: /;
/** Pauses before each new try of a registration refused as {@link HALF_WRITTEN_REGISTRATION}, ms (1.55 s in all). */
const REGISTER_RETRY_MS = [50, 100, 200, 400, 800];

/** The repository's worktree lock for the shared git directory `commonDir` (absolute). */
export function worktreeLockPath(commonDir: string): string {
  return path.join(commonDir, 'verdict-worktree');
}

/**
 * The shared git directory of the repository at `root` (`git rev-parse --git-common-dir`, resolved against `root`).
 * @throws Error with git's message when `root` is no repository
 */
export async function gitCommonDir(root: string): Promise<string> {
  return path.resolve(root, (await runGit(root, ['rev-parse', '--git-common-dir'], { noDrivers: true, timeoutMs: REGISTER_TIMEOUT_MS })).trim());
}

/**
 * Runs `git <args>`, a `worktree add`, through `git` under the repository's lock `lock`; returns null, or git's refusal.
 * The adds of this process run side by side (withSharedLock); removing a worktree waits for them (withLock). An add
 * that read another's registration half-written (1 or 2 in 1,000 at 64 lanes, measured) is tried again alone
 * (withLock: no add of this process runs beside it, and the lock keeps other Verdict processes out), after a pause, up
 * to five times. Any other refusal is returned at once.
 * @param git runs one git command in the repository (rejects with git's message)
 * @throws Error when the lock cannot be taken (nothing was run then)
 */
export async function addUnderLock(git: { raw: (args: string[]) => Promise<string> }, lock: string, args: string[]): Promise<Error | null> {
  const add = () =>
    git.raw(args).then(
      () => null,
      (e: Error) => e,
    );
  const started = Date.now();
  let refused = await withSharedLock(lock, add);
  for (const ms of REGISTER_RETRY_MS) {
    if (!refused || !HALF_WRITTEN_REGISTRATION.test(refused.message)) break;
    await new Promise((resolve) => setTimeout(resolve, ms));
    refused = await withLock(lock, add);
  }
  if (refused && STOPPED.test(refused.message)) refused = await afterStopped(lock, add, refused, started);
  return refused;
}

/** runGit's words for a command stopped at its time limit (git/safe-git.ts). */
const STOPPED = /timed out after \d+ ms/;
/** A full git object id: SHA-1 (40 hex) or SHA-256 (64 hex). */
export const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
/** When each lock's registrations last had a HEAD repaired (epoch ms), by lock path. */
const lastRepair = new Map<string, number>();

/**
 * The commit of the main worktree's HEAD of the repository whose shared git directory is `commonDir` (`rev-parse` run
 * there reads that HEAD only, never a registration's), or null when there is none (an unborn branch).
 */
async function mainHead(commonDir: string): Promise<string | null> {
  const sha = (
    await runGit(commonDir, ['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { noDrivers: true, timeoutMs: REGISTER_TIMEOUT_MS }).catch(() => '')
  ).trim();
  return OBJECT_ID.test(sha) ? sha : null;
}

/**
 * An add stopped at its time limit (`stopped`, begun at `started`): most likely a registration's HEAD a worker made
 * something git waits on (a FIFO). Under the lock taken alone, such HEADs are replaced by a detached HEAD at the main
 * worktree's commit (git/registration-heads.ts) and the add is tried once more, alone, when this call or another one
 * since it began repaired one; else, or when it is refused again, the refusal says what was found.
 */
async function afterStopped(lock: string, add: () => Promise<Error | null>, stopped: Error, started: number): Promise<Error | null> {
  const commonDir = path.dirname(lock);
  const sha = await mainHead(commonDir);
  const repaired = sha ? await withLock(lock, async () => repairRegistrationHeads(commonDir, sha)) : [];
  if (repaired.length) lastRepair.set(lock, Date.now());
  if (!repaired.length && (lastRepair.get(lock) ?? 0) < started)
    return new Error(`${stopped.message}; no registration's HEAD was found that git waits on (git/registration-heads.ts)`);
  const again = await withLock(lock, add);
  const what = repaired.length ? `the HEAD of registration(s) ${repairedWords(repaired)} was replaced` : "another add replaced a registration's HEAD";
  return again && new Error(`${again.message} (tried again after ${what})`);
}

/**
 * The arguments of a `worktree add` that registers `dir` at `target` (`['--detach', <commit>]` or `[<branch>]`) and checks
 * nothing out. Relative paths (git 2.48's worktree.useRelativePaths) would also write the shared config, so they are
 * off; git makes each registration's admin folder with mkdir (a taken name gets a number) and writes only inside it.
 */
function addArgs(dir: string, target: { detach: string } | { branch: string }, force: boolean): string[] {
  const head = 'detach' in target ? ['--detach', dir, target.detach] : [dir, target.branch];
  return ['-c', 'worktree.useRelativePaths=false', 'worktree', 'add', '--quiet', '--no-checkout', ...(force ? ['--force'] : []), ...head];
}

/**
 * Registers `dir` as a worktree of the repository with a detached HEAD at `sha` (`git worktree add --no-checkout
 * --detach`, see {@link addUnderLock}); returns null, or git's refusal.
 * @param git runs one git command in the repository (rejects with git's message)
 * @param lock the repository's worktree lock path ({@link worktreeLockPath})
 * @throws Error when the lock cannot be taken
 */
export async function registerWorktree(git: { raw: (args: string[]) => Promise<string> }, lock: string, dir: string, sha: string): Promise<Error | null> {
  return addUnderLock(git, lock, addArgs(dir, { detach: sha }, false));
}

/** Options of {@link addDetachedWorktree}, {@link addBranchWorktree} and {@link removeWorktreeLocked}. */
export interface LockedWorktreeOptions {
  /** The repository's shared git directory, absolute; absent: asked of git (`rev-parse --git-common-dir`). */
  commonDir?: string;
  /** Time limit of each git command that reads the registrations, ms (default REGISTER_TIMEOUT_MS). */
  timeoutMs?: number;
  /** As SafeGitOptions.trusted (git/safe-git.ts) for the checkout: filters stay on only in a trusted repository; default true. */
  trusted?: boolean;
}

/** Options of {@link addDetachedWorktree} and {@link addBranchWorktree}. */
export interface AddLockedOptions extends LockedWorktreeOptions {
  /** `worktree add --force`: the branch may be checked out in another worktree; a registered but missing path is taken. */
  force?: boolean;
}

/**
 * Makes worktree `dir` (missing, or an empty folder) of the repository at `root` with a detached HEAD at `commit`, checked
 * out. The registration runs under the repository's worktree lock shared with a run's adds, a half-written refusal tried
 * again (see {@link addUnderLock}), within `opts.timeoutMs`; the checkout (`reset --hard`, as git's own `worktree add`
 * checks out) runs outside the lock with no time limit (a large tree takes long, and it reads no registration). On
 * failure nothing of this call stays registered (a folder that was there stays).
 * @throws Error "git worktree add <dir> failed: <git's message, explained (explainGitFailure)>", or "checking out <dir>
 *   failed: …"; or when the lock cannot be taken
 */
export async function addDetachedWorktree(root: string, dir: string, commit: string, opts: AddLockedOptions = {}): Promise<void> {
  await addChecked(root, dir, { detach: commit }, opts);
}

/**
 * As {@link addDetachedWorktree}, with `dir`'s HEAD on the existing branch `branch` (`worktree add <dir> <branch>`;
 * with `opts.force` the branch may be checked out in another worktree already).
 * @throws Error as addDetachedWorktree, git's message explained with the branch named
 */
export async function addBranchWorktree(root: string, dir: string, branch: string, opts: AddLockedOptions = {}): Promise<void> {
  await addChecked(root, dir, { branch }, opts);
}

async function addChecked(root: string, dir: string, target: { detach: string } | { branch: string }, opts: AddLockedOptions): Promise<void> {
  const branch = 'branch' in target ? target.branch : undefined;
  const timeoutMs = opts.timeoutMs ?? REGISTER_TIMEOUT_MS;
  const commonDir = opts.commonDir ?? (await gitCommonDir(root));
  const lock = worktreeLockPath(commonDir);
  // Registering runs nothing a driver names (no checkout): no config read (see runGit).
  const git = { raw: (args: string[]) => runGit(root, args, { noDrivers: true, quiet: true, timeoutMs }) };
  const dotGit = path.join(dir, '.git');
  const hadDotGit = fs.existsSync(dotGit);
  const refused = await addUnderLock(git, lock, addArgs(dir, target, opts.force ?? false));
  if (refused) {
    // Stopped at its time limit after it wrote the folder's `.git`: the registration is ours to take back. Refused
    // before (a path registered already, a branch that does not exist), git made nothing.
    if (!hadDotGit && fs.existsSync(dotGit)) await withLock(lock, () => removeRegistered(root, dir, timeoutMs));
    throw new Error(`git worktree add ${dir} failed: ${explainGitFailure(refused.message, { root, worktree: dir, branch })}`);
  }
  try {
    // The checkout git's own `worktree add` runs; the repository's filters as a trusted gitFor keeps them.
    await runGit(dir, ['reset', '--hard', '--quiet', '--no-recurse-submodules'], { trusted: opts.trusted ?? true, quiet: true });
  } catch (e) {
    await withLock(lock, () => removeRegistered(root, dir, timeoutMs)).catch(() => undefined);
    throw new Error(`checking out ${dir} failed: ${explainGitFailure((e as Error).message, { root, worktree: dir, branch })}`);
  }
}

/** Options of {@link removeWorktreeLocked}. */
export interface RemoveLockedOptions extends LockedWorktreeOptions {
  /** A branch to delete (`branch -D`) once the worktree is gone, merged or not. */
  branch?: string;
  /** Throw when git refuses to delete `branch`; default false: a refusal is ignored (the branch stays). */
  branchMustGo?: boolean;
}

/**
 * Removes worktree `dir` of the repository at `root`, all under the repository's worktree lock taken alone (withLock:
 * no add of this process runs beside it): `git worktree remove --force --force` (skipped when the folder is gone), the
 * folder itself (git refuses one with submodules), `git worktree prune`, then `git branch -D opts.branch` when asked.
 * Each git command is stopped after `opts.timeoutMs`, and a refused or stopped one is passed over.
 * @returns the commit the deleted branch held (so it can be recovered: `git branch B sha`); null when no branch was
 *   asked, none was there or git refused to delete it
 * @throws Error when the lock cannot be taken or the common dir not found (nothing was touched then); with
 *   `opts.branchMustGo`, git's refusal to delete the branch, explained (explainGitFailure)
 */
export async function removeWorktreeLocked(root: string, dir: string, opts: RemoveLockedOptions = {}): Promise<string | null> {
  const timeoutMs = opts.timeoutMs ?? REGISTER_TIMEOUT_MS;
  const commonDir = opts.commonDir ?? (await gitCommonDir(root));
  return withLock(worktreeLockPath(commonDir), async () => {
    await removeRegistered(root, dir, timeoutMs);
    if (!opts.branch) return null;
    // remove, prune and `branch -D` run nothing a driver names: no config read (see runGit).
    const git = (args: string[]) => runGit(root, args, { noDrivers: true, timeoutMs });
    const held = (await git(['rev-parse', '--verify', '--quiet', `refs/heads/${opts.branch}`]).catch(() => '')).trim() || null;
    if (!held) return null;
    try {
      await git(['branch', '-D', opts.branch]);
    } catch (e) {
      if (opts.branchMustGo) throw new Error(explainGitFailure((e as Error).message, { root, branch: opts.branch }));
      return null;
    }
    return held;
  });
}

/**
 * Removes worktree `dir`, its folder and every prunable registration, each git command stopped after `timeoutMs`; the
 * caller holds the repository's worktree lock. Never throws for git.
 */
export async function removeRegistered(root: string, dir: string, timeoutMs: number = REGISTER_TIMEOUT_MS): Promise<void> {
  const git = (args: string[]) => runGit(root, args, { noDrivers: true, quiet: true, timeoutMs });
  // Nothing registered for it, or git refused (submodules): the folder goes below, then prune drops the registration
  // (prune opens no registration's HEAD).
  const removed = fs.existsSync(dir)
    ? await git(['worktree', 'remove', '--force', '--force', dir]).then(
        () => null,
        (e: Error) => e,
      )
    : null;
  fs.rmSync(dir, { recursive: true, force: true });
  await git(['worktree', 'prune']).catch(() => undefined);
  // Stopped: a registration's HEAD holds git (see afterStopped); replaced, so the repository's next commands do not wait.
  if (removed && STOPPED.test(removed.message)) {
    const commonDir = await gitCommonDir(root).catch(() => null);
    const sha = commonDir && (await mainHead(commonDir));
    if (commonDir && sha) repairRegistrationHeads(commonDir, sha);
  }
}
