/**
 * What a check writes is not the worker's work (docs/attempt.md "The steps", work): it is never committed (the seal comes
 * first), and before the task's next attempt its dir is put back to the tree that was sealed — the worker's work as
 * it left it, without the check's build outputs, logs or files that would make the next check pass. Worktree mode:
 * git/sealed-tree.ts; plain mode: a snapshot taken at the seal (run/dir-snapshot.ts), put back from its copies.
 */
import fs from 'node:fs';
import path from 'node:path';
import { recordSealedTree, recordWorktreeTree, resetToSealed, type SealedTree } from '../git/sealed-tree';
import type { WorktreeLinks } from '../git/worktree';
import type { DriverNames } from '../git/safe-git';
import { showName } from '../fs/byte-names';
import { restoreSnapshot, SNAPSHOT_FILE_BYTES, takeSnapshot, type DirSnapshot, type SnapshotEntry } from './dir-snapshot';
import { judgeSetupDeps, setupDepsMovedNote, setupDepsReason, type SetupDeps } from './setup-deps';

/** The tree an attempt sealed, to put the task dir back to before the next attempt. */
export type SealedState = { kind: 'commit'; tree: SealedTree } | { kind: 'dir'; snapshot: DirSnapshot };

/**
 * Records the worktree as sealed at `sha` (worktree mode). The seal's index is copied to `<taskRunDir>/sealed.index`.
 * @param drivers the seal phase's driver names (git/worktree.ts worktreeDrivers); absent, git's are read here
 * @throws Error with git's message
 */
export async function sealedCommit(links: WorktreeLinks, sha: string, sealIndex: string, taskRunDir: string, drivers?: DriverNames): Promise<SealedState> {
  return { kind: 'commit', tree: await recordSealedTree(links, sha, sealIndex, path.join(taskRunDir, 'sealed.index'), drivers) };
}

/** Records a plain task dir as sealed, with copies of its files under `<taskRunDir>/sealed/`. */
export function sealedDir(dir: string, taskRunDir: string): SealedState {
  return { kind: 'dir', snapshot: takeSnapshot(dir, path.join(taskRunDir, 'sealed')) };
}

/**
 * Records a task dir as prepared, before any worker (for `--baseline`, whose check runs there first: what it writes
 * must not reach attempt 1 nor its seal). Worktree mode writes the tree (not a commit) with a private index kept at
 * `<taskRunDir>/prepared.index`.
 * @throws Error with git's message
 */
export async function preparedState(dir: string, links: WorktreeLinks | null, taskRunDir: string): Promise<SealedState> {
  if (links) return { kind: 'commit', tree: await recordWorktreeTree(links, path.join(taskRunDir, 'prepared.index')) };
  return sealedDir(dir, taskRunDir);
}

/**
 * Puts the task dir back to `sealed`: what the check created is removed, what it changed or deleted is put back.
 * Returns one line for the task's notes, or null when the check had left nothing.
 * @throws Error with git's message (worktree mode)
 */
export async function discardCheckWrites(dir: string, links: WorktreeLinks | null, sealed: SealedState): Promise<string | null> {
  let removed: string[];
  let restored: string[];
  let lost: string[] = [];
  if (sealed.kind === 'commit') {
    if (!links) return null;
    ({ removed, restored } = await resetToSealed(links, sealed.tree));
  } else {
    // Plain mode's names are fs/byte-names.ts strings; worktree mode's come shown already.
    ({ removed, restored, lost } = restoreSnapshot(dir, sealed.snapshot));
    removed = removed.map(showName);
    restored = restored.map(showName);
    lost = lost.map(showName);
  }
  if (!removed.length && !restored.length && !lost.length) return null;
  const list = (xs: string[]) => `${xs.slice(0, 5).join(', ')}${xs.length > 5 ? `, … (${xs.length})` : ''}`;
  const parts = [
    removed.length ? `removed ${list(removed)}` : '',
    restored.length ? `put back ${list(restored)}` : '',
    lost.length ? `could not put back ${list(lost)} (no copy was kept; left as the check left them)` : '',
  ].filter(Boolean);
  return `what the previous check wrote was discarded: ${parts.join('; ')}`;
}

/**
 * Plain mode, right after a step that runs code of the work's own passed (the check, the suite): the task dir put back
 * to the tree the seal recorded. Plain mode delivers the task dir itself, and the readers after these steps (reviewers,
 * critics, a best-of-N group's ranking and consensus) read it, so it must hold what was judged: code the check ran
 * could otherwise pass and then rewrite the deliverable on its way out. Worktree mode needs none of this (the branch
 * takes the sealed commit; `sealed.kind` is `commit` there, and this does nothing).
 * With `deps` (dependency folders, which the snapshot does not walk: run/setup-deps.ts), those are judged again too
 * against their record — setup's (`whose: 'setup'`), or, when setup made none, the work's own as the seal found them
 * (`'work'`): an entry changed while the step ran is a failure, what is new there is moved under `deps.aside`.
 * @param who the step, in words ("the check"), for the note and the failure
 * @returns `note`: what was put back (null: nothing was changed); `failure`: why the PASS cannot stand (null: it can) —
 *   the step changed files the seal kept no copy of (over SNAPSHOT_FILE_BYTES, or past the store's total), so what
 *   would be delivered is not what was judged
 */
export function putBackJudged(
  dir: string,
  sealed: SealedState | null,
  who: string,
  deps: { record: SetupDeps; aside: string; whose: 'setup' | 'work' } | null = null,
): { note: string | null; failure: string | null } {
  if (sealed?.kind !== 'dir') return { note: null, failure: null };
  const { removed, restored, lost } = restoreSnapshot(dir, sealed.snapshot);
  // What setup installed is not in the snapshot (node_modules is not walked): judged against setup's record again.
  const setup = deps ? judgeSetupDeps(dir, deps.record, deps.aside) : null;
  const list = (xs: string[]) => `${xs.slice(0, 5).map(showName).join(', ')}${xs.length > 5 ? `, … (${xs.length})` : ''}`;
  const parts = [removed.length ? `removed ${list(removed)}` : '', restored.length ? `put back ${list(restored)}` : ''].filter(Boolean);
  const failures = [
    lost.length
      ? `${who} passed, but it changed ${list(lost)} and the seal kept no copy to put back (a file over ${SNAPSHOT_FILE_BYTES / 1024 / 1024} MiB, or past the copies' total), so the task dir would not hold what was judged`
      : '',
    setup && (setup.changed.length || setup.unmoved.length)
      ? deps?.whose === 'setup'
        ? `while ${who} ran, ${setupDepsReason([...setup.changed, ...setup.unmoved])}`
        : `${who} passed, but it changed ${list([...setup.changed, ...setup.unmoved])} in the work's own dependency folders, which the seal keeps no copy of, so the task dir would not hold what was judged`
      : '',
  ].filter(Boolean);
  const notes = [
    parts.length ? `what ${who} wrote in the task dir was discarded (the task dir holds the sealed tree it judged): ${parts.join('; ')}` : '',
    setup?.moved.length ? `after ${who}, ${setupDepsMovedNote(setup.moved, deps!.aside)}` : '',
  ].filter(Boolean);
  return { note: notes.length ? notes.join('; ') : null, failure: failures.length ? failures.join('; ') : null };
}

/** `runs/<id>/tasks/<key>/sealed.json`: the last sealed state, for a later orchestrator of the run (resume). */
export function sealedStateFile(taskRunDir: string): string {
  return path.join(taskRunDir, 'sealed.json');
}

/** Keeps `state` in `file`, or removes the file (null: nothing to put back). Never throws. */
export function saveSealedState(file: string, state: SealedState | null): void {
  try {
    if (!state) {
      fs.rmSync(file, { force: true });
      return;
    }
    const data = state.kind === 'commit' ? state : { kind: 'dir', store: state.snapshot.store, entries: [...state.snapshot.entries] };
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(data));
  } catch {
    // a resumed run then starts from the dir as it was left
  }
}

/** The sealed state kept by {@link saveSealedState}, or null. */
export function loadSealedState(file: string): SealedState | null {
  try {
    const data = JSON.parse(fs.readFileSync(file, 'utf8')) as {
      kind: string;
      tree?: { sha: string; index: string; ignored: string[] };
      store?: string | null;
      entries?: [string, SnapshotEntry][];
    };
    if (data.kind === 'commit' && data.tree && typeof data.tree.sha === 'string') return { kind: 'commit', tree: data.tree };
    if (data.kind === 'dir' && Array.isArray(data.entries)) return { kind: 'dir', snapshot: { store: data.store ?? null, entries: new Map(data.entries) } };
  } catch {
    // none kept
  }
  return null;
}
