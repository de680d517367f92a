/**
 * The red tree of a phases test phase ("red before green", docs/workflows.md "Phases"). Both its check runs — on
 * the tree as sealed ("green") and on the red tree — run on a check tree (run/check-tree.ts: a fresh copy of the task
 * dir as sealed, made the same way at the same path just before each), so only the phase files differ. The red copy
 * has every phase file put back as it was before its implement task ran — the file at that task's start commit
 * (worktree mode) or in its dir as prepared (plain mode) — or removed where it was not there. In plain mode the test
 * phase reads the implementations as inputs, so the inputs folder is copied (and, red, put back) the same way.
 */
import fs from 'node:fs';
import path from 'node:path';
import { gitFor } from '../../../git/safe-git';
import { keptContent, loadSnapshot } from '../../dir-snapshot';

/** A phase file as it was before its implementation: its bytes and mode, a symbolic link's target, or absent (null). */
export type StartContent = { kind: 'file'; content: Buffer; mode: number } | { kind: 'symlink'; target: string } | null;

/**
 * Puts `rel` under `dir` back to `start`: written with its mode, made a symbolic link, or removed (then the folders
 * that only held it are removed too, as git has no empty folders and the start had none of them). What it touches
 * keeps the times and modes the copy had — the folders on the way (made writable for the change: an inputs copy keeps
 * the read-only modes of the original) and the file itself when it was there — so neither says which run this is.
 * @throws Error when `rel` leaves `dir`, or a folder on its way is not a real folder (realFoldersOnTheWay)
 */
export function putBack(dir: string, rel: string, start: StartContent): void {
  const abs = path.resolve(dir, rel);
  if (!abs.startsWith(dir + path.sep)) throw new Error(`red before green: ${rel} is outside the task dir`);
  realFoldersOnTheWay(dir, abs, rel);
  const folders: { dir: string; stat: fs.Stats }[] = [];
  for (let d = path.dirname(abs); ; d = path.dirname(d)) {
    try {
      const stat = fs.statSync(d);
      folders.push({ dir: d, stat });
      fs.chmodSync(d, stat.mode | 0o700);
    } catch {
      // made below
    }
    if (d === dir || !d.startsWith(dir)) break;
  }
  let was: fs.Stats | null = null;
  try {
    was = fs.lstatSync(abs);
  } catch {
    // not there
  }
  fs.rmSync(abs, { recursive: true, force: true });
  if (start === null) {
    for (let d = path.dirname(abs); d !== dir && d.startsWith(dir); d = path.dirname(d)) {
      try {
        fs.rmdirSync(d);
      } catch {
        break; // not empty: the folders above stay
      }
    }
  } else {
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    if (start.kind === 'symlink') fs.symlinkSync(start.target, abs);
    else {
      fs.writeFileSync(abs, start.content, { mode: start.mode });
      fs.chmodSync(abs, start.mode);
      if (was) fs.utimesSync(abs, was.atime, was.mtime);
    }
  }
  for (const f of folders) {
    if (!fs.existsSync(f.dir)) continue;
    fs.chmodSync(f.dir, f.stat.mode & 0o7777);
    fs.utimesSync(f.dir, f.stat.atime, f.stat.mtime);
  }
}

/**
 * Checks that every folder between `dir` and the file `abs` that exists is a real folder. The copy `dir` holds the
 * worker's sealed tree, and putBack runs in the orchestrator, outside any sandbox: a symbolic link the worker sealed in
 * a phase file's place on the way (`src` → a folder of the user's) would have the file written, removed or its folders
 * chmodded there. Nothing runs in the copy meanwhile, so what is checked here is what putBack then walks.
 * @throws Error naming the folder and the file when one is a symbolic link or not a folder
 */
function realFoldersOnTheWay(dir: string, abs: string, rel: string): void {
  let d = dir;
  for (const part of path.relative(dir, path.dirname(abs)).split(path.sep).filter(Boolean)) {
    d = path.join(d, part);
    const st = fs.lstatSync(d, { throwIfNoEntry: false });
    if (!st) return; // made below, a real folder
    if (!st.isDirectory())
      throw new Error(
        `red before green: ${path.relative(dir, d)} on the way to ${rel} is not a folder (${st.isSymbolicLink() ? 'a symbolic link' : 'a file'} in the sealed tree); nothing is put back through it`,
      );
  }
}

/**
 * Worktree mode: the commit an implement task's branch started from — down the first parents of its PASS commit, the
 * first that is not one of its own seals (their subject is `verdict: <key> (run <runId>, attempt <n>)`, written by the
 * orchestrator, never by a worker: run/steps/seal.ts). A rerun's PASS sits on the earlier PASS, so every seal of the
 * key in this run is passed over.
 * @throws Error when no such commit is found in the first 10,000
 */
export async function implementStart(repoRoot: string, commit: string, implementKey: string, runId: string): Promise<string> {
  const out = await gitFor(repoRoot).raw(['log', '--first-parent', '-n', '10000', '--format=%H %s', commit]);
  const own = `verdict: ${implementKey} (run ${runId}, attempt `;
  for (const line of out.split('\n').filter(Boolean)) {
    const sha = line.slice(0, line.indexOf(' '));
    if (!line.slice(sha.length + 1).startsWith(own)) return sha;
  }
  throw new Error(`red before green: the start of ${implementKey} is not found below its commit ${commit.slice(0, 10)}`);
}

/** Worktree mode: `file` at `commit`, or null when the commit does not hold it as a file or link. */
export async function startContentAt(repoRoot: string, commit: string, file: string): Promise<StartContent> {
  const git = gitFor(repoRoot);
  const listed = await git.raw(['ls-tree', '-z', commit, '--', file]);
  const entry = listed.split('\0').find((l) => l.endsWith(`\t${file}`));
  if (!entry) return null;
  const [mode, type, sha] = entry.slice(0, entry.indexOf('\t')).split(' ') as [string, string, string];
  if (type !== 'blob') return null;
  const content = await git.binaryCatFile(['blob', sha]);
  if (mode === '120000') return { kind: 'symlink', target: content.toString('utf8') };
  return { kind: 'file', content, mode: mode === '100755' ? 0o755 : 0o644 };
}

/**
 * Plain mode: `file` in an implement task's dir as it was prepared (its guard base, `guard-base.json` in its records),
 * or null when it was not there (or no base was kept: the dir then started empty but for setup).
 * @throws Error when the base holds the file but kept no copy of it (larger than the snapshot's copy limit)
 */
export function startContentInBase(implementRunDir: string, file: string): StartContent {
  const base = loadSnapshot(path.join(implementRunDir, 'guard-base.json'));
  const entry = base?.entries.get(file.split(path.sep).join('/'));
  if (!base || !entry) return null;
  if (entry.kind === 'symlink' && entry.target !== undefined) return { kind: 'symlink', target: entry.target };
  if (entry.kind !== 'file') return null;
  const content = keptContent(base, entry);
  if (!content)
    throw new Error(`red before green: ${file} was in the dir of its implement task before it ran, but too large for Verdict to have kept a copy to put back`);
  return { kind: 'file', content, mode: entry.mode };
}

/** The failing judgement's reason when the check passed on the red tree. Pure. */
export function redPassedReason(check: string, files: readonly string[]): string {
  return `the tests pass without the implementation: \`${check}\` exited 0 on the tree without ${files.join(', ')} (each put back as it was before its implement task ran); tests must fail when the code they test is missing`;
}
