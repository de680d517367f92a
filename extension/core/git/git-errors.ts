import path from 'node:path';

/** What a failed git command was doing, so its error can name the fix. All paths absolute. */
export interface GitFailureContext {
  /** Top-level folder of the repository's main working tree. */
  root: string;
  /** The worktree folder being made or used, if any. */
  worktree?: string;
  /** The branch being created or used, if any. */
  branch?: string;
}

/**
 * Turns git's error text into one precise sentence with the command that fixes it, for the failures a crashed or
 * earlier run leaves behind: a leftover `*.lock` file (index.lock, a ref lock), a branch that already exists, a
 * folder that already exists, and a path registered as a worktree whose folder is gone. Anything else is returned
 * as git said it, trimmed. Never throws.
 */
export function explainGitFailure(gitMessage: string, ctx: GitFailureContext): string {
  const message = gitMessage.trim();
  const lock = /Unable to create '([^']+\.lock)': File exists/.exec(message);
  if (lock) {
    const file = path.resolve(ctx.root, lock[1] as string);
    return `${file} exists: another git process is running, or one crashed; if none is running: rm ${file}`;
  }
  const branch = /a branch named '([^']+)' already exists/.exec(message);
  if (branch) {
    const name = branch[1] as string;
    return `branch ${name} already exists (left by an earlier run?): if its work is not needed: git -C ${ctx.root} branch -D ${name} (or verdict clean --run <run_id> --branches)`;
  }
  if (/is a missing but (locked|already registered) worktree/.test(message) || /already registered worktree/.test(message)) {
    return `${ctx.worktree ?? 'the path'} is registered as a worktree of ${ctx.root} but its folder is missing: git -C ${ctx.root} worktree prune`;
  }
  const exists = /'([^']+)' already exists/.exec(message);
  if (exists) {
    const dir = exists[1] as string;
    return `${dir} already exists (left by an earlier run?): if nothing in it is needed: rm -rf ${dir} && git -C ${ctx.root} worktree prune`;
  }
  return message;
}
