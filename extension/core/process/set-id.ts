/**
 * No set-uid or set-gid file leaves a step. A step owns what it writes, and a root step (Verdict run as root: CI,
 * containers) left `cp /bin/bash x; chmod 4755 x` in the worktree after the run — a set-uid root shell any local user
 * who can reach the folder runs as root (seen). bubblewrap's mounts are nosuid inside the sandbox, not on the host.
 * After every sandboxed step (supervisor.ts) and in the seal (run/steps/seal.ts), the set-uid and set-gid bits of
 * every regular file in the step's writable folders are cleared, and the files named.
 *
 * Paths are bytes (Buffers) from end to end, as in git/special-files.ts: a name that is not valid UTF-8 is found and
 * changed exactly.
 */
import fs from 'node:fs';
import path from 'node:path';
import { showPath } from '../fs/byte-names';
import { IN_PROCESS_ENTRIES, walkBounded, type EntryKind } from '../fs/bounded-walk';
import { runCapturedBytes } from './run-captured';

/** Longest the search may run when the caller gives no limit, ms. */
export const SET_ID_TIMEOUT_MS = 300_000;

/** The set-uid and set-gid bits of a mode (chmod(2): S_ISUID 04000, S_ISGID 02000). */
const SET_ID = 0o6000;

/** What {@link clearSetIdBits} did. */
export interface SetIdCleared {
  /** The files whose set-uid or set-gid bit was cleared, absolute, shown as text (showPath), sorted. */
  files: string[];
  /** Why a folder could not be searched (find could not start, ran out of time), or null. */
  error: string | null;
}

/**
 * Clears the set-uid and set-gid bits of every regular file under `dirs` (never following a symbolic link; `.git`
 * folders included) and names them. Small folders (a step's scratch dir, most task dirs) are walked in this process
 * (readdir and one lstat per file); past {@link IN_PROCESS_ENTRIES} entries the search is one find(1) started by the
 * spawn helper, whose walk never blocks this process's event loop (a find costs ~1.6 ms of this process's CPU and
 * ~25 ms of wall time even for a folder of 20 files, against ~0.3 ms for the walk). Each hit is looked at again
 * (lstat) before its mode is changed, so a name that is no longer a regular file is left alone. Folders that do not
 * exist are skipped; one that cannot be read is passed over. Nothing of the step that wrote there may still run (its
 * sandbox is gone), or it could set a bit again. Never throws: what went wrong is `error`.
 * @param timeoutMs limit of the search, ms (default SET_ID_TIMEOUT_MS)
 */
export async function clearSetIdBits(dirs: readonly string[], timeoutMs = SET_ID_TIMEOUT_MS): Promise<SetIdCleared> {
  const roots = [...new Set(dirs.map((d) => path.resolve(d)))].filter((d) => fs.existsSync(d));
  if (!roots.length) return { files: [], error: null };
  let hits = walkBounded(
    roots.map((r) => Buffer.from(r)),
    IN_PROCESS_ENTRIES,
    hasSetIdBit,
  );
  let error: string | null = null;
  if (hits === null) {
    // -P: never follow a symlink; -perm /6000: either bit; %p the whole path, NUL-ended (any byte but NUL can be in a name).
    const r = await runCapturedBytes('find', ['-P', ...roots, '-type', 'f', '-perm', '/6000', '-printf', '%p\\0'], { timeoutMs });
    hits = [];
    for (let at = 0; at < r.stdout.length;) {
      let end = r.stdout.indexOf(0, at);
      if (end < 0) end = r.stdout.length;
      if (end > at) hits.push(Buffer.from(r.stdout.subarray(at, end)));
      at = end + 1;
    }
    error = r.timedOut
      ? `looking for set-uid and set-gid files took longer than ${Math.round(timeoutMs / 1000)} s and was stopped`
      : r.exitCode === null
        ? `find could not look for set-uid and set-gid files: ${r.error?.message ?? r.stderr.toString('utf8').trim()}`
        : null;
  }
  const files: string[] = [];
  for (const abs of hits) {
    try {
      const st = fs.lstatSync(abs);
      if (!st.isFile() || !(st.mode & SET_ID)) continue;
      fs.chmodSync(abs, st.mode & 0o7777 & ~SET_ID);
      files.push(showPath(abs));
    } catch {
      // gone meanwhile: nothing left to clear
    }
  }
  return { files: files.sort(), error };
}

/** Whether `abs`, a regular file, has a set-id bit (looked up again: a listing does not give the mode). */
function hasSetIdBit(abs: Buffer, kind: EntryKind): boolean {
  return kind.isFile() && ((fs.lstatSync(abs, { throwIfNoEntry: false })?.mode ?? 0) & SET_ID) !== 0;
}

/**
 * The task note for what {@link clearSetIdBits} did after `what` (a step's name: "the worker", "the check"…), or null
 * when it cleared nothing and nothing went wrong: the first five files, then how many there were.
 */
export function setIdNote(what: string, cleared: SetIdCleared | null | undefined): string | null {
  if (!cleared) return null;
  const parts: string[] = [];
  if (cleared.files.length) {
    const shown = cleared.files.slice(0, 5).join(', ') + (cleared.files.length > 5 ? `, … (${cleared.files.length})` : '');
    parts.push(`${what} left set-uid/set-gid files; their set-id bits were cleared: ${shown}`);
  }
  if (cleared.error) parts.push(`after ${what}: ${cleared.error}`);
  return parts.length ? parts.join('; ') : null;
}
