import fs from 'node:fs';
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { fallbackIdentityArgs } from './identity';
import { explainGitFailure } from './git-errors';
import { withLock } from './lock';
import { initSubmodules } from './submodules';

/** Facts about the repository a worktree-mode run uses, found before any task starts. */
export interface RepoInfo {
  /** Top-level folder of the main working tree. */
  root: string;
  /** The shared git directory (`git rev-parse --git-common-dir`), absolute. */
  commonDir: string;
  /** base_ref resolved to a full commit sha. */
  baseSha: string;
  /** `-c user.name=… -c user.email=…` when the repository has no committer identity, else empty (read once). */
  identityArgs: string[];
}

/** The branch a task's work lands on: `verdict/<runId>/<key>`. */
export function taskBranch(runId: string, key: string): string {
  return `verdict/${runId}/${key}`;
}

/**
 * Checks that `repo` is inside a git repository and `baseRef` names a commit.
 * @throws Error saying which of the two is wrong, naming the folder or ref
 */
export async function inspectRepo(repo: string, baseRef: string): Promise<RepoInfo> {
  if (!fs.existsSync(repo)) throw new Error(`repo ${repo} does not exist`);
  const git = simpleGit(repo);
  let root: string;
  let commonDir: string;
  try {
    root = (await git.revparse(['--show-toplevel'])).trim();
    commonDir = path.resolve(root, (await git.revparse(['--git-common-dir'])).trim());
  } catch {
    throw new Error(`worktree mode needs a git repository, but ${repo} is not inside one (run \`git init\` there, or set "worktrees": false)`);
  }
  let baseSha: string;
  try {
    baseSha = (await git.revparse(['--verify', '--quiet', `${baseRef}^{commit}`])).trim();
  } catch {
    baseSha = '';
  }
  if (!baseSha) throw new Error(`base_ref "${baseRef}" does not name a commit in ${root} (try \`git -C ${root} log --oneline -1 ${baseRef}\`)`);
  return { root, commonDir, baseSha, identityArgs: await fallbackIdentityArgs(git) };
}

/** Options of {@link addWorktree}. */
export interface AddWorktreeOptions {
  /** Time limit for initialising submodules, ms (default SUBMODULE_TIMEOUT_MS). */
  submoduleTimeoutMs?: number;
  /** Aborting stops a running submodule initialisation. */
  signal?: AbortSignal;
}

/**
 * Creates worktree `dir` on a new branch `branch` at `baseSha`, serialized per repository by a lock on the git
 * common dir (git's own index, ref and config locks fail under concurrent `worktree add`). When the repository has
 * submodules they are initialised from the main working tree's checkouts (see initSubmodules; git's output goes to
 * `<dir>.submodules.log`). On failure nothing half-made remains: the worktree, and the branch when this call created
 * it, are removed before the error is thrown; a folder or branch that existed before is never touched.
 * @throws Error naming the cause and the command that fixes it (a leftover .lock file, a branch or folder left by an
 *   earlier run, a registered worktree whose folder is missing: see explainGitFailure), or the submodule failure
 */
export async function addWorktree(repo: RepoInfo, dir: string, branch: string, opts: AddWorktreeOptions = {}): Promise<void> {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  await withLock(path.join(repo.commonDir, 'verdict-worktree'), async () => {
    const git = simpleGit(repo.root);
    const dirExisted = fs.existsSync(dir);
    try {
      await git.raw(['worktree', 'add', '--quiet', '-b', branch, dir, repo.baseSha]);
    } catch (e) {
      // A registration whose folder is gone is the user's to prune (the message says how), not ours to drop.
      if (!dirExisted && !/already registered/.test((e as Error).message)) await removeWorktreeQuietly(git, dir);
      // git refuses `-b` for a branch that exists before it creates anything; any other failure may leave the new
      // branch behind. (Asked after the fact, so the lock is not held for an extra git call on every success.)
      const branchExisted = /a branch named .* already exists/.test((e as Error).message);
      if (!branchExisted) await git.raw(['branch', '-D', branch]).catch(() => undefined);
      throw new Error(`git worktree add ${dir} failed: ${explainGitFailure((e as Error).message, { root: repo.root, worktree: dir, branch })}`);
    }
    try {
      await initSubmodules(repo.root, dir, { logFile: `${dir}.submodules.log`, timeoutMs: opts.submoduleTimeoutMs, signal: opts.signal });
    } catch (e) {
      await removeWorktreeQuietly(git, dir);
      await git.raw(['branch', '-D', branch]).catch(() => undefined);
      throw e;
    }
  });
}

async function removeWorktreeQuietly(git: SimpleGit, dir: string): Promise<void> {
  try {
    await git.raw(['worktree', 'remove', '--force', '--force', dir]);
  } catch {
    // nothing was registered, or git refused (submodules): fall through to remove the folder, then prune
  }
  fs.rmSync(dir, { recursive: true, force: true });
  await git.raw(['worktree', 'prune']).catch(() => undefined);
}

/**
 * Copies `include` files (paths relative to the repository root, usually gitignored like .env) into the worktree.
 * @throws Error naming the first file that is missing in the repository
 */
export function copyIncludes(repoRoot: string, worktree: string, include: string[]): void {
  for (const rel of include) {
    const from = path.join(repoRoot, rel);
    if (!fs.existsSync(from)) throw new Error(`include file ${rel} does not exist in ${repoRoot}`);
    fs.cpSync(from, path.join(worktree, rel), { recursive: true });
  }
}

/**
 * Commits everything in the worktree (`git add -A`, so .gitignore is respected) onto its branch, as the
 * orchestrator, not the worker, with the repository's configured author (`identityArgs`, from RepoInfo, supplies
 * "Verdict" when it has none).
 * Returns the branch head sha and whether a new commit was made (false when the worker changed nothing).
 * @throws Error with git's message
 */
export async function commitWorktree(dir: string, message: string, identityArgs: string[]): Promise<{ sha: string; committed: boolean }> {
  const git = simpleGit(dir);
  // One status walk decides and names HEAD (porcelain v2 `# branch.oid`): a worker that changed nothing costs one git call.
  const lines = (await git.raw(['status', '--porcelain=v2', '--branch', '--untracked-files=all'])).split('\n').filter(Boolean);
  const head = lines.find((l) => l.startsWith('# branch.oid '))?.slice('# branch.oid '.length);
  if (!lines.some((l) => !l.startsWith('# ')) && head && head !== '(initial)') return { sha: head, committed: false };
  try {
    await git.raw(['add', '-A']);
  } catch (e) {
    throw new Error(`git add in ${dir} failed: ${explainGitFailure((e as Error).message, { root: dir })}`);
  }
  await git.raw([...identityArgs, 'commit', '--quiet', '--no-verify', '-m', message]);
  return { sha: (await git.revparse(['HEAD'])).trim(), committed: true };
}
