import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { withLock } from '../fs/lock';
import { chainHeadPath, chainKey, isChained, rowHash, writeChainHeads, type ChainHead, type ChainHeads } from './chain';

/**
 * Backfill of old eval rows (Verdict's or Ringer's runs.jsonl) that lack `task_type` or `model`, after Ringer's
 * scripts/backfill_model_log.py: the task type from a flat JSON mapping, most specific key first —
 * `"<run_id>:<task_key>"`, then `"<run_id>"`, then the longest `"name:<prefix>"` that starts the run id (Ringer's run
 * ids begin with the run name) or the row's run_name; the model from the run's state: Verdict's
 * `<runs-dir>/<run_id>/state.json` or Ringer's `<runs-dir>/<run_id>.json`, the task of the row's `task_key`. A value
 * already there is never replaced; a row nothing matches, and every line that is not a JSON object, keep their bytes.
 *
 * The eval log is hash-chained (chain.ts): a changed row changes its hash, so the `prev_hash` of every later row of
 * its host's chain is computed again and those lines are rewritten too, and the chain heads file is written anew.
 * The whole rewrite happens under the log's append lock: the new log is written beside it and renamed over it; the
 * old log and heads are kept as `<log>.before-backfill-<stamp>` and the heads beside it (`<that>.chain.json`, where
 * verify-log looks for them), and one line recording
 * the backfill (when, mapping file and its SHA-256, rows changed, old and new log SHA-256, backup) is appended to
 * `backfills.jsonl` beside the log. `verdict verify-log` then checks the new chains; the backup still verifies
 * against its own heads.
 */

/** One planned change of one row. */
export interface BackfillChange {
  /** 1-based line number. */
  line: number;
  run_id: string;
  task_key: string | null;
  attempt: number | null;
  task_type?: { to: string; by: string };
  model?: { to: string; from: string };
}

/** What a backfill did (or, dry, would do). */
export interface BackfillReport {
  log: string;
  rows: number;
  changes: BackfillChange[];
  /** Lines rewritten only because their prev_hash moved (a row before them in their chain changed). */
  rechained: number;
  /** null on a dry run or when nothing changed. */
  backup: string | null;
}

/** The mapping file: one flat JSON object of strings. @throws Error naming the file and the bad entry */
export function readMapping(file: string): Record<string, string> {
  let v: unknown;
  try {
    v = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: not a JSON file (${(e as Error).message})`);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v))
    throw new Error(`${file}: the mapping must be one JSON object ("run_id:task_key", "run_id" or "name:prefix" → task_type)`);
  for (const [k, val] of Object.entries(v))
    if (typeof val !== 'string' || !val) throw new Error(`${file}: "${k}" must map to a non-empty string (a task_type)`);
  return v as Record<string, string>;
}

/** The task type the mapping gives a row, and the key that gave it; null when none matches. */
export function taskTypeFor(mapping: Record<string, string>, runId: string, taskKey: string | null, runName: string | null): { to: string; by: string } | null {
  if (taskKey && mapping[`${runId}:${taskKey}`]) return { to: mapping[`${runId}:${taskKey}`]!, by: `${runId}:${taskKey}` };
  if (mapping[runId]) return { to: mapping[runId]!, by: runId };
  let best: string | null = null;
  for (const key of Object.keys(mapping)) {
    if (!key.startsWith('name:') || key.length === 5) continue;
    const prefix = key.slice(5);
    if ((runId.startsWith(prefix) || (runName ?? '').startsWith(prefix)) && (!best || prefix.length > best.length - 5)) best = key;
  }
  return best ? { to: mapping[best]!, by: best } : null;
}

/** The model the run's state gives a task (Verdict's or Ringer's layout), or null. */
function modelFromState(runsDir: string, runId: string, taskKey: string | null, cache: Map<string, unknown>): { to: string; from: string } | null {
  if (!taskKey || !/^[A-Za-z0-9._:-]+$/.test(runId)) return null;
  for (const file of [path.join(runsDir, runId, 'state.json'), path.join(runsDir, `${runId}.json`)]) {
    if (!cache.has(file)) {
      try {
        cache.set(file, JSON.parse(fs.readFileSync(file, 'utf8')));
      } catch {
        cache.set(file, null);
      }
    }
    const state = cache.get(file) as { tasks?: { key?: unknown; model?: unknown }[] } | null;
    const task = Array.isArray(state?.tasks) ? state!.tasks.find((t) => t && t.key === taskKey) : undefined;
    if (task && typeof task.model === 'string' && task.model) return { to: task.model, from: file };
  }
  return null;
}

const empty = (v: unknown) => v === undefined || v === null || v === '';

/** What a backfill is asked to do: the log, the runs' states, the task-type mapping and its file, dry or not. */
export interface BackfillOptions {
  log: string;
  runsDir: string;
  mapping: Record<string, string>;
  mappingFile: string;
  dryRun: boolean;
  now?: Date;
}

/**
 * Plans (dry) or does the backfill of `log`. @throws Error when the log cannot be read, or (not dry) written; the log
 * is then as it was
 */
export async function backfill(opts: BackfillOptions): Promise<BackfillReport> {
  const work = async (): Promise<BackfillReport> => {
    const text = fs.readFileSync(opts.log, 'utf8');
    const { out, changes, heads, rechained, rows } = planBackfill(opts, text);
    const report: BackfillReport = { log: opts.log, rows, changes, rechained, backup: null };
    if (opts.dryRun || (!changes.length && !rechained)) return report;
    const backup = writeBackfill(opts, text, out.join(''), heads, changes.length, rechained);
    return { ...report, backup };
  };
  return opts.dryRun ? work() : withLock(opts.log, work);
}

/**
 * The backfill of the log's `text`, line by line: `out`, the lines as they are to be (a line that is not a JSON object
 * kept byte for byte), `changes` (task types from the mapping, models from the runs' states, where a row had none),
 * the chain `heads` after it, how many rows only needed their chain link set again (`rechained`), and the `rows` read.
 * Pure but for reading the runs' states.
 */
function planBackfill(
  opts: BackfillOptions,
  text: string,
): { out: string[]; changes: BackfillChange[]; heads: Record<string, ChainHead>; rechained: number; rows: number } {
  const lines = text.split(/(?<=\n)/);
  const cache = new Map<string, unknown>();
  const changes: BackfillChange[] = [];
  const out: string[] = [];
  const heads: Record<string, ChainHead> = {};
  let rechained = 0;
  let rows = 0;
  lines.forEach((raw, i) => {
    const nl = raw.endsWith('\r\n') ? '\r\n' : raw.endsWith('\n') ? '\n' : '';
    const body = raw.slice(0, raw.length - nl.length);
    let row: Record<string, unknown>;
    try {
      const v = JSON.parse(body) as unknown;
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
      row = v as Record<string, unknown>;
    } catch {
      out.push(raw);
      return;
    }
    rows++;
    const runId = typeof row.run_id === 'string' ? row.run_id : '';
    const taskKey = typeof row.task_key === 'string' ? row.task_key : null;
    const change: BackfillChange = { line: i + 1, run_id: runId, task_key: taskKey, attempt: typeof row.attempt === 'number' ? row.attempt : null };
    if (runId && empty(row.task_type)) {
      const t = taskTypeFor(opts.mapping, runId, taskKey, typeof row.run_name === 'string' ? row.run_name : null);
      if (t) change.task_type = t;
    }
    if (runId && empty(row.model)) {
      const m = modelFromState(opts.runsDir, runId, taskKey, cache);
      if (m) change.model = m;
    }
    let next = row;
    if (change.task_type || change.model) {
      changes.push(change);
      next = { ...row, ...(change.task_type ? { task_type: change.task_type.to } : {}), ...(change.model ? { model: change.model.to } : {}) };
    }
    if (isChained(next)) {
      const host = chainKey(next);
      const prev = heads[host]?.hash ?? null;
      if (next.prev_hash !== prev) {
        if (next === row) rechained++;
        next = { ...next, prev_hash: prev };
      }
      heads[host] = { hash: rowHash(next), rows: (heads[host]?.rows ?? 0) + 1 };
    }
    out.push(next === row ? raw : JSON.stringify(next) + nl);
  });
  return { out, changes, heads, rechained, rows };
}

/**
 * Writes the backfilled log (`newText`, from `text`): the old log and its chain heads copied aside first
 * (`<log>.before-backfill-<stamp>`, never over an existing one), the new log renamed into place, its chain heads
 * written, and a line appended to `backfills.jsonl` beside it (what, from which mapping, old and new hashes).
 * @returns the backup's path
 */
function writeBackfill(opts: BackfillOptions, text: string, newText: string, heads: Record<string, ChainHead>, changed: number, rechained: number): string {
  const stamp = (opts.now ?? new Date()).toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
  const backup = `${opts.log}.before-backfill-${stamp}`;
  fs.copyFileSync(opts.log, backup, fs.constants.COPYFILE_EXCL);
  const headFile = chainHeadPath(opts.log);
  if (fs.existsSync(headFile)) fs.copyFileSync(headFile, chainHeadPath(backup), fs.constants.COPYFILE_EXCL);
  const tmp = `${opts.log}.backfill-${process.pid}.tmp`;
  fs.writeFileSync(tmp, newText);
  fs.renameSync(tmp, opts.log);
  const newHeads: ChainHeads = {
    version: 1,
    log: path.basename(opts.log),
    log_id: crypto.randomUUID(),
    log_bytes: Buffer.byteLength(newText),
    chains: heads,
  };
  if (Object.keys(heads).length || fs.existsSync(headFile)) writeChainHeads(opts.log, newHeads);
  const sha = (s: string) => crypto.createHash('sha256').update(s).digest('hex');
  fs.appendFileSync(
    path.join(path.dirname(opts.log), 'backfills.jsonl'),
    JSON.stringify({
      at: (opts.now ?? new Date()).toISOString(),
      log: opts.log,
      mapping: opts.mappingFile,
      mapping_sha256: sha(fs.readFileSync(opts.mappingFile, 'utf8')),
      runs_dir: opts.runsDir,
      rows_changed: changed,
      rows_rechained: rechained,
      old_sha256: sha(text),
      new_sha256: sha(newText),
      backup,
    }) + '\n',
  );
  return backup;
}
