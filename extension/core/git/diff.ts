/**
 * The diff between two commits of a task's worktree, as a reviewer reads it: `git diff --stat --patch`, read by the
 * orchestrator's own git (explicit GIT_DIR, the repository's own, and no work tree: nothing the worker left in `.git`
 * is followed, none of its `.gitattributes` is read; no external diff, no textconv: safe-git.ts) and cut at a byte limit (a worker's 2 GB text file must not fill memory).
 */
import { spawn } from 'node:child_process';
import { timerDelay } from '../fs/timer';
import { NO_DIFF_PROGRAMS, safeGitConfigArgs } from './safe-git';
import type { WorktreeLinks } from './worktree';

/** What {@link commitDiff} read. */
export interface CommitDiff {
  /** The stat and the patch, at most `maxBytes` bytes of them (UTF-8, cut on a line). */
  text: string;
  /** True when git printed more than `maxBytes` and the rest was not read. */
  truncated: boolean;
}

/**
 * `git diff --stat --patch from to` in the worktree's repository, read up to `maxBytes` (git is stopped there).
 * @param timeoutMs git is killed after this long, ms
 * @param leaveOut paths relative to the top of the tree (files or folders) left out of the diff, taken literally
 * @throws Error with git's message when it fails (unknown commit), or when it ran out of time
 */
export function commitDiff(
  links: Pick<WorktreeLinks, 'dir' | 'adminDir' | 'commonDir'>,
  from: string,
  to: string,
  maxBytes: number,
  timeoutMs: number,
  leaveOut: readonly string[] = [],
): Promise<CommitDiff> {
  // With no work tree (`core.bare`, the repository's own git dir): git then reads no `.gitattributes` of the tree, so
  // a worker's `* -diff` cannot turn its changes into "Binary files differ" for the reviewer (git 2.39 attr.c reads
  // in-tree attributes only with a work tree). Binary files are still found by their content.
  const args = [
    ...safeGitConfigArgs({ repo: links.dir, trusted: false }),
    '-c',
    'core.bare=true',
    'diff',
    ...NO_DIFF_PROGRAMS,
    '--no-color',
    '--stat',
    '--patch',
    from,
    to,
    '--',
    ...leaveOut.map((p) => `:(top,exclude,literal)${p}`),
  ];
  // Only what git needs: no ambient GIT_* variable reaches it.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LC_ALL: 'C', GIT_DIR: links.commonDir, GIT_CONFIG_NOSYSTEM: '1' };
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd: links.commonDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let bytes = 0;
    let truncated = false;
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timerDelay(timeoutMs));
    child.stdout.on('data', (chunk: Buffer) => {
      if (truncated) return;
      chunks.push(chunk);
      bytes += chunk.length;
      if (bytes > maxBytes) {
        truncated = true;
        child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-4000)));
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (!truncated && (code !== 0 || signal)) {
        reject(
          new Error(
            signal
              ? `git diff ${from.slice(0, 10)} ${to.slice(0, 10)} was stopped after ${Math.round(timeoutMs / 1000)} s`
              : `git diff ${from.slice(0, 10)} ${to.slice(0, 10)} failed: ${stderr.trim()}`,
          ),
        );
        return;
      }
      let text = Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8');
      if (truncated) text = text.slice(0, Math.max(0, text.lastIndexOf('\n') + 1));
      resolve({ text, truncated });
    });
  });
}
