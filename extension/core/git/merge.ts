import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SimpleGit } from 'simple-git';
import { fallbackIdentityArgs } from './identity';
import { explainGitFailure } from './git-errors';
import { gitFor } from './safe-git';
import { addBranchWorktree, addDetachedWorktree, removeWorktreeLocked } from './worktree-lock';

/** One passed task to merge into the repository's current branch. */
export interface MergeRequest {
  key: string;
  /** Main working tree of the repository (where the current branch is checked out). */
  repo: string;
  /** The task branch, `verdict/<run_id>/<key>`. */
  branch: string;
  /**
   * The task's check, run again on the rebased result in `dir` (a fresh checkout of the rebased branch, never the
   * worker's own worktree); `base` is the commit it was rebased onto (the current branch's head). The caller decides
   * how it runs (its sandbox, environment, log, and the base's versions of the check's inputs: run/merge-plan.ts).
   */
  recheck: (dir: string, base: string) => Promise<RecheckResult>;
  /**
   * The task's full regression check (its `suite`), run on the integration branch as it would be after this merge;
   * absent or null: none.
   */
  suite?: IntegrationSuite | null;
}

/**
 * A suite the merge queue runs on a commit of the integration branch: `run` gets a fresh checkout of `commit` (detached,
 * made and removed by the queue) and prepares and runs it as the caller decides (include, setup, sandbox, log:
 * run/merge-plan.ts suiteFor). `command` names it in reports; requests whose suites have one command share its results.
 */
export interface IntegrationSuite {
  command: string;
  run: (dir: string, commit: string) => Promise<RecheckResult>;
}

/** What the re-check after the rebase said. */
export interface RecheckResult {
  passed: boolean;
  /** Verbatim output (tail). */
  output: string;
  /** One line: why it did not pass. */
  reason: string;
}

/**
 * What happened to one task in the merge queue. MERGED: rebased, re-checked (and its suite passed on the result) and
 * fast-forwarded; BLOCKED: the rebase conflicted (files listed) or git refused; CHECK_FAILED: rebased but the check
 * fails on the result, nothing merged; SUITE_FAILED: the check passed, but the integration branch with this merge fails
 * the suite — the queue stops there, the current branch stays at `head` (the last good merge, `lastGood`; null: none
 * of this queue), and nothing of this task is merged; NOT_TRIED: after a SUITE_FAILED, not merged (its branch kept);
 * MISSING: the task branch is gone; REFUSED: the working tree became dirty, nothing touched.
 */
export type MergeOutcome =
  | { key: string; status: 'MERGED'; sha: string; paths: string[] }
  | { key: string; status: 'BLOCKED'; conflicts: string[]; reason: string }
  | { key: string; status: 'CHECK_FAILED'; output: string; reason: string }
  | { key: string; status: 'SUITE_FAILED'; output: string; reason: string; command: string; head: string; lastGood: string | null }
  | { key: string; status: 'NOT_TRIED' | 'MISSING' | 'REFUSED'; reason: string };

/**
 * How the queue runs: `batch` merges every passing branch first, runs each suite once on the result and bisects only
 * when one fails. `merged`: tasks merged by earlier merges (of the same run, run/merge-plan.ts deliveredBefore), each
 * with the branch it went `into`; those merged into the current branch whose commit it still holds are guarded as the
 * queue's own earlier merges are (breaksEarlier): a later merge that changes what one delivered re-runs its check.
 */
export interface MergeOptions {
  batch?: boolean;
  merged?: readonly Delivered[];
}

/** The MERGED outcome of the task (`paths`: what its merge changed, recorded as state.json `merged.paths`). */
function mergedOutcome(key: string, sha: string, paths: string[]): MergeOutcome {
  return { key, status: 'MERGED', sha, paths };
}

/** Thrown when the repository's working tree has changes to tracked files: merging would touch the user's work. */
export class DirtyTreeError extends Error {
  constructor(
    readonly repo: string,
    readonly files: string[],
  ) {
    super(
      `${repo} has uncommitted changes (${files.slice(0, 5).join(', ')}${files.length > 5 ? ', …' : ''}); commit or stash them first — Verdict never merges into a dirty working tree`,
    );
    this.name = 'DirtyTreeError';
  }
}

/**
 * The branch checked out in `repo`, after checking the working tree is clean (untracked files are allowed; a merge
 * that would overwrite one fails on its own and is reported as BLOCKED).
 * @throws DirtyTreeError, or Error when HEAD is detached
 */
export async function mergeTarget(repo: string): Promise<string> {
  const git = gitFor(repo, { trusted: true });
  const dirty = (await git.raw(['status', '--porcelain', '--untracked-files=no']))
    .split('\n')
    .filter(Boolean)
    .map((l) => l.slice(3));
  if (dirty.length) throw new DirtyTreeError(repo, dirty);
  const branch = (await git.raw(['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => '')).trim();
  if (!branch) throw new Error(`${repo} has a detached HEAD; check out the branch the task branches should be merged into`);
  return branch;
}

/**
 * The merge queue: one task at a time, in order — rebase its branch onto the current branch, run its check on the
 * result, run its suite (when it has one) on the integration branch as it would be with this merge, then fast-forward
 * the current branch. A conflict or a failing re-check stops that task only; the queue goes on. A failing suite stops
 * the queue: that merge is named (SUITE_FAILED), the current branch stays at the last good merge, and every later task
 * is NOT_TRIED, its branch kept. When the suite fails on the first merge it judges, it is run on the current branch
 * itself too: one that already failed before any merge blames no task (every task NOT_TRIED, saying so). With
 * `batch` see mergeBatch. The working tree is checked before every task; once dirty, the rest are REFUSED. Git runs
 * through gitFor as trusted (merging is reached only from the CLI or a trusted workspace; the rebase checks files out,
 * so filters stay on).
 * @throws DirtyTreeError (or a detached-HEAD Error) before the first task, touching nothing
 */
export async function mergeQueue(
  requests: MergeRequest[],
  onOutcome: (o: MergeOutcome) => void = () => undefined,
  opts: MergeOptions = {},
): Promise<MergeOutcome[]> {
  if (opts.batch) return mergeBatch(requests, onOutcome, opts.merged);
  const outcomes: MergeOutcome[] = [];
  const merged: Delivered[] = requests[0] ? await deliveredHere(requests[0].repo, await mergeTarget(requests[0].repo), opts.merged) : [];
  const suites = new SuiteResults();
  let stopped: { key: string; why: string } | null = null;
  let lastGood: string | null = null;
  for (const req of requests) {
    let outcome: MergeOutcome;
    if (stopped) outcome = { key: req.key, status: 'NOT_TRIED', reason: stopped.why };
    else {
      try {
        outcome = await mergeTask(req, suites, lastGood, merged);
      } catch (e) {
        outcome =
          e instanceof DirtyTreeError
            ? { key: req.key, status: 'REFUSED', reason: e.message }
            : { key: req.key, status: 'BLOCKED', conflicts: [], reason: (e as Error).message };
      }
      if (outcome.status === 'MERGED') lastGood = req.key;
      if (outcome.status === 'SUITE_FAILED')
        stopped = {
          key: req.key,
          why: `not tried: the queue stopped at ${req.key}, whose merge breaks the suite \`${outcome.command}\`; this branch is kept as it was`,
        };
      if (outcome.status === 'NOT_TRIED') stopped = { key: req.key, why: outcome.reason };
    }
    outcomes.push(outcome);
    onOutcome(outcome);
  }
  return outcomes;
}

/**
 * Merges one task (see mergeQueue). Never leaves a rebase half-done: a conflicting rebase is aborted. `suites` holds
 * the suite results of this queue so far (by command and commit); `lastGood` is the task this queue merged last;
 * `merged` the tasks this queue merged before it (breaksEarlier), which this one joins when it is merged.
 * @throws DirtyTreeError when the working tree is dirty; Error for a detached HEAD
 */
export async function mergeTask(
  req: MergeRequest,
  suites: SuiteResults = new SuiteResults(),
  lastGood: string | null = null,
  merged: Delivered[] = [],
): Promise<MergeOutcome> {
  const git = gitFor(req.repo, { trusted: true });
  await mergeTarget(req.repo);
  if (!(await git.raw(['rev-parse', '--verify', '--quiet', `refs/heads/${req.branch}`]).catch(() => '')).trim()) {
    return {
      key: req.key,
      status: 'MISSING',
      reason: `branch ${req.branch} no longer exists (deleted by hand?); nothing to merge, and nothing on the current branch was touched`,
    };
  }
  const target = (await git.revparse(['HEAD'])).trim();
  const dir = await checkoutForMerge(req);
  try {
    const wt = gitFor(dir, { trusted: true });
    if ((await wt.raw(['status', '--porcelain'])).trim()) {
      return {
        key: req.key,
        status: 'BLOCKED',
        conflicts: [],
        reason: `a fresh checkout of ${req.branch} is not clean (a filter or line-ending rule changes its files), so it cannot be rebased safely`,
      };
    }
    try {
      await wt.raw([...(await fallbackIdentityArgs(wt)), 'rebase', '--quiet', target]);
    } catch (e) {
      const conflicts = (await wt.raw(['diff', '--name-only', '--diff-filter=U']).catch(() => '')).split('\n').filter(Boolean);
      await wt.raw(['rebase', '--abort']).catch(() => undefined);
      return {
        key: req.key,
        status: 'BLOCKED',
        conflicts,
        reason: conflicts.length ? `rebase onto the current branch conflicts in ${conflicts.join(', ')}` : `rebase failed: ${(e as Error).message.trim()}`,
      };
    }
    // Read before the re-check: it runs the work's own code in `dir`, which may rewrite `dir/.git` (a HEAD of its own).
    const rebased = (await wt.revparse(['HEAD'])).trim();
    const check = await req.recheck(dir, target);
    if (!check.passed) return { key: req.key, status: 'CHECK_FAILED', output: check.output, reason: `after the rebase ${check.reason}; nothing was merged` };
    const paths = await deliveredPaths(git, target, rebased);
    const refused =
      (await breaksEarlier(req, rebased, target, paths, merged)) ?? (req.suite ? await suiteOutcome(req, req.suite, suites, rebased, target, lastGood) : null);
    if (refused) return refused;
    const moved = await branchMovedFrom(git, req.branch, rebased);
    if (moved) return { key: req.key, status: 'BLOCKED', conflicts: [], reason: moved };
    try {
      await git.raw(['merge', '--ff-only', '--quiet', rebased]);
    } catch (e) {
      return {
        key: req.key,
        status: 'BLOCKED',
        conflicts: [],
        reason: `fast-forward refused: ${explainGitFailure((e as Error).message, { root: req.repo, branch: req.branch })}`,
      };
    }
    merged.push({ req, paths });
    return mergedOutcome(req.key, (await git.revparse(['HEAD'])).trim(), paths);
  } finally {
    await dropCheckout(req.repo, dir);
  }
}

/**
 * The suite's word on a merge (see mergeQueue): null when `suite` passes on the rebased commit `rebased`; else
 * SUITE_FAILED naming the merge, or NOT_TRIED when the suite already failed on `target` (the current branch's head
 * before this merge), so that no merge is blamed for a broken branch. Never throws (SuiteResults.run).
 */
async function suiteOutcome(
  req: MergeRequest,
  suite: IntegrationSuite,
  suites: SuiteResults,
  rebased: string,
  target: string,
  lastGood: string | null,
): Promise<MergeOutcome | null> {
  const git = gitFor(req.repo, { trusted: true });
  const result = await suites.run(req.repo, suite, rebased);
  if (!result.passed) {
    const into = await currentBranch(git);
    // Never blame a merge for a suite the branch failed already: the first failure of a queue is checked on the base.
    const base = suites.known(suite.command, target) ?? (await suites.run(req.repo, suite, target));
    if (!base.passed)
      return {
        key: req.key,
        status: 'NOT_TRIED',
        reason: `not merged: the suite \`${suite.command}\` already fails on ${into} (${target.slice(0, 10)}) before any merge (${base.reason}), so no merge can be judged by it; fix ${into} first; this branch is kept as it was`,
      };
    return {
      key: req.key,
      status: 'SUITE_FAILED',
      output: result.output,
      command: suite.command,
      head: target,
      lastGood,
      reason: `its check passed after the rebase, but ${into} with this merge fails the suite \`${suite.command}\` (${result.reason}); not merged: ${into} stays at ${target.slice(0, 10)}, ${lastGood ? `the last good merge (${lastGood})` : 'as it was before this queue'}; the branch ${req.branch} is kept (rebased onto ${into})`,
    };
  }
  return null;
}

/**
 * A temporary worktree checked out on the task branch: the rebase and the re-check see exactly what the branch holds,
 * never files the worker or the check left untracked (or ignored) in the task's own worktree, and never git files the
 * worker could write there.
 */
async function checkoutForMerge(req: MergeRequest): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `verdict-merge-${req.key}-`));
  // The task's own worktree may still have the branch checked out; `--force` lets a second worktree check it out.
  await addBranchWorktree(req.repo, dir, req.branch, { force: true });
  return dir;
}

/**
 * Removes a temporary checkout of the merge (under the repository's worktree lock: a run may be adding worktrees beside
 * the merge, see git/worktree-lock.ts); its folder at least, whatever git said. Never throws.
 */
async function dropCheckout(repo: string, dir: string): Promise<void> {
  await removeWorktreeLocked(repo, dir).catch(() => fs.rmSync(dir, { recursive: true, force: true }));
}

/** The branch checked out in the repository of `git` (its short name), or `HEAD` when detached. */
async function currentBranch(git: SimpleGit): Promise<string> {
  return (await git.raw(['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => '')).trim() || 'HEAD';
}

/**
 * The suite results of one queue, by command and commit: a suite runs at most once on a commit (a bisection probes a
 * commit once; the base is judged once). Each run gets a fresh detached checkout of the commit, removed after.
 */
export class SuiteResults {
  private readonly results = new Map<string, RecheckResult>();

  /** The result of `command` on `commit` when it ran, else undefined. */
  known(command: string, commit: string): RecheckResult | undefined {
    return this.results.get(`${command}\0${commit}`);
  }

  /** Runs `suite` on `commit` of `repo` (or returns its result when it ran). Never throws: a checkout that fails is a failed run. */
  async run(repo: string, suite: IntegrationSuite, commit: string): Promise<RecheckResult> {
    const known = this.known(suite.command, commit);
    if (known) return known;
    let result: RecheckResult;
    try {
      result = await withCheckoutAt(repo, commit, (dir) => suite.run(dir, commit));
    } catch (e) {
      result = { passed: false, output: '', reason: `a checkout of ${commit.slice(0, 10)} for the suite failed: ${(e as Error).message}` };
    }
    this.results.set(`${suite.command}\0${commit}`, result);
    return result;
  }
}

/** Runs `fn` in a temporary detached worktree of `commit`, removed after (whatever `fn` left in it). */
async function withCheckoutAt<T>(repo: string, commit: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-suite-'));
  await addDetachedWorktree(repo, dir, commit, { force: true });
  try {
    return await fn(dir);
  } finally {
    await dropCheckout(repo, dir);
  }
}

/**
 * The batch merge queue (`verdict merge --batch`), as CI merge queues do: every request is rebased in turn onto the
 * integration branch as built so far and re-checked there (a conflict or a failing check leaves that task out, as in
 * mergeQueue), in temporary detached checkouts, so neither the current branch nor any task branch moves yet. Then
 * each distinct suite of the tasks in the batch runs once on the result. All pass: the current branch fast-forwards to
 * it, and each merged task's branch moves to its rebased commit. One fails: the merges are bisected — each probe runs
 * the suites of the tasks merged up to that commit, assuming (as every bisection does) that once broken the suite stays
 * broken — to the first merge that breaks it (SUITE_FAILED, named); the current branch fast-forwards to the merge just
 * before it (the last good one; none: it stays, the suite then run on it too, so a branch that already failed blames
 * no task), those tasks MERGED, the later ones NOT_TRIED. Branches that were not merged are left as they were.
 * Outcomes of tasks left out come as they happen; the batch's when it is decided.
 * @throws DirtyTreeError (or a detached-HEAD Error) before the first task, touching nothing
 */
export async function mergeBatch(
  requests: MergeRequest[],
  onOutcome: (o: MergeOutcome) => void = () => undefined,
  before: readonly Delivered[] = [],
): Promise<MergeOutcome[]> {
  const first = requests[0];
  if (!first) return [];
  const into = await mergeTarget(first.repo);
  const git = gitFor(first.repo, { trusted: true });
  const start = (await git.revparse(['HEAD'])).trim();
  const outcomes = new Map<string, MergeOutcome>();
  const emit = (o: MergeOutcome) => {
    outcomes.set(o.key, o);
    onOutcome(o);
  };
  const batch = await rebaseBatch(requests, start, emit, await deliveredHere(first.repo, into, before));
  const judged = await judgeBatch(first.repo, batch, start);
  // The current branch moves once, to the last good merge, if the tree is still clean and the branch still where it was.
  const { landed, refusal } =
    judged.good > 0 ? await fastForwardTo(first.repo, into, start, (batch[judged.good - 1] as BatchEntry).sha) : { landed: false, refusal: '' };
  const end: BatchEnd = {
    ...judged,
    into,
    start,
    landed,
    refusal,
    head: landed ? (batch[judged.good - 1] as BatchEntry).sha : start,
    lastGood: landed ? (batch[judged.good - 1] as BatchEntry).req.key : null,
  };
  for (const [i, b] of batch.entries()) {
    const o = batchOutcome(batch, i, end);
    // The task branch takes its rebased commit, as a merge of the sequential queue leaves it.
    if (o.status === 'MERGED') await git.raw(['update-ref', `refs/heads/${b.req.branch}`, b.sha]).catch(() => undefined);
    emit(o);
  }
  return requests.map((r) => outcomes.get(r.key) as MergeOutcome);
}

/** One request of a batch, rebased onto the integration branch as built: the commit it ends at, and the paths it changes. */
interface BatchEntry {
  req: MergeRequest;
  sha: string;
  paths: string[];
}

/** A suite that failed, and how. */
interface SuiteFailure {
  suite: IntegrationSuite;
  result: RecheckResult;
}

/**
 * What the suites made of a batch: the first `good` merges pass (0: none may land); `culprit` the merge (index in the
 * batch) found first to break a suite, null when all pass or `baseFails`; `baseFails` the suite that already failed on
 * the starting commit (no merge is then blamed).
 */
interface BatchJudgement {
  good: number;
  culprit: (SuiteFailure & { index: number }) | null;
  baseFails: SuiteFailure | null;
}

/** A judged batch once the current branch `into` moved from `start` (`landed`) to `head`, or did not (`refusal`, '' when it did or none was tried). */
interface BatchEnd extends BatchJudgement {
  into: string;
  start: string;
  landed: boolean;
  refusal: string;
  head: string;
  /** The key of the last merge that landed, null when none did. */
  lastGood: string | null;
}

/**
 * Rebases each request in turn onto the integration branch as built from `start` (rebaseDetached), in order. Returns
 * the requests that rebased and passed their check, with their commits; each one left out is given to `emit` (its
 * outcome, a refusal for a dirty tree, BLOCKED for any other failure of git). `merged`: the tasks earlier merges
 * delivered into it (deliveredHere), which the batch's merges join.
 */
async function rebaseBatch(requests: MergeRequest[], start: string, emit: (o: MergeOutcome) => void, merged: Delivered[]): Promise<BatchEntry[]> {
  const batch: BatchEntry[] = [];
  let tip = start;
  for (const req of requests) {
    try {
      const r = await rebaseDetached(req, tip, merged);
      if ('sha' in r) {
        batch.push({ req, sha: r.sha, paths: r.paths });
        tip = r.sha;
      } else emit(r);
    } catch (e) {
      emit(
        e instanceof DirtyTreeError
          ? { key: req.key, status: 'REFUSED', reason: e.message }
          : { key: req.key, status: 'BLOCKED', conflicts: [], reason: (e as Error).message },
      );
    }
  }
  return batch;
}

/**
 * Runs the batch's suites on its last commit; when one fails, bisects the merges (each probe runs the suites of the
 * merges up to it, once per command and commit) to the first that breaks it, and, when no merge is good, judges
 * `start` by that suite too so that a branch that already failed blames no merge. Never throws (SuiteResults.run).
 */
async function judgeBatch(repo: string, batch: BatchEntry[], start: string): Promise<BatchJudgement> {
  const suites = new SuiteResults();
  /** Whether the suites of the first `n` merges (distinct commands; n ≥ 1) all pass on the commit of the n-th, and the first that failed. */
  const judge = async (n: number): Promise<{ passed: boolean; failed: SuiteFailure | null }> => {
    const commit = (batch[n - 1] as { sha: string }).sha;
    const distinct = new Map<string, IntegrationSuite>();
    for (const b of batch.slice(0, n)) if (b.req.suite && !distinct.has(b.req.suite.command)) distinct.set(b.req.suite.command, b.req.suite);
    for (const suite of distinct.values()) {
      const result = await suites.run(repo, suite, commit);
      if (!result.passed) return { passed: false, failed: { suite, result } };
    }
    return { passed: true, failed: null };
  };
  let good = batch.length;
  let culprit: BatchJudgement['culprit'] = null;
  let baseFails: SuiteFailure | null = null;
  if (batch.length) {
    const whole = await judge(batch.length);
    if (!whole.passed && whole.failed) {
      // Bisect: merges 1..lo are known good (lo = 0: the start, not yet judged), 1..hi known bad.
      let lo = 0;
      let hi = batch.length;
      let failed = whole.failed;
      while (hi - lo > 1) {
        const mid = Math.floor((lo + hi) / 2);
        const probe = await judge(mid);
        if (probe.passed) lo = mid;
        else {
          hi = mid;
          failed = probe.failed ?? failed;
        }
      }
      // Never blame a merge for a suite the branch failed already: with no good merge, the start is judged by it too.
      if (lo === 0) {
        const base = await suites.run(repo, failed.suite, start);
        if (!base.passed) baseFails = { suite: failed.suite, result: base };
      }
      good = baseFails ? 0 : lo;
      if (!baseFails) culprit = { index: hi - 1, ...failed };
    }
  }
  return { good, culprit, baseFails };
}

/**
 * Fast-forwards the current branch `into` of `repo` to `sha`, if the tree is still clean and the branch still at
 * `start`. Returns `landed`, or the refusal (a dirty tree's message, or why git or the moved branch refused). Never throws.
 */
async function fastForwardTo(repo: string, into: string, start: string, sha: string): Promise<{ landed: boolean; refusal: string }> {
  const git = gitFor(repo, { trusted: true });
  try {
    await mergeTarget(repo);
    const head = (await git.revparse(['HEAD'])).trim();
    if (head !== start) throw new Error(`${into} moved during the merge (from ${start.slice(0, 10)} to ${head.slice(0, 10)}); nothing was merged, merge again`);
    await git.raw(['merge', '--ff-only', '--quiet', sha]);
    return { landed: true, refusal: '' };
  } catch (e) {
    return {
      landed: false,
      refusal: e instanceof DirtyTreeError ? e.message : `fast-forward refused: ${explainGitFailure((e as Error).message, { root: repo, branch: into })}`,
    };
  }
}

/**
 * The outcome of the `i`-th merge of a judged `batch`: REFUSED when the fast-forward was refused, NOT_TRIED when the
 * suite failed already at the start, MERGED up to the last good merge, SUITE_FAILED for the culprit, NOT_TRIED after
 * it. Pure: moving a MERGED task's branch is the caller's.
 */
function batchOutcome(batch: BatchEntry[], i: number, end: BatchEnd): MergeOutcome {
  const b = batch[i] as BatchEntry;
  const { into, start, head, lastGood, culprit, baseFails } = end;
  if (!end.landed && end.refusal) return { key: b.req.key, status: 'REFUSED', reason: end.refusal };
  if (baseFails)
    return {
      key: b.req.key,
      status: 'NOT_TRIED',
      reason: `not merged: the suite \`${baseFails.suite.command}\` already fails on ${into} (${start.slice(0, 10)}) before any merge (${baseFails.result.reason}), so no merge can be judged by it; fix ${into} first; this branch is kept as it was`,
    };
  if (i < end.good) return mergedOutcome(b.req.key, b.sha, b.paths);
  if (culprit && i === culprit.index)
    return {
      key: b.req.key,
      status: 'SUITE_FAILED',
      output: culprit.result.output,
      command: culprit.suite.command,
      head,
      lastGood,
      reason: `the batch of ${batch.length} merges failed the suite \`${culprit.suite.command}\`, and bisecting it found this merge the first that breaks it (${culprit.result.reason}); not merged: ${into} is at ${head.slice(0, 10)}, ${lastGood ? `the last good merge (${lastGood})` : 'as it was before this queue'}; the branch ${b.req.branch} is kept as it was`,
    };
  return {
    key: b.req.key,
    status: 'NOT_TRIED',
    reason: `not merged: it comes after ${culprit ? batch[culprit.index]?.req.key : 'the merge'} that breaks the suite, and the suite was not judged without that one; this branch is kept as it was (merge it again)`,
  };
}

/**
 * Rebases a copy of the task branch onto `onto` in a temporary detached checkout and re-checks it there, with the
 * checks of the batch's merges before it whose files it changes (breaksEarlier; it joins `merged` when it passes); the
 * task branch itself does not move. Returns the rebased commit, or the outcome that leaves the task out of the batch.
 * @throws Error for a failure of git outside the rebase
 */
async function rebaseDetached(req: MergeRequest, onto: string, merged: Delivered[]): Promise<{ sha: string; paths: string[] } | MergeOutcome> {
  const git = gitFor(req.repo, { trusted: true });
  const head = (await git.raw(['rev-parse', '--verify', '--quiet', `refs/heads/${req.branch}`]).catch(() => '')).trim();
  if (!head)
    return {
      key: req.key,
      status: 'MISSING',
      reason: `branch ${req.branch} no longer exists (deleted by hand?); nothing to merge, and nothing on the current branch was touched`,
    };
  return withCheckoutAt(req.repo, head, async (dir) => {
    const wt = gitFor(dir, { trusted: true });
    if ((await wt.raw(['status', '--porcelain'])).trim())
      return {
        key: req.key,
        status: 'BLOCKED',
        conflicts: [],
        reason: `a fresh checkout of ${req.branch} is not clean (a filter or line-ending rule changes its files), so it cannot be rebased safely`,
      };
    try {
      await wt.raw([...(await fallbackIdentityArgs(wt)), 'rebase', '--quiet', onto]);
    } catch (e) {
      const conflicts = (await wt.raw(['diff', '--name-only', '--diff-filter=U']).catch(() => '')).split('\n').filter(Boolean);
      await wt.raw(['rebase', '--abort']).catch(() => undefined);
      return {
        key: req.key,
        status: 'BLOCKED',
        conflicts,
        reason: conflicts.length ? `rebase onto the merges before it conflicts in ${conflicts.join(', ')}` : `rebase failed: ${(e as Error).message.trim()}`,
      };
    }
    // Read before the re-check, which runs the work's own code in `dir` (see mergeTask).
    const rebased = (await wt.revparse(['HEAD'])).trim();
    const check = await req.recheck(dir, onto);
    if (!check.passed) return { key: req.key, status: 'CHECK_FAILED', output: check.output, reason: `after the rebase ${check.reason}; nothing was merged` };
    const paths = await deliveredPaths(gitFor(req.repo, { trusted: true }), onto, rebased);
    const undone = await breaksEarlier(req, rebased, onto, paths, merged);
    if (undone) return undone;
    merged.push({ req, paths });
    return { sha: rebased, paths };
  });
}

/**
 * A task merged earlier, and the paths its merge changed: by this queue, or (`merged`: the commit its merge left the
 * branch `into` at) by an earlier merge, which is guarded only while the current branch holds that commit.
 */
export interface Delivered {
  req: MergeRequest;
  paths: string[];
  merged?: { commit: string; into: string };
}

/**
 * The tasks of `before` (delivered by earlier merges) that a queue into the branch `into` of `repo` guards: merged into
 * `into`, their commit still in its history (a branch reset past a merge no longer holds what it delivered). A copy,
 * which the queue's own merges then join.
 */
async function deliveredHere(repo: string, into: string, before: readonly Delivered[] = []): Promise<Delivered[]> {
  const git = gitFor(repo, { trusted: true });
  const here: Delivered[] = [];
  for (const d of before) {
    if (!d.merged || d.merged.into !== into) continue;
    const held = await git.raw(['merge-base', '--is-ancestor', d.merged.commit, 'HEAD']).then(
      () => true,
      () => false,
    );
    if (held) here.push(d);
  }
  return here;
}

/**
 * The paths the rebased commit `rebased` changes against `onto` (added, changed, deleted; renames as two), read through
 * the repository's own `git`, never through the merge checkout's `.git`, which the re-check could rewrite.
 */
async function deliveredPaths(git: SimpleGit, onto: string, rebased: string): Promise<string[]> {
  return (await git.raw(['diff', '--name-only', '--no-renames', '-z', onto, rebased])).split('\0').filter(Boolean);
}

/**
 * Why `branch` cannot be fast-forwarded as checked: it no longer holds `rebased`, the commit the re-check and the
 * guards judged (moved while they ran); null when it does.
 */
async function branchMovedFrom(git: SimpleGit, branch: string, rebased: string): Promise<string | null> {
  const now = (await git.raw(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`]).catch(() => '')).trim();
  return now === rebased
    ? null
    : `branch ${branch} moved while its re-check ran (${now.slice(0, 10) || 'gone'}, checked ${rebased.slice(0, 10)}); nothing was merged`;
}

/**
 * A later merge must not undo an earlier one: each task this queue merged before `req`, or an earlier merge of the
 * same run delivered into the current branch (MergeOptions `merged`), whose merge changed a path `req`'s merge changes
 * too (`paths`) has its check run again, in a fresh checkout of `req`'s rebased commit `sha` (on
 * `onto`). The first that fails makes `req` CHECK_FAILED, naming that task and the shared paths; nothing is merged.
 * Tasks whose files this one leaves alone are not re-run (a change elsewhere that breaks them is what a `suite` is
 * for). null when none fails.
 */
async function breaksEarlier(
  req: MergeRequest,
  sha: string,
  onto: string,
  paths: readonly string[],
  merged: readonly Delivered[],
): Promise<MergeOutcome | null> {
  const mine = new Set(paths);
  const key = req.key;
  for (const earlier of merged) {
    const shared = earlier.paths.filter((p) => mine.has(p));
    if (!shared.length) continue;
    const again = await withCheckoutAt(req.repo, sha, (dir) => earlier.req.recheck(dir, onto));
    if (again.passed) continue;
    const named = shared.slice(0, 5).join(', ') + (shared.length > 5 ? ` and ${shared.length - 5} more` : '');
    return {
      key,
      status: 'CHECK_FAILED',
      output: again.output,
      reason: `after the rebase its own check passes, but it changes what ${earlier.req.key} delivered ${earlier.merged ? `in an earlier merge into ${earlier.merged.into} (${earlier.merged.commit.slice(0, 10)})` : 'earlier in this queue'} (${named}) and ${earlier.req.key}'s check fails on the result (${again.reason}); nothing was merged`,
    };
  }
  return null;
}

/**
 * One line for the end of a merge report when the suite stopped the queue, else null: which merge broke which suite,
 * where the current branch was left, and which branches were not merged and are kept. `target`: the current branch's name.
 */
export function suiteStopLine(outcomes: readonly MergeOutcome[], target: string | null): string | null {
  const failed = outcomes.find((o): o is Extract<MergeOutcome, { status: 'SUITE_FAILED' }> => o.status === 'SUITE_FAILED');
  const held = outcomes.filter((o) => o.status === 'NOT_TRIED').map((o) => o.key);
  const into = target ?? 'the current branch';
  if (failed)
    return `the suite \`${failed.command}\` broke at ${failed.key}: ${into} is at ${failed.head.slice(0, 10)}, ${failed.lastGood ? `the last good merge (${failed.lastGood})` : 'as it was before the queue'}; not merged, branches kept: ${[failed.key, ...held].join(', ')}`;
  if (held.length) return `the suite already fails on ${into} before any merge: nothing was judged by it, branches kept: ${held.join(', ')}`;
  return null;
}
