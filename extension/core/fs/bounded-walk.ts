import fs from 'node:fs';

/**
 * Entries a walk in this process looks at before it leaves the search to find(1): ~1.6 ms of readdir and lstat calls
 * (~5 µs an entry), what one find costs this process (measured on a loaded 2-core VM). The set-id and special-file
 * searches both use it.
 */
export const IN_PROCESS_ENTRIES = 300;

/** What a walked entry is: a Dirent of its folder's listing (or, for a root, its lstat). */
export type EntryKind = Pick<fs.Dirent, 'isDirectory' | 'isFile' | 'isFIFO' | 'isSocket' | 'isBlockDevice' | 'isCharacterDevice'>;

/**
 * The entries under `roots` (paths as bytes) that `pick` takes, found by a walk in this process that never follows a
 * symbolic link, each as its whole path (bytes); the roots themselves are offered to `pick` too unless `mindepth1`.
 * Returns null once the walk has looked at more than `budget` entries: the caller then asks find(1), whose walk does
 * not block this process. For small folders (a task's worktree, a step's scratch dir) a walk here costs ~5 µs an entry
 * against ~1.6 ms of this process's CPU and ~25 ms of wall time for starting find ({@link IN_PROCESS_ENTRIES}). A
 * folder that cannot be read, or an entry gone meanwhile, is passed over. Never throws.
 */
export function walkBounded(
  roots: readonly Buffer[],
  budget: number,
  pick: (abs: Buffer, kind: EntryKind) => boolean,
  opts: { mindepth1?: boolean } = {},
): Buffer[] | null {
  const out: Buffer[] = [];
  let seen = 0;
  const slash = Buffer.from('/');
  const stack: Buffer[] = [];
  // `pick` may look the entry up again (lstat): an entry gone, or in a folder that can be listed but not searched (mode
  // 0444: EACCES), is passed over, as a root that cannot be looked at is.
  const picked = (abs: Buffer, kind: EntryKind): boolean => {
    try {
      return pick(abs, kind);
    } catch {
      return false;
    }
  };
  for (const r of roots) {
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(r, { throwIfNoEntry: false });
    } catch {
      continue;
    }
    if (!st) continue;
    if (st.isDirectory()) stack.push(r);
    if (!opts.mindepth1 && picked(r, st)) out.push(r);
  }
  while (stack.length) {
    const dir = stack.pop() as Buffer;
    let entries: fs.Dirent<Buffer>[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true, encoding: 'buffer' });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (++seen > budget) return null;
      const abs = Buffer.concat([dir, slash, e.name]);
      if (e.isDirectory()) stack.push(abs);
      if (picked(abs, e)) out.push(abs);
    }
  }
  return out;
}
