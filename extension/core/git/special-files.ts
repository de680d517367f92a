/**
 * FIFOs, sockets and device files in a worktree (docs/attempt.md "The steps", seal): git records none of them (`git add -A` passes over
 * them silently, or refuses one in a tracked file's place), and git opens some files of the tree while it adds or lists
 * it — every `.gitignore` and `.gitattributes` on its way, a nested repository's `.git/HEAD` — so a FIFO under such a
 * name holds that git forever. They hold no bytes, so nothing of the work is lost when they go: before the seal, and
 * before a retry is put back to the sealed tree, every one is removed and named (git/worktree.ts sealWorktree,
 * git/sealed-tree.ts resetToSealed).
 *
 * Paths are bytes (Buffers) from end to end: a name that is not valid UTF-8 is found and removed exactly (decoded as
 * UTF-8 it would name another file, or none).
 */
import fs from 'node:fs';
import path from 'node:path';
import { runCapturedBytes } from '../process/run-captured';
import { showPath } from '../fs/byte-names';
import { IN_PROCESS_ENTRIES, walkBounded, type EntryKind } from '../fs/bounded-walk';

/** A FIFO, socket or device file of a tree. */
export interface SpecialFile {
  kind: 'FIFO' | 'socket' | 'block device' | 'character device';
  /** Relative to the tree, `/`-separated, the name's exact bytes. */
  path: Buffer;
}

/** Longest the search may run when the caller gives no limit, ms. */
export const SPECIAL_FILES_TIMEOUT_MS = 300_000;

/**
 * Removes every FIFO, socket and block or character device under `dir` (never following a symbolic link, `.git`
 * folders included: git reads a nested repository's HEAD) and returns them, sorted by path (found as specialPaths
 * says).
 * `upper`: `dir` is an overlay mount whose upper layer is this folder; only the upper layer is searched (everything
 * the tree gained since it was mounted is there; the lower layer is a checkout, which holds none), and an entry found
 * there is removed through `dir` — a whiteout (a character device 0/0 in the upper layer, a deletion in `dir`) is
 * not a file of the tree and is left alone. Entries that vanish meanwhile are skipped. A folder find cannot read is
 * passed over (git cannot read it either).
 * @param timeoutMs limit of the search, ms (default SPECIAL_FILES_TIMEOUT_MS)
 * @throws Error when find could not start or ran out of time
 */
export async function removeSpecialFiles(dir: string, opts: { upper?: string | null; timeoutMs?: number } = {}): Promise<SpecialFile[]> {
  const found: SpecialFile[] = [];
  const base = Buffer.from(`${dir}${path.sep}`);
  for (const rel of await specialPaths(opts.upper ?? dir, opts.timeoutMs ?? SPECIAL_FILES_TIMEOUT_MS, dir)) {
    const abs = Buffer.concat([base, rel]);
    const st = fs.lstatSync(abs, { throwIfNoEntry: false });
    // Through an overlay: gone (a whiteout) or no longer special.
    if (!st || !(st.isFIFO() || st.isSocket() || st.isBlockDevice() || st.isCharacterDevice())) continue;
    try {
      fs.rmSync(abs, { force: true });
      found.push({ kind: kindOf(st), path: Buffer.from(rel) });
    } catch {
      // left in place: git or the check names it
    }
  }
  return found.sort((a, b) => Buffer.compare(a.path, b.path));
}

/** Whether a walked entry is a FIFO, socket or device file. */
function isSpecial(_abs: Buffer, kind: EntryKind): boolean {
  return kind.isFIFO() || kind.isSocket() || kind.isBlockDevice() || kind.isCharacterDevice();
}

/**
 * The paths (relative to `root`, bytes) of the FIFOs, sockets and device files under `root`: walked in this process
 * while the tree is small (IN_PROCESS_ENTRIES of fs/bounded-walk.ts, as for set-id files), else found by find(1), started by the spawn helper
 * (its walk costs a fraction of a walk in this process, and never blocks its event loop). `dir` names the tree in
 * errors.
 * @throws Error when find could not start or ran out of time
 */
async function specialPaths(root: string, timeoutMs: number, dir: string): Promise<Buffer[]> {
  const rootBytes = Buffer.from(root);
  const walked = walkBounded([rootBytes], IN_PROCESS_ENTRIES, isSpecial, { mindepth1: true });
  if (walked) return walked.map((abs) => abs.subarray(rootBytes.length + 1));
  // -P: never follow a symlink; %P the path below the starting point, NUL-ended (any byte but NUL and `/` can be in a
  // name).
  const r = await runCapturedBytes(
    'find',
    ['-P', root, '-mindepth', '1', '(', '-type', 'p', '-o', '-type', 's', '-o', '-type', 'b', '-o', '-type', 'c', ')', '-printf', '%P\\0'],
    { timeoutMs },
  );
  if (r.timedOut) throw new Error(`looking for FIFOs, sockets and device files in ${dir} took longer than ${Math.round(timeoutMs / 1000)} s and was stopped`);
  if (r.exitCode === null)
    throw new Error(`find could not look for FIFOs, sockets and device files in ${dir}: ${r.error?.message ?? r.stderr.toString('utf8').trim()}`);
  // A non-zero exit with output: some folder could not be read; what was found is still removed.
  const paths: Buffer[] = [];
  for (let at = 0; at < r.stdout.length;) {
    let end = r.stdout.indexOf(0, at);
    if (end < 0) end = r.stdout.length;
    if (end > at) paths.push(r.stdout.subarray(at, end));
    at = end + 1;
  }
  return paths;
}

function kindOf(st: fs.Stats): SpecialFile['kind'] {
  return st.isFIFO() ? 'FIFO' : st.isSocket() ? 'socket' : st.isBlockDevice() ? 'block device' : 'character device';
}

/** `FIFO a, socket b, …` for a task note: the first `max` of `files`, then how many there were. */
export function listSpecialFiles(files: readonly SpecialFile[], max = 5): string {
  const shown = files
    .slice(0, max)
    .map((f) => `${f.kind} ${showPath(f.path)}`)
    .join(', ');
  return files.length > max ? `${shown}, … (${files.length})` : shown;
}
