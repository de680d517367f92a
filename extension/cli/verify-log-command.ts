import path from 'node:path';
import { evalLogPath, resolveHome } from '../core/config/home';
import { verifyEvalLog, type LogVerification } from '../core/store/verify-log';
import { InputError, type Io } from './io';
import { postgresUrlFor } from './models-command';

/** Flags of `verdict verify-log`. */
export interface VerifyLogFlags {
  /** The eval log to check (default `<home>/runs.jsonl`); its heads are read from beside it. */
  log?: string;
  home?: string;
  json?: boolean;
  /** Also check against the chain heads in Postgres (VERDICT_PG_URL or the config's postgres_url). */
  pg?: boolean;
  config?: string;
}

/**
 * `verdict verify-log [--log FILE] [--home DIR] [--pg] [--json]`: walks the eval log chain by chain (one per host)
 * and names the first row that was edited, removed or reordered, and rows cut from the end (against the heads kept
 * outside the log). Ringer's rows, without prev_hash, are counted and not judged.
 * @returns 0 intact, 1 tampered (the first bad row by line, run_id/task_key and attempt)
 * @throws InputError (exit 2) when the log is missing or unreadable, or Postgres was asked for and cannot be read
 */
export async function verifyLogCommand(flags: VerifyLogFlags, io: Io): Promise<number> {
  const log = flags.log ? path.resolve(flags.log) : evalLogPath(resolveHome(flags.home));
  let report: LogVerification;
  try {
    const pgUrl = flags.pg ? postgresUrlFor(flags.config) : null;
    if (flags.pg && !pgUrl) throw new Error('--pg: no Postgres configured (VERDICT_PG_URL or the config\'s postgres_url)');
    report = await verifyEvalLog(log, { pgUrl });
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  if (flags.json) {
    io.out(JSON.stringify(report, null, 2));
    return report.intact ? 0 : 1;
  }
  const hosts = Object.entries(report.chains);
  const chained = hosts.reduce((n, [, c]) => n + c.rows, 0);
  io.out(`${log}: ${report.lines} lines, ${chained} rows in ${hosts.length} chain${hosts.length === 1 ? '' : 's'} (${hosts.map(([h, c]) => `${h || '(no host)'}: ${c.rows}`).join(', ') || 'none'}), ${report.unchained} rows without hashes (Ringer's or older; not judged)${report.corrupt.length ? `, ${report.corrupt.length} lines not JSON (first: line ${report.corrupt[0]})` : ''}`);
  io.out(`checked against: the rows themselves${report.heads.map((h) => `, ${h}`).join('')}`);
  for (const n of report.notes) io.out(`note: ${n}`);
  if (report.intact) {
    io.out(report.heads.length ? 'intact: every link holds and every chain ends where its head says' : 'intact: every link holds (no heads to compare the ends with: rows cut from the end would not show)');
    return 0;
  }
  const first = report.findings[0];
  io.out(`TAMPERED: ${first?.message}`);
  for (const f of report.findings.slice(1, 20)) io.out(`  also: ${f.message}`);
  if (report.findings.length > 20) io.out(`  … and ${report.findings.length - 20} more (--json lists them all)`);
  return 1;
}
