import { spawn } from 'node:child_process';
import { DIFF_MAX_BYTES } from '../../../schemas/protocol';
import { NO_DIFF_PROGRAMS, safeGitConfigArgs } from '../git/safe-git';
import type { RunInfo } from '../live/registry';

/** A full object name as state.json records it (SHA-1 or SHA-256). */
const OBJECT_ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

/** A task's diff as the browser host serves it: the text (at most `maxBytes`), whether it was cut, or why there is none. */
export type TaskDiff = { ok: true; text: string; truncated: boolean } | { ok: false; status: 404 | 409 | 500; reason: string };

/**
 * `git diff` of a task's committed work against the run's base commit (state.json `baseSha` → the task's `commit`):
 * the same two commits the runs tree's "changed files" and Review Task compare. Read-only and repository-proof: git
 * runs with safeGitConfigArgs (untrusted: no filter, diff driver, textconv, pager, fsmonitor or hook of the repository)
 * and NO_DIFF_PROGRAMS, no ambient GIT_* variable, no colour. At most `maxBytes` (default DIFF_MAX_BYTES) of output are
 * kept; past that git is stopped and `truncated` is true. Never throws: 404 no such task, 409 no committed work (only
 * a worktree-mode task that passed has a commit), 500 git failed (its message).
 */
export async function taskDiff(info: RunInfo | undefined, key: string, maxBytes = DIFF_MAX_BYTES): Promise<TaskDiff> {
  const task = info?.state.tasks.find((t) => t.key === key);
  if (!info || !task) return { ok: false, status: 404, reason: 'no such run or task' };
  const { repo, baseSha } = info.state;
  const head = task.commit;
  if (!repo || !baseSha || !head)
    return { ok: false, status: 409, reason: `${key} has no committed work to show (only a task of a worktree-mode run that passed has a commit)` };
  if (!OBJECT_ID.test(baseSha) || !OBJECT_ID.test(head)) return { ok: false, status: 500, reason: 'the run state names a commit that is not an object id' };
  let config: string[];
  try {
    config = safeGitConfigArgs({ repo, trusted: false });
  } catch (e) {
    return { ok: false, status: 500, reason: (e as Error).message };
  }
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toUpperCase().startsWith('GIT_')) env[k] = v;
  return new Promise((resolve) => {
    const git = spawn('git', [...config, 'diff', ...NO_DIFF_PROGRAMS, '--no-color', baseSha, head, '--'], {
      cwd: repo,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    let stderr = '';
    git.stdout.on('data', (c: Buffer) => {
      if (truncated) return;
      const room = maxBytes - size;
      if (c.length > room) {
        chunks.push(c.subarray(0, room));
        size = maxBytes;
        truncated = true;
        git.kill('SIGKILL');
        return;
      }
      chunks.push(c);
      size += c.length;
    });
    git.stderr.on('data', (c: Buffer) => {
      if (stderr.length < 4096) stderr += c.toString('utf8');
    });
    git.on('error', (e) => resolve({ ok: false, status: 500, reason: `git: ${e.message}` }));
    git.on('close', (code) => {
      if (!truncated && code !== 0) return resolve({ ok: false, status: 500, reason: `git diff failed (exit ${code}): ${stderr.trim().split('\n')[0] ?? ''}` });
      // A cut inside a multi-byte character shows as U+FFFD; the page says the diff was cut.
      resolve({ ok: true, text: Buffer.concat(chunks).toString('utf8'), truncated });
    });
  });
}
