/**
 * Inputs (docs/workflows.md "Inputs"): a task reads its prerequisites' sealed work as read-only copies under neutral
 * names. This module holds the pure part — which names the copies get and where each goes — and the copying itself:
 * from a sealed commit (worktree mode: the tree objects, read through git, never a checkout) or from a sealed snapshot
 * (plain mode: run/dir-snapshot.ts copies), into a fresh folder outside every task dir. The step that runs it and
 * shows the folder read-only to the worker is run/steps/inputs.ts.
 *
 * What an upstream worker planted cannot escape the folder: a symlink is copied as a symlink (its target as written,
 * never followed, never written through), a path whose parent is not a real folder of the copy is skipped, special
 * files and submodules are left out, and sizes are capped (INPUTS_FILE_BYTES per file, INPUTS_TOTAL_BYTES and
 * INPUTS_MAX_ENTRIES per task): what is left out is listed with the reason, never silently dropped.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { TaskInputs, TaskSpec } from '../manifest/types';
import { gitFor, safeGitConfigArgs } from '../git/safe-git';
import { keptContent, type DirSnapshot } from './dir-snapshot';
import { MAX_ANONYMOUS } from '../manifest/inputs-names';

export { MAX_ANONYMOUS };

/** A file larger than this is left out of the inputs (listed as omitted), bytes. */
export const INPUTS_FILE_BYTES = 8 * 1024 * 1024;
/** The copies of one task's inputs stop at this total (later files are listed as omitted), bytes. */
export const INPUTS_TOTAL_BYTES = 64 * 1024 * 1024;
/** At most this many entries (files, links, folders) are copied per task. */
export const INPUTS_MAX_ENTRIES = 20_000;

/** One source placed in the inputs folder. */
export interface PlacedInput {
  /** The prerequisite's key (never shown to the worker when anonymous). */
  key: string;
  /** Whom its name stands for (the key, or the council member that wrote it). */
  member: string;
  /** Its name: the member's key, or its letter. */
  name: string;
  /** Path under the inputs folder, `/`-separated: `[<folder>/]<name>`. */
  rel: string;
}

/**
 * Where each source of `inputs` goes, given the scope's names (member → letter; ignored when not anonymous).
 * Sources whose key or member is in `exclude` (or is `self`) are dropped and returned in `excluded`, so a council
 * reviewer can never be shown its own answer whatever the map says.
 * @throws Error when an anonymous member has no name, or two sources would land on one path
 */
export function placeInputs(inputs: TaskInputs, self: string, names: Readonly<Record<string, string>>): { placed: PlacedInput[]; excluded: string[] } {
  const placed: PlacedInput[] = [];
  const excluded: string[] = [];
  const never = new Set([...(inputs.exclude ?? []), self]);
  for (const src of inputs.from) {
    const member = src.member ?? src.key;
    if (never.has(src.key) || never.has(member)) {
      excluded.push(src.key);
      continue;
    }
    const name = inputs.anonymous ? names[member] : member;
    if (!name) throw new Error(`inputs: no name was drawn for ${member}`);
    const rel = src.folder ? `${src.folder}/${name}` : name;
    if (placed.some((p) => p.rel === rel)) throw new Error(`inputs: two sources would both be ${rel}`);
    placed.push({ key: src.key, member, name, rel });
  }
  return { placed, excluded };
}

/**
 * Whether `task` reads prerequisite `key` as an input: then, in worktree mode, its branch does not start from that
 * prerequisite's commit (its work is beside the task, in VERDICT_INPUTS, not merged into its tree).
 */
export function readsAsInput(task: Pick<TaskSpec, 'inputs'>, key: string): boolean {
  return task.inputs?.from.some((s) => s.key === key) ?? false;
}

/** The members of an anonymous scope that `inputs` names (in order, each once). */
export function inputMembers(inputs: TaskInputs): string[] {
  return [...new Set(inputs.from.map((s) => s.member ?? s.key))];
}

/**
 * Letters for `members` (A, B, …) in a random order (crypto random), added to `known` for members it does not name yet
 * (so every task of a scope gets the same letter for a member, whichever asks first). Returns the completed map.
 * @throws Error past MAX_ANONYMOUS members
 */
export function drawNames(
  members: readonly string[],
  known: Readonly<Record<string, string>> = {},
  randomInt: (max: number) => number = crypto.randomInt,
): Record<string, string> {
  const out = { ...known };
  const used = new Set(Object.values(out));
  const fresh = members.filter((m) => out[m] === undefined);
  const free = Array.from({ length: MAX_ANONYMOUS }, (_, i) => String.fromCharCode(65 + i)).filter((l) => !used.has(l));
  if (fresh.length > free.length) throw new Error(`inputs: ${used.size + fresh.length} members to name anonymously; at most ${MAX_ANONYMOUS}`);
  // The lowest free letters, shuffled (Fisher–Yates), so letters stay A, B, C… yet say nothing of the order of `members`.
  const letters = free.slice(0, fresh.length);
  for (let i = letters.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [letters[i], letters[j]] = [letters[j] as string, letters[i] as string];
  }
  fresh.forEach((m, i) => (out[m] = letters[i] as string));
  return out;
}

/** What one copy left out, and why (`too large: 9000000 bytes > 8388608`, `a submodule`, `a special file`…). */
export interface Omitted {
  path: string;
  reason: string;
}

/** A running budget shared by the copies of one task's inputs. */
export interface CopyBudget {
  bytes: number;
  entries: number;
}

/** One tree entry to write: a folder, a regular file (executable or not) or a symlink (its target as written). */
type TreeEntry =
  | { rel: string; kind: 'dir' }
  /** `missing`: why a file whose content `read` cannot give is left out. */
  | { rel: string; kind: 'file'; exec: boolean; size: number; read: () => Promise<Buffer | null>; missing: string }
  | { rel: string; kind: 'symlink'; target: string };

/** A symlink whose target is longer than this is left out (no file system takes one), bytes. */
export const INPUTS_LINK_BYTES = 4095;

/**
 * Writes `entries` under `dest` (which must exist and be empty), never following a link: each path's parents must be
 * folders this copy made; a file is created exclusively (`wx`), a symlink with its target verbatim. Returns what was
 * left out.
 */
async function writeTree(dest: string, entries: readonly TreeEntry[], budget: CopyBudget, label: string): Promise<Omitted[]> {
  const omitted: Omitted[] = [];
  const made = new Set<string>(['']);
  const omit = (rel: string, reason: string) => omitted.push({ path: `${label}/${rel}`, reason });
  for (const e of entries) {
    const parts = e.rel.split('/');
    if (!e.rel || parts.some((p) => p === '' || p === '.' || p === '..')) {
      omit(e.rel, 'an unsafe path');
      continue;
    }
    if (budget.entries >= INPUTS_MAX_ENTRIES) {
      omit(e.rel, `more than ${INPUTS_MAX_ENTRIES} entries`);
      continue;
    }
    // Parents: made by this copy, or made now as real folders (lstat: a link is never a parent).
    let ok = true;
    for (let i = 1; i < parts.length && ok; i++) {
      const rel = parts.slice(0, i).join('/');
      if (made.has(rel)) continue;
      const abs = path.join(dest, rel);
      try {
        if (fs.lstatSync(abs, { throwIfNoEntry: false })) ok = false;
        else {
          fs.mkdirSync(abs);
          made.add(rel);
        }
      } catch {
        ok = false;
      }
    }
    if (!ok) {
      omit(e.rel, 'its parent is not a folder of the copy');
      continue;
    }
    const abs = path.join(dest, e.rel);
    let there: boolean;
    try {
      there = fs.lstatSync(abs, { throwIfNoEntry: false }) !== undefined;
    } catch (err) {
      // Its parents fit but the whole path does not (ENAMETOOLONG under the inputs folder): left out, said.
      omit(e.rel, `it could not be written: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      continue;
    }
    if (there) {
      omit(e.rel, 'the path is there twice');
      continue;
    }
    try {
      if (!(await writeEntry(e, abs, budget, omit))) continue;
    } catch (err) {
      // One entry the file system refuses (a name too long, a full disk) is left out, said; the others go on.
      omit(e.rel, `it could not be written: ${(err as Error).message}`);
      continue;
    }
    if (e.kind === 'dir') made.add(e.rel);
    budget.entries++;
  }
  return omitted;
}

/** Writes one entry at `abs` (its parents exist); false when it was left out (`omit` was told why). */
async function writeEntry(e: TreeEntry, abs: string, budget: CopyBudget, omit: (rel: string, reason: string) => void): Promise<boolean> {
  if (e.kind === 'dir') {
    fs.mkdirSync(abs);
  } else if (e.kind === 'symlink') {
    if (Buffer.byteLength(e.target) > INPUTS_LINK_BYTES || e.target.includes('\0') || !e.target) {
      omit(e.rel, `a link whose target is empty, holds a NUL or is longer than ${INPUTS_LINK_BYTES} bytes`);
      return false;
    }
    fs.symlinkSync(e.target, abs);
  } else {
    if (e.size > INPUTS_FILE_BYTES) {
      omit(e.rel, `too large: ${e.size} bytes (at most ${INPUTS_FILE_BYTES} per file)`);
      return false;
    }
    if (budget.bytes + e.size > INPUTS_TOTAL_BYTES) {
      omit(e.rel, `the inputs reached their cap of ${INPUTS_TOTAL_BYTES} bytes`);
      return false;
    }
    const content = await e.read();
    if (content === null) {
      omit(e.rel, e.missing);
      return false;
    }
    // Created exclusively and without following a link: nothing already there (or planted since) is written through.
    const fd = fs.openSync(abs, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, e.exec ? 0o755 : 0o644);
    try {
      fs.writeFileSync(fd, content);
    } finally {
      fs.closeSync(fd);
    }
    budget.bytes += content.length;
  }
  return true;
}

/**
 * Copies the tree of `commit` (worktree mode: a sealed commit of the repository at `root`) into `dest`, from git's
 * objects (ls-tree, cat-file; no checkout, no filter, no hook). Symlinks stay links; submodules are left out.
 * @throws Error from git (an unknown commit)
 */
export async function copyCommitTree(root: string, commit: string, dest: string, budget: CopyBudget, label: string): Promise<Omitted[]> {
  const listing = await gitFor(root).raw(['ls-tree', '-r', '-t', '-z', '-l', '--full-tree', commit]);
  const omitted: Omitted[] = [];
  // In listing order (a folder before what it holds): folders, and blobs whose content is read below.
  const listed: ({ rel: string; dir: true } | { rel: string; dir: false; sha: string; size: number; exec: boolean; link: boolean })[] = [];
  // `<mode> SP <type> SP <object> SP+ <size> TAB <path>`, NUL-terminated (git-ls-tree(1) --long).
  for (const line of listing.split('\0')) {
    const m = /^(\d+) (\w+) ([0-9a-f]+) +(-|\d+)\t(.+)$/s.exec(line);
    if (!m) continue;
    const [, mode, type, sha, size, rel] = m as unknown as [string, string, string, string, string, string];
    if (type === 'tree') listed.push({ rel, dir: true });
    else if (type === 'commit') omitted.push({ path: `${label}/${rel}`, reason: 'a submodule' });
    else listed.push({ rel, dir: false, sha, size: Number(size), exec: mode === '100755', link: mode === '120000' });
  }
  // Contents are read in one `git cat-file --batch`, only for what the copy will write: link targets that fit, and the
  // files that fit the per-file cap and, in order, the total left (the same greedy choice writeTree makes).
  const wanted: string[] = [];
  let room = INPUTS_TOTAL_BYTES - budget.bytes;
  for (const b of listed) {
    if (b.dir || (b.link ? b.size > INPUTS_LINK_BYTES : b.size > INPUTS_FILE_BYTES || b.size > room)) continue;
    wanted.push(b.sha);
    if (!b.link) room -= b.size;
  }
  const contents = await catFileBatch(root, wanted, INPUTS_TOTAL_BYTES + wanted.length * (INPUTS_LINK_BYTES + 128));
  const entries = listed.map((b): TreeEntry => {
    if (b.dir) return { rel: b.rel, kind: 'dir' };
    if (b.link) return { rel: b.rel, kind: 'symlink', target: contents.get(b.sha)?.toString('utf8') ?? '' };
    return { rel: b.rel, kind: 'file', exec: b.exec, size: b.size, read: async () => contents.get(b.sha) ?? null, missing: 'git could not read its content' };
  });
  return [...omitted, ...(await writeTree(dest, entries, budget, label))];
}

/**
 * The contents of `shas` (blobs), read with one `git cat-file --batch`; reading stops past `maxBytes` (the blobs not
 * read then are absent from the map).
 */
function catFileBatch(root: string, shas: readonly string[], maxBytes: number): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  if (!shas.length) return Promise.resolve(out);
  return new Promise((resolve, reject) => {
    const child = spawn('git', [...safeGitConfigArgs({ repo: root }), 'cat-file', '--batch'], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, GIT_DIR: undefined, GIT_WORK_TREE: undefined, GIT_INDEX_FILE: undefined },
    });
    let buf = Buffer.alloc(0);
    let total = 0;
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      total += d.length;
      if (total > maxBytes) {
        child.kill('SIGKILL');
        return;
      }
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const nl = buf.indexOf(0x0a);
        if (nl < 0) return;
        const header = buf.subarray(0, nl).toString('utf8');
        const m = /^([0-9a-f]+) (\w+) (\d+)$/.exec(header);
        if (!m) {
          // `<sha> missing`: nothing follows
          buf = buf.subarray(nl + 1);
          continue;
        }
        const size = Number(m[3]);
        if (buf.length < nl + 1 + size + 1) return;
        out.set(m[1] as string, Buffer.from(buf.subarray(nl + 1, nl + 1 + size)));
        buf = buf.subarray(nl + 1 + size + 1);
      }
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 || total > maxBytes ? resolve(out) : reject(new Error(`git cat-file exited ${code}: ${stderr.trim()}`))));
    child.stdin.on('error', () => undefined);
    child.stdin.end(`${shas.join('\n')}\n`);
  });
}

/**
 * Copies a sealed snapshot (plain mode: the entries and kept copies of run/dir-snapshot.ts) into `dest`. A file whose
 * copy was not kept (larger than the snapshot keeps) is listed as omitted; `other` entries (fifos, devices) too.
 */
export async function copySnapshot(snap: DirSnapshot, dest: string, budget: CopyBudget, label: string): Promise<Omitted[]> {
  const entries: TreeEntry[] = [];
  const omitted: Omitted[] = [];
  for (const [rel, e] of [...snap.entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (e.kind === 'dir') entries.push({ rel, kind: 'dir' });
    else if (e.kind === 'symlink') entries.push({ rel, kind: 'symlink', target: e.target ?? '' });
    else if (e.kind === 'file') {
      const size = e.kept && snap.store && e.sha ? (fs.statSync(path.join(snap.store, e.sha), { throwIfNoEntry: false })?.size ?? 0) : 0;
      entries.push({
        rel,
        kind: 'file',
        exec: (e.mode & 0o111) !== 0,
        size,
        read: async () => keptContent(snap, e),
        missing: 'no copy of it was kept when it was sealed (plain mode keeps files up to 2 MiB, 128 MiB in all)',
      });
    } else omitted.push({ path: `${label}/${rel}`, reason: 'not a file, folder or link' });
  }
  return [...omitted, ...(await writeTree(dest, entries, budget, label))];
}
