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
  /**
   * Also check against the chain heads in Postgres (VERDICT_PG_URL or the config's postgres_url), and every row of
   * its table swarm_runs against this log (store/pg-verify.ts).
   */
  pg?: boolean;
  /** With `pg`: every row of swarm_runs must be one of this home's (one writer: a machine alone, a pool's orchestrator). */
  mineOnly?: boolean;
  config?: string;
}

/**
 * `verdict verify-log [--log FILE] [--home DIR] [--pg [--mine-only]] [--json]`: walks the eval log chain by chain (one
 * per host) and names the first row that was edited, removed or reordered, and rows cut from the end (against the
 * heads kept outside the log). Ringer's rows, without prev_hash, are counted and not judged. With `--pg`, every row of
 * Postgres' swarm_runs is then checked against this log: the first row updated, deleted or inserted there is named.
 * @returns 0 intact, 1 tampered (the first bad row by line, run_id/task_key and attempt)
 * @throws InputError (exit 2) when the log is missing or unreadable, or Postgres was asked for and cannot be read
 */
export async function verifyLogCommand(flags: VerifyLogFlags, io: Io): Promise<number> {
  const log = flags.log ? path.resolve(flags.log) : evalLogPath(resolveHome(flags.home));
  let report: LogVerification;
  try {
    const pgUrl = flags.pg ? postgresUrlFor(flags.config) : null;
    if (flags.pg && !pgUrl) throw new Error("--pg: no Postgres configured (VERDICT_PG_URL or the config's postgres_url)");
    if (flags.mineOnly && !flags.pg) throw new Error('--mine-only checks the rows in Postgres: give --pg too');
    report = await verifyEvalLog(log, { pgUrl, mineOnly: flags.mineOnly, send: true });
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  if (flags.json) {
    io.out(JSON.stringify(report, null, 2));
    return report.intact ? 0 : 1;
  }
  const hosts = Object.entries(report.chains);
  const chained = hosts.reduce((n, [, c]) => n + c.rows, 0);
  io.out(
    `${log}: ${report.lines} lines, ${chained} rows in ${hosts.length} chain${hosts.length === 1 ? '' : 's'} (${hosts.map(([h, c]) => `${h || '(no host)'}: ${c.rows}`).join(', ') || 'none'}), ${report.unchained} rows without hashes (Ringer's or older; not judged)${report.corrupt.length ? `, ${report.corrupt.length} lines not JSON (first: line ${report.corrupt[0]})` : ''}`,
  );
  io.out(`checked against: the rows themselves${report.heads.map((h) => `, ${h}`).join('')}`);
  for (const n of report.notes) io.out(`note: ${n}`);
  const pg = report.postgres;
  if (pg) {
    const others = pg.others.reduce((n, o) => n + o.rows, 0);
    const rest =
      others || pg.unchained_others
        ? `${others} in ${pg.others.length} chain(s) of other logs (checked by their links and against verdict_chain_heads, which is in the same database), ${pg.unchained_others} of other logs in no chain`
        : 'none of other logs';
    io.out(`swarm_runs: ${pg.rows} rows, ${pg.mine} of them this home's${pg.sent !== null ? ` (its outbox sent ${pg.sent})` : ''}, ${rest}`);
    for (const n of pg.notes) io.out(`note: ${n}`);
  }
  if (report.intact) {
    io.out(
      report.heads.length
        ? `intact: every link holds and every chain ends where its head says${pg ? '; every row of swarm_runs is as this home logged it, or (other logs) links up to its head' : ''}`
        : 'intact: every link holds (no heads to compare the ends with: rows cut from the end would not show)',
    );
    return 0;
  }
  const messages = [...report.findings.map((f) => f.message), ...(pg?.findings ?? []).map((f) => f.message)];
  io.out(`TAMPERED: ${messages[0]}`);
  for (const m of messages.slice(1, 20)) io.out(`  also: ${m}`);
  if (messages.length > 20) io.out(`  … and ${messages.length - 20} more (--json lists them all)`);
  return 1;
}
