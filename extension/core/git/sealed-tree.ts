/**
 * Putting a worktree back to a sealed commit after its check ran (a retry starts from the sealed tree of the attempt
 * before it, the check's own writes discarded, so nothing a check wrote can make the next check pass). What the check may have done, and what undoes it:
 * - changed or deleted a tracked file: `read-tree -u --reset <sealed>` with a copy of the seal's index (its stat data
 *   is exact for the sealed files, so only what changed since is written again);
 * - created files git would track (`junk.txt`, a report): `git clean -ffd` against that index (not `-x`: ignored
 *   files stay);
 * - created ignored files or folders (`build/`, `.pytest_cache/`, `test.log` under a `*.log` rule): every ignored
 *   entry that was not there at the seal is removed (`ls-files --others --ignored --directory`, compared with the
 *   list taken at the seal). An ignored folder that existed at the seal (`node_modules/` from setup) is kept as it is,
 *   whatever the check wrote inside it: it is setup's or the worker's, and never committed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { copyIndex, sealGit, sealPathspecs, worktreeDrivers, type WorktreeLinks } from './worktree';
import type { DriverNames } from './safe-git';
import { removeSpecialFiles } from './special-files';
import { parseRawZ, workingBlobId } from './sealed-bytes';
import { showPath } from '../fs/byte-names';

/** What a worktree held when it was sealed: the commit, a copy of the seal's index, the ignored entries. */
export interface SealedTree {
  /** The sealed commit (or, before any worker, the tree: see recordWorktreeTree). */
  sha: string;
  /** A copy of the index the seal built (kept until the next seal replaces it). */
  index: string;
  /** `git ls-files --others --ignored --exclude-standard --directory` at the seal, as listed. */
  ignored: string[];
}

/**
 * Records the worktree as sealed: keeps a copy of `sealIndex` at `keepIndex` and lists the ignored entries.
 * @param drivers the seal phase's driver names (worktree.ts worktreeDrivers); absent, git's are read here
 * @throws Error with git's message
 */
export async function recordSealedTree(links: WorktreeLinks, sha: string, sealIndex: string, keepIndex: string, drivers?: DriverNames): Promise<SealedTree> {
  fs.mkdirSync(path.dirname(keepIndex), { recursive: true });
  fs.rmSync(keepIndex, { force: true });
  copyIndex(sealIndex, keepIndex);
  return { sha, index: keepIndex, ignored: await ignoredEntries(links, keepIndex, undefined, drivers) };
}

/**
 * Records a worktree as it is now without a commit (before any worker: after checkout and setup): its tree is written
 * with a private index kept at `keepIndex` (from the checkout's own index when there is one, so only files setup
 * changed are hashed), and the ignored entries are listed. {@link resetToSealed} takes it like a sealed commit.
 * @throws Error with git's message
 */
export async function recordWorktreeTree(links: WorktreeLinks, keepIndex: string): Promise<SealedTree> {
  // One read of the driver names for the whole record (nothing untrusted runs until it returns).
  const drivers = await worktreeDrivers(links);
  fs.mkdirSync(path.dirname(keepIndex), { recursive: true });
  fs.rmSync(keepIndex, { force: true });
  const git = sealGit(links, keepIndex, undefined, drivers);
  if (links.baseIndex && fs.existsSync(links.baseIndex)) copyIndex(links.baseIndex, keepIndex);
  else await git.raw(['read-tree', links.baseSha ?? 'HEAD']);
  await git.raw(['-c', 'core.trustctime=true', '-c', 'core.checkStat=default', 'add', '-A', ...sealPathspecs(links)]);
  const tree = (await git.raw(['write-tree'])).trim();
  return { sha: tree, index: keepIndex, ignored: await ignoredEntries(links, keepIndex, undefined, drivers) };
}

/** What {@link resetToSealed} changed, for the task's notes: paths removed (new since the seal) and put back. */
export interface ResetReport {
  removed: string[];
  restored: string[];
}

/**
 * Longest any one git command of {@link resetToSealed} may run, ms. The tree holds what a check wrote: a FIFO named
 * `.gitignore` in a tracked folder blocks git's open of it forever, which must end the attempt, not hang the run.
 */
export const RESET_GIT_TIMEOUT_MS = 300_000;

/**
 * Puts the worktree back to `sealed` (see the module comment). HEAD and the worktree's own index are not touched.
 * First every FIFO, socket and device file in the tree is removed (git cannot hold them, and git's open of a
 * `.gitignore` or `.gitattributes` the check made a FIFO waits forever; git/special-files.ts). New untracked entries
 * are removed by Verdict from git's list, as `git clean -ffd` would remove them, their paths taken as bytes (a name
 * that is not valid UTF-8 is removed, not missed); each git command stops after `timeoutMs`.
 * @param timeoutMs limit of each git command, ms (default RESET_GIT_TIMEOUT_MS)
 * @throws Error with git's message, or saying which command ran out of time
 */
export async function resetToSealed(links: WorktreeLinks, sealed: SealedTree, timeoutMs = RESET_GIT_TIMEOUT_MS): Promise<ResetReport> {
  // One read of the driver names for the whole reset, after the check ended (nothing untrusted runs until it returns).
  const drivers = await worktreeDrivers(links);
  const special = (await removeSpecialFiles(links.dir, { upper: links.overlay?.upper, timeoutMs })).map((f) => showPath(f.path));
  const index = `${sealed.index}.reset`;
  fs.rmSync(index, { force: true });
  copyIndex(sealed.index, index);
  try {
    const git = sealGit(links, index, timeoutMs, drivers);
    // What differs from the sealed tree, before it is put back (for the report).
    await git.raw(['update-index', '-q', '--refresh', '--ignore-submodules']).catch(() => '');
    // Left out: a file whose bytes are still its sealed blob, listed only because git's conversions (a `text`
    // attribute over a blob committed with CRLF, kept as committed by the seal) would store it otherwise.
    const changed = parseRawZ(await git.rawBytes(['diff-files', '-z', '--ignore-submodules=all']))
      .filter((c) => c.status === 'D' || workingBlobId(Buffer.concat([Buffer.from(`${links.dir}${path.sep}`), c.bytes]), c.srcId.length) !== c.srcId)
      .map((c) => showPath(c.bytes));
    await git.raw(['read-tree', '-u', '--reset', sealed.sha]);
    const cleaned = splitZ(await git.rawBytes(['ls-files', '-z', '--others', '--exclude-standard', '--directory']));
    // git's own paths, relative to the worktree (an untracked folder as `dir/`, a nested repository too): what
    // `git clean -ffd` would remove, removed without git opening anything inside them.
    const root = Buffer.from(`${links.dir}${path.sep}`);
    for (const e of cleaned) fs.rmSync(Buffer.concat([root, e]), { recursive: true, force: true });
    const before = new Set(sealed.ignored);
    const fresh = (await ignoredEntryBytes(links, index, timeoutMs, drivers)).filter((e) => !before.has(e.toString('utf8')));
    for (const e of fresh) fs.rmSync(Buffer.concat([root, e]), { recursive: true, force: true });
    return { removed: [...special, ...cleaned.map(showPath), ...fresh.map(showPath)].sort(), restored: changed.sort() };
  } finally {
    fs.rmSync(index, { force: true });
  }
}

/** NUL-ended records (git's `-z` output) as Buffers, empty ones left out. */
function splitZ(out: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  for (let at = 0; at < out.length;) {
    let end = out.indexOf(0, at);
    if (end < 0) end = out.length;
    if (end > at) parts.push(out.subarray(at, end));
    at = end + 1;
  }
  return parts;
}

/**
 * The untracked entries git ignores against the index `indexFile` (a wholly ignored folder once, as `dir/`), as bytes:
 * each a path of git's, relative to the worktree.
 * @throws Error with git's message
 */
export async function ignoredEntryBytes(links: WorktreeLinks, indexFile: string, timeoutMs?: number, drivers?: DriverNames): Promise<Buffer[]> {
  return splitZ(await sealGit(links, indexFile, timeoutMs, drivers).rawBytes(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']));
}

/** Ignored untracked entries (a wholly ignored folder as `dir/`), against the index `indexFile`. */
async function ignoredEntries(links: WorktreeLinks, indexFile: string, timeoutMs?: number, drivers?: DriverNames): Promise<string[]> {
  const out = await sealGit(links, indexFile, timeoutMs, drivers).raw(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory']);
  return out.split('\0').filter(Boolean).sort();
}

/** C escapes git uses in a quoted path (quote.c `sq_lookup`), by the letter after the backslash. */
const C_ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/**
 * A path as git prints it with `core.quotePath` (git-config(1) core.quotePath; quote.c `quote_c_style`): plain, or
 * between double quotes with C escapes and `\ooo` octal bytes. Returns its bytes. Pure.
 * @throws Error naming the line when a quoted path is malformed
 */
export function unquoteGitPath(line: string): Buffer {
  if (!line.startsWith('"')) return Buffer.from(line, 'utf8');
  if (!line.endsWith('"') || line.length < 2) throw new Error(`git printed a malformed quoted path: ${JSON.stringify(line)}`);
  const bytes: number[] = [];
  const body = line.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i] as string;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const next = body[i + 1] ?? '';
    if (/[0-7]/.test(next)) {
      const oct = /^[0-7]{3}/.exec(body.slice(i + 1))?.[0];
      if (!oct) throw new Error(`git printed a malformed quoted path: ${JSON.stringify(line)}`);
      bytes.push(parseInt(oct, 8));
      i += 3;
    } else if (next in C_ESCAPES) {
      bytes.push(C_ESCAPES[next] as number);
      i += 1;
    } else {
      throw new Error(`git printed a malformed quoted path: ${JSON.stringify(line)}`);
    }
  }
  return Buffer.from(bytes);
}
