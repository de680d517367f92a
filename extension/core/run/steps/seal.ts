/**
 * Step `seal` (worktree mode): with nothing of the worker alive (its sandbox is gone), the orchestrator records the
 * tree as a commit on top of the task branch, built with its own index (core/git/worktree.ts sealWorktree). The check
 * then judges exactly this tree, and a PASS moves the branch to exactly this commit.
 */
import path from 'node:path';
import fs from 'node:fs';
import {
  escapingLinksReason,
  linkLeavesTree,
  linksOnDisk,
  pointHeadAt,
  sealWorktree,
  UnsealableTreeError,
  worktreeDrivers,
  type Seal,
} from '../../git/worktree';
import { clearSetIdBits, setIdNote } from '../../process/set-id';
import type { AttemptContext, Step, TaskRuntime } from './context';
import type { AttemptRecord } from '../attempt-record';
import { treeHash } from '../tree-hash';
import { saveSealedState, sealedCommit, sealedDir, sealedStateFile } from '../check-writes';
import { runDir } from '../../config/home';
import { preparedFilesFile, setAsideUndelivered, type Undelivered } from '../undelivered';
import type { DirSnapshot } from '../dir-snapshot';
import { showName } from '../../fs/byte-names';
import { judgeSetupDeps, recordSetupDeps, setupDepsMovedNote } from '../setup-deps';

export const sealStep: Step = {
  name: 'seal',
  phase: 'running',
  when: (rec) => rec.verdict === null,
  async run(ctx, task, rec) {
    const { spec } = task;
    // No set-uid or set-gid file is sealed or left in the task dir: a sandboxed worker's were cleared when its step
    // ended (core/process/set-id.ts, nothing of it alive since); an unsandboxed one's (full_access, --no-sandbox) here.
    if (task.containment === 'none') {
      const setId = setIdNote('the worker', await clearSetIdBits([task.state.dir], spec.checkTimeoutMs));
      if (setId) ctx.emit({ type: 'task-note', key: spec.key, note: setId });
    }
    if (!task.links || !task.state.branch) {
      sealPlain(ctx, task, rec);
      return null;
    }
    const index = path.join(rec.dir, 'seal.index');
    // The driver names, read once for every git of this step: the worker has ended (nothing of it is alive), and no
    // other untrusted step runs before the step returns (git/safe-git.ts DriverNames).
    const drivers = await worktreeDrivers(task.links);
    const message = `verdict: ${spec.key} (run ${ctx.runId}, attempt ${rec.attempt})\n\n${spec.verified ?? ''}`.trim();
    try {
      rec.seal = await sealWorktree(task.links!, task.state.branch!, index, message, ctx.repo?.identityArgs ?? [], {
        timeoutMs: spec.checkTimeoutMs,
        expectFiles: spec.expectFiles,
        drivers,
      });
    } catch (e) {
      fs.rmSync(index, { force: true });
      // What git refuses in the tree (a path it holds invalid, a repository of the worker's it cannot read): the
      // worker's to fix, so a FAIL naming it, retried.
      if (e instanceof UnsealableTreeError) return { verdict: 'FAIL', reason: e.message };
      if (/timed out after \d+ ms/.test((e as Error).message))
        throw new Error(
          `sealing the worktree took longer than ${Math.round(spec.checkTimeoutMs / 1000)} s (check_timeout_s) and was stopped; the worker left files too large for git to record`,
        );
      throw e;
    }
    rec.sealed = rec.seal.sha;
    for (const note of sealNotes(rec.seal)) ctx.emit({ type: 'task-note', key: spec.key, note });
    // The check judges what is delivered: what the seal does not hold and was not there before the worker ran (git
    // ignores it) goes into the attempt's record, out of the check's sight (run/undelivered.ts). Before the sealed
    // state is recorded, so a retry starts without it too.
    let aside: Undelivered;
    try {
      aside = await setAsideUndelivered(task.links!, index, preparedFilesFile(taskRunDir(ctx, spec.key)), rec.dir, spec.checkTimeoutMs, drivers);
    } catch (e) {
      if (/timed out after \d+ ms/.test((e as Error).message))
        throw new Error(
          `looking for files the seal does not hold took longer than ${Math.round(spec.checkTimeoutMs / 1000)} s (check_timeout_s) and was stopped; the worker left too many files that git ignores`,
        );
      throw e;
    }
    if (aside.count || aside.unmoved.length || aside.missing?.length || aside.restored?.length || aside.replaced) {
      rec.undelivered = aside;
      if (aside.count) ctx.emit({ type: 'task-note', key: spec.key, note: `${undeliveredWords(aside)}; the check judges only what the commit holds` });
      if (aside.restored?.length) ctx.emit({ type: 'task-note', key: spec.key, note: restoredWords(aside.restored, aside.dir) });
      if (aside.missing?.length) ctx.emit({ type: 'task-note', key: spec.key, note: missingWords(aside.missing) });
      if (aside.unmoved.length)
        ctx.emit({ type: 'task-note', key: spec.key, note: `could not move out of the check's sight: ${aside.unmoved.slice(0, 5).join('; ')}` });
    }
    // What the check writes is discarded before the next attempt: back to exactly this tree (run/check-writes.ts).
    task.sealedState = await sealedCommit(task.links!, rec.seal.sha, index, taskRunDir(ctx, spec.key), drivers);
    saveSealedState(sealedStateFile(taskRunDir(ctx, spec.key)), task.sealedState);
    // The seal's index stays for deliver (it holds exactly the sealed tree); settle removes it.
    // The check compares with the task branch, whatever HEAD or index the worker left.
    await pointHeadAt(task.links!, rec.seal.parent);
    // What the branch could not hold is judged after the check (whose output a retry needs): see sealProblems.
    return null;
  },
};

/**
 * The task notes a seal leaves, in order: what it skipped (entries git cannot record, removed from the task dir), what
 * it kept as the start commit has it (against .gitattributes conversions), what git converted and was written again.
 * Empty when it did none of these. Pure.
 */
function sealNotes(seal: Seal): string[] {
  const notes: string[] = [];
  if (seal.special?.length) notes.push(`the seal skipped what git cannot record, and removed it from the task dir (it held no content): ${list(seal.special)}`);
  if (seal.keptAsCommitted?.length)
    notes.push(
      `kept as the start commit has them (the worker left their bytes as committed; git's .gitattributes conversions would have changed them): ${list(seal.keptAsCommitted)}`,
    );
  if (seal.rewritten?.length)
    notes.push(`git converted ${list(seal.rewritten)} when sealing (.gitattributes or core.autocrlf): written again as the commit holds them, and checked so`);
  return notes;
}

/** `runs/<id>/tasks/<key>/prepared-links.json`: plain mode's symlinks as prepared (after setup), path → target. */
function preparedLinksFile(taskRun: string): string {
  return path.join(taskRun, 'prepared-links.json');
}

/** Writes plain mode's record of the symlinks the task dir had when prepared, before any worker ran. */
export function savePreparedLinks(taskRun: string, links: Map<string, string>): void {
  fs.mkdirSync(taskRun, { recursive: true });
  fs.writeFileSync(preparedLinksFile(taskRun), JSON.stringify(Object.fromEntries(links)));
}

/** Plain mode's record of the symlinks as prepared; none kept (a run from an earlier Verdict): empty, so every link is the worker's. */
export function loadPreparedLinks(taskRun: string): Map<string, string> {
  try {
    const v = JSON.parse(fs.readFileSync(preparedLinksFile(taskRun), 'utf8')) as Record<string, unknown>;
    return new Map(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return new Map();
  }
}

/**
 * The symlinks of a sealed plain task dir (`sealed`) that lead out of it (git/worktree.ts linkLeavesTree, following
 * the links on the way through `readLink`: git/worktree.ts linksOnDisk over the task dir) and were not there with the
 * same target when it was prepared (`prepared`: setup's are left alone), each `<path> -> <target>`, sorted.
 */
export function escapingPlainLinks(sealed: DirSnapshot, prepared: Map<string, string>, readLink: (rel: string) => string | null): string[] {
  const out: string[] = [];
  for (const [rel, e] of sealed.entries)
    if (e.kind === 'symlink' && e.target !== undefined && prepared.get(rel) !== e.target && linkLeavesTree(rel, e.target, readLink))
      out.push(`${showName(rel)} -> ${e.target}`);
  return out.sort();
}

/** The first five of `xs`, then how many there were. */
function list(xs: readonly string[]): string {
  return `${xs.slice(0, 5).join(', ')}${xs.length > 5 ? `, … (${xs.length})` : ''}`;
}

/** `runs/<id>/tasks/<key>/`: what the orchestrator keeps about a task, out of every step's sight. */
export function taskRunDir(ctx: AttemptContext, key: string): string {
  return path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', key);
}

/**
 * Why the sealed commit cannot stand for the work the check is about to judge, one line each (empty when it can):
 * work inside a submodule, a folder made into a repository of its own, an expected file that git ignores (there, or
 * moved out of the check's sight into `undelivered`; a missing one is the check's and expect_files' to report), files
 * the seal does not hold that could not be moved out of the check's sight,
 * a symlink the worker added or changed that points outside the tree (the check would read bytes the commit does not
 * hold), a file setup made that git ignored and the commit now holds with the worker's content (Undelivered.replaced).
 * A PASS with any of these is a FAIL.
 */
export function sealProblems(seal: Seal, taskDir: string, undelivered?: Undelivered): string[] {
  const problems: string[] = [];
  if (seal.submodules.length)
    problems.push(
      `the worker changed files inside submodule(s) ${seal.submodules.join(', ')}; work inside a submodule cannot be kept on the task branch, so it would be lost — keep deliverables outside submodules`,
    );
  if (seal.escapingLinks?.length) problems.push(escapingLinksReason(seal.escapingLinks));
  if (seal.nested.length)
    problems.push(`the worker made ${seal.nested.join(', ')} a git repository of its own; the task branch would hold only a link to commits it does not have`);
  const ignored = seal.unsealed.filter((f) => fs.existsSync(path.join(taskDir, f)) || (undelivered && fs.existsSync(path.join(undelivered.dir, f))));
  if (ignored.length) problems.push(`expected file(s) ${ignored.join(', ')} are ignored by git, so the sealed commit and the task branch do not hold them`);
  if (undelivered?.replaced) problems.push(replacedWords(undelivered.replaced));
  if (undelivered?.unmoved.length)
    problems.push(
      `files the sealed commit does not hold could not be moved out of the check's sight, so the check may have read them: ${undelivered.unmoved.slice(0, 5).join('; ')}${undelivered.unmoved.length > 5 ? `, … (${undelivered.unmoved.length})` : ''}`,
    );
  return problems;
}

/**
 * Plain mode's seal: setup's dependency folders judged as setup left them (what else is there moved out of the check's
 * sight: run/setup-deps.ts), then the record of what the check is about to judge, a hash and a snapshot of the task dir
 * (kept for a resume), and the links that lead out of it. What it finds is judged after the check, as a worktree
 * seal's problems are (sealProblems), so the retry gets the check's output too.
 */
function sealPlain(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord): void {
  const { spec } = task;
  if (task.setupDeps) {
    const aside = path.join(rec.dir, 'undelivered');
    const deps = judgeSetupDeps(task.state.dir, task.setupDeps, aside);
    if (deps.changed.length || deps.unmoved.length) rec.setupChanged = [...deps.changed, ...deps.unmoved];
    if (deps.moved.length) ctx.emit({ type: 'task-note', key: spec.key, note: setupDepsMovedNote(deps.moved, aside) });
  }
  // The work's own dependency folders (setup made none), which the snapshot below does not walk: their record.
  task.sealedDeps = task.setupDeps ? null : recordSetupDeps(task.state.dir);
  rec.sealed = treeHash(task.state.dir);
  task.sealedState = sealedDir(task.state.dir, taskRunDir(ctx, spec.key));
  saveSealedState(sealedStateFile(taskRunDir(ctx, spec.key)), task.sealedState);
  const escaping =
    task.sealedState.kind === 'dir'
      ? escapingPlainLinks(task.sealedState.snapshot, loadPreparedLinks(taskRunDir(ctx, spec.key)), linksOnDisk(task.state.dir))
      : [];
  if (escaping.length) rec.escapingLinks = escaping;
}

/**
 * One line naming the files setup made that git ignored and the commit now holds with the worker's content
 * (Undelivered.replaced): why that is not a PASS, and what the worker should do. Pure.
 */
export function replacedWords(replaced: { count: number; shown: readonly string[] }): string {
  const more = replaced.count > replaced.shown.length ? `, … (${replaced.count})` : '';
  return `the commit holds ${replaced.shown.join(', ')}${more}, which setup made and git ignored when the task was prepared, with content of the worker's: the check, and the merge queue's re-check after setup, would read the worker's version instead of setup's — leave setup's output ignored (keep the .gitignore rules) and do not commit it`;
}

/**
 * One line naming what setup made that the worker deleted and no copy could put back (Undelivered.missing, the first
 * few): the check runs without it (it may rebuild it), the merge queue's re-check runs setup again. Pure.
 */
export function missingWords(missing: readonly string[]): string {
  const one = missing.length === 1;
  return `the worker deleted ${firstTen(missing)}, which setup made before it ran (no copy could be put back: too big to keep, or the commit now holds something in ${one ? 'its' : 'their'} place): the check runs without ${one ? 'it' : 'them'} unless it makes ${one ? 'it' : 'them'} again, and the merge re-check runs setup again`;
}

/**
 * One line naming what setup made that the worker deleted or changed, put back from the copy kept at prepare
 * (Undelivered.restored, the first few), and where the worker's versions went (`dir`). Pure.
 */
export function restoredWords(restored: readonly string[], dir: string): string {
  const one = restored.length === 1;
  return `put back ${firstTen(restored)} as setup left ${one ? 'it' : 'them'} (the worker deleted or changed ${one ? 'it' : 'them'}; git ignores ${one ? 'it' : 'them'}, so the commit cannot hold ${one ? 'it' : 'them'}): the check judges the tree with setup's files as setup made them; the worker's versions, if any, are in ${dir}`;
}

/** The first ten of `xs`, then how many there were. */
function firstTen(xs: readonly string[]): string {
  return xs.slice(0, 10).join(', ') + (xs.length > 10 ? `, … (${xs.length})` : '');
}

/**
 * One line saying what {@link setAsideUndelivered} moved: how many, where to, the first few. Pure.
 */
export function undeliveredWords(u: Undelivered): string {
  const more = u.count > u.shown.length ? `, … (${u.count}; all listed in ${u.dir}.txt)` : '';
  return `the sealed commit does not hold ${u.shown.join(', ')}${more} (git ignores ${u.count === 1 ? 'it' : 'them'}), and setup did not leave ${u.count === 1 ? 'it' : 'them'} so (made or changed since): moved out of the check's sight into ${u.dir}`;
}
