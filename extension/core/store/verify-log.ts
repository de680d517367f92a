import fs from 'node:fs';
import { headFileSource, readChainHeads, verifyChains, type ChainReport, type HeadSource } from './chain';
import { readPostgresChainHeads } from './postgres';

/** An eval row (or Ringer's) in messages: `run_id/task_key attempt n`. */
export function evalRowLabel(row: Record<string, unknown>): string {
  const id = `${typeof row.run_id === 'string' ? row.run_id : '?'}/${typeof row.task_key === 'string' ? row.task_key : '?'}`;
  return typeof row.attempt === 'number' ? `${id} attempt ${row.attempt}` : id;
}

/** What {@link verifyEvalLog} checked and found. */
export interface LogVerification extends ChainReport {
  log: string;
  /** The heads the log was checked against (`runs.chain.json`, Postgres). */
  heads: string[];
}

/**
 * Checks every host's hash chain in the eval log `logFile` against itself, the head file beside it and, with
 * `pgUrl`, the heads in Postgres (which may lag: rows not sent yet are not a finding).
 * @throws Error when the log is missing or unreadable, or Postgres cannot be reached
 */
export async function verifyEvalLog(logFile: string, opts: { pgUrl?: string | null } = {}): Promise<LogVerification> {
  if (!fs.existsSync(logFile)) throw new Error(`no eval log at ${logFile}`);
  if (!fs.statSync(logFile).isFile()) throw new Error(`${logFile} is not a file`);
  const sources: HeadSource[] = [];
  const file = headFileSource(logFile);
  if (file) sources.push(file);
  if (opts.pgUrl) {
    const logId = readChainHeads(logFile)?.log_id;
    if (!logId) throw new Error(`cannot check against Postgres: ${logFile} has no head file naming its chains (log_id)`);
    sources.push({ name: 'Postgres verdict_chain_heads', chains: await readPostgresChainHeads(opts.pgUrl, logId), mayLag: true });
  }
  const report = verifyChains(logFile, sources, evalRowLabel);
  return { log: logFile, heads: sources.map((s) => s.name), ...report };
}
