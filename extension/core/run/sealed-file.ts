/**
 * One file of an attempt's work as it was sealed (what the check judged): in worktree mode the blob in the sealed
 * commit, found through the tree objects (no pathspec, no symlink followed); in plain mode a regular file inside the
 * task dir, not a symlink, opened without following links. Read by step `generate` (a planner's tasks file) and step
 * `critique` (a criticism's file and line).
 */
import fs from 'node:fs';
import path from 'node:path';
import { gitFor } from '../git/safe-git';
import type { Seal } from '../git/worktree';

/**
 * The text of `rel` (relative to the task dir, already normalized by the caller) as sealed.
 * @param repoRoot worktree mode: the repository; null in plain mode (then `taskDir` is read)
 * @param seal worktree mode: the attempt's seal; null in plain mode
 * @param maxBytes a larger file is refused
 * @param limit how the refusal names the limit (after `the file is N bytes; `)
 * @throws Error saying why the file cannot be read (missing, a symlink or folder, too big)
 */
export async function readSealedFile(
  repoRoot: string | null,
  seal: Seal | null,
  taskDir: string,
  rel: string,
  maxBytes: number,
  limit = `at most ${maxBytes} bytes are read`,
): Promise<string> {
  const tooBig = (n: number) => new Error(`the file is ${n} bytes; ${limit}`);
  if (repoRoot && seal) {
    const git = gitFor(repoRoot);
    const dir = path.posix.dirname(path.posix.normalize(rel));
    const name = path.posix.basename(rel);
    const treeish = dir === '.' ? `${seal.sha}^{tree}` : `${seal.sha}:${dir}`;
    const listing = await git.raw(['ls-tree', '-z', treeish]).catch(() => '');
    // `<mode> SP <type> SP <object> TAB <name>` per entry, NUL-terminated (git-ls-tree(1)).
    const entry = listing
      .split('\0')
      .map((l) => /^(\d+) (\w+) ([0-9a-f]+)\t(.*)$/s.exec(l))
      .find((m) => m?.[4] === name);
    if (!entry) throw new Error('the file is not in the sealed commit');
    if (entry[1] !== '100644' && entry[1] !== '100755')
      throw new Error(`the file is not a regular file in the sealed commit (git mode ${entry[1]}${entry[1] === '120000' ? ', a symlink' : ''})`);
    const size = Number((await git.raw(['cat-file', '-s', entry[3] as string])).trim());
    if (size > maxBytes) throw tooBig(size);
    return git.raw(['cat-file', 'blob', entry[3] as string]);
  }
  const file = path.join(taskDir, rel);
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  if (!st) throw new Error('the file does not exist');
  if (!st.isFile()) throw new Error('the file is not a regular file (a symlink, a folder or a device)');
  const real = fs.realpathSync(file);
  if (!real.startsWith(fs.realpathSync(taskDir) + path.sep)) throw new Error('the file is reached through a symlink out of the task dir');
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    const opened = fs.fstatSync(fd);
    if (!opened.isFile()) throw new Error('the file is not a regular file');
    if (opened.size > maxBytes) throw tooBig(opened.size);
    return fs.readFileSync(fd, 'utf8');
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The first of `rels` (relative to the task dir, already normalized by the caller) that is a regular file of the
 * attempt's work as sealed, or null when none is. Worktree mode: one `git ls-tree` of the sealed commit for all of them
 * (literal pathspecs, no symlink followed: a symlink's entry has mode 120000 and is not a regular file); plain mode: a
 * regular file inside the task dir, not reached through a symlink. Never throws.
 */
export async function firstSealedFile(repoRoot: string | null, seal: Seal | null, taskDir: string, rels: readonly string[]): Promise<string | null> {
  if (!rels.length) return null;
  if (repoRoot && seal) {
    const listing = await gitFor(repoRoot)
      .raw(['--literal-pathspecs', 'ls-tree', '-z', seal.sha, '--', ...rels])
      .catch(() => '');
    const files = new Set(
      listing
        .split('\0')
        .map((l) => /^(100644|100755) blob [0-9a-f]+\t(.*)$/s.exec(l)?.[2])
        .filter((f): f is string => f !== undefined),
    );
    return rels.find((r) => files.has(r)) ?? null;
  }
  let root: string;
  try {
    root = fs.realpathSync(taskDir);
  } catch {
    return null;
  }
  for (const rel of rels) {
    try {
      const file = path.join(taskDir, rel);
      if (fs.lstatSync(file, { throwIfNoEntry: false })?.isFile() && fs.realpathSync(file).startsWith(root + path.sep)) return rel;
    } catch {
      // not a file of the proposal
    }
  }
  return null;
}
