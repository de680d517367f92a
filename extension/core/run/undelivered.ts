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
 * Paths are handled as bytes (latin1 strings, one character per byte, converted to a Buffer at every file-system
 * call): a name that is not valid UTF-8 is walked, recorded and moved exactly, never skipped as "not found".
 */
import fs from 'node:fs';
import path from 'node:path';
import { unquoteGitPath } from '../git/sealed-tree';
import { copyIndex, restoreWorktreeLinks, sealGit, worktreeDrivers, type WorktreeLinks } from '../git/worktree';
import type { DriverNames } from '../git/safe-git';

/** `runs/<id>/tasks/<key>/prepared-files`: the record of what was there before the worker ran (see the module comment). */
export function preparedFilesFile(taskRunDir: string): string {
  return path.join(taskRunDir, 'prepared-files');
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
   * Entries setup (or `include`) made that are gone and the seal does not hold (the worker deleted them), as shown to
   * people; a gone folder counts once, not each entry it held. The check never saw them, but the merge queue's
   * re-check, which runs setup again, does: a PASS without them is a FAIL (steps/seal.ts sealProblems). Absent when
   * none.
   */
  missing?: string[];
}

/** Added to a wait for the next second: file times come from the kernel's coarse clock, a few ms behind, ms. */
const RACY_MARGIN_MS = 20;
/** Walked entries between two turns of the event loop. */
const YIELD_EVERY = 2000;
/** Entries named in {@link Undelivered.shown}. */
const SHOWN = 10;

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
  if (opts.checkoutOnly) {
    fs.writeFileSync(`${file}.tmp`, '');
    fs.renameSync(`${file}.tmp`, file);
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
    const tmp = `${file}.tmp`;
    fs.rmSync(tmp, { force: true });
    const out = new ChunkWriter(tmp, 'latin1');
    let n = 0;
    // The newest ctime recorded, and whether every one is a whole second (a file system that keeps seconds only).
    let newest = 0;
    let wholeSeconds = true;
    try {
      const walk = walkEntries(bytesOf(links.dir), tops);
      for (let r = walk.next(); !r.done; r = walk.next(true)) {
        out.write(`${r.value.rel}\0${r.value.key}\0`);
        if (r.value.ctimeMs !== undefined) {
          newest = Math.max(newest, r.value.ctimeMs);
          if (r.value.ctimeMs % 1000 !== 0) wholeSeconds = false;
        }
        if (++n % YIELD_EVERY === 0) await turn();
      }
    } finally {
      out.close();
    }
    fs.renameSync(tmp, file);
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
 * A recorded entry that is gone and that the seal does not hold (setup's `.env`, deleted by the worker) is named in
 * `missing`: the check runs without it, so a PASS then is a FAIL (steps/seal.ts sealProblems).
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
  const dest = bytesOf(result.dir);
  const before = readRecords(prepared);
  let was = before.next();
  let list: ChunkWriter | null = null;
  let n = 0;
  // A recorded entry the walk passes by was not walked: gone (the worker deleted it), under an entry just moved aside
  // (changed: already named), or now in the seal (committed). Only a gone one, and only the top of what is gone, is named.
  let movedLast: string | null = null;
  let missingLast: string | null = null;
  const passBy = (rec: Entry): void => {
    if ((movedLast !== null && atOrUnder(rec.rel, movedLast)) || (missingLast !== null && atOrUnder(rec.rel, missingLast))) return;
    if (fs.lstatSync(bufferOf(`${root}/${rec.rel}`), { throwIfNoEntry: false }) !== undefined) return;
    missingLast = rec.rel;
    (result.missing ??= []).push(shownPath(rec.rel) + (rec.key.startsWith('d') ? '/' : ''));
  };
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
        passBy(was.value);
        was = before.next();
      }
      const recorded = was.done ? null : was.value;
      const same = recorded !== null && recorded.rel === e.rel;
      // A recorded folder (or one holding recorded entries: the start tree had files in it) is entered, not moved; a
      // folder that cannot be listed (`d!`) never matches. Anything else stays only when its key is the recorded one.
      const enter = e.key === 'd' && recorded !== null && (same ? recorded.key === 'd' : isUnder(recorded.rel, e.rel));
      if (enter || (same && !e.key.startsWith('d') && recorded.key === e.key)) {
        r = walk.next(true);
        continue;
      }
      const shown = shownPath(e.rel) + (e.key.startsWith('d') ? '/' : '');
      try {
        moveOut(`${root}/${e.rel}`, `${dest}/${e.rel}`);
        movedLast = e.rel;
        list ??= new ChunkWriter(`${result.dir}.txt`, 'utf8');
        list.write(`${shown}\n`);
        result.count++;
        if (result.shown.length < SHOWN) result.shown.push(shown);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') result.unmoved.push(`${shown}: ${(err as Error).message}`);
      }
      r = walk.next(false);
    }
    // What the record holds past the last entry walked.
    for (; !was.done; was = before.next()) passBy(was.value);
  } finally {
    before.return(undefined);
    list?.close();
  }
  return result;
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

/** One walked entry: its path relative to the root (bytes as latin1), its key (see statKey), its ctime (not a folder's). */
interface Entry {
  rel: string;
  key: string;
  ctimeMs?: number;
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
      yield { rel, key: statKey(st), ctimeMs: st.ctimeMs };
      continue;
    }
    let names: string[] | null = null;
    try {
      names = fs.readdirSync(abs, { encoding: 'latin1' });
    } catch {
      // unreadable (a mode the worker set): what is in it cannot be compared
    }
    const enter = yield { rel, key: names ? 'd' : 'd!' };
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
function statKey(st: fs.Stats): string {
  const type = st.isFile() ? 'f' : st.isSymbolicLink() ? 'l' : 'o';
  return `${type} ${st.ino} ${st.size} ${st.mtimeMs} ${st.ctimeMs} ${st.mode}`;
}

/** The records of `file` (`path\0key\0` each, bytes as latin1), read in chunks; none when the file is missing. */
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
      for (let i = 0; i < parts.length; i += 2) yield { rel: parts[i] as string, key: parts[i + 1] as string };
    }
  } finally {
    fs.closeSync(fd);
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
function moveOut(from: string, to: string): void {
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
