/**
 * Engine settings a worker must not leave changed. An engine's state dirs (~/.claude, ~/.codex…) are writable in the
 * sandbox because the CLI keeps its sessions and logs there, but the same dirs hold what the user's next, unsandboxed
 * session of that CLI obeys — settings with hooks, instructions, agents, commands. A worker that plants a hook there
 * escapes its sandbox later. Each engine names those paths (`stateGuarded`); they are copied before the work step and
 * put back after it: a changed one restored, a new one removed. The state dirs are the worker's to write, so the put
 * back never follows a link it made below one (fs/real-parents.ts).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { makeParentsReal, parentsAreReal } from '../fs/real-parents';

/** What was there before the step. */
export interface StateSnapshot {
  /** Absolute guarded path → fingerprint before, or null when it did not exist. */
  before: Map<string, string | null>;
  /** Copies of the paths that existed, under this folder (by index). */
  dir: string;
  /**
   * Absolute guarded path → how its restore reaches it: `root` (the state dir that holds it, a worker's to write),
   * with `real` when every folder between the two was a real one at the snapshot, else the folder the path's parent
   * resolved to then. Paths in none of the state dirs given are not here (no worker writes where they are).
   */
  reach?: Map<string, { root: string; real: true } | { root: string; real: false; parent: string | null }>;
}

/**
 * Copies each guarded path (files or folders) that exists into `dir`. `roots` are the state dirs the paths lie in (a
 * worker writes in them, so {@link restoreState} never follows a link it made below one). Never throws for one path.
 */
export function snapshotState(paths: string[], dir: string, roots: readonly string[] = []): StateSnapshot {
  const before = new Map<string, string | null>();
  const reach: NonNullable<StateSnapshot['reach']> = new Map();
  fs.mkdirSync(dir, { recursive: true });
  paths.forEach((p, i) => {
    const root = roots.filter((r) => p.startsWith(`${r.replace(/\/+$/, '')}${path.sep}`)).sort((a, b) => b.length - a.length)[0];
    if (root !== undefined) {
      const rel = path.relative(root, p);
      reach.set(p, parentsAreReal(root, rel) ? { root, real: true } : { root, real: false, parent: realPathOrNull(path.dirname(p)) });
    }
    const print = fingerprint(p);
    before.set(p, print);
    if (print !== null) {
      try {
        fs.cpSync(p, path.join(dir, String(i)), { recursive: true, verbatimSymlinks: true });
      } catch {
        before.set(p, null);
      }
    }
  });
  return { before, dir, reach };
}

function realPathOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

/**
 * Readies the way to the guarded path `p` for a write, per `snap.reach`: below a state dir whose folders were real at
 * the snapshot, each is made real again (a link a worker put in place of one is removed, never followed:
 * fs/real-parents.ts); below a user's own link, the write goes ahead only when the parent still resolves to the
 * folder it did. Returns false when it must not be written. @throws from the file system
 */
function readyParents(snap: StateSnapshot, p: string): boolean {
  const how = snap.reach?.get(p);
  if (!how) return true;
  if (how.real) {
    makeParentsReal(how.root, path.relative(how.root, p));
    return true;
  }
  return how.parent !== null && realPathOrNull(path.dirname(p)) === how.parent;
}

/**
 * Puts every guarded path back as it was: changed → restored from the copy, created → removed. Returns the paths it
 * put back (empty when the worker left them alone). The snapshot stays usable: a run takes one per engine before its
 * first worker and restores to it after every work step (a snapshot taken later could hold what a parallel worker of
 * the same engine planted meanwhile). Never throws.
 */
export function restoreState(snap: StateSnapshot): string[] {
  const restored: string[] = [];
  [...snap.before.entries()].forEach(([p, was], i) => {
    const now = fingerprint(p);
    if (now === was) return;
    try {
      // Never through a link a worker put in place of a folder on the way (the user's settings elsewhere would go).
      if (!readyParents(snap, p)) throw new Error(`${p}: a folder on its way is not the one the snapshot was taken in`);
      fs.rmSync(p, { recursive: true, force: true });
      if (was !== null) fs.cpSync(path.join(snap.dir, String(i)), p, { recursive: true, verbatimSymlinks: true });
      restored.push(p);
    } catch {
      // named anyway: the caller reports it
      restored.push(p);
    }
  });
  return restored;
}

/**
 * The guarded files that differ from the snapshot now, each with its text then and now (null where it was or is
 * absent); folders and unreadable files left out. Call it before {@link restoreState}. Never throws.
 */
export function changedFiles(snap: StateSnapshot): Array<{ path: string; before: string | null; now: string | null }> {
  const text = (p: string): string | null => {
    try {
      return fs.lstatSync(p).isFile() ? fs.readFileSync(p, 'utf8') : null;
    } catch {
      return null;
    }
  };
  const out: Array<{ path: string; before: string | null; now: string | null }> = [];
  [...snap.before.entries()].forEach(([p, was], i) => {
    if (fingerprint(p) === was) return;
    out.push({ path: p, before: was === null ? null : text(path.join(snap.dir, String(i))), now: text(p) });
  });
  return out;
}

/**
 * The note for guarded paths `putBack` after a step of `who` on `engine`: when every change was one the CLI makes
 * itself at start (EngineSpec.ownRewrite, given `changes` from {@link changedFiles}), what the CLI did; else that `who`
 * changed the engine's own settings. Pure.
 */
export function putBackNote(
  engine: { name: string; ownRewrite?: (file: string, before: string | null, after: string | null) => string | null },
  who: string,
  putBack: string[],
  changes: ReturnType<typeof changedFiles>,
): string {
  const own = putBack.map((p) => {
    const c = changes.find((x) => x.path === p);
    return c && engine.ownRewrite ? engine.ownRewrite(p, c.before, c.now) : null;
  });
  if (own.every((why): why is string => why !== null)) return own.join('; ');
  return `${who} changed ${engine.name}'s own settings; put back: ${putBack.join(', ')}`;
}

/** A hash of a file or a folder tree (names, modes, contents, link targets); null when nothing is there. */
function fingerprint(p: string): string | null {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(p);
  } catch {
    return null;
  }
  const h = crypto.createHash('sha256');
  const walk = (abs: string, rel: string, s: fs.Stats) => {
    h.update(`${rel}\0${s.mode}\0`);
    if (s.isSymbolicLink()) h.update(fs.readlinkSync(abs));
    else if (s.isFile()) h.update(fs.readFileSync(abs));
    else if (s.isDirectory()) {
      for (const name of fs.readdirSync(abs).sort()) walk(path.join(abs, name), `${rel}/${name}`, fs.lstatSync(path.join(abs, name)));
    }
  };
  try {
    walk(p, '', st);
  } catch {
    return 'unreadable';
  }
  return h.digest('hex');
}
