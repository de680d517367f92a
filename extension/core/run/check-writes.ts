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
import { restoreSnapshot, takeSnapshot, type DirSnapshot, type SnapshotEntry } from './dir-snapshot';

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
