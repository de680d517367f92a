import { simpleGit, type SimpleGit } from 'simple-git';

/** Options of {@link gitFor} and {@link safeGitConfigArgs}. */
export interface SafeGitOptions {
  /**
   * The repository belongs to a trusted workspace (or the user ran the CLI on it). Clean/smudge filters (git-lfs)
   * stay on only then, because file contents depend on them; every other repository-supplied program is off always.
   */
  trusted?: boolean;
  /**
   * gitFor only: the whole environment of every git it runs (nothing is inherited then; include PATH and HOME).
   * Its GIT_* keys pass simple-git's environment guard only if listed in {@link GIT_ENV_ALLOWED}.
   */
  env?: Record<string, string>;
}

/** The git environment variables Verdict sets itself: to seal a worktree without trusting its `.git` file. */
export const GIT_ENV_ALLOWED = ['GIT_DIR', 'GIT_COMMON_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE'] as const;

/**
 * `-c key=value` argv pairs that switch off the programs a repository's own config may name and that Verdict never
 * needs: core.fsmonitor, every hook (core.hooksPath=/dev/null), diff.external. Git's `-c` outranks every config
 * file (git-config(1) "FILES": command-line options are read last), so a hostile `.git/config` cannot undo them.
 * Pass them before the subcommand: `git [...safeGitConfigArgs()] <subcommand> …`.
 */
export function safeGitConfigArgs(opts: SafeGitOptions = {}): string[] {
  void opts;
  return ['-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', '-c', 'diff.external='];
}

/**
 * The one way Verdict opens a git repository: simple-git in `baseDir` with {@link safeGitConfigArgs}. simple-git
 * refuses some of these `-c` options unless its matching `unsafe` allowances are set; they are set here, deliberately.
 */
export function gitFor(baseDir: string, opts: SafeGitOptions = {}): SimpleGit {
  const pairs = safeGitConfigArgs(opts).filter((_, i) => i % 2 === 1);
  const git = simpleGit({ baseDir, config: pairs, unsafe: { allowUnsafeHooksPath: true, allowUnsafeDiffExternal: true, allowUnsafeFsMonitor: true }, allowEnvironment: opts.env ? [...GIT_ENV_ALLOWED] : [] });
  return opts.env ? git.env(opts.env) : git;
}
