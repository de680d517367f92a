/**
 * The check judges what is delivered (docs/architecture.md "What a PASS guarantees"). In worktree
 * mode a file the check can read in the task dir is in the sealed commit, or was there before the worker ran: the
 * start commit's tree, `include`, what `setup` made (node_modules, a build folder). Everything else the seal does not
 * hold — what git ignores: a worker's own `.gitignore` entry, `build.log` under a `*.log` rule, a folder a committed
 * script sources, a file of setup's the worker rewrote — is moved out of the task dir into the attempt's record
 * (`runs/<id>/tasks/<key>/attempt-<n>/undelivered/`, listed in `undelivered.txt`) before the check, never deleted.
 *
 * How "there before the worker ran" is known: after setup, every entry the start commit's index does not hold (`git
 * ls-files --others --directory`) is walked, folders followed and symlinks not, and written to
 * `runs/<id>/tasks/<key>/prepared-files`: its path and, for what is not a folder, type, inode, size, mtime, ctime (ns)
 * and mode. An entry whose lstat differs in any of these was written, replaced or changed since (ctime cannot be set
 * from user space, and no step has a capability to change the clock). At the seal the entries the seal's index does
 * not hold are walked the same way and compared with the record in one pass: both sequences come in the same order
 * (pre-order, a folder's entries sorted by bytes; comparePaths), the record is read in chunks, so neither side is ever
 * held in memory whole. An entry not in the record, or differing from it, is moved aside whole (a new folder with
 * everything in it, by one rename); a recorded folder is entered and its entries compared.
 *
 * Setup's output as setup left it, where that is cheap and exact: at prepare, setup's small entries are copied into
 * `runs/<id>/tasks/<key>/prepared-copy/` (SetupCopier: each top of the walk — `.env`, `build/` — whole or not at all;
 * files of at most 1 MiB, symlinks as links, 4 MiB and 2,000 entries in all), their sha256 in the record. At the seal
 * an entry with a copy that the worker deleted, changed or replaced (a folder for a file) is put back from it (the
 * worker's version moved aside as above): a `touch .env` or `rm .env` no longer has the check run without setup's
 * `.env`, and an honest `make clean` has the check run on setup's build (put back with its mtimes, so make rebuilds
 * what the worker's changes made stale). One whose bytes and mode are the copy's stays. What has no copy (node_modules,
 * a big build) and is gone is named in a task note only: the check may rebuild it, and the merge re-check runs setup.
 *
 * Paths are handled as bytes (latin1 strings, one character per byte, converted to a Buffer at every file-system
 * call): a name that is not valid UTF-8 is walked, recorded and moved exactly, never skipped as "not found".
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { nameFromBytes } from '../fs/byte-names';
import { parentsAreReal } from '../fs/real-parents';
import { ignoredEntryBytes, unquoteGitPath } from '../git/sealed-tree';
import { copyIndex, restoreWorktreeLinks, sealGit, worktreeDrivers, type WorktreeLinks } from '../git/worktree';
import type { DriverNames } from '../git/safe-git';

/** `runs/<id>/tasks/<key>/prepared-files`: the record of what was there before the worker ran (see the module comment). */
export function preparedFilesFile(taskRunDir: string): string {
  return path.join(taskRunDir, 'prepared-files');
}

/**
 * `runs/<id>/tasks/<key>/prepared-copy/` beside the record `file`: the copies of setup's small entries (see the module
 * comment), out of every step's sight (VERDICT_HOME is hidden), never in the task dir.
 */
export function preparedCopyDir(file: string): string {
  return path.join(path.dirname(file), 'prepared-copy');
}

/** What {@link setAsideUndelivered} moved out of the task dir. */
export interface Undelivered {
  /** Where they went: `<attempt dir>/undelivered` (or `undelivered-<n>` when that name was taken). */
  dir: string;
  /** Entries moved (a folder counts once, whatever it held). */
  count: number;
  /** The first few of them, as shown to people (quoted when not plain printable text; a folder with a trailing `/`). */
  shown: string[];
  /** Entries that could not be moved (they are still in the task dir), each `path: error`. */
  unmoved: string[];
  /**
   * Entries setup (or `include`) made that the worker deleted or changed (or replaced), put back from their copies
   * taken at prepare, as shown to people (the top of what was put back once); the worker's version, if any, is among
   * the moved ones. The check judges the tree with them as setup left them. Absent when none.
   */
  restored?: string[];
  /**
   * Entries setup (or `include`) made that are gone, that the seal does not hold and that no copy could put back (a
   * folder too big to copy, like node_modules or a build; a file over the copy's limit), as shown to people; a gone
   * folder counts once. A task note, not a FAIL: the check may rebuild them, and the merge queue's re-check runs setup
   * again. Absent when none.
   */
  missing?: string[];
  /**
   * Files (and links) setup (or `include`) made that git ignored when the task was prepared and that the seal now holds
   * with other content than setup left, and such folders the seal now holds as a link or a file (`build -> mine`): the
   * worker changed the ignore rules (emptied `.gitignore`), or went around them, and put its own version there, which
   * the commit, the check and every later checkout would read instead of setup's (a setup that makes a file only when
   * it is missing keeps the worker's). `count` of them, the first few `shown`. A FAIL (run/steps/seal.ts sealProblems).
   * Absent when none.
   */
  replaced?: { count: number; shown: string[] };
}

/** Added to a wait for the next second: file times come from the kernel's coarse clock, a few ms behind, ms. */
const RACY_MARGIN_MS = 20;
/** Walked entries between two turns of the event loop. */
const YIELD_EVERY = 2000;
/** Entries named in {@link Undelivered.shown}. */
const SHOWN = 10;
/** Copies of setup's entries (module comment): the largest file copied, bytes; all copies together, bytes; entries. */
const COPY_FILE_MAX = 1024 * 1024;
const COPY_TOTAL_MAX = 4 * 1024 * 1024;
const COPY_ENTRIES_MAX = 2000;

/**
 * Writes the record of the untracked entries of a freshly prepared worktree (after checkout, `include` and setup,
 * before any worker) to `file`: the start commit's index is `links.baseIndex` (a copy is read), else `links.baseSha`
 * (or HEAD) read into a private index. Written beside and renamed into place. On a file system whose times are whole
 * seconds it returns only once the second of the newest ctime recorded is over (see the body). Returns the number of
 * entries recorded.
 * `checkoutOnly`: nothing wrote into the tree since its checkout (no `include`, no setup, no submodules). A checkout
 * writes only its commit's files and never a `.git` inside one (git refuses such paths), so the record is empty and is
 * written without asking git (four processes fewer per task).
 * @throws Error with git's or the file system's message
 */
export async function recordPreparedFiles(links: WorktreeLinks, file: string, opts: { checkoutOnly?: boolean } = {}): Promise<number> {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const copies = preparedCopyDir(file);
  fs.rmSync(`${copies}.tmp`, { recursive: true, force: true });
  if (opts.checkoutOnly) {
    fs.rmSync(ignoredTopsFile(file), { force: true });
    fs.writeFileSync(`${file}.tmp`, '');
    fs.renameSync(`${file}.tmp`, file);
    fs.rmSync(copies, { recursive: true, force: true });
    return 0;
  }
  const index = `${file}.index`;
  fs.rmSync(index, { force: true });
  // One read of the driver names for the whole record: setup has ended, and no worker starts before this returns.
  const drivers = await worktreeDrivers(links);
  try {
    if (links.baseIndex && fs.existsSync(links.baseIndex)) copyIndex(links.baseIndex, index);
    else await sealGit(links, index, undefined, drivers).raw(['read-tree', links.baseSha ?? 'HEAD']);
    const tops = await uncommittedTops(links, index, undefined, drivers);
    await recordIgnoredTops(links, index, ignoredTopsFile(file), tops.length > 0, drivers);
    const tmp = `${file}.tmp`;
    fs.rmSync(tmp, { force: true });
    const out = new ChunkWriter(tmp, 'latin1');
    fs.mkdirSync(`${copies}.tmp`);
    const copier = new SetupCopier(bytesOf(links.dir), bytesOf(`${copies}.tmp`), out);
    let n = 0;
    // The newest ctime recorded, and whether every one is a whole second (a file system that keeps seconds only).
    let newest = 0;
    let wholeSeconds = true;
    try {
      const walk = walkEntries(bytesOf(links.dir), tops);
      for (let r = walk.next(); !r.done; r = walk.next(true)) {
        copier.add(r.value);
        if (r.value.ctimeMs !== undefined) {
          newest = Math.max(newest, r.value.ctimeMs);
          if (r.value.ctimeMs % 1000 !== 0) wholeSeconds = false;
        }
        if (++n % YIELD_EVERY === 0) await turn();
      }
      copier.endTop();
    } finally {
      out.close();
    }
    fs.renameSync(tmp, file);
    fs.rmSync(copies, { recursive: true, force: true });
    fs.renameSync(`${copies}.tmp`, copies);
    // Where times are whole seconds, a worker that changed a file in the second setup last wrote it (same size, mtime
    // put back) would leave its key as recorded: the worker starts only once that second is over (git's racy-entry
    // problem, Documentation/technical/racy-git.txt, solved by waiting instead of reading every racy file).
    const wait = n ? racyWaitMs(newest, wholeSeconds, Date.now()) : 0;
    if (wait) await new Promise((resolve) => setTimeout(resolve, wait));
    return n;
  } finally {
    fs.rmSync(index, { force: true });
  }
}

/** `<record>.ignored`: the tops of what git ignored when the task was prepared, NUL-separated paths (bytes as latin1). */
function ignoredTopsFile(file: string): string {
  return `${file}.ignored`;
}

/**
 * Writes to `file` (beside, then renamed into place) the tops of the untracked entries git ignores in the freshly
 * prepared worktree, against the start commit's index `index`: setup's `.env`, `node_modules/`. None when `any` is
 * false (nothing untracked at all: no git asked).
 * @throws Error with git's or the file system's message
 */
async function recordIgnoredTops(links: WorktreeLinks, index: string, file: string, any: boolean, drivers: DriverNames): Promise<void> {
  const ignored = any ? (await ignoredEntryBytes(links, index, undefined, drivers)).map(topOf) : [];
  if (!ignored.length) {
    fs.rmSync(file, { force: true });
    return;
  }
  fs.writeFileSync(`${file}.tmp`, ignored.join('\0'), 'latin1');
  fs.renameSync(`${file}.tmp`, file);
}

/** The tops recorded by {@link recordIgnoredTops} (none recorded, or no record: empty). */
function readIgnoredTops(file: string): string[] {
  try {
    return fs.readFileSync(file, 'latin1').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * How long to wait before the worker may start, ms: where the recorded ctimes are whole seconds (`wholeSeconds`),
 * until the second of the newest one (`newestCtimeMs`, epoch ms) is over, plus RACY_MARGIN_MS; else 0. Pure.
 */
export function racyWaitMs(newestCtimeMs: number, wholeSeconds: boolean, now: number): number {
  if (!wholeSeconds) return 0;
  return Math.max(0, Math.floor(newestCtimeMs / 1000) * 1000 + 1000 + RACY_MARGIN_MS - now);
}

/**
 * Moves every entry of the worktree that the seal's index `sealIndex` does not hold and that the record `prepared`
 * (see {@link recordPreparedFiles}; missing: nothing was there) does not hold as it is now, into
 * `<attemptDir>/undelivered/<its path>`, and lists them (one per line) in `<attemptDir>/undelivered.txt`. A move is a
 * rename, or across file systems (an overlay tree) a copy file by file then the removal of the original, so a big
 * folder is never read into memory and a failed copy leaves the original where it was (named in `unmoved`). FIFOs,
 * sockets and devices cannot be copied: across file systems they are removed (they hold no data) and listed.
 * A recorded entry with a copy (see the module comment) that is gone or was moved aside is put back from the copy
 * under `prepared` (named in `restored`); one without a copy that is gone is named in `missing` (a task note).
 * @param timeoutMs limit of the whole search, ms: git's listing and the walk (a worker that left millions of files)
 * @param drivers the seal phase's driver names (git/worktree.ts worktreeDrivers); absent, git's are read here
 * @throws Error with git's message, or saying the search ran out of time
 */
export async function setAsideUndelivered(
  links: WorktreeLinks,
  sealIndex: string,
  prepared: string,
  attemptDir: string,
  timeoutMs?: number,
  drivers?: DriverNames,
): Promise<Undelivered> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
  const result: Undelivered = { dir: freshName(path.join(attemptDir, 'undelivered')), count: 0, shown: [], unmoved: [] };
  const tops = await uncommittedTops(links, sealIndex, timeoutMs, drivers);
  const root = bytesOf(links.dir);
  const sorter = new SealSorter(links.dir, preparedCopyDir(prepared), result, readIgnoredTops(ignoredTopsFile(prepared)));
  const before = readRecords(prepared);
  let was = before.next();
  let n = 0;
  const walk = walkEntries(root, tops);
  try {
    for (let r = walk.next(); !r.done;) {
      const e = r.value;
      if (++n % YIELD_EVERY === 0) {
        if (Date.now() > deadline)
          throw new Error(`looking for files the seal does not hold timed out after ${timeoutMs} ms (${n} entries walked); the worker left too many files`);
        await turn();
      }
      while (!was.done && comparePaths(was.value.rel, e.rel) < 0) {
        sorter.passBy(was.value);
        was = before.next();
      }
      r = walk.next(sorter.visit(e, was.done ? null : was.value));
    }
    // What the record holds past the last entry walked.
    for (; !was.done; was = before.next()) sorter.passBy(was.value);
  } finally {
    before.return(undefined);
    sorter.close();
  }
  return result;
}

/**
 * The seal's side of {@link setAsideUndelivered}: each walked entry against its record, each recorded entry the walk
 * passed by, into `result`. What differs from its record is moved aside; a recorded entry with a copy (SetupCopier)
 * that is gone or was moved aside is put back from it, so the check sees setup's output as setup left it. Nothing is
 * put back through a link or over an entry that is there: every folder above it must be a real one (lstat), and it
 * must be absent (so a file the seal holds now is never replaced).
 */
class SealSorter {
  private readonly root: string;
  private readonly dest: string;
  private readonly copies: string;
  private list: ChunkWriter | null = null;
  // The tops of what was last moved, named missing, put back: what is under one is not named again.
  private movedLast: string | null = null;
  private missingLast: string | null = null;
  private restoredLast: string | null = null;
  /** Folders put back, made 0700 so their entries can be put back in them, and their modes, set at close. */
  private readonly dirModes: { abs: Buffer; mode: number }[] = [];
  /**
   * @param ignored the tops of what git ignored when the task was prepared ({@link recordIgnoredTops}): a recorded entry
   *   under one that the seal now holds is judged by {@link judgeCommitted}
   */
  constructor(
    private readonly rootName: string,
    copies: string,
    private readonly result: Undelivered,
    private readonly ignored: readonly string[] = [],
  ) {
    this.root = bytesOf(rootName);
    this.dest = bytesOf(result.dir);
    this.copies = bytesOf(copies);
  }

  /**
   * Judges the walked entry `e` against `recorded` (the first record at or after it; null: none left): returns
   * whether to enter it. A recorded folder (or one holding recorded entries: the start tree had files in it) is
   * entered, not moved; a folder that cannot be listed (`d!`) never matches. A file or link stays when its key is the
   * recorded one, or when it has a copy and its bytes (and mode) are the copy's (touched, or put back at an earlier
   * seal). Anything else is moved aside, and put back from its copy when it has one.
   */
  visit(e: Entry, recorded: Entry | null): boolean {
    const same = recorded !== null && recorded.rel === e.rel;
    if (e.key === 'd' && recorded !== null && (same ? recorded.key === 'd' : isUnder(recorded.rel, e.rel))) return true;
    if (same && !e.key.startsWith('d') && (recorded.key === e.key || this.sameAsCopy(e, recorded))) return true;
    this.moveAside(e);
    if (same && recorded.copy !== undefined) this.putBack(recorded);
    return false;
  }

  /**
   * A recorded entry the walk passed by was not walked: gone (the worker deleted it), under an entry just moved aside
   * (changed: already named), or now in the seal (committed). A gone one with a copy is put back; else only the top
   * of what is gone is named missing.
   */
  passBy(rec: Entry): void {
    if (this.missingLast !== null && atOrUnder(rec.rel, this.missingLast)) return;
    if (this.present(rec.rel)) {
      this.judgeCommitted(rec);
      return;
    }
    if (rec.copy !== undefined && this.putBack(rec)) return;
    if (this.movedLast !== null && atOrUnder(rec.rel, this.movedLast)) return;
    this.missingLast = rec.rel;
    (this.result.missing ??= []).push(shownPath(rec.rel) + (rec.key.startsWith('d') ? '/' : ''));
  }

  /**
   * A recorded entry that is in the tree but was not walked: the seal holds it. Setup's own, untracked and not
   * ignored (a lockfile `npm install` wrote), it is the worker's to change like any file of the commit. One git ignored
   * at prepare is committed only because the worker changed the ignore rules: named in `replaced` unless it is as
   * setup left it (its recorded key, or its copy's bytes and mode).
   */
  private judgeCommitted(rec: Entry): void {
    if (!this.ignored.some((top) => atOrUnder(rec.rel, top))) return;
    const st = fs.lstatSync(bufferOf(`${this.root}/${rec.rel}`), { throwIfNoEntry: false });
    // A folder of setup's is left when it is still a folder (its entries are judged one by one); a committed link or
    // file in its place (`build -> mine`, the worker's own folder) has the check read the worker's files through it.
    if (rec.key.startsWith('d')) {
      if (!st || st.isDirectory()) return;
    } else {
      if (st && statKey(st) === rec.key) return;
      if (st && !st.isDirectory() && this.sameAsCopy({ rel: rec.rel, key: statKey(st) }, rec)) return;
    }
    const replaced = (this.result.replaced ??= { count: 0, shown: [] });
    replaced.count++;
    if (replaced.shown.length < SHOWN) replaced.shown.push(shownPath(rec.rel) + (rec.key.startsWith('d') ? '/' : ''));
  }

  /** Closes the list of moved entries, and gives the folders put back their modes (deepest first). */
  close(): void {
    this.list?.close();
    for (const { abs, mode } of this.dirModes.reverse()) {
      try {
        fs.chmodSync(abs, mode);
      } catch {
        // left 0700
      }
    }
  }

  private moveAside(e: Entry): void {
    const shown = shownPath(e.rel) + (e.key.startsWith('d') ? '/' : '');
    try {
      moveOut(`${this.root}/${e.rel}`, `${this.dest}/${e.rel}`);
      this.movedLast = e.rel;
      this.list ??= new ChunkWriter(`${this.result.dir}.txt`, 'utf8');
      this.list.write(`${shown}\n`);
      this.result.count++;
      if (this.result.shown.length < SHOWN) this.result.shown.push(shown);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.result.unmoved.push(`${shown}: ${(err as Error).message}`);
    }
  }

  /** Whether the entry `rel` is in the tree, every folder above it a real one. */
  private present(rel: string): boolean {
    if (!parentsAreReal(this.rootName, nameFromBytes(bufferOf(rel)))) return false;
    try {
      return fs.lstatSync(bufferOf(`${this.root}/${rel}`), { throwIfNoEntry: false }) !== undefined;
    } catch {
      return true;
    }
  }

  /** Whether the walked file or link `e` holds what the copy of `rec` (the same path) holds, with the same mode. */
  private sameAsCopy(e: Entry, rec: Entry): boolean {
    if (rec.copy === undefined || e.key[0] !== rec.key[0]) return false;
    const abs = bufferOf(`${this.root}/${e.rel}`);
    try {
      if (e.key.startsWith('l ')) return sha256(fs.readlinkSync(abs, { encoding: 'buffer' })) === rec.copy;
      const now = e.key.split(' ');
      const then = rec.key.split(' ');
      // type ino size mtime ctime mode: the same type, size and mode, then the same bytes.
      return now[0] === 'f' && now[2] === then[2] && now[5] === then[5] && sha256(fs.readFileSync(abs)) === rec.copy;
    } catch {
      return false;
    }
  }

  /** Puts `rec` back from its copy, naming the top of what was put back; false when it could not be (left out). */
  private putBack(rec: Entry): boolean {
    const abs = bufferOf(`${this.root}/${rec.rel}`);
    if (!parentsAreReal(this.rootName, nameFromBytes(bufferOf(rec.rel)))) return false;
    try {
      if (fs.lstatSync(abs, { throwIfNoEntry: false }) || !this.writeFromCopy(rec, abs)) return false;
    } catch {
      return false;
    }
    if (this.restoredLast === null || !atOrUnder(rec.rel, this.restoredLast)) {
      this.restoredLast = rec.rel;
      (this.result.restored ??= []).push(shownPath(rec.rel) + (rec.key.startsWith('d') ? '/' : ''));
    }
    return true;
  }

  /** Writes `rec` at `abs` (absent, its folders real) from its copy, checked against the record's sha256. */
  private writeFromCopy(rec: Entry, abs: Buffer): boolean {
    const from = bufferOf(`${this.copies}/${rec.rel}`);
    if (rec.key === 'd') {
      fs.mkdirSync(abs, { mode: 0o700 });
      this.dirModes.push({ abs, mode: parseInt(rec.copy as string, 8) & 0o777 });
      return true;
    }
    if (rec.key.startsWith('l ')) {
      const target = fs.readlinkSync(from, { encoding: 'buffer' });
      if (sha256(target) !== rec.copy) return false;
      fs.symlinkSync(target, abs);
      return true;
    }
    const data = fs.readFileSync(from);
    if (!rec.key.startsWith('f ') || sha256(data) !== rec.copy) return false;
    // type ino size mtime ctime mode: its mode and mtime as setup left them (make compares mtimes).
    const [, , , mtime, , mode] = rec.key.split(' ');
    fs.writeFileSync(abs, data, { flag: 'wx', mode: 0o600 });
    fs.chmodSync(abs, Number(mode) & 0o777);
    fs.utimesSync(abs, Number(mtime) / 1000, Number(mtime) / 1000);
    return true;
  }
}

/**
 * The entries of the worktree that `index` does not hold, as walk roots (relative, bytes as latin1, no trailing `/`):
 * what git lists as untracked (`ls-files --others --directory`), and every `.git` in a folder that holds tracked
 * files. Git never lists nor commits a path with a `.git` component (dir.c treat_path), so `lib/.git/real.sh` beside a
 * tracked `lib/impl.sh` was invisible to both the seal and the untracked listing: the check could source it while the
 * commit lacked it. The worktree's own `.git` link file at the top is not one of them.
 * @throws Error with git's message
 */
async function uncommittedTops(links: WorktreeLinks, index: string, timeoutMs?: number, drivers?: DriverNames): Promise<string[]> {
  restoreWorktreeLinks(links);
  // One listing of both (git-ls-files(1) -t: `? ` before an untracked entry, another letter before an index entry);
  // `--directory` shapes the untracked ones only. Paths quoted (core.quotePath), read back as their bytes.
  const out = await sealGit(links, index, timeoutMs, drivers).raw(['-c', 'core.quotePath=true', 'ls-files', '-t', '--cached', '--others', '--directory']);
  const tops: string[] = [];
  const dirs = new Set<string>();
  for (const line of out.split('\n')) {
    if (line.length < 3) continue;
    if (line.startsWith('? ')) {
      tops.push(topOf(unquoteGitPath(line.slice(2))));
      continue;
    }
    let rel = topOf(unquoteGitPath(line.slice(2)));
    for (let cut = rel.lastIndexOf('/'); cut > 0; cut = rel.lastIndexOf('/')) {
      rel = rel.slice(0, cut);
      if (dirs.has(rel)) break;
      dirs.add(rel);
    }
  }
  const root = bytesOf(links.dir);
  for (const dir of dirs) if (fs.lstatSync(bufferOf(`${root}/${dir}/.git`), { throwIfNoEntry: false })) tops.push(`${dir}/.git`);
  return tops;
}

/**
 * Orders paths (`/`-separated, bytes as latin1 characters) the way a pre-order walk with each folder's entries sorted
 * by bytes meets them: component by component, a path before everything under it. So `/` sorts before any other
 * character (`a/x` < `a-b`, since the folder `a` comes before the name `a-b`). Pure.
 */
export function comparePaths(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    if (ca === 47) return -1;
    if (cb === 47) return 1;
    return ca - cb;
  }
  return a.length - b.length;
}

/** Whether `p` is `top` or lies under it (both relative, `/`-separated). */
function atOrUnder(p: string, top: string): boolean {
  return p === top || isUnder(p, top);
}

/** Whether `p` lies under the folder `dir` (both relative, `/`-separated). */
function isUnder(p: string, dir: string): boolean {
  return p.length > dir.length && p.charCodeAt(dir.length) === 47 && p.startsWith(dir);
}

/**
 * One walked entry: its path relative to the root (bytes as latin1), its key (see statKey), its ctime and size (not a
 * folder's) and mode. Read back from a record: `copy`, set when a copy of it was kept at prepare (SetupCopier): a
 * file's or link's sha256 (of its bytes, of its target), a folder's mode (octal).
 */
interface Entry {
  rel: string;
  key: string;
  ctimeMs?: number;
  size?: number;
  mode?: number;
  copy?: string;
}

/**
 * Walks `tops` (relative, bytes as latin1) under `root` in pre-order, each folder's entries sorted by bytes, never
 * following a symlink. Each yield's answer says whether to enter the folder just yielded (false: not). Entries that
 * vanish meanwhile are skipped. A folder that cannot be listed gets the key `d!`, which no record matches.
 */
function* walkEntries(root: string, tops: readonly string[]): Generator<Entry, void, boolean | undefined> {
  const stack = [...tops].sort(comparePaths).reverse();
  while (stack.length) {
    const rel = stack.pop() as string;
    const abs = bufferOf(`${root}/${rel}`);
    const st = fs.lstatSync(abs, { throwIfNoEntry: false });
    if (!st) continue;
    if (!st.isDirectory()) {
      yield { rel, key: statKey(st), ctimeMs: st.ctimeMs, size: st.size, mode: st.mode };
      continue;
    }
    let names: string[] | null = null;
    try {
      names = fs.readdirSync(abs, { encoding: 'latin1' });
    } catch {
      // unreadable (a mode the worker set): what is in it cannot be compared
    }
    const enter = yield { rel, key: names ? 'd' : 'd!', mode: st.mode };
    if (!names || enter === false) continue;
    names.sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
    for (const name of names) stack.push(`${rel}/${name}`);
  }
}

/**
 * What identifies an entry's content without reading it: type, inode, size, mtime, ctime and mode. The times are ms
 * as doubles (about a quarter of a microsecond of resolution at today's epoch), so a nanosecond file system's change a
 * microsecond apart still shows.
 */
export function statKey(st: fs.Stats): string {
  const type = st.isFile() ? 'f' : st.isSymbolicLink() ? 'l' : 'o';
  return `${type} ${st.ino} ${st.size} ${st.mtimeMs} ${st.ctimeMs} ${st.mode}`;
}

/**
 * The records of `file` (`path\0key\0` each, bytes as latin1; a key ending ` #<copy>` when a copy was kept, see
 * Entry), read in chunks; none when the file is missing.
 */
function* readRecords(file: string): Generator<Entry, void, undefined> {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return;
  }
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let rest = '';
    for (;;) {
      const got = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (!got) break;
      const parts = (rest + chunk.toString('latin1', 0, got)).split('\0');
      rest = parts.pop() as string;
      // Fields come in pairs; an odd one waits for its key in the next chunk.
      if (parts.length % 2) rest = `${parts.pop() as string}\0${rest}`;
      for (let i = 0; i < parts.length; i += 2) yield recordOf(parts[i] as string, parts[i + 1] as string);
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** A record's entry: `key` split from the copy's mark it may end with. */
function recordOf(rel: string, key: string): Entry {
  const mark = key.indexOf(' #');
  return mark < 0 ? { rel, key } : { rel, key: key.slice(0, mark), copy: key.slice(mark + 2) };
}

function sha256(bytes: Buffer): string {
  return crypto.createHash('sha256').update(bytes).digest('hex');
}

/** One entry of setup's held until its top's walk ends (SetupCopier): its record, mark, and bytes or link target. */
interface Held {
  rel: string;
  key: string;
  mark: string;
  data?: Buffer;
  target?: Buffer;
}

/**
 * Writes the record of prepare's walk (`path\0key\0` each) to `out`, and keeps a copy of setup's small entries under
 * `dir` (bytes as latin1): each walk root (a top: `.env`, `build/`, `node_modules/`) is copied whole or not at all, so
 * a folder is never put back in part — whole when its files are regular files or symlinks, none over COPY_FILE_MAX,
 * and all copies together stay within COPY_TOTAL_MAX and COPY_ENTRIES_MAX (a top that does not fit takes nothing
 * from them). A top's records wait, with its bytes in memory (at most COPY_TOTAL_MAX), until its walk ends or it
 * stops fitting; those of a copied top carry their mark (Entry.copy), so the record says what has a copy.
 */
class SetupCopier {
  private top: string | null = null;
  private fits = false;
  private held: Held[] = [];
  private heldBytes = 0;
  private bytes = 0;
  private entries = 0;
  constructor(
    private readonly root: string,
    private readonly dir: string,
    private readonly out: ChunkWriter,
  ) {}

  /** The next walked entry, in walk order. */
  add(e: Entry): void {
    if (this.top === null || !atOrUnder(e.rel, this.top)) {
      this.endTop();
      this.top = e.rel;
      this.fits = true;
    }
    const held = this.fits ? this.hold(e) : null;
    if (held) {
      this.held.push(held);
      return;
    }
    if (this.fits) this.writeHeld(false);
    this.fits = false;
    this.out.write(`${e.rel}\0${e.key}\0`);
  }

  /** Ends the top being walked: its copy is written, and its records with their marks (unmarked if the copy failed). */
  endTop(): void {
    if (this.held.length) this.writeHeld(this.writeCopies());
  }

  /** `e` read for its copy, or null when it cannot have one (too big, past the limits, not a file, link or folder). */
  private hold(e: Entry): Held | null {
    if (this.entries + this.held.length >= COPY_ENTRIES_MAX) return null;
    const abs = bufferOf(`${this.root}/${e.rel}`);
    try {
      if (e.key === 'd') return { rel: e.rel, key: e.key, mark: ((e.mode ?? 0o755) & 0o777).toString(8) };
      if (e.key.startsWith('l ')) {
        const target = fs.readlinkSync(abs, { encoding: 'buffer' });
        return { rel: e.rel, key: e.key, mark: sha256(target), target };
      }
      const size = e.size ?? Infinity;
      if (!e.key.startsWith('f ') || size > COPY_FILE_MAX || this.bytes + this.heldBytes + size > COPY_TOTAL_MAX) return null;
      const data = fs.readFileSync(abs);
      if (data.length !== size) return null;
      this.heldBytes += size;
      return { rel: e.rel, key: e.key, mark: sha256(data), data };
    } catch {
      return null;
    }
  }

  /** Writes the held entries' copies under `dir`; false (and nothing of them left) when one cannot be written. */
  private writeCopies(): boolean {
    const made: Buffer[] = [];
    try {
      for (const h of this.held) {
        const to = `${this.dir}/${h.rel}`;
        fs.mkdirSync(bufferOf(to.slice(0, to.lastIndexOf('/'))), { recursive: true });
        if (h.data) fs.writeFileSync(bufferOf(to), h.data, { flag: 'wx', mode: 0o600 });
        else if (h.target) fs.symlinkSync(h.target, bufferOf(to));
        else fs.mkdirSync(bufferOf(to), { mode: 0o700 });
        made.push(bufferOf(to));
      }
      return true;
    } catch {
      for (const p of made.reverse()) fs.rmSync(p, { recursive: true, force: true });
      return false;
    }
  }

  private writeHeld(copied: boolean): void {
    for (const h of this.held) this.out.write(`${h.rel}\0${h.key}${copied ? ` #${h.mark}` : ''}\0`);
    if (copied) {
      this.bytes += this.heldBytes;
      this.entries += this.held.length;
    }
    this.held = [];
    this.heldBytes = 0;
  }
}

/** Writes text to a new file through a 64 KB buffer, encoded as `encoding` (latin1: bytes as characters). */
class ChunkWriter {
  private readonly fd: number;
  private pending = '';
  constructor(
    file: string,
    private readonly encoding: 'latin1' | 'utf8',
  ) {
    this.fd = fs.openSync(file, 'wx');
  }
  write(text: string): void {
    this.pending += text;
    if (this.pending.length >= 64 * 1024) this.flush();
  }
  close(): void {
    this.flush();
    fs.closeSync(this.fd);
  }
  private flush(): void {
    if (this.pending) fs.writeSync(this.fd, Buffer.from(this.pending, this.encoding));
    this.pending = '';
  }
}

/**
 * Moves `from` to `to` (absolute, bytes as latin1), making `to`'s parent folders: a rename, or across file systems a
 * copy of each file (the kernel's copy, nothing read into memory) followed by the original's removal, folder by folder.
 * A failed copy removes its partial copy and throws, leaving the original in place.
 * @throws Error from the file system
 */
export function moveOut(from: string, to: string): void {
  fs.mkdirSync(bufferOf(to.slice(0, to.lastIndexOf('/'))), { recursive: true });
  try {
    fs.renameSync(bufferOf(from), bufferOf(to));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    copyThenRemove(from, to);
  }
}

function copyThenRemove(from: string, to: string): void {
  const src = bufferOf(from);
  const dst = bufferOf(to);
  const st = fs.lstatSync(src);
  if (st.isDirectory()) {
    fs.mkdirSync(dst);
    for (const name of fs.readdirSync(src, { encoding: 'latin1' })) copyThenRemove(`${from}/${name}`, `${to}/${name}`);
    fs.rmdirSync(src);
  } else if (st.isSymbolicLink()) {
    fs.symlinkSync(fs.readlinkSync(src), dst);
    fs.unlinkSync(src);
  } else if (st.isFile()) {
    try {
      fs.copyFileSync(src, dst, fs.constants.COPYFILE_EXCL);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') fs.rmSync(dst, { force: true });
      throw e;
    }
    fs.unlinkSync(src);
  } else {
    fs.unlinkSync(src);
  }
}

/** `base`, or `base-2`, `base-3`… whichever does not exist yet (a folder of an attempt a resume reused). */
function freshName(base: string): string {
  let name = base;
  for (let i = 2; fs.existsSync(name) || fs.existsSync(`${name}.txt`); i++) name = `${base}-${i}`;
  return name;
}

/** A path git listed (bytes), without a folder's trailing slash, as a latin1 string. */
function topOf(entry: Buffer): string {
  const s = entry.toString('latin1');
  return s.endsWith('/') ? s.slice(0, -1) : s;
}

/** A JavaScript (UTF-16) path as bytes in a latin1 string. */
function bytesOf(p: string): string {
  return Buffer.from(p, 'utf8').toString('latin1');
}

/** A latin1 byte string as the Buffer the file system takes. */
function bufferOf(p: string): Buffer {
  return Buffer.from(p, 'latin1');
}

/**
 * A path (bytes as latin1) as shown in notes and lists: as UTF-8 text when that is what it is and it holds no control
 * or line-breaking character, else JSON-quoted with those escaped (a name could otherwise start a line of its own in
 * the run's output).
 */
function shownPath(rel: string): string {
  const bytes = bufferOf(rel);
  const text = bytes.toString('utf8');
  if (Buffer.from(text, 'utf8').equals(bytes) && !/[\u0000-\u001f\u007f-\u009f\u2028\u2029"\\]/.test(text)) return text;
  return JSON.stringify(text).replace(/[\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Lets the event loop run (other tasks' steps) between chunks of a long walk. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
