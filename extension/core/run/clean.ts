import fs from 'node:fs';
import path from 'node:path';
import { cleanRuns as cleanWorktrees, type CleanCandidate, type CleanOptions, type CleanReport } from '../git/clean';
import { listRuns, readState } from '../live/registry';
import { readDirOrEmpty } from '../fs/read-dir';

export type { CleanAction, CleanCandidate, CleanReport } from '../git/clean';

/**
 * `verdict clean`: every run under `opts.home` with its use read from the run registry ({@link cleanCandidates}),
 * handed to git/clean, which removes the worktrees and reports (or deletes) the task branches. See
 * git/clean.ts `cleanRuns` for what is removed and what is never touched.
 * @throws Error when `runId` names no run under `home`, or `olderThanDays` is negative or not a number
 */
export async function cleanRuns(opts: Omit<CleanOptions, 'runs'>): Promise<CleanReport> {
  return cleanWorktrees({ ...opts, runs: cleanCandidates(opts.home, opts.now ?? Date.now()) });
}

/** The runs whose orchestrator died and that the next starting command will reconcile (run/reconcile.ts), by id. */
export function deadRuns(home: string, now = Date.now()): string[] {
  return listRuns(home, now)
    .runs.filter((r) => r.liveness === 'orchestrator-died')
    .map((r) => r.state.runId);
}

/**
 * Every run with a state file or a `worktrees/<run_id>/` folder under `home`, as git/clean needs it: a running
 * orchestrator (or a state file that exists but cannot be read) is 'live', a dead one 'resumable', anything else
 * 'over'.
 */
export function cleanCandidates(home: string, now = Date.now()): CleanCandidate[] {
  const byId = new Map<string, CleanCandidate>();
  for (const info of listRuns(home, now).runs) {
    const s = info.state;
    const use = info.liveness === 'running' ? 'live' : info.liveness === 'orchestrator-died' ? 'resumable' : 'over';
    byId.set(s.runId, { runId: s.runId, use, repo: s.repo, lastActiveAt: s.endedAt ?? s.heartbeatAt ?? s.startedAt });
  }
  for (const id of readDirOrEmpty(path.join(home, 'worktrees'))) {
    if (byId.has(id)) continue;
    const read = readState(path.join(home, 'runs', id, 'state.json'));
    // A state file that cannot be read is not proof the run is over: leave it alone.
    const use = 'reason' in read && read.reason !== 'missing' ? 'live' : 'over';
    byId.set(id, { runId: id, use, repo: null, lastActiveAt: fs.statSync(path.join(home, 'worktrees', id)).mtimeMs });
  }
  return [...byId.values()];
}
