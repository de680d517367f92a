import fs from 'node:fs';
import path from 'node:path';
import { headFileSource, readChainHeads, verifyChains, type ChainReport, type HeadSource } from './chain';
import { evalRowLabel } from './eval-row';
import { verifySwarmRuns, type PgVerification } from './pg-verify';
import { readPostgresChainHeads, syncToPostgres } from './postgres';

export { evalRowLabel };

/** What {@link verifyEvalLog} checked and found. */
export interface LogVerification extends ChainReport {
  log: string;
  /** The heads the log was checked against (`runs.chain.json`, Postgres). */
  heads: string[];
  /** With `pgUrl`: the Postgres copy (table swarm_runs) checked row by row against this log (store/pg-verify.ts). */
  postgres?: PgVerification;
}

/**
 * Checks every host's hash chain in the eval log `logFile` against itself, the head file beside it and, with
 * `pgUrl`, the heads in Postgres (which may lag: rows not sent yet are not a finding); then, with `pgUrl`, every row
 * of swarm_runs against this log (pg-verify.ts, depth `full`). With `send`, when `logFile` is a home's `runs.jsonl`,
 * that home's outbox is sent first (so the table has every row, and rows an older Verdict sent get their hashes); a
 * failed send is a note. `intact` is true only when the log and the table both are.
 * @throws Error when the log is missing or unreadable, or Postgres cannot be reached
 */
export async function verifyEvalLog(logFile: string, opts: { pgUrl?: string | null; mineOnly?: boolean; send?: boolean } = {}): Promise<LogVerification> {
  if (!fs.existsSync(logFile)) throw new Error(`no eval log at ${logFile}`);
  if (!fs.statSync(logFile).isFile()) throw new Error(`${logFile} is not a file`);
  const home = path.basename(logFile) === 'runs.jsonl' ? path.dirname(logFile) : null;
  const pgNotes: string[] = [];
  if (opts.pgUrl && home && opts.send) {
    try {
      await syncToPostgres(home, opts.pgUrl);
    } catch (e) {
      pgNotes.push(`this home's newest rows could not be sent to Postgres first (${(e as Error).message})`);
    }
  }
  const sources: HeadSource[] = [];
  const file = headFileSource(logFile);
  if (file) sources.push(file);
  if (opts.pgUrl) {
    const logId = readChainHeads(logFile)?.log_id;
    if (!logId) throw new Error(`cannot check against Postgres: ${logFile} has no head file naming its chains (log_id)`);
    sources.push({ name: 'Postgres verdict_chain_heads', chains: await readPostgresChainHeads(opts.pgUrl, logId), mayLag: true });
  }
  const report = verifyChains(logFile, sources, evalRowLabel);
  const result: LogVerification = { log: logFile, heads: sources.map((s) => s.name), ...report };
  if (opts.pgUrl) {
    const { report: pg } = await verifySwarmRuns(opts.pgUrl, { logFile, home, depth: 'full', mineOnly: opts.mineOnly });
    pg.notes.unshift(...pgNotes);
    result.postgres = pg;
    result.intact = report.intact && pg.intact;
  }
  return result;
}
