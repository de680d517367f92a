/**
 * A plain-mode task dir as it was at one moment (no git there to ask): every entry's kind, mode and content hash,
 * and a copy of the content of each file up to SNAPSHOT_FILE_BYTES (while the copies stay under
 * SNAPSHOT_STORE_BYTES), kept out of every step's sight (under VERDICT_HOME). Used for the guard's base (the dir
 * after `setup`: what the worker changed since) and to put the dir back after a check (what the check wrote is
 * discarded before a retry). Folders named `.git` and `node_modules` are recorded but not walked: git's own files
 * and dependency trees (setup's `npm ci`) are neither the worker's work nor something to copy at every attempt.
 * Files are hashed in pieces (hashFile): whatever size a worker gives one (a sparse file of terabytes takes no disk), its
 * content never enters the orchestrator's memory beyond one piece and a kept copy.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bytesOfName, fsPath, hasByteEscape, readLinkName, readNames } from '../fs/byte-names';

/** Folders recorded but never walked into. */
export const SNAPSHOT_OPAQUE_DIRS = new Set(['.git', 'node_modules']);
/** Files larger than this are hashed but not copied, bytes. */
export const SNAPSHOT_FILE_BYTES = 2 * 1024 * 1024;
/** Copies stop once they reach this total, bytes (later files are hashed only). */
export const SNAPSHOT_STORE_BYTES = 128 * 1024 * 1024;

/** One entry of a snapshot. */
export interface SnapshotEntry {
  kind: 'file' | 'symlink' | 'dir' | 'other';
  /** Permission bits (`mode & 0o7777`). */
  mode: number;
  /** Files: SHA-256 of the content, hex. */
  sha?: string;
  /** Symlinks: the target as written. */
  target?: string;
  /** Files: a copy is in the store (`<store>/<sha>`). */
  kept?: boolean;
}

/** A dir as it was: relative path (`/`-separated) → entry; `store` holds the copies (null: none were kept). */
export interface DirSnapshot {
  entries: Map<string, SnapshotEntry>;
  store: string | null;
}

/**
 * Records `dir` now; with `store`, keeps copies of file contents there (content-addressed, so a file is stored once).
 * Never throws for one entry: an unreadable one is recorded as `other`.
 */
export function takeSnapshot(dir: string, store: string | null): DirSnapshot {
  const entries = new Map<string, SnapshotEntry>();
  let stored = 0;
  if (store) fs.mkdirSync(store, { recursive: true });
  walk(dir, (rel, abs, st) => {
    const mode = st.mode & 0o7777;
    entries.set(rel, { kind: 'other', mode });
    if (st.isSymbolicLink()) entries.set(rel, { kind: 'symlink', mode, target: readLinkName(abs) });
    else if (st.isDirectory()) entries.set(rel, { kind: 'dir', mode });
    else if (st.isFile()) {
      const { sha, content } = hashFile(abs, store ? Math.min(SNAPSHOT_FILE_BYTES, SNAPSHOT_STORE_BYTES - stored) : -1);
      let kept = false;
      if (store && content && stored + content.length <= SNAPSHOT_STORE_BYTES) {
        const copy = path.join(store, sha);
        if (!fs.existsSync(copy)) {
          fs.writeFileSync(copy, content);
          stored += content.length;
        }
        kept = true;
      }
      entries.set(rel, { kind: 'file', mode, sha, kept });
    } else entries.set(rel, { kind: 'other', mode });
  });
  return { entries, store };
}

/** Bytes read at a time while a file is hashed: the most of one file a snapshot holds in memory beyond a kept copy. */
const HASH_CHUNK_BYTES = 1024 * 1024;

/**
 * SHA-256 (hex) of a file's content, read in HASH_CHUNK_BYTES pieces through one buffer, so a file of any size (a
 * sparse one of terabytes that takes no disk) never enters memory whole; with `keepUpTo` >= 0, the content too when
 * the file holds at most that many bytes (else null). Reads the file as it is at the read, whatever lstat said.
 * @throws the fs error when the file cannot be opened or read
 */
function hashFile(abs: string | Buffer, keepUpTo: number): { sha: string; content: Buffer | null } {
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(abs, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const buf = Buffer.allocUnsafe(HASH_CHUNK_BYTES);
    const kept: Buffer[] = [];
    let total = 0;
    let keep = keepUpTo >= 0;
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n <= 0) break;
      hash.update(buf.subarray(0, n));
      total += n;
      if (keep && total > keepUpTo) {
        keep = false;
        kept.length = 0;
      }
      if (keep) kept.push(Buffer.from(buf.subarray(0, n)));
    }
    return { sha: hash.digest('hex'), content: keep ? Buffer.concat(kept, total) : null };
  } finally {
    fs.closeSync(fd);
  }
}

/** The kept content of a snapshot's file entry, or null when no copy was kept. */
export function keptContent(snap: DirSnapshot, entry: SnapshotEntry): Buffer | null {
  if (!entry.kept || !entry.sha || !snap.store) return null;
  try {
    return fs.readFileSync(path.join(snap.store, entry.sha));
  } catch {
    return null;
  }
}

/** Whether two entries differ in what a check or a worker could change (kind, mode, content, target). */
export function entryChanged(a: SnapshotEntry, b: SnapshotEntry): boolean {
  return a.kind !== b.kind || a.mode !== b.mode || a.sha !== b.sha || a.target !== b.target;
}

/** What {@link restoreSnapshot} did. */
export interface RestoreReport {
  /** Entries that were not in the snapshot, removed (a new folder counts once). */
  removed: string[];
  /** Entries changed or deleted since, put back. */
  restored: string[];
  /** Entries changed or deleted since that could not be put back (no copy was kept). */
  lost: string[];
}

/**
 * Puts `dir` back as `snap` recorded it: removes what is new, puts back what changed or went missing from the kept
 * copies (a file without a copy is named in `lost` and left as it is). Opaque folders (`.git`, `node_modules`) that
 * existed are left alone inside. Never throws for one entry (it is named in `lost`).
 */
export function restoreSnapshot(dir: string, snap: DirSnapshot): RestoreReport {
  const report: RestoreReport = { removed: [], restored: [], lost: [] };
  const now = takeSnapshot(dir, null).entries;
  for (const [rel, entry] of [...now].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (snap.entries.has(rel)) continue;
    // Under a folder already removed: gone with it.
    if (report.removed.some((r) => rel.startsWith(`${r}/`))) continue;
    try {
      fs.rmSync(fsPath(dir, rel), { recursive: entry.kind === 'dir', force: true });
      report.removed.push(rel);
    } catch {
      report.lost.push(rel);
    }
  }
  for (const [rel, entry] of [...snap.entries].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const cur = now.get(rel);
    if (cur && !entryChanged(cur, entry)) continue;
    const abs = fsPath(dir, rel);
    try {
      if (entry.kind === 'dir') {
        if (cur?.kind !== 'dir') {
          if (cur) fs.rmSync(abs, { recursive: true, force: true });
          fs.mkdirSync(abs, { recursive: true });
        }
        fs.chmodSync(abs, entry.mode);
        report.restored.push(rel);
        continue;
      }
      const content = entry.kind === 'file' ? keptContent(snap, entry) : null;
      if (entry.kind === 'other' || (entry.kind === 'file' && content === null)) {
        report.lost.push(rel);
        continue;
      }
      if (cur) fs.rmSync(abs, { recursive: true, force: true });
      fs.mkdirSync(fsPath(dir, path.posix.dirname(rel)), { recursive: true });
      if (entry.kind === 'symlink') fs.symlinkSync(hasByteEscape(entry.target as string) ? bytesOfName(entry.target as string) : (entry.target as string), abs);
      else {
        fs.writeFileSync(abs, content as Buffer);
        fs.chmodSync(abs, entry.mode);
      }
      report.restored.push(rel);
    } catch {
      report.lost.push(rel);
    }
  }
  return report;
}

/**
 * Every symlink under `dir` (walked as takeSnapshot walks it), relative path → target as written (fs/byte-names.ts
 * strings). Never throws: an unreadable folder is not entered.
 */
export function symlinksIn(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  walk(dir, (rel, abs, st) => {
    if (st.isSymbolicLink()) out.set(rel, readLinkName(abs));
  });
  return out;
}

/**
 * Calls `visit` for every entry under `dir` (sorted, lstat: symlinks not followed); opaque folders are not entered.
 * Names are fs/byte-names.ts strings: one that is not valid UTF-8 is walked, read and named exactly, not skipped.
 */
function walk(dir: string, visit: (rel: string, abs: string | Buffer, st: fs.Stats) => void, rel = ''): void {
  let names: string[];
  try {
    names = readNames(fsPath(dir, rel)).sort();
  } catch {
    return;
  }
  for (const name of names) {
    const child = rel ? `${rel}/${name}` : name;
    const abs = fsPath(dir, child);
    let st: fs.Stats;
    try {
      st = fs.lstatSync(abs);
    } catch {
      continue;
    }
    try {
      visit(child, abs, st);
    } catch {
      // unreadable: recorded as nothing more than its existence
    }
    if (st.isDirectory() && !SNAPSHOT_OPAQUE_DIRS.has(name)) walk(dir, visit, child);
  }
}

/** Keeps `snap` in `file` (JSON) for a later orchestrator of the run (resume). Never throws. */
export function saveSnapshot(snap: DirSnapshot, file: string): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ store: snap.store, entries: [...snap.entries] }));
  } catch {
    // a resumed run then takes the base afresh (and says so)
  }
}

/** A snapshot kept by {@link saveSnapshot}, or null when there is none or it is unreadable. */
export function loadSnapshot(file: string): DirSnapshot | null {
  try {
    const data = JSON.parse(fs.readFileSync(file, 'utf8')) as { store: string | null; entries: [string, SnapshotEntry][] };
    return { store: data.store, entries: new Map(data.entries) };
  } catch {
    return null;
  }
}
