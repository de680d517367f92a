import fs from 'node:fs';
import path from 'node:path';
import { releaseOverlays } from './overlay-tree';
import { unmountOverlay } from './overlay';
import { withLock } from '../fs/lock';
import { explainGitFailure } from './git-errors';
import { gitFor, runGit } from './safe-git';
import { gitCommonDir, REGISTER_TIMEOUT_MS, removeWorktreeLocked, worktreeLockPath } from './worktree-lock';
import { processesIn } from '../process/in-use';
import { readDirOrEmpty } from '../fs/read-dir';

/**
 * One run as clean sees it, supplied by the caller (run/clean.ts reads the run registry): git/ knows nothing of
 * state files or liveness.
 */
export interface CleanCandidate {
  runId: string;
  /**
   * 'live': its worktrees are in use (a running orchestrator, or a state file that cannot be read: not proof the
   * run is over), never touched; 'resumable': its orchestrator died and `verdict resume` needs its worktrees,
   * cleaned only when named with `runId`; 'over': finished, cancelled, interrupted, or only a worktrees folder left.
   */
  use: 'live' | 'resumable' | 'over';
  /** The repository's main working tree (state.json `repo`); null: taken from each worktree's `.git` file. */
  repo: string | null;
  /** Epoch ms: end, else last heartbeat, else the worktree folder's mtime. */
  lastActiveAt: number;
}

/** What `verdict clean` should remove. */
export interface CleanOptions {
  /** VERDICT_HOME, absolute. */
  home: string;
  /** Every run with a state file or a worktrees folder (see {@link CleanCandidate}). */
  runs: CleanCandidate[];
  /** Only this run; it is cleaned even when its orchestrator died (a resume then has nothing to resume from). */
  runId?: string;
  /** Only runs that ended (or last beat) more than this many days ago. */
  olderThanDays?: number;
  /** Also delete the task branches `verdict/<run_id>/*` (git branch -D), merged or not. */
  branches: boolean;
  /** Report what would be done; change nothing. */
  dryRun: boolean;
  /** Epoch ms (tests). */
  now?: number;
}

/** One line of what clean did (or, with dryRun, would do). */
export type CleanAction =
  | { kind: 'worktree-removed'; runId: string; dir: string; uncommittedFiles: number }
  | { kind: 'branch-deleted'; runId: string; branch: string; unmerged: boolean; sha: string }
  | { kind: 'branch-kept'; runId: string; branch: string; unmerged: boolean; sha: string }
  | { kind: 'run-skipped'; runId: string; reason: string }
  /** An overlay tree's mount (docs/trees.md) was unmounted; `detached`: busy, so lazily (`umount -l`). */
  | { kind: 'overlay-unmounted'; runId: string; dir: string; detached: boolean }
  | { kind: 'failed'; runId: string; what: string; reason: string };

/** The result of {@link cleanRuns}: actions in order, per run. */
export interface CleanReport {
  actions: CleanAction[];
  /** Runs looked at (after --run / --older-than). */
  runs: number;
}

const DAY_MS = 86_400_000;

/**
 * Removes the worktrees Verdict made under `<home>/worktrees/<run_id>/` for every finished run of `opts.runs`
 * selected by `opts`: each is removed from its repository with `git worktree remove --force` (falling back to
 * deleting the folder), then `git worktree prune`, under the same per-repository lock runs use to create worktrees.
 * The repository is the candidate's `repo`, else the worktree's own `.git` file. A live run is never touched; a
 * resumable one (its orchestrator died) is skipped unless named with `runId` (`verdict resume` needs its worktrees). Task branches `verdict/<run_id>/*` are deleted only with `branches`;
 * every branch is reported with whether its commit is reachable from any ref outside that run (`unmerged` when
 * not). Run records (`runs/<run_id>/`) and the eval log are never touched.
 * @throws Error when `runId` names no run under `home`, or `olderThanDays` is negative or not a number
 */
export async function cleanRuns(opts: CleanOptions): Promise<CleanReport> {
  const now = opts.now ?? Date.now();
  if (opts.olderThanDays !== undefined && !(opts.olderThanDays >= 0)) throw new Error(`--older-than must be a number of days ≥ 0, got ${opts.olderThanDays}`);
  const candidates = [...opts.runs].sort((a, b) => a.runId.localeCompare(b.runId));
  let selected = candidates;
  if (opts.runId !== undefined) {
    selected = candidates.filter((c) => c.runId === opts.runId);
    if (!selected.length)
      throw new Error(`no run ${opts.runId} under ${opts.home} (neither runs/${opts.runId}/state.json nor worktrees/${opts.runId}/ exists)`);
  }
  if (opts.olderThanDays !== undefined) selected = selected.filter((c) => now - c.lastActiveAt > (opts.olderThanDays as number) * DAY_MS);

  const actions: CleanAction[] = [];
  for (const run of selected) {
    if (run.use === 'live') {
      actions.push({ kind: 'run-skipped', runId: run.runId, reason: 'still running; its worktrees are in use' });
      continue;
    }
    if (run.use === 'resumable' && opts.runId === undefined) {
      actions.push({
        kind: 'run-skipped',
        runId: run.runId,
        reason: `its orchestrator died; \`verdict resume ${run.runId}\` needs its worktrees (name it with --run to clean it anyway)`,
      });
      continue;
    }
    await cleanOneRun(run, opts, actions);
  }
  return { actions, runs: selected.length };
}

async function cleanOneRun(run: CleanCandidate, opts: CleanOptions, actions: CleanAction[]): Promise<void> {
  const runDir = path.join(opts.home, 'worktrees', run.runId);
  const repos = new Set<string>();
  if (run.repo) repos.add(run.repo);
  // Keys never start with a dot: `.objects/` (the workers' git objects, see worktreeStepAccess) is not a worktree.
  for (const key of readDirOrEmpty(runDir).filter((n) => !n.startsWith('.'))) {
    const dir = path.join(runDir, key);
    if (!fs.statSync(dir).isDirectory()) continue;
    const repo = run.repo ?? repoOfWorktree(dir);
    if (repo) repos.add(repo);
    // Never delete a folder a live process works in (an orphaned worker, a user's shell, an editor's terminal).
    const inside = processesIn(dir);
    if (inside.length) {
      actions.push({
        kind: 'failed',
        runId: run.runId,
        what: dir,
        reason: `kept: a live process works in it (${inside
          .slice(0, 3)
          .map((p) => `pid ${p.pid} ${p.command}`)
          .join(', ')}${inside.length > 3 ? ', …' : ''})`,
      });
      continue;
    }
    const uncommitted = await uncommittedFiles(dir);
    if (!opts.dryRun) {
      try {
        // An overlay tree (a crashed run's, still mounted): unmounted first, so nothing below is deleted through it.
        const how = await unmountOverlay(dir);
        if (how !== 'not-mounted') actions.push({ kind: 'overlay-unmounted', runId: run.runId, dir, detached: how === 'detached' });
        await removeWorktree(repo, dir);
      } catch (e) {
        actions.push({ kind: 'failed', runId: run.runId, what: dir, reason: (e as Error).message });
        continue;
      }
    }
    if (!opts.dryRun) {
      fs.rmSync(path.join(runDir, '.objects', key), { recursive: true, force: true });
      fs.rmSync(path.join(runDir, '.index', key), { force: true });
    }
    actions.push({ kind: 'worktree-removed', runId: run.runId, dir, uncommittedFiles: uncommitted });
  }
  if (!opts.dryRun && fs.existsSync(runDir) && !readDirOrEmpty(runDir).some((n) => !n.startsWith('.') && fs.statSync(path.join(runDir, n)).isDirectory())) {
    try {
      // Overlay lower and upper layers, and any mount left under them, before the folder goes.
      for (const dir of await releaseOverlays(runDir)) actions.push({ kind: 'overlay-unmounted', runId: run.runId, dir, detached: false });
      fs.rmSync(runDir, { recursive: true, force: true });
    } catch (e) {
      actions.push({ kind: 'failed', runId: run.runId, what: runDir, reason: (e as Error).message });
    }
  }
  for (const repo of repos) {
    if (!fs.existsSync(repo)) continue;
    // No repository there any more: nothing to prune, no branch to list (as before, when both failed quietly).
    const lock = await worktreeLock(repo).catch(() => null);
    if (!lock) continue;
    if (!opts.dryRun)
      await withLock(lock, () => runGit(repo, ['worktree', 'prune'], { noDrivers: true, quiet: true, timeoutMs: REGISTER_TIMEOUT_MS }).catch(() => undefined));
    await handleBranches(repo, lock, run.runId, opts, actions);
  }
}

/**
 * The per-repository worktree lock of `repo` (git/worktree-lock.ts). `worktree prune`, `worktree remove` and `branch
 * -D` run under it, each within REGISTER_TIMEOUT_MS: they read every registered worktree, and die on one a run's
 * `worktree add` is still writing, or wait forever on a HEAD a worker made a FIFO.
 * @throws Error with git's message when `repo` is no repository
 */
async function worktreeLock(repo: string): Promise<string> {
  return worktreeLockPath(await gitCommonDir(repo));
}

/** Deletes (with --branches, under the repository's worktree lock `lock`) or reports the run's task branches in `repo`. */
async function handleBranches(repo: string, lock: string, runId: string, opts: CleanOptions, actions: CleanAction[]): Promise<void> {
  const git = gitFor(repo, { trusted: true });
  const prefix = `refs/heads/verdict/${runId}/`;
  const listed = await git.raw(['for-each-ref', '--format=%(refname) %(objectname)', prefix]).catch(() => '');
  for (const line of listed.split('\n').filter(Boolean)) {
    const [ref, sha] = line.split(' ') as [string, string];
    const branch = ref.slice('refs/heads/'.length);
    const unmerged = !(await reachableElsewhere(repo, sha, prefix));
    if (!opts.branches) {
      actions.push({ kind: 'branch-kept', runId, branch, unmerged, sha });
      continue;
    }
    if (!opts.dryRun) {
      try {
        await withLock(lock, () => runGit(repo, ['branch', '-D', branch], { noDrivers: true, quiet: true, timeoutMs: REGISTER_TIMEOUT_MS }));
      } catch (e) {
        actions.push({ kind: 'failed', runId, what: `branch ${branch}`, reason: explainGitFailure((e as Error).message, { root: repo, branch }) });
        continue;
      }
    }
    actions.push({ kind: 'branch-deleted', runId, branch, unmerged, sha });
  }
}

/** True when `sha` is reachable from some ref outside `prefix` (another branch, a tag, a remote branch). */
async function reachableElsewhere(repo: string, sha: string, prefix: string): Promise<boolean> {
  const refs = await gitFor(repo, { trusted: true })
    .raw(['for-each-ref', '--contains', sha, '--format=%(refname)'])
    .catch(() => '');
  return refs.split('\n').some((r) => r && !r.startsWith(prefix) && r !== 'refs/stash');
}

/**
 * Removes one worktree folder: in its repository, removeWorktreeLocked (`git worktree remove --force --force`, the
 * folder, `git worktree prune`, under the per-repository worktree lock); when the repository is gone, the folder is
 * deleted.
 * @throws Error when the repository's lock cannot be taken or its git dir not found (the folder is kept then)
 */
async function removeWorktree(repo: string | null, dir: string): Promise<void> {
  if (repo && fs.existsSync(repo)) await removeWorktreeLocked(repo, dir);
  fs.rmSync(dir, { recursive: true, force: true });
}

/** The main working tree of the repository a worktree belongs to, from its `.git` file; null when unknown. */
function repoOfWorktree(dir: string): string | null {
  try {
    const text = fs.readFileSync(path.join(dir, '.git'), 'utf8');
    const gitdir = /^gitdir: (.+)$/m.exec(text)?.[1]?.trim();
    if (!gitdir) return null;
    // <repo>/.git/worktrees/<name> → <repo>
    const commonDir = path.resolve(gitdir, '..', '..');
    return path.basename(commonDir) === '.git' ? path.dirname(commonDir) : commonDir;
  } catch {
    return null;
  }
}

/** Longest a worktree's `git status` may go without printing, ms: a crashed run's worker may have left a FIFO that git opens. */
const STATUS_TIMEOUT_MS = 60_000;

/** Files `git status --porcelain` lists in a worktree (0 when it is not a readable worktree). */
async function uncommittedFiles(dir: string): Promise<number> {
  // Without its own .git, git would walk up and report some enclosing repository instead.
  if (!fs.existsSync(path.join(dir, '.git'))) return 0;
  // A crashed run's worker could leave its .git, or the index it names, a FIFO, whose open never returns: not read.
  if (!regularFile(path.join(dir, '.git'))) return 0;
  const gitdir = /^gitdir: (.+)$/m.exec(fs.readFileSync(path.join(dir, '.git'), 'utf8'))?.[1]?.trim();
  const index = gitdir ? path.join(path.resolve(dir, gitdir), 'index') : null;
  if (index && fs.existsSync(index) && !regularFile(index)) return 0;
  // Untrusted: a worker could have left the worktree pointing at a git dir of its own (an orchestrator that died mid-run
  // never restored it), whose config names filters; with trusted false every driver it names is switched off.
  // Submodules by their commit only (`dirty`): git answers "is its checkout changed?" by running git inside it with its
  // own config, which a worker can have written (a git dir of its own in a submodule's place), and that config is not
  // read here, so a filter it names would run (git/submodule-trust.ts).
  const out = await gitFor(dir, { trusted: false, timeoutMs: STATUS_TIMEOUT_MS })
    .raw(['status', '--porcelain', '--ignore-submodules=dirty'])
    .catch(() => '');
  return out.split('\n').filter(Boolean).length;
}

/** Whether `file` is a regular file itself (not a symlink, FIFO or folder). */
function regularFile(file: string): boolean {
  return fs.lstatSync(file, { throwIfNoEntry: false })?.isFile() === true;
}
