import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fallbackIdentityArgs } from './identity';
import { explainGitFailure } from './git-errors';
import { withLock } from '../fs/lock';
import { initSubmodules } from './submodules';
import { gitFor, gitRunner, readDriverNames, runGit, type ByteGit, type DriverNames, type RawGit } from './safe-git';
import { untrustedGitlinks } from './submodule-trust';
import { worktreeConfigIncludeProblems } from './worktree-config';
import { conePathspecs, conePatterns, coneIsWhole } from './sparse-cone';
import { mountOverlay, unmountOverlay, type OverlayLayers } from './overlay';
import { keepParentEntries, parseRawZ, unchangedFromParent, writeSealedBytes, type RawChange } from './sealed-bytes';
import { listSpecialFiles, removeSpecialFiles } from './special-files';
import { fsPath, nameFromBytes, readLinkName, showName, showPath } from '../fs/byte-names';
import { makeFreshDir, markTopDir } from '../process/top-dir';
import { OBJECT_ID, REGISTER_TIMEOUT_MS, registerWorktree, removeRegistered, worktreeLockPath } from './worktree-lock';

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
  /** Tracked files with uncommitted changes in the main working tree: not in any worktree (they start at baseSha). */
  uncommitted: number;
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
  const git = gitFor(repo);
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
  const uncommitted = (await git.raw(['status', '--porcelain', '--untracked-files=no']).catch(() => '')).split('\n').filter(Boolean).length;
  return { root, commonDir, baseSha, identityArgs: await fallbackIdentityArgs(git), uncommitted };
}

/** Options of {@link addWorktree}. */
export interface AddWorktreeOptions {
  /** Time limit for initialising submodules, ms (default SUBMODULE_TIMEOUT_MS). */
  submoduleTimeoutMs?: number;
  /** Aborting stops a running submodule initialisation. */
  signal?: AbortSignal;
  /**
   * The branch exists already and `repo.baseSha` is its head (a continued run's task whose worktree was removed): it is
   * neither created nor, on failure, deleted.
   */
  existingBranch?: boolean;
  /** How the tree is made (docs/trees.md); absent: a full checkout. */
  tree?: TreeChoice;
  /** Time limit of each git command of the branch and the registration (and of taking them back on a failure), ms (default REGISTER_TIMEOUT_MS). */
  registerTimeoutMs?: number;
}

/**
 * A task's tree: a full checkout; a sparse checkout of `cone` (git/sparse-cone.ts; `['']` is the whole tree); or an
 * overlay on the shared checkout `lower` (git/overlay-tree.ts), its upper layer under `<worktrees>/<run>/.overlay/<key>/`.
 */
export type TreeChoice =
  { kind: 'worktree' } | { kind: 'sparse'; cone: string[] } | { kind: 'overlay'; lower: { dir: string; index: string; sharedIndex: string | null } };

/**
 * Creates worktree `dir` on a new branch `branch` at `baseSha`. The registration (`git worktree add --no-checkout
 * --detach`) holds a lock on the git common dir that this process's registrations share (withSharedLock: each reads
 * every registered worktree, so with 1,000 of them one at a time they became the run's queue) and that removing a
 * worktree, initialising submodules and other processes take alone; the checkout (`git read-tree -u --reset`, which
 * touches only the new worktree's own admin dir and folder) runs outside it, so checkouts of several tasks run in parallel. When the
 * checkout has submodules they are initialised from the main working tree's checkouts under the lock again (`submodule
 * update --init` writes the shared config; see initSubmodules; git's output goes to `<dir>.submodules.log`). On
 * failure nothing half-made remains: the worktree, and the branch when this call created it, are removed (under the
 * lock) before the error is thrown; a folder or branch that existed before is never touched.
 * @throws Error naming the cause and the command that fixes it (a leftover .lock file, a branch or folder left by an
 *   earlier run, a registered worktree whose folder is missing: see explainGitFailure), or the submodule failure
 */
export async function addWorktree(repo: RepoInfo, dir: string, branch: string, opts: AddWorktreeOptions = {}): Promise<WorktreeLinks> {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  // Each task dir in a block group of its own (ext4): see process/top-dir.ts.
  await markTopDir(path.dirname(dir));
  // `branch`, `worktree add --no-checkout`, `update-ref -d` and, on a failure path, `worktree remove` and `prune` run
  // nothing a driver names: no config read, no simple-git (see runGit).
  // Started by the spawn helper (`quiet`: none prints anything wanted), not forked from the orchestrator.
  const timeoutMs = opts.registerTimeoutMs ?? REGISTER_TIMEOUT_MS;
  const git = { raw: (args: string[]) => runGit(repo.root, args, { noDrivers: true, quiet: true, timeoutMs }) };
  const lock = worktreeLockPath(repo.commonDir);
  const failed = (e: Error) => new Error(`git worktree add ${dir} failed: ${explainGitFailure(e.message, { root: repo.root, worktree: dir, branch })}`);
  // The branch is made outside the repository lock (creating one ref takes only that ref's own lock in git), while the
  // worktree is registered: git refuses an existing branch, and then nothing of this call is left. Into a folder
  // that is already there (git takes an empty one) nothing is registered before the branch is made, so a refused
  // branch never costs the user that folder. The worktree gets a detached HEAD: a sandboxed worker can commit (its
  // HEAD lives in the worktree's own admin dir) without write access to any ref; only the orchestrator moves the task
  // branch (sealWorktree, advanceBranch).
  const dirExisted = fs.existsSync(dir);
  // Made here under a fresh name (git takes an empty folder): see makeFreshDir. Removed on every failure path below.
  if (!dirExisted) makeFreshDir(dir);
  const branchMade: Promise<Error | null> = opts.existingBranch
    ? Promise.resolve(null)
    : git.raw(['branch', '--no-track', branch, repo.baseSha]).then(
        () => null,
        (e: Error) => e,
      );
  if (dirExisted) {
    const refused = await branchMade;
    if (refused) throw failed(refused);
  }
  // `update-ref -d` with the commit it was made at: only the branch this call made goes, and unlike `branch -D` it
  // opens no other worktree's HEAD (a worker's FIFO there would hold it).
  const dropBranch = async () => {
    if (!opts.existingBranch && !(await branchMade)) await git.raw(['update-ref', '-d', `refs/heads/${branch}`, repo.baseSha]).catch(() => undefined);
  };
  let refusedAdd: Error | null;
  try {
    refusedAdd = await registerWorktree(git, lock, dir, repo.baseSha);
  } catch (e) {
    // The lock could not be taken: nothing was registered; the branch made beside it and the fresh folder go.
    await dropBranch();
    if (!dirExisted) removeEmptyDir(dir);
    throw failed(e as Error);
  }
  if (refusedAdd) {
    await withLock(lock, async () => {
      // A registration whose folder is gone is the user's to prune (the message says how), not ours to drop; the empty
      // folder made above goes, so the folder stays missing as git's message says.
      // Nothing registered for the folder (git writes its `.git` file when it registers it): nothing to remove with
      // git either, whose `worktree remove` reads every registration again.
      if (!dirExisted && !/already registered/.test(refusedAdd.message) && fs.existsSync(path.join(dir, '.git')))
        await removeRegistered(repo.root, dir, timeoutMs);
      else if (!dirExisted) removeEmptyDir(dir);
      await dropBranch();
    });
    throw failed((await branchMade) ?? refusedAdd);
  }
  const undo = (): Promise<void> =>
    withLock(lock, async () => {
      await removeRegistered(repo.root, dir, timeoutMs);
      await dropBranch();
    });
  const refused = await branchMade;
  if (refused) {
    await withLock(lock, () => removeRegistered(repo.root, dir, timeoutMs));
    throw failed(refused);
  }
  const links = await checkOutRegistered(repo, dir, branch, opts.tree ?? { kind: 'worktree' }, undo);
  if (links.hasSubmodules) {
    try {
      await withLock(lock, () => initSubmodules(repo.root, dir, { logFile: `${dir}.submodules.log`, timeoutMs: opts.submoduleTimeoutMs, signal: opts.signal }));
    } catch (e) {
      await undo();
      throw e;
    }
  }
  return withBaseIndex(dir, links, repo.baseSha, opts.tree);
}

/**
 * Checks out `repo.baseSha` into the just registered worktree `dir` as `tree` says and returns its links (with
 * `hasSubmodules`). On failure the tree is unmounted and `undo` (removing the registration and the new branch) runs
 * before the error is thrown.
 * @throws Error naming the checkout's failure (explainGitFailure), or an overlay tree asked for a repository with submodules
 */
async function checkOutRegistered(repo: RepoInfo, dir: string, branch: string, tree: TreeChoice, undo: () => Promise<void>): Promise<WorktreeLinks> {
  try {
    const links = readWorktreeLinks(dir, repo.commonDir);
    await checkOut(links, repo.baseSha, tree);
    links.hasSubmodules = fs.existsSync(path.join(dir, '.gitmodules'));
    if (links.hasSubmodules && links.overlay)
      throw new Error('overlay trees do not take submodules (their checkouts live in the worktree\'s own git dir); use "tree": "worktree" for this repository');
    return links;
  } catch (e) {
    await unmountQuietly(dir);
    await undo();
    throw new Error(`checking out ${dir} failed: ${explainGitFailure((e as Error).message, { root: repo.root, worktree: dir, branch })}`);
  }
}

/**
 * The new worktree's links with its base commit and a copy of its fresh index (`<parent>/.index/<name>`), kept before
 * any worker runs, where no step can reach it (VERDICT_HOME is hidden from steps); an overlay's is a hard link to the
 * shared checkout's index (neither is ever written in place). Without `baseIndex` when it could not be kept.
 */
function withBaseIndex(dir: string, links: WorktreeLinks, baseSha: string, tree: TreeChoice | undefined): WorktreeLinks {
  const baseIndex = path.join(path.dirname(dir), '.index', path.basename(dir));
  try {
    fs.mkdirSync(path.dirname(baseIndex), { recursive: true });
    fs.rmSync(baseIndex, { force: true });
    if (tree?.kind === 'overlay') fs.linkSync(tree.lower.index, baseIndex);
    else copyIndex(path.join(links.adminDir, 'index'), baseIndex);
    return { ...links, baseIndex, baseSha };
  } catch {
    return { ...links, baseSha };
  }
}

/**
 * The files that tie a worktree to its repository, as git wrote them when the worktree was made: `<dir>/.git`
 * (`gitdir: <adminDir>`) and, in the admin dir `<commonDir>/worktrees/<name>/`, `commondir` and `gitdir`. A worker
 * can rewrite all three (the task dir and, sandboxed, the admin dir are writable to it) to point git at a config of its
 * own; {@link restoreWorktreeLinks} puts them back before the orchestrator runs git there again.
 */
export interface WorktreeLinks {
  dir: string;
  adminDir: string;
  commonDir: string;
  dotGit: string;
  commondirFile: string;
  gitdirFile: string;
  /**
   * Whether git made `<adminDir>/config.worktree` itself (`worktree add` copies the main worktree's when the repository
   * has extensions.worktreeConfig); one that appears later is the worker's and is removed.
   */
  worktreeConfig: boolean;
  /**
   * What git wrote into that `config.worktree`. The work step can write the admin dir, and git reads this file as config
   * (a filter named there would run in the orchestrator's own git: the seal's `add` keeps a trusted repository's
   * filters on), so restoreWorktreeLinks writes it back as it was. Absent (links kept by an earlier Verdict): the file
   * is removed like a worker's.
   */
  worktreeConfigText?: string | null;
  /**
   * A copy of the index git wrote when it checked the worktree out (`<worktrees>/<run>/.index/<key>`, out of every
   * step's sight): its stat data is trusted, so a seal starting from it hashes only the files that changed. Null when
   * it could not be kept (the seal then hashes everything).
   */
  baseIndex: string | null;
  /** The commit the worktree was checked out at (the one baseIndex describes). */
  baseSha: string | null;
  /** The checkout had a `.gitmodules`: submodule work must then be looked for at every seal. */
  hasSubmodules: boolean;
  /** A sparse tree: its cone folders (git/sparse-cone.ts); the seal commits changes only under them. Absent: the whole tree. */
  cone?: string[] | null;
  /** An overlay tree: its layers, mounted on `dir`. Absent: an ordinary folder. */
  overlay?: OverlayLayers | null;
  /**
   * An overlay tree's index is split (git's split index, git-update-index(1) "SPLIT INDEX"): `<adminDir>/index` and
   * every index the orchestrator builds from it hold only what differs from a shared base, `<adminDir>/<name>`, a hard
   * link to the lower layer's `file` (a copy when the two are on different file systems). Git does not verify the
   * shared base's checksum when it reads it, so no step may write it: the work step binds it read-only, every other
   * step sees the admin dir read-only, and {@link restoreWorktreeLinks} puts it back when its entry is not `ino`.
   * Absent: the index holds every entry itself.
   */
  sharedIndex?: SharedIndex | null;
}

/** A worktree's shared index base (see WorktreeLinks.sharedIndex). */
export interface SharedIndex {
  /** The base as the lower layer keeps it (absolute, out of every step's sight). */
  file: string;
  /** Its name in the admin dir: `sharedindex.<object id>`, as git looks it up (gitformat-index(5) "link" extension). */
  name: string;
  /** The inode of `<adminDir>/<name>` as made. */
  ino: number;
}

/**
 * Reads a fresh worktree's links (see WorktreeLinks).
 * @throws Error when `<dir>/.git` is not a `gitdir:` file inside `<commonDir>/worktrees/`, or when the admin dir's
 *   `config.worktree` has an include with a relative path (it would resolve inside the admin dir, which a worker can
 *   write: see worktreeConfigIncludeProblems), one line per include
 */
export function readWorktreeLinks(dir: string, commonDir: string): WorktreeLinks {
  const dotGit = fs.readFileSync(path.join(dir, '.git'), 'utf8');
  const adminDir = path.resolve(dir, dotGit.replace(/^gitdir:\s*/, '').trim());
  if (path.dirname(adminDir) !== path.join(commonDir, 'worktrees'))
    throw new Error(`${dir}/.git points at ${adminDir}, not at a worktree admin dir of ${commonDir}`);
  const worktreeConfigFile = path.join(adminDir, 'config.worktree');
  // A relative include in the copy git made resolves in the admin dir, which a worker can write (see worktree-config).
  const includes = worktreeConfigIncludeProblems(worktreeConfigFile);
  if (includes.length) throw new Error(includes.join('\n'));
  return {
    dir,
    adminDir,
    commonDir,
    dotGit,
    commondirFile: fs.readFileSync(path.join(adminDir, 'commondir'), 'utf8'),
    gitdirFile: fs.readFileSync(path.join(adminDir, 'gitdir'), 'utf8'),
    worktreeConfig: fs.existsSync(worktreeConfigFile),
    worktreeConfigText: fs.existsSync(worktreeConfigFile) ? fs.readFileSync(worktreeConfigFile, 'utf8') : null,
    baseIndex: null,
    baseSha: null,
    hasSubmodules: fs.existsSync(path.join(dir, '.gitmodules')),
  };
}

/**
 * Rewrites the three link files to what git wrote (a symlink or folder put in their place is removed first), removes
 * a `config.worktree` the worker planted, or writes back the one git made as git made it (read by git when the
 * repository has extensions.worktreeConfig: it could name a filter program that the orchestrator's own git would
 * run), and removes lock files (and a `locked`) the worker left in the admin dir. Called after every work step,
 * whatever its verdict, before any git of ours touches the worktree.
 */
export function restoreWorktreeLinks(links: WorktreeLinks): void {
  const worktreeConfig = typeof links.worktreeConfigText === 'string' && links.worktreeConfig ? links.worktreeConfigText : null;
  if (worktreeConfig === null) fs.rmSync(path.join(links.adminDir, 'config.worktree'), { recursive: true, force: true });
  // `locked` too (Verdict never locks a task's worktree): `git worktree list` opens every worktree's, and a FIFO there
  // would hold it forever.
  for (const lock of ['HEAD.lock', 'index.lock', 'config.worktree.lock', 'locked'])
    fs.rmSync(path.join(links.adminDir, lock), { recursive: true, force: true });
  // Git opens more of every worktree's admin dir whenever it looks at the repository's worktrees (`worktree add`,
  // `branch -d`, `worktree list`: HEAD, rebase-merge/head-name, BISECT_START…), and HEAD to take the admin dir for a
  // git dir at all: a FIFO there, or a symlink to one, held each such command — the next run's `worktree add` under the
  // repository lock, the seal — forever. Git writes only files and folders there; anything else is removed, and a HEAD
  // that is no regular file is written again, detached at the commit the worktree was made at.
  // A HEAD attached to a branch other than a task branch (`ref: refs/heads/main`) makes git refuse that branch to the
  // user (`checkout main`: "already used by worktree", `branch -D`): the worker's commits only ever go on a detached HEAD.
  removeNonRegular(links.adminDir, new Set(adminReadOnly(links)));
  if (links.baseSha && !headIsOurs(links)) writeAdminFile(links, 'HEAD', `${links.baseSha}\n`);
  for (const [file, text] of [
    [path.join(links.dir, '.git'), links.dotGit],
    [path.join(links.adminDir, 'commondir'), links.commondirFile],
    [path.join(links.adminDir, 'gitdir'), links.gitdirFile],
    ...(worktreeConfig === null ? [] : [[path.join(links.adminDir, 'config.worktree'), worktreeConfig] as const]),
  ] as const) {
    const st = fs.lstatSync(file, { throwIfNoEntry: false });
    if (st && (!st.isFile() || fs.readFileSync(file, 'utf8') !== text)) fs.rmSync(file, { recursive: true, force: true });
    if (!st || !fs.existsSync(file)) fs.writeFileSync(file, text);
  }
  if (links.sharedIndex) {
    const at = path.join(links.adminDir, links.sharedIndex.name);
    const st = fs.lstatSync(at, { throwIfNoEntry: false });
    // Gone with its lower layer (the run released its trees): git then fails on the index, naming the file.
    if ((!st || !st.isFile() || st.ino !== links.sharedIndex.ino) && fs.existsSync(links.sharedIndex.file))
      links.sharedIndex = placeSharedIndex(links.adminDir, links.sharedIndex.file);
  }
  // A sparse tree's patterns steer the orchestrator's own sparse git (sealGit): always the cone's, in a real folder.
  if (links.cone && !coneIsWhole(links.cone)) {
    const info = path.join(links.adminDir, 'info');
    const st = fs.lstatSync(info, { throwIfNoEntry: false });
    if (st && !st.isDirectory()) fs.rmSync(info, { recursive: true, force: true });
    fs.mkdirSync(info, { recursive: true });
    const file = path.join(info, 'sparse-checkout');
    const text = conePatterns(links.cone);
    const cur = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!cur || !cur.isFile() || fs.readFileSync(file, 'utf8') !== text) writeAdminFile(links, path.join('info', 'sparse-checkout'), text);
  }
}

/**
 * Whether the worktree's HEAD is one Verdict or the worker's own git may leave: a regular file holding a detached
 * object id, or attached to the task's own branch (`<worktrees>/<run>/<key>` → `verdict/<run>/<key>`, as deliver
 * attaches it).
 */
function headIsOurs(links: WorktreeLinks): boolean {
  const file = path.join(links.adminDir, 'HEAD');
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!st?.isFile() || st.size > 512) return false;
  const text = fs.readFileSync(file, 'utf8').trim();
  return OBJECT_ID.test(text) || text === `ref: refs/heads/${taskBranch(path.basename(path.dirname(links.dir)), path.basename(links.dir))}`;
}

/**
 * Removes every entry under `dir` that is neither a regular file nor a folder (FIFOs, sockets, devices, symlinks),
 * never following a symlink and not entering `skip` (absolute paths: the read-only binds, which no step can change).
 * Entries that vanish meanwhile are skipped.
 */
function removeNonRegular(dir: string, skip: ReadonlySet<string>): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const at = path.join(dir, e.name);
    if (skip.has(at)) continue;
    if (e.isDirectory()) removeNonRegular(at, skip);
    else if (!e.isFile()) fs.rmSync(at, { force: true });
  }
}

/**
 * Puts the shared index base `file` into `adminDir` under git's name for it: a hard link (no copy: the base is never
 * written in place, by git or by any step), or a copy when the two folders are on different file systems. Whatever
 * stood under that name is removed first.
 * @throws Error from the file system
 */
function placeSharedIndex(adminDir: string, file: string): SharedIndex {
  const name = path.basename(file);
  const at = path.join(adminDir, name);
  fs.rmSync(at, { recursive: true, force: true });
  try {
    fs.linkSync(file, at);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    fs.copyFileSync(file, at);
  }
  return { file, name, ino: fs.statSync(at).ino };
}

/**
 * Files in the admin dir that stay read-only to a step that may write the admin dir (the work step): the submodules'
 * git dirs (their config is what the seal's own git reads there), the shared index base (see
 * WorktreeLinks.sharedIndex), and `gitdir`, which every `git worktree add` / `remove` / `prune` / `list` in the
 * repository opens and reads for each registered worktree: a FIFO put in its place would hold the next task's
 * `worktree add` (and the repository lock with it) forever; and `commondir`, through which `git worktree add`, `branch
 * -D` and `worktree list` read every registered worktree's HEAD: emptied, each of them dies ("failed to read
 * …/commondir"), so every other task's worktree would be refused while the worker runs. Absolute; those that do not
 * exist are skipped by the sandbox.
 */
export function adminReadOnly(links: WorktreeLinks): string[] {
  return [
    path.join(links.adminDir, 'modules'),
    path.join(links.adminDir, 'gitdir'),
    path.join(links.adminDir, 'commondir'),
    ...(links.sharedIndex ? [path.join(links.adminDir, links.sharedIndex.name)] : []),
  ];
}

/**
 * What the work step needs to use git inside its worktree and nothing more: the worktree's admin dir (its HEAD,
 * index, logs) writable, and a per-task object directory where new objects go, with the repository's objects as
 * read-only alternates (git(1) ENVIRONMENT: GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES). The objects
 * folder `<worktrees>/<run>/.objects/<key>` is created here beside the worktrees (a key never starts with a dot, so it
 * cannot collide with one; verdict clean removes it with its worktree).
 */
export function worktreeStepAccess(links: WorktreeLinks): { writable: string[]; env: Record<string, string> } {
  const objects = path.join(path.dirname(links.dir), '.objects', path.basename(links.dir));
  fs.mkdirSync(path.join(objects, 'info'), { recursive: true });
  fs.mkdirSync(path.join(objects, 'pack'), { recursive: true });
  return {
    writable: [links.adminDir, objects],
    env: { GIT_OBJECT_DIRECTORY: objects, GIT_ALTERNATE_OBJECT_DIRECTORIES: path.join(links.commonDir, 'objects') },
  };
}

/**
 * What a step that only reads the worktree (the check, a reviewer, a critic's command) needs to use git there: the
 * admin dir, read-only, and the repository's own objects only — never the worker's object directory
 * ({@link worktreeStepAccess}). Git does not verify an object against its id when it reads one, and the worker's
 * directory comes first: a loose object it planted under the id of a base blob made a check's `git diff --exit-code
 * HEAD -- shared.txt` find no change in a file it had changed. Nothing a read-only step needs is there: HEAD, the
 * index and the sealed commit name only the repository's objects (the seal writes there).
 */
export function worktreeReadAccess(links: WorktreeLinks): { readOnly: string[]; env: Record<string, string> } {
  return { readOnly: [links.adminDir], env: {} };
}

/** What {@link sealWorktree} recorded. */
export interface Seal {
  /** The commit holding the tree exactly as the worker left it (= `parent` when nothing changed). */
  sha: string;
  /** The task branch's head the seal was built on. */
  parent: string;
  /** False when the tree equals the parent's: the worker changed nothing (that git tracks). */
  changed: boolean;
  /**
   * Submodules whose checkout differs from what the task branch can keep: changed or new files inside them, or a new
   * commit that exists only in this worktree's copy of the submodule. Their work would be lost, so the attempt FAILs.
   */
  submodules: string[];
  /** Folders the worker made into git repositories of their own: the branch would hold only a dangling gitlink. */
  nested: string[];
  /** Expected files (as asked) that are not in the sealed commit: ignored by git, or not there at all. */
  unsealed: string[];
  /**
   * Changed files whose bytes git converted when it added them (their attributes: `ident`, `text`/`eol`, a clean
   * filter), written again as a checkout of the sealed commit writes them before the check (git/sealed-bytes.ts).
   * Absent when there were none.
   */
  rewritten?: string[];
  /**
   * FIFOs, sockets and device files that were in the tree (git records none of them, and a FIFO named `.gitignore`
   * or `.gitattributes` held git's add forever), removed before git ran, as `<kind> <path>` (git/special-files.ts).
   * Absent when there were none.
   */
  special?: string[];
  /**
   * Files the start commit (the seal's parent) has that git would have committed converted although the worker left
   * their bytes as committed (a `text` attribute over a blob committed with CRLF): kept as the parent holds them.
   * Absent when there were none.
   */
  keptAsCommitted?: string[];
  /**
   * Symlinks the worker added or changed whose target is outside the tree (absolute, or climbing out with `..`), as
   * `<path> -> <target>`: the check would read bytes the commit does not hold. Absent when there were none.
   */
  escapingLinks?: string[];
}

/** How many links one resolution follows before it is taken to lead out (the kernel's own limit is 40). */
const LINK_HOPS_MAX = 40;

/**
 * Whether a symlink at `rel` (relative to a tree, `/`-separated fs/byte-names.ts strings) with target `target` leads
 * outside that tree when the kernel resolves it: the target is walked component by component from the link's folder,
 * and each component that is itself a link in the tree (`readLink`: its target, null for anything else or nothing) is
 * followed as the kernel follows it. An absolute target, a `..` above the top, or more than LINK_HOPS_MAX links (a
 * loop) leads out. Text alone is not enough: with `e -> .`, the target `e/e/../../x` reads as `x` but climbs out.
 * Without `readLink` no component is taken for a link (the target judged as text). Never throws (unless readLink does).
 */
export function linkLeavesTree(rel: string, target: string, readLink: (rel: string) => string | null = () => null): boolean {
  const at = rel
    .split('/')
    .slice(0, -1)
    .filter((c) => c !== '' && c !== '.');
  let pending = target.split('/');
  if (target.startsWith('/')) return true;
  for (let hops = 0; pending.length;) {
    const c = pending.shift() as string;
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (!at.length) return true;
      at.pop();
      continue;
    }
    const next = readLink([...at, c].join('/'));
    if (next === null) {
      at.push(c);
      continue;
    }
    if (++hops > LINK_HOPS_MAX || next.startsWith('/')) return true;
    pending = [...next.split('/'), ...pending];
  }
  return false;
}

/**
 * A readLink for {@link linkLeavesTree} over the tree at `root` on disk: a relative path's link target (lstat, never
 * followed), null for anything that is not a link or is not there.
 */
export function linksOnDisk(root: string): (rel: string) => string | null {
  return (rel) => {
    const abs = fsPath(root, rel);
    return fs.lstatSync(abs, { throwIfNoEntry: false })?.isSymbolicLink() ? readLinkName(abs) : null;
  };
}

/** The FAIL reason for symlinks found by {@link linkLeavesTree}, each `<path> -> <target>`. Pure. */
export function escapingLinksReason(links: readonly string[]): string {
  const shown = `${links.slice(0, 5).join(', ')}${links.length > 5 ? `, … (${links.length})` : ''}`;
  return `the worker left symlink(s) pointing outside the task's tree: ${shown}; the check would read bytes the commit does not hold — write the file itself or a link inside the tree, and keep what is not the work (a virtualenv) out of the commit with .gitignore`;
}

/**
 * Seals a worktree once nothing of the worker is alive: restores its git links, then builds a commit of everything
 * in it (`add -A`, so .gitignore is respected) on top of the task branch, with a private index and explicit
 * GIT_DIR / GIT_COMMON_DIR / GIT_WORK_TREE (whatever the worker did to HEAD, the index or `.git`), authored by the
 * orchestrator with `identityArgs`. The branch does not move here: see advanceBranch, after the check passed.
 * `opts.drivers`: the seal phase's driver names ({@link worktreeDrivers}, read after the worker ended); absent, the
 * seal reads its own.
 * @throws Error with git's message
 */
export async function sealWorktree(
  links: WorktreeLinks,
  branch: string,
  indexFile: string,
  message: string,
  identityArgs: string[],
  opts: { timeoutMs?: number; expectFiles?: string[]; drivers?: DriverNames } = {},
): Promise<Seal> {
  restoreWorktreeLinks(links);
  fs.rmSync(indexFile, { force: true });
  // Before any git reads the tree: a FIFO where git opens a file (`.gitattributes`, a folder's `.gitignore`) would hold
  // it until the time limit. An overlay's new entries are all in its upper layer.
  const special = (await removeSpecialFiles(links.dir, { upper: links.overlay?.upper, timeoutMs: opts.timeoutMs })).map((f) => listSpecialFiles([f]));
  const git = sealGit(links, indexFile, opts.timeoutMs, opts.drivers);
  const [parent, parentTree] = (await git.raw(['rev-parse', `refs/heads/${branch}^{commit}`, `refs/heads/${branch}^{tree}`]).catch(() => ''))
    .trim()
    .split('\n');
  if (!parent || !parentTree || !OBJECT_ID.test(parent) || !OBJECT_ID.test(parentTree))
    throw new Error(`the task branch ${branch} no longer exists in ${links.commonDir}`);
  try {
    // From the checkout's own index (trusted stat data: only changed files are hashed again), else from the tree.
    if (links.baseIndex && links.baseSha === parent && fs.existsSync(links.baseIndex)) copyIndex(links.baseIndex, indexFile);
    else await git.raw(['read-tree', parent]);
    // ctime cannot be set from user space: with it (and the full stat check) a changed file is always hashed again.
    // A sparse tree: only changes under its cone folders; everything else stays as the branch has it.
    // `add` asks git inside each submodule whether its checkout changed: not inside one the worker made its own
    // (git/submodule-trust.ts), whose gitlink then stays as the branch has it and is named (changedSubmodules).
    const untrusted = links.hasSubmodules ? await untrustedGitlinks(links.dir, links.adminDir, indexFile, links.commonDir) : [];
    // --ignore-errors: every path git refuses is named, not only the first (git still exits non-zero).
    await git.raw(['-c', 'core.trustctime=true', '-c', 'core.checkStat=default', 'add', '-A', '--ignore-errors', ...sealPathspecs(links, untrusted)]);
  } catch (e) {
    const refused = unsealable((e as Error).message, links.dir);
    if (refused) throw new UnsealableTreeError(refused);
    throw new Error(`sealing ${links.dir} failed: ${explainGitFailure((e as Error).message, { root: links.dir })}`);
  }
  // Everything the index holds that the branch does not, gitlinks included whatever .gitmodules or the config say
  // (`submodule.<name>.ignore`, `diff.ignoreSubmodules`): no output means the index holds exactly the parent's tree,
  // so no tree needs writing (and the worker changed nothing git tracks).
  // Read as bytes: a path that is not valid UTF-8 is handed back to git (and to the file system) exactly.
  const all = parseRawZ(await git.rawBytes(['diff-index', '--cached', '-z', '--ignore-submodules=none', parent]));
  // A file of the start commit whose bytes the worker left as committed stays as committed, whatever git's
  // conversions would make of it now.
  const kept = unchangedFromParent(links.dir, all);
  await keepParentEntries(git, kept);
  const staged = kept.length ? all.filter((c) => !kept.includes(c)) : all;
  const { changed: submodules, added: nested } = await changedSubmodules(git, staged, links, indexFile);
  const tree = staged.length ? (await git.raw(['write-tree'])).trim() : parentTree;
  const unsealed = await notInTree(git, tree, opts.expectFiles ?? []);
  // A link the worker added or changed that leads out of the tree: the check would follow it to bytes no commit holds.
  const escapingLinks: string[] = [];
  const onDisk = linksOnDisk(links.dir);
  for (const c of staged) {
    if (c.dstMode !== '120000') continue;
    const rel = nameFromBytes(c.bytes);
    const target = onDisk(rel);
    if (target !== null && linkLeavesTree(rel, target, onDisk)) escapingLinks.push(`${showPath(c.bytes)} -> ${showName(target)}`);
  }
  const extra = {
    ...(special.length ? { special } : {}),
    ...(kept.length ? { keptAsCommitted: kept.map((c) => showPath(c.bytes)) } : {}),
    ...(escapingLinks.length ? { escapingLinks } : {}),
  };
  if (tree === parentTree) return { sha: parent, parent, changed: false, submodules, nested, unsealed, ...extra };
  const sha = (await git.raw([...identityArgs, 'commit-tree', tree, '-p', parent, '-m', message])).trim();
  // Never hand an empty or garbled id on (update-ref would fail with git's bare "fatal: : not a valid SHA1").
  if (!OBJECT_ID.test(sha) || !OBJECT_ID.test(tree))
    throw new Error(`sealing ${links.dir} failed: git gave no commit id (tree "${tree.slice(0, 80)}", commit "${sha.slice(0, 80)}")`);
  // The check reads the files as the commit holds them: what git converted on the way in is written again.
  const rewritten = await writeSealedBytes(git, links.dir, staged);
  return { sha, parent, changed: true, submodules, nested, unsealed, ...(rewritten.length ? { rewritten } : {}), ...extra };
}

/**
 * Thrown by {@link sealWorktree} when the tree holds what git refuses to record or cannot read: a path git holds
 * invalid (a folder named like `.git` another way, `.GIT` or `git~1`: git-config(1) core.protectNTFS, on by default),
 * or a repository the worker made in a folder whose files git cannot read (a garbled config). The worker's to fix:
 * the attempt FAILs with this message and is retried, instead of ending ERROR.
 */
export class UnsealableTreeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsealableTreeError';
  }
}

/**
 * Why `git add`'s failure `message` is the tree's doing (see UnsealableTreeError), or null: every path git called
 * invalid, or git's message when it names a file inside a folder of the tree `dir` (never the worktree's own `.git`
 * file, which Verdict writes), with `dir` left out.
 */
function unsealable(message: string, dir: string): string | null {
  const invalid = [...new Set([...message.matchAll(/^error: invalid path '(.*)'$/gm)].map((m) => m[1] as string))];
  if (invalid.length)
    return `git cannot record ${invalid.slice(0, 10).join(', ')}${invalid.length > 10 ? `, … (${invalid.length})` : ''}: git refuses a path that names a .git folder another way (.GIT, git~1, ".git "); rename or remove them`;
  const inside = `${dir}/`;
  const at = message.indexOf(inside);
  if (at < 0 || !/^[^/\s']+\/./.test(message.slice(at + inside.length))) return null;
  return `git cannot read what the worker left in the task dir: ${message.split(inside).join('').trim().replace(/\n/g, '; ')}; remove it or make it a plain folder`;
}

/**
 * `-- <cone pathspecs>` for a sparse tree, else nothing (the whole tree); the paths `leaveOut` (relative, taken
 * literally) excluded from either.
 */
export function sealPathspecs(links: WorktreeLinks, leaveOut: readonly string[] = []): string[] {
  const specs = links.cone ? conePathspecs(links.cone) : [];
  const out = leaveOut.map((p) => `:(exclude,literal)${p}`);
  if (!specs.length && !out.length) return [];
  return ['--', ...(specs.length ? specs : ['.']), ...out];
}

/**
 * Writes the files of `sha` into the fresh worktree `links.dir` and its own index (HEAD is already `sha`, detached),
 * as `tree` says: all of them (`read-tree -u --reset`, with their stat data); a sparse checkout (git's cone mode, the
 * pattern file in the worktree's own git dir, the settings given on the command line so no config file changes: a
 * sparse index, whose entries outside the cone are one skip-worktree entry per folder), with every cone folder made a
 * real folder; or an overlay mount of the shared checkout with a copy of its (split) index.
 * @throws Error with git's or mount's message, or naming a cone folder that the commit holds as a file or symlink
 */
async function checkOut(links: WorktreeLinks, sha: string, tree: TreeChoice): Promise<void> {
  const index = path.join(links.adminDir, 'index');
  if (tree.kind === 'overlay') {
    const root = path.join(path.dirname(links.dir), '.overlay', path.basename(links.dir));
    fs.rmSync(root, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(root), { recursive: true });
    await markTopDir(path.dirname(root));
    makeFreshDir(root);
    const layers: OverlayLayers = { lower: tree.lower.dir, upper: path.join(root, 'upper'), work: path.join(root, 'work') };
    fs.mkdirSync(layers.upper);
    fs.mkdirSync(layers.work);
    // The mount hides the folder's own `.git` file: the upper layer carries it.
    fs.copyFileSync(path.join(links.dir, '.git'), path.join(layers.upper, '.git'));
    await mountOverlay(layers, links.dir);
    links.overlay = layers;
    // The lower layer's index: split (a few KB on its shared base, linked in beside it), or whole where git made none.
    copyIndex(tree.lower.index, index);
    if (tree.lower.sharedIndex) links.sharedIndex = placeSharedIndex(links.adminDir, tree.lower.sharedIndex);
    return;
  }
  if (tree.kind === 'sparse' && !coneIsWhole(tree.cone)) {
    fs.mkdirSync(path.join(links.adminDir, 'info'), { recursive: true });
    fs.writeFileSync(path.join(links.adminDir, 'info', 'sparse-checkout'), conePatterns(tree.cone));
    // sealGit's sparse settings: a sparse index (the cone's entries, one entry per folder outside it).
    links.cone = tree.cone;
    await checkoutGit(links, index).raw(['read-tree', '-u', '--reset', sha]);
    coneFolders(links);
    return;
  }
  await checkoutGit(links, index).raw(['read-tree', '-u', '--reset', sha]);
}

/**
 * sealGit for commands that run nothing a driver names: a fresh tree's `read-tree -u --reset <commit>`, `update-ref`,
 * `read-tree <commit>` (the index only). The same git dirs, index and index settings, but the repository's driver
 * names are not read (git/safe-git.ts `noDrivers`). These commands merge nothing, diff nothing, start no pager and
 * update no submodule, so no override by driver name could apply; the filters a checkout runs (smudge, process) are
 * the repository's own, which a trusted runner keeps either way. Saves one `git config` process each. Their stdout
 * is not read (`quiet`).
 */
function checkoutGit(links: WorktreeLinks, indexFile: string): RawGit {
  return gitRunner(links.dir, {
    env: { ...gitDirs(links), GIT_INDEX_FILE: indexFile },
    config: indexConfig(links),
    noDrivers: true,
    quiet: true,
  });
}

/**
 * The absolute cone folders of a sparse worktree (empty for a full one), each made a real folder when missing. Called
 * before every step that binds them writable: a cone folder must never be a symlink (bubblewrap would bind its target).
 * @throws Error naming the folder when a part of its path is a symlink or a file
 */
export function coneFolders(links: WorktreeLinks): string[] {
  if (!links.cone || coneIsWhole(links.cone)) return [];
  return links.cone.map((rel) => {
    let at = links.dir;
    for (const part of rel.split('/')) {
      at = path.join(at, part);
      const st = fs.lstatSync(at, { throwIfNoEntry: false });
      if (!st) fs.mkdirSync(at);
      else if (!st.isDirectory())
        throw new Error(`sparse folder ${rel}: ${path.relative(links.dir, at)} is ${st.isSymbolicLink() ? 'a symlink' : 'a file'} in the tree, not a folder`);
    }
    return at;
  });
}

/** Unmounts `dir` when it is an overlay mount of ours; never throws (an undo path). */
async function unmountQuietly(dir: string): Promise<void> {
  if ((await unmountOverlay(dir).catch(() => 'failed')) === 'failed') return;
  fs.rmSync(path.join(path.dirname(dir), '.overlay', path.basename(dir)), { recursive: true, force: true });
}

/** The `files` (paths relative to the worktree) that the tree `tree` does not hold. */
async function notInTree(git: RawGit, tree: string, files: string[]): Promise<string[]> {
  if (!files.length) return [];
  const held = new Set((await git.raw(['ls-tree', '-r', '--name-only', '-z', tree, '--', ...files]).catch(() => '')).split('\0').filter(Boolean));
  return files.filter((f) => !held.has(path.normalize(f)));
}

/**
 * Points the worktree's HEAD (detached) and index at `sha` before the check, so a check that asks git (`git diff
 * HEAD`, `git status`) compares the worker's files with the task branch, not with commits or index tricks of the
 * worker's own (assume-unchanged, a HEAD it moved).
 */
export async function pointHeadAt(links: WorktreeLinks, sha: string): Promise<void> {
  restoreWorktreeLinks(links);
  if (links.baseIndex && links.baseSha === sha && fs.existsSync(links.baseIndex)) {
    // The worktree's own files, written the way git writes them (gitrepository-layout(5): a detached HEAD holds the
    // object name): no git process needed for the common case.
    writeAdminFile(links, 'HEAD', `${sha}\n`);
    copyAdminFile(links, links.baseIndex, 'index');
    return;
  }
  // update-ref and read-tree without -u (the index only): nothing a driver names runs.
  const git = checkoutGit(links, path.join(links.adminDir, 'index'));
  await git.raw(['update-ref', '--no-deref', 'HEAD', sha]);
  await git.raw(['read-tree', sha]);
}

/** Replaces `<adminDir>/<name>` atomically (write beside, rename over). */
function writeAdminFile(links: WorktreeLinks, name: string, text: string): void {
  const tmp = adminTemp(links, name);
  fs.writeFileSync(tmp, text, { flag: 'wx' });
  fs.renameSync(tmp, path.join(links.adminDir, name));
}

/** Copies the index `from` over `<adminDir>/<name>` atomically (see copyIndex). */
function copyAdminFile(links: WorktreeLinks, from: string, name: string): void {
  const tmp = adminTemp(links, name);
  fs.closeSync(fs.openSync(tmp, 'wx'));
  copyIndex(from, tmp);
  fs.renameSync(tmp, path.join(links.adminDir, name));
}

/**
 * A fresh temporary name in the admin dir (the worker could write there): random, and created with O_EXCL (`wx`), so a
 * symlink the worker planted under a name it guessed is never followed — the write fails instead.
 */
function adminTemp(links: WorktreeLinks, name: string): string {
  return path.join(links.adminDir, path.dirname(name), `.${path.basename(name)}.verdict-${crypto.randomBytes(8).toString('hex')}`);
}

/**
 * Copies an index file keeping its timestamp (rounded down to the second), which git's racy-entry check needs: git
 * compares stat times in whole seconds (unless built with USE_NSEC), so a file rewritten with the same size in the
 * second it was checked out looks unchanged by stat. Git then compares the content of every entry whose mtime is not
 * older than the index file itself (Documentation/technical/racy-git.txt); a copy stamped "now" would hide such an
 * entry from the seal and from a check's `git diff`. Rounding down only makes more entries racy (content-checked).
 */
export function copyIndex(from: string, to: string): void {
  const { atime, mtimeMs } = fs.statSync(from);
  fs.copyFileSync(from, to);
  fs.utimesSync(to, atime, Math.floor(mtimeMs / 1000));
}

/**
 * Points the task branch at a sealed commit (compare-and-swap against `seal.parent`: git refuses if the branch moved
 * meanwhile), then attaches the worktree's HEAD to the branch with an index that matches it (`sealIndex`, the index
 * the seal was built with, when it is still there), so the worktree shows the passed work as committed.
 * @throws Error with git's message when the branch moved or cannot be updated
 */
export async function advanceBranch(links: WorktreeLinks, branch: string, seal: Seal, sealIndex?: string): Promise<void> {
  restoreWorktreeLinks(links);
  // update-ref and read-tree without -u (the index only): nothing a driver names runs, so no driver names are read
  // (deliver comes after the check, an untrusted step: a read from the seal would not hold here).
  const git = checkoutGit(links, path.join(links.adminDir, 'index'));
  if (seal.changed) await git.raw(['update-ref', '-m', 'verdict: sealed and checked', `refs/heads/${branch}`, seal.sha, seal.parent]);
  // HEAD becomes the branch (a symref, as git writes it); the index is the seal's own, which holds exactly its tree.
  writeAdminFile(links, 'HEAD', `ref: refs/heads/${branch}\n`);
  if (sealIndex && fs.existsSync(sealIndex)) copyAdminFile(links, sealIndex, 'index');
  else await git.raw(['read-tree', `refs/heads/${branch}`]);
}

/**
 * Submodules (paths) with work the task branch cannot hold: `git status --porcelain=v2` marks a submodule entry
 * `S<c><m><u>` (git-status(1) "Porcelain Format Version 2": c = its commit changed, m = tracked changes, u = untracked
 * files). Any of the three means work inside the submodule that is not, or cannot be, on the task branch. `staged` is
 * `git diff-index --cached -z --ignore-submodules=none <parent>` of the seal's index, parsed.
 */
async function changedSubmodules(
  git: RawGit,
  staged: readonly RawChange[],
  links: WorktreeLinks,
  indexFile: string,
): Promise<{ changed: string[]; added: string[] }> {
  // Only a checkout that had submodules can have work inside one (a new gitlink is found by diff-index below).
  // Git answers by running git inside each submodule with its own config: only in those whose git dir is Verdict's
  // (git/submodule-trust.ts); any other is the worker's doing, so its work cannot be on the branch either.
  const untrusted = links.hasSubmodules ? await untrustedGitlinks(links.dir, links.adminDir, indexFile, links.commonDir) : [];
  const statusArgs = [
    'status',
    '--porcelain=v2',
    '--ignore-submodules=none',
    '--untracked-files=no',
    '--',
    '.',
    ...untrusted.map((p) => `:(exclude,literal)${p}`),
  ];
  const out = links.hasSubmodules ? await git.raw(statusArgs).catch(() => '') : '';
  const paths: string[] = [];
  for (const line of out.split('\n')) {
    const fields = line.split(' ');
    if ((fields[0] !== '1' && fields[0] !== '2') || !fields[2]?.startsWith('S')) continue;
    const sub = fields[2];
    if (sub.slice(1).replace(/\./g, '') !== '') paths.push(fields[fields[0] === '1' ? 8 : 9]?.split('\t')[0] ?? '?');
  }
  // A gitlink the seal index moved (a commit made inside the submodule) shows as a staged change against the branch;
  // a new gitlink is a folder the worker made into a repository of its own.
  const added: string[] = [];
  for (const c of staged) {
    if (c.srcMode === '160000' && c.dstMode === '160000' && c.status === 'M' && !paths.includes(c.path)) paths.push(c.path);
    if (c.srcMode === '000000' && c.dstMode === '160000' && c.status === 'A') added.push(c.path);
  }
  for (const p of untrusted) if (!added.includes(p) && !paths.includes(p)) paths.push(p);
  return { changed: paths.sort(), added: added.sort() };
}

/**
 * Git on a worktree that trusts none of its link files, with the index `indexFile`. How its indexes are kept:
 * - an overlay tree (links.sharedIndex): split, on the shared base, and never a new base
 *   (`splitIndex.maxPercentChange=100`, git-config(1)): a base git wrote into the admin dir could be rewritten there
 *   by the next worker, and git reads a base without checking it;
 * - a sparse tree: git's sparse index (`index.sparse`, with the cone mode the patterns in `<adminDir>/info` say,
 *   restored by restoreWorktreeLinks before any git of ours): out-of-cone folders are one entry each;
 * - otherwise never split (`core.splitIndex=false`, whatever the repository's config says), for the same reason.
 */
export function sealGit(links: WorktreeLinks, indexFile: string, timeoutMs?: number, drivers?: DriverNames): ByteGit {
  return gitRunner(links.dir, {
    env: { ...gitDirs(links), GIT_INDEX_FILE: indexFile },
    timeoutMs,
    config: indexConfig(links),
    ...(drivers ? { drivers } : {}),
  });
}

/** sealGit's git dirs: the worktree's admin dir, the repository's common dir, the worktree. */
function gitDirs(links: WorktreeLinks): { GIT_DIR: string; GIT_COMMON_DIR: string; GIT_WORK_TREE: string } {
  return { GIT_DIR: links.adminDir, GIT_COMMON_DIR: links.commonDir, GIT_WORK_TREE: links.dir };
}

/**
 * The driver names sealGit's git reads for the worktree of `links` now, read once for every sealGit of one phase
 * (pass them as its `drivers`; git/safe-git.ts DriverNames). The worktree's links are restored first, so the read
 * sees the config files git made, none of a worker's. Call it after the last untrusted step that could have written
 * one (the worker, a check, setup) ended, and use it only until the next one starts: once per seal, once per record of
 * a prepared tree, once per reset to a sealed tree.
 * @throws Error as restoreWorktreeLinks (a file system error)
 */
export async function worktreeDrivers(links: WorktreeLinks): Promise<DriverNames> {
  restoreWorktreeLinks(links);
  return readDriverNames(links.dir, gitDirs(links));
}

/** The `-c` settings of sealGit's index (see there). */
function indexConfig(links: WorktreeLinks): string[] {
  if (links.sharedIndex) return ['splitIndex.maxPercentChange=100'];
  const sparse = links.cone && !coneIsWhole(links.cone) ? ['core.sparseCheckout=true', 'core.sparseCheckoutCone=true', 'index.sparse=true'] : [];
  return ['core.splitIndex=false', ...sparse];
}

/** Removes `dir` when it is an empty folder; anything else is left as it is. */
function removeEmptyDir(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch {
    // not empty, or gone: not ours to remove
  }
}

/**
 * Copies `include` files (paths relative to the repository root, usually gitignored like .env) into the worktree.
 * @throws Error naming the first file that is missing in the repository
 */
export function copyIncludes(repoRoot: string, worktree: string, include: string[]): void {
  const root = fs.realpathSync(repoRoot);
  for (const rel of include) {
    if (path.isAbsolute(rel) || path.normalize(rel).split(path.sep).includes('..'))
      throw new Error(`include ${rel}: must be a path inside the repository (no absolute path, no ..)`);
    const from = path.join(repoRoot, rel);
    if (!fs.existsSync(from)) throw new Error(`include file ${rel} does not exist in ${repoRoot}`);
    const real = fs.realpathSync(from);
    if (real !== root && !real.startsWith(root + path.sep)) throw new Error(`include ${rel}: resolves to ${real}, outside the repository`);
    // The destination is the worktree's checkout, which base_ref decides: a symlinked folder there would carry the copy
    // out of the worktree (onto ~/.bashrc). Every component must be a real folder or not exist yet.
    let at = worktree;
    for (const part of path
      .dirname(path.normalize(rel))
      .split(path.sep)
      .filter((p) => p && p !== '.')) {
      at = path.join(at, part);
      const st = fs.lstatSync(at, { throwIfNoEntry: false });
      if (st && !st.isDirectory())
        throw new Error(
          `include ${rel}: ${path.relative(worktree, at)} in the worktree is ${st.isSymbolicLink() ? 'a symlink' : 'not a folder'}; the copy would not stay inside the worktree`,
        );
    }
    const dest = path.join(worktree, rel);
    if (fs.lstatSync(dest, { throwIfNoEntry: false })?.isSymbolicLink()) fs.rmSync(dest);
    fs.cpSync(from, dest, { recursive: true });
  }
}
