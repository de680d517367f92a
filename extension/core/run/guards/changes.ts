/**
 * What the worker changed, as the guards read it: in worktree mode the sealed commit against the task's start point
 * (git's own diff of the two trees, renames paired, blobs read from the object store — never the worker's files);
 * in plain mode the task dir against its snapshot after setup (run/dir-snapshot.ts).
 */
import fs from 'node:fs';
import { safeGitConfigArgs } from '../../git/safe-git';
import { fsPath, nameFromBytes } from '../../fs/byte-names';
import { runCapturedBytes } from '../../process/run-captured';
import { entryChanged, keptContent, takeSnapshot, type DirSnapshot, type SnapshotEntry } from '../dir-snapshot';
import { GUARD_TEXT_BYTES, isText, type Change } from './types';

/** More changed files than this are not read line by line (their paths are still judged). */
export const GUARD_MAX_READ_FILES = 5000;
/** Contents read for one attempt stop at this total, bytes (a worker's 5000 files of 2 MiB must not fill memory). */
export const GUARD_MAX_READ_BYTES = 256 * 1024 * 1024;

/**
 * The changes from commit `from` to commit `to` in the repository whose git dir is `commonDir`
 * (`git diff-tree -r -M`; gitlinks are `other`).
 * @throws Error with git's message
 */
export async function commitChanges(commonDir: string, from: string, to: string): Promise<Change[]> {
  // Paths as fs/byte-names.ts strings: a name that is not valid UTF-8 is judged (and shown) by its own bytes.
  const raw = await git(commonDir, ['diff-tree', '-r', '-z', '-M', '--no-commit-id', '--raw', from, to]);
  const tokens: string[] = [];
  for (let at = 0; at < raw.length;) {
    let end = raw.indexOf(0, at);
    if (end < 0) end = raw.length;
    tokens.push(nameFromBytes(raw.subarray(at, end)));
    at = end + 1;
  }
  const rows: { oldMode: string; newMode: string; oldSha: string; newSha: string; status: string; from?: string; path: string }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const head = tokens[i];
    if (!head?.startsWith(':')) continue;
    const [oldMode = '', newMode = '', oldSha = '', newSha = '', status = ''] = head.slice(1).split(' ');
    if (status.startsWith('R') || status.startsWith('C')) {
      rows.push({ oldMode, newMode, oldSha, newSha, status: status[0] as string, from: tokens[i + 1] ?? '', path: tokens[i + 2] ?? '' });
      i += 2;
    } else {
      rows.push({ oldMode, newMode, oldSha, newSha, status, path: tokens[i + 1] ?? '' });
      i += 1;
    }
  }
  const wanted = new Set<string>();
  const zero = /^0+$/;
  const blobMode = (m: string) => m.startsWith('100') || m === '120000';
  for (const r of rows.slice(0, GUARD_MAX_READ_FILES)) {
    if (!zero.test(r.oldSha) && blobMode(r.oldMode)) wanted.add(r.oldSha);
    if (!zero.test(r.newSha) && blobMode(r.newMode)) wanted.add(r.newSha);
  }
  const blobs = await readBlobs(commonDir, [...wanted]);
  const text = (sha: string): { text: string | null; unreadable?: 'binary' | 'large' } => {
    const b = blobs.get(sha);
    if (b === undefined) return { text: null, unreadable: 'large' };
    if (!isText(b)) return { text: null, unreadable: 'binary' };
    return { text: b.toString('utf8') };
  };
  return rows.map((r): Change => {
    const deleted = r.status === 'D';
    const mode = deleted ? r.oldMode : r.newMode;
    const kind = mode === '120000' ? 'symlink' : mode.startsWith('100') ? 'file' : 'other';
    const status = r.status === 'A' || r.status === 'C' ? 'added' : deleted ? 'deleted' : r.status === 'R' ? 'renamed' : 'modified';
    const before = r.status === 'A' || r.status === 'C' || !blobMode(r.oldMode) ? { text: null } : text(r.oldSha);
    const after = deleted || !blobMode(r.newMode) ? { text: null } : text(r.newSha);
    const change: Change = { path: r.path, status, kind, before: before.text, after: after.text };
    if (r.from) change.from = r.from;
    if (kind === 'symlink' && !deleted) change.target = after.text ?? '';
    const unreadable = after.unreadable ?? before.unreadable;
    if (unreadable) change.unreadable = unreadable;
    return change;
  });
}

/**
 * The changes in `dir` since `base` was taken (plain mode). A changed file whose base copy was not kept has
 * `before` null: all its lines count as the worker's. `current`: a snapshot of `dir` as it is now, when the caller
 * has one (the seal's, taken just before with nothing run since); absent: taken here.
 */
export function dirChanges(base: DirSnapshot, dir: string, current?: DirSnapshot): Change[] {
  const now = (current ?? takeSnapshot(dir, null)).entries;
  const out: Change[] = [];
  let read = 0;
  let budget = GUARD_MAX_READ_BYTES;
  const content = (abs: string | Buffer): { text: string | null; unreadable?: 'binary' | 'large' } => {
    if (++read > GUARD_MAX_READ_FILES) return { text: null, unreadable: 'large' };
    try {
      const size = fs.statSync(abs).size;
      if (size > GUARD_TEXT_BYTES || (budget -= size) < 0) return { text: null, unreadable: 'large' };
      const b = fs.readFileSync(abs);
      return isText(b) ? { text: b.toString('utf8') } : { text: null, unreadable: 'binary' };
    } catch {
      return { text: null, unreadable: 'large' };
    }
  };
  const baseText = (e: SnapshotEntry): string | null => {
    const b = keptContent(base, e);
    return b && isText(b) ? b.toString('utf8') : null;
  };
  const kindOf = (e: SnapshotEntry): Change['kind'] => (e.kind === 'file' ? 'file' : e.kind === 'symlink' ? 'symlink' : 'other');
  for (const [rel, e] of now) {
    if (e.kind === 'dir') continue;
    const was = base.entries.get(rel);
    if (was && !entryChanged(was, e)) continue;
    const after = e.kind === 'file' ? content(fsPath(dir, rel)) : { text: null };
    const change: Change = {
      path: rel,
      status: was && was.kind !== 'dir' ? 'modified' : 'added',
      kind: kindOf(e),
      before: was?.kind === 'file' ? baseText(was) : null,
      after: after.text,
    };
    if (e.kind === 'symlink') change.target = e.target ?? '';
    if (after.unreadable) change.unreadable = after.unreadable;
    out.push(change);
  }
  for (const [rel, e] of base.entries) {
    if (e.kind === 'dir' || now.has(rel)) continue;
    out.push({ path: rel, status: 'deleted', kind: kindOf(e), before: e.kind === 'file' ? baseText(e) : null, after: null });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Blob contents by sha, for blobs up to GUARD_TEXT_BYTES (larger ones are absent): two `git cat-file` batches. */
async function readBlobs(commonDir: string, shas: string[]): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  if (!shas.length) return out;
  const check = (await git(commonDir, ['cat-file', '--batch-check'], shas.join('\n') + '\n')).toString('utf8');
  let budget = GUARD_MAX_READ_BYTES;
  const small = check
    .split('\n')
    .map((l) => l.split(' '))
    .filter(([, type, size]) => type === 'blob' && Number(size) <= GUARD_TEXT_BYTES && (budget -= Number(size)) >= 0)
    .map(([sha]) => sha as string);
  if (!small.length) return out;
  const buf = await git(commonDir, ['cat-file', '--batch'], small.join('\n') + '\n', 1024 * 1024 * 1024);
  let at = 0;
  while (at < buf.length) {
    const nl = buf.indexOf(10, at);
    if (nl < 0) break;
    const [sha, , size] = buf.subarray(at, nl).toString('utf8').split(' ');
    const n = Number(size);
    if (!sha || !Number.isFinite(n)) break;
    out.set(sha, buf.subarray(nl + 1, nl + 1 + n));
    at = nl + 1 + n + 1;
  }
  return out;
}

/**
 * `git --git-dir <commonDir> <args>` with `input` as its stdin (else /dev/null), started by the spawn helper (process/run-captured.ts);
 * its stdout as bytes.
 * @throws Error with git's stderr, or how it ended, when it did not exit 0
 */
async function git(commonDir: string, args: string[], input?: string, maxBuffer = 256 * 1024 * 1024): Promise<Buffer> {
  const r = await runCapturedBytes('git', [...safeGitConfigArgs(), '--git-dir', commonDir, ...args], { input, env: gitEnv(), maxBuffer });
  if (r.exitCode === 0 && !r.error) return r.stdout;
  const why = r.stderr.toString('utf8').trim() || r.error?.message || (r.signal ? `killed by ${r.signal}` : `exit ${r.exitCode}`);
  throw new Error(`git ${args[0]} failed: ${why}`);
}

/** The process environment without any GIT_* variable (the git dir is given on the command line). */
function gitEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('GIT_')) env[k] = v;
  return env;
}
