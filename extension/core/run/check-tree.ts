/**
 * A check tree: a fresh copy of the task dir as sealed (with what git ignores: setup's `node_modules`, `include`
 * files), and of its inputs folder in plain mode, made the same way at the same path just before a check runs on it,
 * so that two check runs on two such copies cannot tell one from the other by inode numbers, change times or their
 * folder. A workflow that runs the check a second time on a changed copy asks for it (Workflow.checkOnCopy: phases'
 * red before green, run/workflows/phases/red.ts). The copies live under the run's records
 * (`runs/<run_id>/tasks/<key>/check-tree/`, out of every step's sight) and are removed after each run; the task's own
 * dir, branch and inputs are never written by a check on them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';

/** Where a check tree's copies are: the task dir's copy and, in plain mode, the inputs folder's. */
export interface CheckTree {
  /** `runs/<run_id>/tasks/<key>/check-tree/`, removed with {@link removeCheckTree}. */
  root: string;
  /** The copy of the task dir. */
  dir: string;
  /** The copy of the inputs folder (plain mode), else null. */
  inputs: string | null;
}

/**
 * Copies the task dir (and its inputs folder, when it has one) to a fresh check tree `<taskRunDir>/check-tree/` (one
 * path for every copy of the task: the copy's folder never says which run it is) with `cp -a`: modes, symbolic links
 * and modification times kept, so a file's mtime reads as it does in the task dir; every access time is the epoch.
 * @throws Error when a copy fails (disk full, unreadable entry), naming cp's message
 */
export async function copyCheckTree(taskRunDir: string, taskDir: string, inputsDir: string | null): Promise<CheckTree> {
  const root = path.join(taskRunDir, 'check-tree');
  await removeCheckTree(root);
  fs.mkdirSync(root, { recursive: true });
  const tree: CheckTree = { root, dir: path.join(root, 'tree'), inputs: inputsDir ? path.join(root, 'inputs') : null };
  for (const [from, to] of [[taskDir, tree.dir], ...(inputsDir && tree.inputs ? [[inputsDir, tree.inputs]] : [])] as [string, string][]) {
    const r = await execa('cp', ['-a', '--', `${from}/.`, to], { reject: false, all: true, stdin: 'ignore' });
    if (r.exitCode !== 0) throw new Error(`red before green: copying ${from} for the check failed: ${String(r.all).trim().split('\n').slice(-3).join('; ')}`);
    // Access times are not kept: each copy reads the source, which (relatime) marks what had not been read since it
    // was written, so a copy made after another would show as read what the first showed unread. Every entry of
    // every copy gets one access time (the epoch); the check's own reads then change its copy alike in both runs.
    const t = await execa('find', [to, '-exec', 'touch', '-a', '-h', '-c', '-d', '@0', '--', '{}', '+'], { reject: false, all: true, stdin: 'ignore' });
    if (t.exitCode !== 0)
      throw new Error(`red before green: setting the access times of the copy of ${from} failed: ${String(t.all).trim().split('\n').slice(-3).join('; ')}`);
  }
  return tree;
}

/** Removes a check tree (read-only folders the inputs copy kept are made writable first). Never throws. */
export async function removeCheckTree(root: string): Promise<void> {
  if (!fs.existsSync(root)) return;
  await execa('chmod', ['-R', 'u+rwx', '--', root], { reject: false, stdin: 'ignore' });
  fs.rmSync(root, { recursive: true, force: true });
}
