/**
 * Plain mode: the dependency folders setup made are setup's, not the worker's (docs/attempt.md "What the check can
 * read", plain mode). Worktree mode keeps what setup made and git ignores (run/undelivered.ts); plain mode has no git
 * to say what is ignored, and its snapshots (run/dir-snapshot.ts) do not walk `node_modules`, so a worker could rewrite
 * the test runner setup installed (`node_modules/runner/run.sh` → `echo all passed`) and PASS with nothing done.
 *
 * At prepare, after setup, every entry under each folder named in DEPENDENCY_DIRS that setup left is recorded by its
 * stat key (type, inode, size, mtime, ctime, mode; a folder by inode and mode alone, as entries come and go in it). At
 * each seal, before the sealed snapshot is taken:
 * - an entry of setup's that is gone or whose key changed is named (`changed`): the attempt cannot PASS, since the check
 *   would run setup's dependencies as the worker left them (judged after the check, as the seal's other problems);
 * - an entry setup's folders did not hold (a worker's `npm install`, a `.pth` file, a `runner.js` beside `runner/`),
 *   and a new folder (or link) of one of those names anywhere else in the task dir (a `tests/node_modules` that would
 *   shadow the root's), is moved out of the check's sight into the attempt's record (`moved`; `unmoved`: could not be,
 *   a problem too).
 * The same judgement runs again right after a passing check and a passing suite (run/check-writes.ts putBackJudged):
 * code of the work's that the check ran must not have changed setup's runner for the suite, the readers or the
 * delivered dir either. Tools' caches inside those folders (CACHE_DIRS: `node_modules/.cache`, `.vite`) are nobody's:
 * never recorded, moved aside at every judgement, so neither a worker's nor an earlier check's cache reaches a check,
 * and a check that rewrites setup's cache does not fail the honest retry after it.
 * Nothing is compared when setup made no such folder: a task without setup, or whose setup installed nothing, has its
 * `node_modules` as its own work. Names are handled as bytes (latin1 strings), links are never followed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { moveOut, statKey } from './undelivered';

/**
 * Folder names whose content setup installs: npm's and Yarn's, Python's virtual environments and PEP 582 folder,
 * Composer's, Bundler's and Go's `vendor`.
 */
export const DEPENDENCY_DIRS: ReadonlySet<string> = new Set(['node_modules', '.venv', 'venv', '__pypackages__', '.yarn', 'vendor']);

/** Folder names of tools' caches inside a dependency folder: recorded by nobody, moved aside at every judgement. */
export const CACHE_DIRS: ReadonlySet<string> = new Set(['.cache', '.vite']);

/** What setup left in its dependency folders: `roots` (relative paths, latin1) and every entry under them → stat key. */
export interface SetupDeps {
  roots: string[];
  entries: Map<string, string>;
  /**
   * The task dir's top-level names when the record was taken, and every package.json outside the dependency folders
   * with its `name` then (null: none): what {@link shadowsOf} compares a seal's tree with.
   */
  top?: { names: string[]; packageJsons: [string, string | null][] };
}

/** What a seal found against {@link SetupDeps} (relative paths as shown: fs/byte-names strings are not needed here). */
export interface SetupDepsJudgement {
  /** Setup's entries gone or changed. */
  changed: string[];
  /** Entries setup did not leave, moved into the attempt's record. */
  moved: string[];
  /** Such entries that could not be moved (still in the check's sight). */
  unmoved: string[];
}

/**
 * Records setup's dependency folders in `dir` (plain mode, after setup); null when there are none.
 * Never throws for one entry: an unreadable folder gets a key no later walk matches.
 */
export function recordSetupDeps(taskDir: string): SetupDeps | null {
  const dir = latin1(taskDir);
  const roots = dependencyRoots(dir, new Set());
  if (!roots.length) return null;
  const entries = new Map<string, string>();
  for (const root of roots)
    walk(dir, root, (rel, key) => {
      if (isCache(rel)) return false;
      entries.set(rel, key);
      return true;
    });
  return { roots, entries, top: { names: names(dir) ?? [], packageJsons: packageJsons(dir) } };
}

/**
 * Judges `dir` against setup's record `deps` at a seal, moving what setup's folders did not hold (and new dependency
 * folders elsewhere) under `aside` (made when needed), each at its relative path.
 */
export function judgeSetupDeps(taskDir: string, deps: SetupDeps, asideDir: string): SetupDepsJudgement {
  const [dir, aside] = [latin1(taskDir), latin1(asideDir)];
  const out: SetupDepsJudgement = { changed: [], moved: [], unmoved: [] };
  const seen = new Set<string>();
  const added: string[] = [];
  for (const root of deps.roots)
    walk(dir, root, (rel, key) => {
      seen.add(rel);
      const was = deps.entries.get(rel);
      if (was === undefined || isCache(rel)) {
        added.push(rel);
        return false; // a new folder moves whole
      }
      if (was !== key) out.changed.push(rel);
      return true;
    });
  for (const rel of deps.entries.keys()) if (!seen.has(rel)) out.changed.push(rel);
  out.changed.push(...shadowsOf(dir, deps));
  added.push(...dependencyRoots(dir, new Set(deps.roots)));
  for (const rel of added) {
    try {
      moveOut(`${dir}/${rel}`, `${aside}/${rel}`);
      out.moved.push(rel);
    } catch {
      out.unmoved.push(rel);
    }
  }
  return out;
}

/** `runs/<id>/tasks/<key>/setup-deps.json`: the record kept for a later orchestrator of the run. */
export function setupDepsFile(taskRunDir: string): string {
  return path.join(taskRunDir, 'setup-deps.json');
}

/** Keeps `deps` in `file` (for a later orchestrator of the run: verdict resume). Never throws. */
export function saveSetupDeps(file: string, deps: SetupDeps): void {
  try {
    fs.writeFileSync(file, JSON.stringify({ roots: deps.roots, entries: [...deps.entries], top: deps.top }));
  } catch {
    // a resumed run then has no record, and compares nothing
  }
}

/** The record {@link saveSetupDeps} kept, or null (none kept, or unreadable). */
export function loadSetupDeps(file: string): SetupDeps | null {
  try {
    const data = JSON.parse(fs.readFileSync(file, 'utf8')) as { roots?: unknown; entries?: unknown; top?: SetupDeps['top'] };
    if (!Array.isArray(data.roots) || !Array.isArray(data.entries)) return null;
    return { roots: data.roots as string[], entries: new Map(data.entries as [string, string][]), ...(data.top ? { top: data.top } : {}) };
  } catch {
    return null;
  }
}

/** The reason a seal's `changed` entries fail an attempt: which, and what to do instead. Pure. */
export function setupDepsReason(changed: readonly string[]): string {
  const shown = `${changed.slice(0, 5).map(showLatin1).join(', ')}${changed.length > 5 ? `, … (${changed.length})` : ''}`;
  return `the work changed, deleted or shadowed what setup installed (${shown}): the check would run setup's dependencies as the work left them; dependencies are setup's — change the manifest's setup (or the lock file it installs from) instead`;
}

/** The task note for what a seal moved: where it went. Pure. */
export function setupDepsMovedNote(moved: readonly string[], aside: string): string {
  return `moved out of the check's sight, into ${aside}: ${moved.slice(0, 5).map(showLatin1).join(', ')}${moved.length > 5 ? `, … (${moved.length})` : ''} (not in setup's dependency folders as setup left them; install dependencies in setup)`;
}

/**
 * Every folder named in DEPENDENCY_DIRS under `dir`, not inside `.git`, another such folder or one of `skip`, and every
 * link of such a name (a `tests/node_modules -> ../shadow` resolves like a folder).
 */
function dependencyRoots(dir: string, skip: ReadonlySet<string>): string[] {
  const roots: string[] = [];
  const stack = [''];
  while (stack.length) {
    const rel = stack.pop() as string;
    for (const name of names(path.join(dir, rel)) ?? []) {
      const child = rel ? `${rel}/${name}` : name;
      const st = fs.lstatSync(bytes(path.join(dir, child)), { throwIfNoEntry: false });
      if (!st || skip.has(child) || name === '.git') continue;
      if (DEPENDENCY_DIRS.has(name) && (st.isDirectory() || st.isSymbolicLink())) roots.push(child);
      else if (st.isDirectory()) stack.push(child);
    }
  }
  return roots.sort();
}

/**
 * Walks `root` (relative to `dir`) in pre-order, never following a link; `visit` gets each entry's relative path and
 * stat key and returns false to skip a folder's content.
 */
function walk(dir: string, root: string, visit: (rel: string, key: string) => boolean | void): void {
  const stack = [root];
  while (stack.length) {
    const rel = stack.pop() as string;
    const st = fs.lstatSync(bytes(path.join(dir, rel)), { throwIfNoEntry: false });
    if (!st) continue;
    if (!st.isDirectory()) {
      visit(rel, statKey(st));
      continue;
    }
    const inside = names(path.join(dir, rel));
    if (visit(rel, inside ? `d ${st.ino} ${st.mode}` : 'd!') === false || !inside) continue;
    for (const name of inside) stack.push(`${rel}/${name}`);
  }
}

/**
 * What at the task dir's top level now stands in for a package setup installed, by name, where setup's top level did
 * not: a new `X.py` or `X/` where X is a module in setup's site-packages (`python -m X` and a script at the top put the
 * task dir first on sys.path, so the worker's `pytest/__main__.py` would run instead of setup's pytest), and a
 * package.json anywhere outside the dependency folders whose `name` became a package in setup's node_modules (Node
 * resolves a package's own name through the nearest package.json before node_modules). Each as `<entry> (shadows <package>)`.
 */
function shadowsOf(dir: string, deps: SetupDeps): string[] {
  if (!deps.top) return [];
  const was = new Set(deps.top.names);
  const python = new Set<string>();
  const node = new Set<string>();
  for (const rel of deps.entries.keys()) {
    const py = /(?:^|\/)(?:site-packages|__pypackages__\/[^/]+\/lib)\/([^/]+)$/.exec(rel);
    if (py && !/\.(dist-info|egg-info|pth)$|^__pycache__$/.test(py[1] as string)) python.add((py[1] as string).split('.')[0] as string);
    const js = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/@.][^/]*)$/.exec(rel);
    if (js) node.add(js[1] as string);
  }
  const out: string[] = [];
  for (const name of names(dir) ?? []) {
    const mod = name.replace(/\.py$/, '');
    if (!was.has(name) && python.has(mod)) out.push(`${name} (shadows ${mod})`);
  }
  const before = new Map(deps.top.packageJsons);
  for (const [rel, pkg] of packageJsons(dir)) if (pkg !== null && pkg !== before.get(rel) && node.has(pkg)) out.push(`${rel} (its name shadows ${pkg})`);
  return out;
}

/** Every package.json under `dir` outside `.git` and the dependency folders, with its `name` (null: none or unreadable). */
function packageJsons(dir: string): [string, string | null][] {
  const out: [string, string | null][] = [];
  const stack = [''];
  while (stack.length) {
    const rel = stack.pop() as string;
    for (const name of names(rel ? `${dir}/${rel}` : dir) ?? []) {
      const child = rel ? `${rel}/${name}` : name;
      if (name === 'package.json') out.push([child, packageName(`${dir}/${child}`)]);
      else if (name !== '.git' && !DEPENDENCY_DIRS.has(name) && fs.lstatSync(bytes(`${dir}/${child}`), { throwIfNoEntry: false })?.isDirectory())
        stack.push(child);
    }
  }
  return out.sort();
}

/** The `name` of the package.json at `abs` (a regular file, at most 1 MiB), or null. */
function packageName(abs: string): string | null {
  try {
    const file = bytes(abs);
    const st = fs.lstatSync(file);
    if (!st.isFile() || st.size > 1 << 20) return null;
    const name = (JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown }).name;
    return typeof name === 'string' ? name : null;
  } catch {
    return null;
  }
}

/** True for a tool's cache folder inside a dependency folder (CACHE_DIRS), or anything in one. */
function isCache(rel: string): boolean {
  return rel.split('/').some((part, i) => i > 0 && CACHE_DIRS.has(part));
}

/** A folder's entry names as latin1 strings (bytes), or null when it cannot be listed. */
function names(abs: string): string[] | null {
  try {
    return fs.readdirSync(bytes(abs), { encoding: 'latin1' });
  } catch {
    return null;
  }
}

/** A latin1 path (bytes) as the Buffer the file system takes. */
function bytes(p: string): Buffer {
  return Buffer.from(p, 'latin1');
}

/** A JavaScript path as its UTF-8 bytes in a latin1 string, the form every path here takes. */
function latin1(p: string): string {
  return Buffer.from(p, 'utf8').toString('latin1');
}

/** A latin1 path shown as UTF-8 where its bytes are. */
function showLatin1(p: string): string {
  return Buffer.from(p, 'latin1').toString('utf8');
}
