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
import type { RawGit } from './safe-git';

/** One record of `git diff-index --cached -z` (git-diff(1) "RAW OUTPUT FORMAT"), renames off. */
export interface RawChange {
  srcMode: string;
  dstMode: string;
  srcId: string;
  dstId: string;
  /** A (added), D (deleted), M (modified), T (type changed), … */
  status: string;
  /** Relative to the worktree, `/`-separated, as git names it (no quoting with -z). */
  path: string;
}

/**
 * Parses raw diff output printed with `-z` (`:<srcMode> <dstMode> <srcId> <dstId> <status>\0<path>\0`, repeated).
 * Records of another shape (a rename's two paths) are skipped.
 */
export function parseRawZ(out: string): RawChange[] {
  const parts = out.split('\0');
  const changes: RawChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const m = /^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) ([A-Z])\d*$/.exec(parts[i]?.trim() ?? '');
    const p = parts[i + 1];
    if (!m || p === undefined) continue;
    changes.push({ srcMode: m[1] as string, dstMode: m[2] as string, srcId: m[3] as string, dstId: m[4] as string, status: m[5] as string, path: p });
  }
  return changes;
}

/**
 * Git's object id of the blob holding `file`'s bytes as they are (git-hash-object(1) `--no-filters`: the hash of
 * `"blob <size>\0"` and the bytes), SHA-1 for
 * a 40-hex repository, SHA-256 for a 64-hex one, reading the file in 1 MiB pieces (never whole into memory). A symlink's
 * blob is its target. Null when the entry cannot be read.
 */
export function workingBlobId(file: string, idLength: number): string | null {
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

/** Paths handed to one `checkout-index` (argv stays far below the kernel's limit). */
const PATHS_PER_CALL = 200;

/**
 * Writes again, from the index `git` works with, every added or modified file of `changes` whose bytes in `dir` are
 * not its blob (files and symlinks; gitlinks are left alone), so `dir` holds what a checkout of the sealed commit
 * writes; that index's stat data is updated (`checkout-index -f -u`). Returns the paths written again, sorted.
 * @throws Error naming a path whose folder is no real folder inside `dir` (nothing of the worker runs now, and git
 *   adds no path beyond a symlink, so this means the tree changed under the seal), or with git's message
 */
export async function writeSealedBytes(git: RawGit, dir: string, changes: readonly RawChange[]): Promise<string[]> {
  const stale: string[] = [];
  for (const c of changes) {
    if (c.status === 'D' || c.dstMode === '160000' || /^0+$/.test(c.dstId)) continue;
    if (workingBlobId(path.join(dir, c.path), c.dstId.length) !== c.dstId) stale.push(c.path);
  }
  if (!stale.length) return [];
  const real = fs.realpathSync(dir);
  for (const p of stale) {
    const parent = path.dirname(path.join(dir, p));
    if (fs.realpathSync(parent) !== path.join(real, path.dirname(p))) throw new Error(`sealing ${dir}: the folder of ${p} is not a real folder of the tree`);
    // checkout-index leaves a file alone whose stat data the index holds (it was just added): removed first.
    fs.rmSync(path.join(dir, p), { force: true });
  }
  for (let i = 0; i < stale.length; i += PATHS_PER_CALL) await git.raw(['checkout-index', '-f', '-u', '--', ...stale.slice(i, i + PATHS_PER_CALL)]);
  return stale.sort();
}
