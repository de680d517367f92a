import { cleanRuns, deadRuns, type CleanAction } from '../core/run/clean';
import { InputError, UsageError, type Io } from './io';

/** Flags of `verdict clean`, as parsed (strings unvalidated). */
export interface CleanFlags {
  home: string;
  run?: string;
  olderThan?: string;
  branches: boolean;
  dryRun: boolean;
}

/**
 * `verdict clean [--run ID] [--older-than DAYS] [--branches] [--dry-run]`: removes the worktrees of finished runs
 * (see cleanRuns) and prints one line per worktree, branch and skipped run, then which kept or deleted branches held
 * work merged nowhere else. Returns 0, or 1 when something could not be removed.
 * @throws UsageError for a bad --older-than; InputError when --run names no run
 */
export async function cleanCommand(flags: CleanFlags, io: Io): Promise<number> {
  let olderThanDays: number | undefined;
  if (flags.olderThan !== undefined) {
    olderThanDays = Number(flags.olderThan);
    if (flags.olderThan.trim() === '' || !Number.isFinite(olderThanDays) || olderThanDays < 0)
      throw new UsageError(`--older-than must be a number of days ≥ 0, got "${flags.olderThan}"`);
  }
  let report;
  try {
    report = await cleanRuns({ home: flags.home, runId: flags.run, olderThanDays, branches: flags.branches, dryRun: flags.dryRun });
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  const would = flags.dryRun ? 'would ' : '';
  if (flags.dryRun)
    for (const id of deadRuns(flags.home))
      if (!flags.run || id.startsWith(flags.run))
        io.out(
          `${id}: its orchestrator died; clean would first reconcile it (orphaned workers killed, unfinished tasks INTERRUPTED) and then clean it as a run that is over — not listed below; \`verdict resume ${id}\` instead keeps it going`,
        );
  for (const a of report.actions) io.out(actionLine(a, would));
  const unmerged = report.actions.filter((a) => (a.kind === 'branch-kept' || a.kind === 'branch-deleted') && a.unmerged);
  const kept = report.actions.filter((a) => a.kind === 'branch-kept');
  if (unmerged.length) {
    const verb = flags.branches ? `${flags.dryRun ? 'would delete' : 'deleted'} branches that held` : 'kept branches holding';
    io.out(`${verb} work merged nowhere else: ${unmerged.map((a) => (a as { branch: string }).branch).join(', ')}`);
  }
  if (kept.length) io.out(`${kept.length} task branch${kept.length === 1 ? '' : 'es'} kept; add --branches to delete them`);
  if (!report.actions.length) io.out(report.runs ? 'nothing to clean' : 'no runs match');
  if (flags.dryRun) io.out('dry run: nothing was changed');
  return report.actions.some((a) => a.kind === 'failed') ? 1 : 0;
}

function actionLine(a: CleanAction, would: string): string {
  switch (a.kind) {
    case 'worktree-removed':
      return `${a.runId}: ${would}remove worktree ${a.dir}${a.uncommittedFiles ? ` (${a.uncommittedFiles} uncommitted file${a.uncommittedFiles === 1 ? '' : 's'} discarded)` : ''}`;
    case 'branch-deleted':
      return `${a.runId}: ${would}delete branch ${a.branch} (${a.sha.slice(0, 12)}${a.unmerged ? ', merged nowhere else' : ''})`;
    case 'branch-kept':
      return `${a.runId}: kept branch ${a.branch} (${a.sha.slice(0, 12)}${a.unmerged ? ', merged nowhere else' : ''})`;
    case 'run-skipped':
      return `${a.runId}: skipped: ${a.reason}`;
    case 'overlay-unmounted':
      return `${a.runId}: unmounted overlay ${a.dir}${a.detached ? ' (busy: detached; freed when its last user closes it)' : ''}`;
    case 'failed':
      return `${a.runId}: could not remove ${a.what}: ${a.reason}`;
  }
}
