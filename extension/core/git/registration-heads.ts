/**
 * The HEADs of a repository's worktree registrations (`<git common dir>/worktrees/<name>/HEAD`), which `git worktree
 * add`, `worktree remove`, `worktree prune` and `branch -D` open, every one of them, each time. A sandboxed worker must be
 * able to write its own (it commits), so it can also put something there that holds or floods whoever opens it: a FIFO
 * (an open for reading waits for a writer, forever), a symlink that is not a symbolic ref (git follows it: to a FIFO,
 * to /dev/zero), a folder, or a huge file (git reads a HEAD whole). Every other add of the repository then hangs until
 * its time limit. What a HEAD holds is the worker's business only: the seal reads the task branch, never HEAD.
 */
import fs from 'node:fs';
import path from 'node:path';

/** A HEAD larger than this is not a ref (a ref is `ref: refs/heads/<name>` or an object id), bytes. */
const HEAD_MAX_BYTES = 4096;

/** A registration whose HEAD {@link repairRegistrationHeads} replaced: its name and what its HEAD was. */
export interface RepairedHead {
  /** The registration's folder name under `<common dir>/worktrees/`. */
  name: string;
  /** What stood there: `fifo`, `socket`, `device`, `folder`, `symlink -> <target>`, `<n> bytes`. */
  was: string;
}

/**
 * Replaces every registration HEAD under `<commonDir>/worktrees/` that git could not read as a ref without waiting or
 * reading without end (see the module comment) by a regular file holding `sha` (a detached HEAD at a commit the
 * repository has), written beside it and renamed over it (a folder is removed first). A regular file of at most
 * HEAD_MAX_BYTES, and a symlink whose target is a ref name under `refs/` (git's own symbolic-ref form), are left. Never throws: a
 * HEAD that cannot be replaced is left (the caller's git then fails at its time limit, as before).
 * @param sha a full object id of a commit in the repository
 * @returns the registrations repaired, sorted by name (empty when none)
 */
export function repairRegistrationHeads(commonDir: string, sha: string): RepairedHead[] {
  const root = path.join(commonDir, 'worktrees');
  let names: string[];
  try {
    names = fs.readdirSync(root).sort();
  } catch {
    return [];
  }
  const repaired: RepairedHead[] = [];
  for (const name of names) {
    const head = path.join(root, name, 'HEAD');
    const was = unreadableHead(head);
    if (was === null) continue;
    try {
      const tmp = `${head}.verdict-${process.pid}`;
      fs.writeFileSync(tmp, `${sha}\n`);
      if (was === 'folder') fs.rmSync(head, { recursive: true, force: true });
      fs.renameSync(tmp, head);
      repaired.push({ name, was });
    } catch {
      // Left: the registration's folder is gone or not ours to write.
    }
  }
  return repaired;
}

/** What stands at `head` when git could not read it as a ref (see repairRegistrationHeads), else null (also: missing). */
function unreadableHead(head: string): string | null {
  const st = fs.lstatSync(head, { throwIfNoEntry: false });
  if (!st) return null;
  if (st.isFile()) return st.size > HEAD_MAX_BYTES ? `${st.size} bytes` : null;
  if (st.isSymbolicLink()) {
    const target = fs.readlinkSync(head);
    // git's own form only: a ref name under refs/ (no `.` or `..` part: `refs/../../x` is followed as a path).
    const symref = target.startsWith('refs/') && target.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
    return symref ? null : `symlink -> ${target}`;
  }
  if (st.isDirectory()) return 'folder';
  if (st.isFIFO()) return 'fifo';
  if (st.isSocket()) return 'socket';
  return 'device';
}

/** The repaired registrations as people read them: `t3 (fifo), t9 (symlink -> /dev/zero)`. Pure. */
export function repairedWords(repaired: readonly RepairedHead[]): string {
  return repaired.map((r) => `${r.name} (${r.was})`).join(', ');
}
