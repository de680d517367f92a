import os from 'node:os';
import path from 'node:path';

/**
 * The VERDICT_HOME folder: `--home DIR` > $VERDICT_HOME > ~/.verdict. Returned absolute; not created here.
 */
export function resolveHome(flag?: string | null, env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(flag || env.VERDICT_HOME || path.join(os.homedir(), '.verdict'));
}

/** Where one run's records live: `<home>/runs/<runId>`. */
export function runDir(home: string, runId: string): string {
  return path.join(home, 'runs', runId);
}

/** One attempt's record folder: `<home>/runs/<runId>/tasks/<key>/attempt-<n>` (n is 1-based). */
export function attemptDir(home: string, runId: string, key: string, attempt: number): string {
  return path.join(runDir(home, runId), 'tasks', key, `attempt-${attempt}`);
}

/** Worktree-mode task folders: `<home>/worktrees/<runId>/<key>`, outside the repository. */
export function worktreePath(home: string, runId: string, key: string): string {
  return path.join(home, 'worktrees', runId, key);
}

/** The eval log: one JSON row per attempt. */
export function evalLogPath(home: string): string {
  return path.join(home, 'runs.jsonl');
}
