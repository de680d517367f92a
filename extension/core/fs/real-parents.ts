/**
 * Writes by the orchestrator into a tree a worker could write (a task dir, an engine's state dir) must land in that
 * tree. A path such as `tests/test_x.py` is resolved by the kernel one component at a time, following every symlink on
 * the way: a worker that renamed `tests/` and put a link `tests -> /home/user/repo/tests` in its place would have an
 * rmSync, mkdirSync or copy of `tests/test_x.py` by the orchestrator (outside the sandbox, maybe root) act on the
 * user's own checkout. So every folder between the tree's root and the entry is checked with lstat, never followed;
 * the root itself is the caller's to trust.
 */
import fs from 'node:fs';
import { fsPath } from './byte-names';

/**
 * Makes every folder between `root` and the entry `rel` (relative, `/`-separated, a fs/byte-names.ts string) a real
 * directory of that tree, walking down from `root` with lstat: a component that is missing is made; one that is a
 * symlink, or anything else that is not a directory, is removed itself (unlinked, never followed) and replaced by a new
 * empty directory. After it, `rel` names an entry inside `root`, whatever links a worker left on the way. `root` is not
 * checked. Returns the components it replaced (relative), in walk order.
 * @throws Error from the file system (a component that cannot be removed or made)
 */
export function makeParentsReal(root: string, rel: string): string[] {
  const replaced: string[] = [];
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) throw new Error(`${rel}: a path with .. cannot be confined to ${root}`);
  for (let i = 1; i < parts.length; i++) {
    const prefix = parts.slice(0, i).join('/');
    const abs = fsPath(root, prefix);
    const st = fs.lstatSync(abs, { throwIfNoEntry: false });
    if (st?.isDirectory()) continue;
    if (st) {
      // A symlink (or a file) in place of a folder: the link itself goes, never what it points at.
      fs.unlinkSync(abs);
      replaced.push(prefix);
    }
    fs.mkdirSync(abs);
  }
  return replaced;
}

/**
 * Whether every folder between `root` and the entry `rel` (relative, `/`-separated, a fs/byte-names.ts string) is a
 * real directory (lstat: no symlink among them), so that `rel` names an entry inside `root`. `root` is not checked.
 * Never throws: a missing or unreadable component is false.
 */
export function parentsAreReal(root: string, rel: string): boolean {
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.includes('..')) return false;
  for (let i = 1; i < parts.length; i++) {
    try {
      if (!fs.lstatSync(fsPath(root, parts.slice(0, i).join('/'))).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return true;
}
