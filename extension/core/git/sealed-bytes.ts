/**
 * The check judges the files as the sealed commit holds them, not bytes git changed on their way in. `git add` runs
 * each file through the conversions its attributes and the config name (gitattributes(5): `ident` collapses
 * `$Id: … $` to `$Id$`, `text` / `eol` and core.autocrlf rewrite line ends, a `filter` driver's clean command rewrites
 * anything), and a worker can write a `.gitattributes` wherever it may write: a file reading `$Id: the answer is 42 $`
 * was checked and passed while the commit held `$Id$`. So after the seal every changed file whose bytes are not the
 * blob the commit holds is written again from the seal's index (`checkout-index`), as a checkout of that commit writes
 * it, before the check runs. The common case, no conversion, costs one hash of each changed file and no process.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { ByteGit } from './safe-git';
import { showPath } from '../fs/byte-names';

/** One record of `git diff-index --cached -z` (git-diff(1) "RAW OUTPUT FORMAT"), renames off. */
export interface RawChange {
  srcMode: string;
  dstMode: string;
  srcId: string;
  dstId: string;
  /** A (added), D (deleted), M (modified), T (type changed), … */
  status: string;
  /** Relative to the worktree, `/`-separated, as git names it (no quoting with -z), decoded as UTF-8: for messages. */
  path: string;
  /** The same path's exact bytes (a name that is not valid UTF-8 is not {@link path}'s encoding). */
  bytes: Buffer;
}

/**
 * Parses raw diff output printed with `-z` (`:<srcMode> <dstMode> <srcId> <dstId> <status>\0<path>\0`, repeated), as
 * git printed it (bytes; a string is taken as UTF-8). Records of another shape (a rename's two paths) are skipped.
 */
export function parseRawZ(out: Buffer | string): RawChange[] {
  const buf = typeof out === 'string' ? Buffer.from(out, 'utf8') : out;
  const parts: Buffer[] = [];
  for (let at = 0; at < buf.length;) {
    let end = buf.indexOf(0, at);
    if (end < 0) end = buf.length;
    parts.push(buf.subarray(at, end));
    at = end + 1;
  }
  const changes: RawChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const m = /^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])\d*$/.exec(parts[i]?.toString('latin1').trim() ?? '');
    const p = parts[i + 1];
    if (!m || p === undefined) continue;
    changes.push({
      srcMode: m[1] as string,
      dstMode: m[2] as string,
      srcId: m[3] as string,
      dstId: m[4] as string,
      status: m[5] as string,
      path: p.toString('utf8'),
      bytes: Buffer.from(p),
    });
  }
  return changes;
}

/**
 * Git's object id of the blob holding `file`'s bytes as they are (git-hash-object(1) `--no-filters`: the hash of
 * `"blob <size>\0"` and the bytes), SHA-1 for
 * a 40-hex repository, SHA-256 for a 64-hex one, reading the file in 1 MiB pieces (never whole into memory). A symlink's
 * blob is its target. Null when the entry cannot be read.
 */
export function workingBlobId(file: string | Buffer, idLength: number): string | null {
  try {
    const st = fs.lstatSync(file);
    const hash = crypto.createHash(idLength === 64 ? 'sha256' : 'sha1');
    if (st.isSymbolicLink()) {
      const target = fs.readlinkSync(file, { encoding: 'buffer' });
      return hash.update(`blob ${target.length}\0`).update(target).digest('hex');
    }
    if (!st.isFile()) return null;
    hash.update(`blob ${st.size}\0`);
    const fd = fs.openSync(file, 'r');
    try {
      const buf = Buffer.allocUnsafe(1 << 20);
      let total = 0;
      for (let n = fs.readSync(fd, buf, 0, buf.length, null); n > 0; n = fs.readSync(fd, buf, 0, buf.length, null)) {
        hash.update(buf.subarray(0, n));
        total += n;
      }
      return total === st.size ? hash.digest('hex') : null;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** The working file of `c` under `dir`, as a path of bytes. */
function workingPath(dir: string, c: RawChange): Buffer {
  return Buffer.concat([Buffer.from(`${dir}${path.sep}`), c.bytes]);
}

/** Working blob ids already read, per change (each changed file is hashed once per seal). */
const workingIds = new WeakMap<RawChange, string | null>();

/** {@link workingBlobId} of `c`'s working file, hashed once per change. */
function workingIdOf(dir: string, c: RawChange): string | null {
  let id = workingIds.get(c);
  if (id === undefined) {
    id = workingBlobId(workingPath(dir, c), c.dstId.length);
    workingIds.set(c, id);
  }
  return id;
}

/**
 * The modified files of `changes` whose bytes in `dir` are exactly the blob the parent commit holds, under the same
 * mode: files the worker left as the start commit has them, that git staged anew only because its conversions
 * (a `text` or `eol` attribute over a blob committed with CRLF, a clean filter) would store other bytes than those
 * committed. Their parent entries belong in the seal: the worker did not change them, and a commit that converted
 * them would change a file of the start commit behind everyone's back (and FAIL a protected test it "changed").
 */
export function unchangedFromParent(dir: string, changes: readonly RawChange[]): RawChange[] {
  return changes.filter(
    (c) =>
      c.status === 'M' &&
      c.srcMode === c.dstMode &&
      (c.srcMode === '100644' || c.srcMode === '100755') &&
      !/^0+$/.test(c.srcId) &&
      workingIdOf(dir, c) === c.srcId,
  );
}

/**
 * Puts the index entries of `changes` back to their parent's mode and blob (`update-index -z --index-info`, paths as
 * bytes on stdin), so the tree written next holds them as the parent does.
 * @throws Error with git's message
 */
export async function keepParentEntries(git: ByteGit, changes: readonly RawChange[]): Promise<void> {
  if (!changes.length) return;
  const input = Buffer.concat(changes.flatMap((c) => [Buffer.from(`${c.srcMode} ${c.srcId}\t`), c.bytes, Buffer.from([0])]));
  await git.rawBytes(['update-index', '-z', '--index-info'], input);
}

/**
 * Writes again, from the index `git` works with, every added or modified file of `changes` whose bytes in `dir` are
 * not its blob (files and symlinks; gitlinks are left alone), so `dir` holds what a checkout of the sealed commit
 * writes; that index's stat data is updated (`checkout-index -f -u`, the paths as bytes on stdin: a name that is not
 * valid UTF-8 is written exactly). Returns the paths written again, sorted, as people read them (showPath).
 * @throws Error naming a path whose folder is no real folder inside `dir` (nothing of the worker runs now, and git
 *   adds no path beyond a symlink, so this means the tree changed under the seal), or with git's message
 */
export async function writeSealedBytes(git: ByteGit, dir: string, changes: readonly RawChange[]): Promise<string[]> {
  const stale: RawChange[] = [];
  for (const c of changes) {
    if (c.status === 'D' || c.dstMode === '160000' || /^0+$/.test(c.dstId)) continue;
    if (workingIdOf(dir, c) !== c.dstId) stale.push(c);
  }
  if (!stale.length) return [];
  const real = fs.realpathSync(Buffer.from(dir), { encoding: 'buffer' });
  for (const c of stale) {
    const file = workingPath(dir, c);
    const parent = Buffer.from(path.dirname(file.toString('latin1')), 'latin1');
    const relDir = path.posix.dirname(c.bytes.toString('latin1'));
    const expected = relDir === '.' ? real : Buffer.concat([real, Buffer.from(path.sep), Buffer.from(relDir, 'latin1')]);
    if (!fs.realpathSync(parent, { encoding: 'buffer' }).equals(expected))
      throw new Error(`sealing ${dir}: the folder of ${showPath(c.bytes)} is not a real folder of the tree`);
    // checkout-index leaves a file alone whose stat data the index holds (it was just added): removed first.
    fs.rmSync(file, { force: true });
  }
  await git.rawBytes(['checkout-index', '-f', '-u', '-z', '--stdin'], Buffer.concat(stale.flatMap((c) => [c.bytes, Buffer.from([0])])));
  return stale.map((c) => showPath(c.bytes)).sort();
}
