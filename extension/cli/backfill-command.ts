import fs from 'node:fs';
import path from 'node:path';
import { evalLogPath } from '../core/config/home';
import { backfill, readMapping, type BackfillChange } from '../core/store/backfill';
import { InputError, UsageError, type Io } from './io';

/** Flags of `verdict backfill`. */
export interface BackfillFlags {
  home: string;
  log?: string;
  runsDir?: string;
  mapping?: string;
  dryRun: boolean;
  json: boolean;
}

function changeLine(c: BackfillChange): string {
  const what = [c.task_type ? `task_type → ${c.task_type.to} (by "${c.task_type.by}")` : '', c.model ? `model → ${c.model.to} (from ${c.model.from})` : '']
    .filter(Boolean)
    .join(', ');
  return `line ${c.line}: ${c.run_id}/${c.task_key ?? '-'}${c.attempt !== null ? ` attempt ${c.attempt}` : ''}: ${what}`;
}

/**
 * `verdict backfill --mapping FILE [--log FILE] [--runs-dir DIR] [--dry-run]` (core/store/backfill.ts): fills the
 * task_type and model of old eval rows. Prints one line per row changed (or, dry, that would be) and a summary.
 * Returns 0. @throws UsageError without --mapping; InputError for an unreadable log or a mapping of the wrong shape
 */
export async function backfillCommand(flags: BackfillFlags, io: Io): Promise<number> {
  if (!flags.mapping) throw new UsageError('backfill needs --mapping FILE (one JSON object: "run_id:task_key", "run_id" or "name:prefix" → task_type)');
  const log = path.resolve(flags.log ?? evalLogPath(flags.home));
  if (!fs.existsSync(log)) throw new InputError(`no eval log at ${log}`);
  let mapping: Record<string, string>;
  try {
    mapping = readMapping(path.resolve(flags.mapping));
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  const runsDir = path.resolve(flags.runsDir ?? path.join(flags.home, 'runs'));
  const report = await backfill({ log, runsDir, mapping, mappingFile: path.resolve(flags.mapping), dryRun: flags.dryRun });
  if (flags.json) {
    io.out(JSON.stringify({ ...report, dry_run: flags.dryRun }, null, 2));
    return 0;
  }
  for (const c of report.changes) io.out(changeLine(c));
  const verb = flags.dryRun ? 'would change' : 'changed';
  io.out(
    `${report.rows} row(s) in ${log}: ${verb} ${report.changes.length}${report.rechained ? `; ${report.rechained} later chained row(s) ${flags.dryRun ? 'would get' : 'got'} a new prev_hash` : ''}`,
  );
  if (report.backup) io.out(`the log before the backfill: ${report.backup}; recorded in ${path.join(path.dirname(log), 'backfills.jsonl')}`);
  if (flags.dryRun) io.out('dry run: nothing was written');
  return 0;
}
