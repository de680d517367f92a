import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileSize, readCompleteLines } from './log-lines';

/**
 * Hash chains over append-only JSONL logs (runs.jsonl, archives.jsonl): evidence that cannot be quietly edited.
 *
 * - Every row written by Verdict carries `prev_hash`: the {@link rowHash} of the previous row *of the same chain*,
 *   or null for the first row of a chain. A chain is the rows of one writer: the row's `host` field. Rows of several
 *   hosts may interleave in one log (a shared home, a pool); each host's rows form their own chain.
 * - A row without a `prev_hash` field (Ringer's rows, Verdict's rows from before the chain) belongs to no chain and
 *   is never judged: the chain of a host starts at its first row that has the field.
 * - The head of every chain (hash of its last row and its row count) is also kept outside the log, in
 *   `<log>.chain.json` beside it ({@link chainHeadPath}: `<home>/runs.chain.json` for the eval log), rewritten
 *   atomically under the append's lock, and mirrored to Postgres (table verdict_chain_heads) when configured. Rows
 *   cut from the end of the log are noticed against it.
 */

/**
 * The canonical form hashed for a row: JSON with every object's keys sorted (by UTF-16 code units, as
 * Array.prototype.sort does), no whitespace, strings and numbers as JSON.stringify writes them (ECMAScript number
 * form), encoded as UTF-8. For the JSON values eval rows hold (strings, integers, booleans, null, objects, arrays)
 * this is RFC 8785 (JSON Canonicalization Scheme). Hashing the parsed row, not the line's bytes, lets the same row
 * be checked wherever it is stored (Postgres keeps it as JSONB, which reorders keys).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const s = JSON.stringify(value);
    if (s === undefined) throw new Error(`canonicalJson: ${typeof value} has no JSON form`);
    return s;
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

/** SHA-256 (lowercase hex) of the canonical form of `row`, UTF-8 encoded: what the next row's prev_hash holds. */
export function rowHash(row: unknown): string {
  return crypto.createHash('sha256').update(canonicalJson(row), 'utf8').digest('hex');
}

/** The head of one chain: the hash of its last row and how many rows it has. */
export interface ChainHead {
  hash: string;
  rows: number;
}

/** `<log>.chain.json`: the heads of every chain of one log, as the last append left them. */
export interface ChainHeads {
  version: 1;
  /** The log's file name (not its folder: a home can move). */
  log: string;
  /** A random id given to this log's chains when the head file is first written; Postgres keys heads by it. */
  log_id: string;
  /** The log's size in bytes right after the last append that updated this file. */
  log_bytes: number;
  /** By host. */
  chains: Record<string, ChainHead>;
}

/** Where the chain heads of `logFile` are kept: `runs.jsonl` → `runs.chain.json`, `x` → `x.chain.json`. */
export function chainHeadPath(logFile: string): string {
  const base = path.basename(logFile).replace(/\.jsonl$/, '');
  return path.join(path.dirname(logFile), `${base}.chain.json`);
}

/** The host (chain key) of a parsed row: its `host` field, '' when it has none. */
export function chainKey(row: object): string {
  const host = (row as { host?: unknown }).host;
  return typeof host === 'string' ? host : '';
}

/** True when the parsed row takes part in a chain (it has a `prev_hash` field, even null). */
export function isChained(row: unknown): row is Record<string, unknown> & { prev_hash: string | null } {
  return !!row && typeof row === 'object' && !Array.isArray(row) && Object.prototype.hasOwnProperty.call(row, 'prev_hash');
}

/**
 * Reads the head file of `logFile`; null when missing or not a head file of that log (then the caller scans the log).
 */
export function readChainHeads(logFile: string): ChainHeads | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(chainHeadPath(logFile), 'utf8'));
  } catch {
    return null;
  }
  const h = parsed as Partial<ChainHeads>;
  if (!h || h.version !== 1 || typeof h.log_bytes !== 'number' || !h.chains || typeof h.chains !== 'object' || typeof h.log_id !== 'string') return null;
  for (const head of Object.values(h.chains)) {
    if (!head || typeof head.hash !== 'string' || !Number.isInteger(head.rows)) return null;
  }
  return h as ChainHeads;
}

/** Writes the head file atomically (a unique temp file, then rename); no fsync (the log's append has none either). */
export function writeChainHeads(logFile: string, heads: ChainHeads): void {
  const file = chainHeadPath(logFile);
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  try {
    fs.writeFileSync(tmp, JSON.stringify(heads, null, 2) + '\n');
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

/** Adds the chained rows among the complete lines of `logFile` from byte `from` on to `chains`. @returns the end offset */
function foldLog(logFile: string, from: number, chains: Record<string, ChainHead>): number {
  return readCompleteLines(logFile, from, ({ text }) => {
    let row: unknown;
    try {
      row = JSON.parse(text);
    } catch {
      return; // a corrupt line is no row of any chain; verify-log reports what it breaks
    }
    if (!isChained(row)) return;
    const host = chainKey(row);
    chains[host] = { hash: rowHash(row), rows: (chains[host]?.rows ?? 0) + 1 };
  });
}

/**
 * The chain heads of `logFile` as they stand now; call under the log's append lock. From the head file when it is in
 * step with the log; rows appended after it (a crash between an append and the head's update, or a writer that
 * keeps no heads) are folded in; without a head file, from a scan of the whole log. When the log is shorter than the
 * head file says (rows cut), the head file wins: the chain goes on from its head, so the cut stays visible to
 * verify-log instead of being healed over.
 */
export function currentChainHeads(logFile: string): ChainHeads {
  const size = fileSize(logFile);
  const stored = readChainHeads(logFile);
  if (stored && stored.log === path.basename(logFile)) {
    const heads: ChainHeads = { ...stored, chains: { ...stored.chains } };
    if (size > stored.log_bytes) foldLog(logFile, stored.log_bytes, heads.chains);
    heads.log_bytes = size;
    return heads;
  }
  const chains: Record<string, ChainHead> = {};
  foldLog(logFile, 0, chains);
  return { version: 1, log: path.basename(logFile), log_id: crypto.randomUUID(), log_bytes: size, chains };
}

/** Identifies a row in messages: `run_id/task_key attempt n`, or `line n` for rows without them. */
export type RowLabel = (row: Record<string, unknown>) => string;

/** A finding of {@link verifyChains}. */
export interface ChainFinding {
  /**
   * - `broken`: a row's prev_hash is no row of the log: the row before it in its chain (`line`) was edited, or rows
   *   between `line` and `next_line` were removed
   * - `reordered`: a row's prev_hash names another row of the log than the one before it
   * - `removed-before`: the first row of a chain in the log has a prev_hash: rows before it were removed
   * - `restarted`: a row with prev_hash null after its chain had started: the chain was cut and begun again
   * - `unchained`: a row without prev_hash after its host's chain had started: its hash was stripped, or a writer
   *   that keeps no chain wrote it
   * - `cut`: the head (outside the log) records more rows than the log has: rows cut from the end
   * - `head-mismatch`: the row at the head's position is not the row the head recorded (the last row edited, or
   *   rows before it replaced)
   * - `no-head`: a chain in the log the head file does not know (rows added by something other than Verdict's
   *   append, or the head file replaced)
   * - `shrunk`: the log is shorter than it was after the last append
   */
  kind: 'broken' | 'reordered' | 'removed-before' | 'restarted' | 'unchained' | 'cut' | 'head-mismatch' | 'no-head' | 'shrunk';
  host: string;
  /** 1-based line of the first row concerned; null when no line can be named (a cut or a shrunk log). */
  line: number | null;
  /** The row on `line`, labelled; null without a line. */
  row: string | null;
  /** For `broken`/`reordered`: the line whose prev_hash showed it. */
  next_line?: number;
  message: string;
}

/** A head from outside the log to check the log against. */
export interface HeadSource {
  /** Named in messages: `runs.chain.json`, `Postgres verdict_chain_heads`. */
  name: string;
  chains: Record<string, ChainHead>;
  /** Rows the head does not have yet are normal for a mirror that lags (Postgres), a notice for the head file. */
  mayLag: boolean;
  /** The log's size after the last append, when the source knows it. */
  logBytes?: number;
}

/** What {@link verifyChains} found. */
export interface ChainReport {
  /** True when no finding. */
  intact: boolean;
  /** Complete lines read. */
  lines: number;
  /** Rows in chains, by host. */
  chains: Record<string, { rows: number; first_line: number; last_line: number; hash: string }>;
  /** Rows without prev_hash before their host's chain started (Ringer's, or older Verdict's): not judged. */
  unchained: number;
  /** Lines that are not JSON objects (counted, not judged: a chain they break shows as a finding). */
  corrupt: number[];
  /** Every finding, the first (by line) first; lineless findings last. */
  findings: ChainFinding[];
  /** Things worth saying that are not tampering (a head file behind the log after a crash, no head file). */
  notes: string[];
}

interface Entry {
  line: number;
  host: string;
  prev: string | null;
  hash: string;
  label: string;
}

/** A row of the log without prev_hash: its line, host (null when it names none) and label. */
interface Unchained {
  line: number;
  host: string | null;
  label: string;
}

/**
 * Walks `logFile` chain by chain (one per host) and checks every link, then checks each chain's end against the
 * heads kept outside the log. A trailing line without its newline (an append in progress) is not read.
 * @throws Error from the filesystem when the log cannot be read (a missing log has no rows)
 */
export function verifyChains(logFile: string, heads: HeadSource[], label: RowLabel): ChainReport {
  const { lines, entries, unchainedAt, corrupt } = readEntries(logFile, label);
  const findings: ChainFinding[] = [];
  const notes: string[] = [];
  const { perHost, firstLine } = linkFindings(entries, unchainedAt, findings);
  let legacy = 0;
  for (const u of unchainedAt) {
    const start = u.host !== null ? firstLine.get(u.host) : undefined;
    if (start !== undefined && start < u.line) {
      findings.push({
        kind: 'unchained',
        host: u.host as string,
        line: u.line,
        row: u.label,
        message: `line ${u.line} (${u.label}) has no prev_hash although host ${u.host}'s chain started at line ${start}: its hash was stripped (an edit), or a writer that keeps no chain wrote it`,
      });
    } else legacy++;
  }
  for (const src of heads) headFindings(logFile, src, perHost, findings, notes);
  if (!heads.length && entries.length)
    notes.push(`no chain heads outside the log (${path.basename(chainHeadPath(logFile))} is missing): rows cut from the end cannot be noticed`);

  findings.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
  const chains: ChainReport['chains'] = {};
  for (const [host, list] of perHost)
    chains[host] = {
      rows: list.length,
      first_line: (list[0] as Entry).line,
      last_line: (list[list.length - 1] as Entry).line,
      hash: (list[list.length - 1] as Entry).hash,
    };
  return { intact: findings.length === 0, lines, chains, unchained: legacy, corrupt, findings, notes };
}

/** The log's complete lines read as chain entries, rows without a chain, and the 1-based numbers of unreadable lines. */
function readEntries(logFile: string, label: RowLabel): { lines: number; entries: Entry[]; unchainedAt: Unchained[]; corrupt: number[] } {
  const entries: Entry[] = [];
  const unchainedAt: Unchained[] = [];
  const corrupt: number[] = [];
  let line = 0;
  readCompleteLines(logFile, 0, ({ text }) => {
    line++;
    if (!text.trim()) return;
    let row: unknown;
    try {
      row = JSON.parse(text);
    } catch {
      corrupt.push(line);
      return;
    }
    if (!row || typeof row !== 'object' || Array.isArray(row)) {
      corrupt.push(line);
      return;
    }
    const o = row as Record<string, unknown>;
    if (!isChained(o)) {
      unchainedAt.push({ line, host: typeof o.host === 'string' ? o.host : null, label: label(o) });
      return;
    }
    const prev = typeof o.prev_hash === 'string' ? o.prev_hash : null;
    entries.push({ line, host: chainKey(o), prev, hash: rowHash(o), label: label(o) });
  });
  return { lines: line, entries, unchainedAt, corrupt };
}

/**
 * Checks every link of every host's chain in log order, adding to `findings` a reordered, removed-before, restarted or
 * broken link. Returns each host's entries in log order and the line its chain starts at.
 */
function linkFindings(entries: Entry[], unchainedAt: Unchained[], findings: ChainFinding[]): { perHost: Map<string, Entry[]>; firstLine: Map<string, number> } {
  const byHash = new Map<string, Entry>();
  for (const e of entries) if (!byHash.has(`${e.host}\0${e.hash}`)) byHash.set(`${e.host}\0${e.hash}`, e);
  const last = new Map<string, Entry>();
  const firstLine = new Map<string, number>();
  const perHost = new Map<string, Entry[]>();
  for (const e of entries) {
    const before = last.get(e.host);
    const expected = before?.hash ?? null;
    if (e.prev !== expected) {
      const target = e.prev === null ? undefined : byHash.get(`${e.host}\0${e.prev}`);
      if (target && target !== e) {
        findings.push({
          kind: 'reordered',
          host: e.host,
          line: e.line,
          row: e.label,
          message: `line ${e.line} (${e.label}) comes right after line ${target.line} (${target.label}) in host ${e.host}'s chain, but ${before ? `follows line ${before.line} (${before.label}) in the log` : 'is the first row of that chain in the log'}: rows were reordered or copied`,
        });
      } else if (!before) {
        findings.push({
          kind: 'removed-before',
          host: e.host,
          line: e.line,
          row: e.label,
          message: `line ${e.line} (${e.label}) is the first row of host ${e.host}'s chain in the log, but its prev_hash names a row that is not in the log: rows before it were removed`,
        });
      } else if (e.prev === null) {
        findings.push({
          kind: 'restarted',
          host: e.host,
          line: e.line,
          row: e.label,
          message: `line ${e.line} (${e.label}) starts host ${e.host}'s chain again (prev_hash null) after line ${before.line} (${before.label}): the rows before it were replaced, or written by another log's chain`,
        });
      } else if (!unchainedAt.some((u) => u.host === e.host && u.line > before.line && u.line < e.line)) {
        // (a row of this host without prev_hash between them is the edit; the `unchained` finding names it)
        findings.push({
          kind: 'broken',
          host: e.host,
          line: before.line,
          row: before.label,
          next_line: e.line,
          message: `line ${before.line} (${before.label}) was edited, or rows between it and line ${e.line} (${e.label}) were removed: line ${e.line}'s prev_hash is not the hash of line ${before.line}, the row before it in host ${e.host}'s chain`,
        });
      }
    }
    last.set(e.host, e);
    if (!firstLine.has(e.host)) firstLine.set(e.host, e.line);
    const list = perHost.get(e.host) ?? [];
    list.push(e);
    perHost.set(e.host, list);
  }
  return { perHost, firstLine };
}

/** Checks each host's chain against the heads `src` recorded (cut, head-mismatch, no-head, shrunk), adding to `findings` and `notes`. */
function headFindings(logFile: string, src: HeadSource, perHost: Map<string, Entry[]>, findings: ChainFinding[], notes: string[]): void {
  for (const [host, head] of Object.entries(src.chains)) {
    const chain = perHost.get(host) ?? [];
    const c = chain.length;
    if (c < head.rows) {
      const tail = chain[c - 1];
      findings.push({
        kind: 'cut',
        host,
        line: null,
        row: null,
        message: `${src.name} records ${head.rows} rows for host ${host}, the log has ${c}: ${head.rows - c} rows were cut from the end${tail ? ` (after line ${tail.line}, ${tail.label})` : ''}${c ? '' : ' (or the log was replaced)'}`,
      });
      continue;
    }
    if (head.rows === 0) continue;
    const at = chain[head.rows - 1] as Entry;
    if (at.hash !== head.hash) {
      findings.push({
        kind: 'head-mismatch',
        host,
        line: at.line,
        row: at.label,
        message: `line ${at.line} (${at.label}), row ${head.rows} of host ${host}'s chain, is not the row ${src.name} recorded there: it was edited, or rows before it were replaced`,
      });
      continue;
    }
    if (c > head.rows) {
      if (src.mayLag) notes.push(`${src.name} has ${head.rows} of host ${host}'s ${c} rows (the rest not sent yet)`);
      else
        notes.push(
          `${src.name} is ${c - head.rows} rows behind host ${host}'s chain (an append whose head update did not happen: a crash?); the rows link up, so nothing is missing`,
        );
    }
  }
  for (const host of perHost.keys()) {
    if (!(host in src.chains) && !src.mayLag) {
      const first = (perHost.get(host) as Entry[])[0] as Entry;
      findings.push({
        kind: 'no-head',
        host,
        line: first.line,
        row: first.label,
        message: `host ${host}'s chain (from line ${first.line}, ${first.label}) is not in ${src.name}: its rows were added by something other than Verdict's append, or ${src.name} was replaced`,
      });
    }
  }
  const size = fileSize(logFile);
  if (src.logBytes !== undefined && size < src.logBytes) {
    findings.push({
      kind: 'shrunk',
      host: '',
      line: null,
      row: null,
      message: `the log has ${size} bytes, ${src.logBytes - size} fewer than after the last append recorded in ${src.name}: the log can only grow, so rows were cut or shortened`,
    });
  }
}

/** The head file of `logFile` as a head source, or null when there is none. */
export function headFileSource(logFile: string): HeadSource | null {
  const heads = readChainHeads(logFile);
  if (!heads) return null;
  return { name: path.basename(chainHeadPath(logFile)), chains: heads.chains, mayLag: false, logBytes: heads.log_bytes };
}

/**
 * Appends one row to a chained log (call under the log's lock): sets its prev_hash from the head of its host's chain,
 * writes `line(row)` with `write`, then updates the head file. A failing head update is not an error: the row is in
 * the log, and the next append folds it in ({@link currentChainHeads}).
 * @param write writes the line; throws when it could not (then nothing else changes)
 * @returns the row as written (with prev_hash)
 */
export function appendChained<T extends object>(logFile: string, row: T, write: (line: Buffer) => void): T & { prev_hash: string | null } {
  const [result] = appendChainedAll(logFile, [row], write);
  if (!result || 'error' in result) throw result?.error;
  return result.row;
}

/** What {@link appendChainedAll} did with one row: written (with its prev_hash), or the error its write threw. */
export type ChainedAppend<T> = { row: T & { prev_hash: string | null } } | { error: unknown };

/**
 * Appends rows in order to a chained log (call under the log's lock), as {@link appendChained} does for each, with
 * one read of the chain heads before the first and one write of the head file after the last: each row's prev_hash
 * is the hash of the row before it in its host's chain, the rows written before it in this call included. A row whose
 * write throws is left out of the chain (the next row of its host links to the row before it) and reported in its
 * result; the others are written all the same.
 * @param write writes one line; throws when it could not (that row is then not in the log)
 * @returns one result per row, in order
 */
export function appendChainedAll<T extends object>(logFile: string, rows: readonly T[], write: (line: Buffer) => void): ChainedAppend<T>[] {
  const heads = currentChainHeads(logFile);
  const results: ChainedAppend<T>[] = [];
  for (const row of rows) {
    const host = chainKey(row);
    const head = heads.chains[host];
    const chained = { ...row, prev_hash: head?.hash ?? null };
    try {
      write(Buffer.from(JSON.stringify(chained) + '\n'));
    } catch (error) {
      results.push({ error });
      continue;
    }
    heads.chains[host] = { hash: rowHash(chained), rows: (head?.rows ?? 0) + 1 };
    results.push({ row: chained });
  }
  if (results.some((r) => 'row' in r)) {
    heads.log_bytes = fileSize(logFile);
    try {
      writeChainHeads(logFile, heads);
    } catch {
      // the rows are written; the next append brings the head up to date
    }
  }
  return results;
}
