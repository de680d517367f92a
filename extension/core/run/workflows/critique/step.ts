/**
 * Step `critique` (tasks with `critique`, after a passed check and review, before deliver; docs/workflows.md
 * "Critique loop"): one round of the task's loop (run/workflows/critique/loop.ts) over this attempt's proposal.
 * 1. A revision that sealed the very tree it was asked to revise changed nothing: the loop stops, no critic runs.
 * 2. Each critic, one after the other, reads the proposal read-only (run/steps/reader.ts) and answers
 *    `{"criticisms": […]}` (run/workflows/critique/verdict.ts). Each criticism is checked against the proposal: a file and line
 *    must exist in the sealed tree (run/sealed-file.ts); a command must exit non-zero when run in the task dir,
 *    read-only (in the sandbox; unsandboxed, in a copy), under the check's time limit and network setting, and be
 *    about the proposal (run/workflows/critique/command.ts: able to exit 0, and naming a file of the proposal or else passing in
 *    an empty folder run the same way). The others are dropped and counted.
 * 3. decideRound: a revision (the record's `revision`, record.ts CritiqueAttempt, which settle hands to the next
 *    attempt without spending the retry budget), or the end of the loop with what stays unresolved.
 * The report (`runs/<run_id>/tasks/<key>/critique.md`) is rewritten after every round and named in state.json and the
 * rows; the loop itself is kept beside it (critique-loop.json, run/workflows/critique/state.ts) for `verdict resume`
 * (restoreCritique). The attempt's verdict stays the check's: this step never judges.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { EngineSpec } from '../../../../../engines/types';
import { worktreeReadAccess } from '../../../git/worktree';
import type { EngineChoice } from '../../../manifest/types';
import { runCheck } from '../../check';
import type { Receipt } from '../../../process/supervisor';
import { hiddenFromSteps, scratchEnv, stepCaps, stepPlan, stepScratch } from '../../containment';
import {
  commandEvidence,
  criticismTarget,
  decideRound,
  loopView,
  newLoop,
  noChange,
  renderReport,
  revisionText,
  type CritiqueLoop,
  type RoundDecision,
} from './loop';
import { critiquePrompt } from './prompt';
import { critiqueLoopFile, loadLoop, saveLoop } from './state';
import { runDir } from '../../../config/home';
import { critiqueFiles, critiqueOf, criticName, keptCritique, type CritiqueRecord } from './record';
import type { CheckedCriticism, Criticism, LineCriticism } from './criticism';
import { isCommand, lineCount, parseCritiqueAnswer, proposalPath } from './verdict';
import { diffMaterial, filesMaterial, type ReviewMaterial } from '../../review-material';
import { firstSealedFile, readSealedFile } from '../../sealed-file';
import { cannotPass, commandCounts, namedPaths, type ControlRun } from './command';
import type { AttemptRecord } from '../../attempt-record';
import { Cancelled, type AttemptContext, type AttemptIo, type Step, type TaskRuntime } from '../../steps/context';
import { ReaderStopped, runReader } from '../../steps/reader';
import type { ReaderStep } from '../../spend';

/** A critic, as the budget knows its reader (spend.ts ReaderStep). */
const CRITIC: ReaderStep = { step: 'critique', who: 'a critic' };

/** A criticised file larger than this is not read (its criticism is dropped, saying so), bytes. */
const MAX_CRITICISED_FILE_BYTES = 8 * 1024 * 1024;

/** Each task's loop, begun by its first attempt that passed its check (loop.ts); absent: no round ran yet. */
const loops = new WeakMap<TaskRuntime, CritiqueLoop>();
/**
 * The revision text this workflow handed a task as its `failure` (a revision after a PASS, not a retry after a
 * failure). The next attempt is a revision exactly while `task.failure` is this text: a failed attempt's retry, a
 * rerun or a restarted reader replace `failure`, and with it the revision.
 */
const handed = new WeakMap<TaskRuntime, string>();

/** Whether `task`'s next attempt is a revision this loop asked (its `failure` is the revision text it was handed). */
export function isRevision(task: TaskRuntime): boolean {
  return task.failure !== null && handed.get(task) === task.failure;
}

/** Marks `task.failure` as a revision's text (a pool worker's job says so: pool/payload.ts `revising`). */
export function markRevision(task: TaskRuntime): void {
  if (task.failure !== null) handed.set(task, task.failure);
}

/** Whether `task`'s loop asked a revision not yet criticised (a pool's revision then starts from the proposal). */
export function revisionPending(task: TaskRuntime): boolean {
  return loops.get(task)?.pending === true;
}

export const critiqueStep: Step = {
  name: 'critique',
  phase: 'checking',
  when: (rec, task) => rec.verdict === 'PASS' && task.spec.critique !== undefined && (loops.get(task)?.stopped ?? null) === null,
  async run(ctx, task, rec, io) {
    const policy = task.spec.critique!;
    const loop = loops.get(task) ?? newLoop();
    loops.set(task, loop);
    const report = path.join(path.dirname(rec.dir), 'critique.md');
    keptCritique(rec).critiqueReport = report;
    const unchanged = noChange(loop, rec.sealed);
    if (unchanged) {
      end(ctx, task, loop, unchanged, report);
      return null;
    }
    loop.startedAt ??= Date.now();
    // What the critics read: the whole work since the task's start point (not only the revision's own diff).
    loop.base ??= rec.seal?.parent ?? null;
    // Kept before any critic runs, so a resumed loop counts its time limit from here even if this round is cut short.
    saveLoop(critiqueLoopFile(path.dirname(report)), loop);
    const round = loop.rounds.length + 1;
    const material =
      task.links && rec.seal
        ? await diffMaterial(
            task.links,
            { ...rec.seal, parent: loop.base ?? rec.seal.parent, changed: (loop.base ?? rec.seal.parent) !== rec.seal.sha },
            task.spec.checkTimeoutMs,
          )
        : filesMaterial(task.state.dir);
    const records: CritiqueRecord[] = (keptCritique(rec).critiques = []);
    for (const [i, choice] of policy.critics.entries()) {
      const r = await runCritic(ctx, task, rec, io, { n: i + 1, round, choice, material, previous: loop.pending ? loop.open : [] }).catch((e: unknown) => {
        // Stopped while it ran (the spend passed a budget, a stop): its row keeps what it spent.
        if (e instanceof StoppedCritic) records.push(e.critique);
        throw e;
      });
      records.push(r);
      const verified = r.criticisms.filter((c) => c.verified).length;
      ctx.emit({
        type: 'task-note',
        key: task.spec.key,
        note: `critique round ${round}, critic ${i + 1}/${policy.critics.length} (${criticName(r)}): ${r.error ? `ERROR (${r.error})` : `${verified} verified, ${r.criticisms.length - verified} dropped`}`,
      });
    }
    const criticisms = records.flatMap((r) => r.criticisms);
    // Two critics pointing at the same target make one point for the revision (the rows keep both).
    const seen = new Set<string>();
    const verified = criticisms.filter((c) => c.verified && !seen.has(criticismTarget(c)) && seen.add(criticismTarget(c)));
    loop.dropped += criticisms.filter((c) => !c.verified).length;
    const decision = decideRound({
      verified,
      revisions: loop.revisions,
      rounds: policy.rounds,
      elapsedMs: Date.now() - loop.startedAt,
      timeLimitMs: policy.timeLimitMs,
    });
    loop.rounds.push({
      round,
      attempt: rec.attempt,
      sealed: rec.sealed,
      criticisms,
      criticErrors: records.flatMap((r) => (r.error ? [`critic ${r.critic} (${criticName(r)}) gave no valid answer: ${r.error}`] : [])),
      decision: decision.kind === 'revise' ? `revision ${loop.revisions + 1} asked` : `stopped (${decision.why})`,
    });
    if (decision.kind === 'revise') {
      loop.revisions++;
      loop.pending = true;
      loop.lastSealed = rec.sealed;
      loop.open = verified;
      keptCritique(rec).revision = revisionText(round, verified);
      writeReport(task, loop, report);
      ctx.emit({
        type: 'task-note',
        key: task.spec.key,
        note: `critique round ${round}: ${verified.length} verified criticism(s); revision ${loop.revisions} of at most ${policy.rounds} next (report: ${report})`,
      });
      return null;
    }
    end(ctx, task, loop, decision, report);
    return null;
  },
};

/** Ends the loop: what stays unresolved, the report, state.json's view, a note. */
function end(ctx: AttemptContext, task: TaskRuntime, loop: CritiqueLoop, decision: Extract<RoundDecision, { kind: 'stop' }>, report: string): void {
  loop.stopped = decision.why;
  loop.unresolved = decision.unresolved;
  loop.pending = false;
  writeReport(task, loop, report);
  ctx.emit({
    type: 'task-note',
    key: task.spec.key,
    note: `critique stopped: ${decision.why}; ${loop.unresolved.length} unresolved, ${loop.dropped} dropped in all (report: ${report})`,
  });
}

/**
 * Ends a task's loop from outside a round (the revision it asked will not run: the task was stopped, the run drained),
 * keeping what the revision was handed as unresolved. Nothing when the task has no loop or it already ended.
 */
export function endCritique(task: TaskRuntime, why: string): void {
  const loop = loops.get(task);
  const report = task.state.critique?.report;
  if (!loop || loop.stopped !== null || !report) return;
  loop.stopped = why;
  loop.unresolved = loop.open;
  loop.pending = false;
  writeReport(task, loop, report);
}

/**
 * What a retry after a failed revision is handed besides its failure: the criticisms the revision was asked to
 * address, still open; '' when no revision is pending.
 */
export function pendingCritique(task: TaskRuntime): string {
  const loop = loops.get(task);
  if (!loop?.pending || !loop.open.length) return '';
  return `\n\nThis attempt was a revision after critique; the points it was to address are still open:\n${revisionText(loop.rounds.length, loop.open)}`;
}

/**
 * As the attempt settles (Workflow.onAttemptEnd): a PASS whose round asked a revision hands it to the next attempt,
 * without spending the retry budget — unless the task cannot go on (stopped, the run drained, an input rerun under
 * it): the loop then ends, its revision's points unresolved. Every row of a task whose loop ran names its report.
 * Returns the revision's text, or null.
 */
export function settleCritique(task: TaskRuntime, rec: AttemptRecord, how: { goOn: boolean; stopped: boolean }): string | null {
  let again: string | null = null;
  const { revision } = critiqueOf(rec);
  if (rec.verdict === 'PASS' && revision !== undefined) {
    if (how.goOn) {
      again = revision;
      handed.set(task, again);
    } else endCritique(task, how.stopped ? 'the task was stopped before its revision' : 'the run was drained before the revision');
  }
  const report = task.state.critique?.report;
  if (report !== undefined) keptCritique(rec).critiqueReport ??= report;
  return again;
}

/**
 * Restores a task's loop for `verdict resume` / `verdict rerun` of a run an earlier orchestrator left (run/take-over.ts
 * takeOverTasks), from its critique-loop.json (run/workflows/critique/state.ts): the next round is numbered after the kept ones,
 * the time limit counts from the loop's first round, the revisions done count toward `rounds`, and a revision that was
 * asked and not criticised yet is asked again (the next attempt is handed its points, spending no retry). A loop that
 * ended stays ended: no critique runs on the task again. Nothing for a task without `critique` or without a kept loop.
 * @throws Error naming the file and field when the kept loop cannot be read
 */
export function restoreCritique(ctx: AttemptContext, task: TaskRuntime): void {
  const policy = task.spec.critique;
  if (!policy) return;
  const taskRun = path.join(runDir(ctx.opts.home, ctx.runId), 'tasks', task.spec.key);
  const loop = loadLoop(critiqueLoopFile(taskRun));
  if (!loop) return;
  loops.set(task, loop);
  task.state.critique = loopView(loop, path.join(taskRun, 'critique.md'));
  if (loop.stopped !== null) {
    ctx.emit({ type: 'task-note', key: task.spec.key, note: `critique ended before (${loop.stopped}); no critique runs on this task again` });
    return;
  }
  if (loop.pending) {
    task.failure = revisionText(loop.rounds.length, loop.open);
    handed.set(task, task.failure);
  }
  const since = loop.startedAt === null ? '' : `, time counted since ${new Date(loop.startedAt).toISOString()}`;
  ctx.emit({
    type: 'task-note',
    key: task.spec.key,
    note: `critique goes on: round ${loop.rounds.length + 1} next, ${loop.revisions} of at most ${policy.rounds} revision(s) done${loop.pending ? ` (revision ${loop.revisions} asked again, handed ${loop.open.length} point(s))` : ''}${since}`,
  });
}

/** Keeps the loop (critique-loop.json), writes the report whole (beside, then renamed) and points state.json's view at it. */
function writeReport(task: TaskRuntime, loop: CritiqueLoop, report: string): void {
  saveLoop(critiqueLoopFile(path.dirname(report)), loop);
  const tmp = `${report}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, renderReport(task.spec.key, loop));
  fs.renameSync(tmp, report);
  task.state.critique = loopView(loop, report);
}

/** A critic stopped while it ran: a Cancelled carrying its record (cancelled, with what it spent until then). */
class StoppedCritic extends Cancelled {
  constructor(readonly critique: CritiqueRecord) {
    super(critique.error ?? 'stopped');
  }
}

/** Critic record `r` completed from what its stopped run left (receipt, usage and cost so far, why), as a StoppedCritic. */
function stoppedCritic(r: CritiqueRecord, e: ReaderStopped): StoppedCritic {
  Object.assign(r, { receipt: e.run.receipt, usage: e.run.usage, costMicroUsd: e.run.costMicroUsd, error: e.run.failure, cancelled: true });
  r.endedAt = Date.now();
  return new StoppedCritic(r);
}

/**
 * Runs critic `o.n` (1-based) on the attempt and checks each of its criticisms. Never throws but Cancelled (the task
 * was stopped; StoppedCritic once the critic had started).
 */
async function runCritic(
  ctx: AttemptContext,
  task: TaskRuntime,
  rec: AttemptRecord,
  io: AttemptIo,
  o: { n: number; round: number; choice: EngineChoice; material: ReviewMaterial; previous: readonly CheckedCriticism[] },
): Promise<CritiqueRecord> {
  const { opts } = ctx;
  const { spec } = task;
  const engine = opts.engines.get(o.choice.engine) as EngineSpec;
  const startedAt = Date.now();
  const r: CritiqueRecord = {
    critic: o.n,
    round: o.round,
    engine: engine.name,
    harness: engine.harness,
    ...ctx.spend.billingOf(engine.name),
    model: o.choice.model ?? engine.defaultModel,
    startedAt,
    endedAt: startedAt,
    receipt: null,
    usage: null,
    costMicroUsd: null,
    criticisms: [],
    error: null,
  };
  const files = critiqueFiles(rec, o.n);
  const scratch = stepScratch(opts.home, ctx.runId, spec.key, rec.attempt, `critique-${o.n}`);
  try {
    // The critic's own copy of the material, inside its sandbox (the attempt's records are hidden from it).
    const materialFile = path.join(scratch, 'critique-material.txt');
    fs.writeFileSync(materialFile, o.material.text);
    const prompt = critiquePrompt({
      spec: spec.spec,
      check: spec.check,
      verified: spec.verified,
      checkOutput: rec.check?.output ?? '',
      material: o.material,
      materialFile,
      taskDir: task.state.dir,
      round: o.round,
      previous: o.previous,
      commandTimeoutS: Math.round(spec.checkTimeoutMs / 1000),
    });
    fs.writeFileSync(files.prompt, prompt);
    const run = await runReader(ctx, task, io, {
      choice: o.choice,
      role: `critic ${o.n}`,
      reader: CRITIC,
      prompt,
      scratch,
      logFile: files.log,
      env: { VERDICT_CRITIC: String(o.n), VERDICT_CRITIQUE_ROUND: String(o.round), VERDICT_CRITIQUE_MATERIAL: materialFile },
    });
    r.receipt = run.receipt;
    r.usage = run.usage;
    r.costMicroUsd = run.costMicroUsd;
    if (run.failure) r.error = run.failure;
    else {
      const parsed = parseCritiqueAnswer(run.message);
      if (!parsed.ok) r.error = parsed.error;
      else {
        for (const [i, c] of parsed.answer.criticisms.entries())
          r.criticisms.push({
            ...c,
            critic: o.n,
            ...(await checkCriticism(ctx, task, rec, io, c, { critic: o.n, index: i + 1, log: files.command(i + 1), controlLog: files.control(i + 1) })),
          });
      }
    }
  } catch (e) {
    if (e instanceof ReaderStopped) throw stoppedCritic(r, e);
    if (e instanceof Cancelled || task.abort.signal.aborted) throw e instanceof Cancelled ? e : new Cancelled();
    r.error = `the critic could not run: ${(e as Error).message}`;
  } finally {
    r.endedAt = Date.now();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  return r;
}

/**
 * Whether file criticism `c` points at a line of the sealed proposal: its path inside the proposal, the file readable
 * (at most MAX_CRITICISED_FILE_BYTES) and that long; the evidence is the line (its first 200 characters), else why not.
 */
async function checkFileCriticism(
  ctx: AttemptContext,
  task: TaskRuntime,
  rec: AttemptRecord,
  c: LineCriticism,
): Promise<{ verified: boolean; evidence: string }> {
  const p = proposalPath(c.file);
  if (!p.ok) return { verified: false, evidence: p.why };
  let text: string;
  try {
    text = await readSealedFile(ctx.repo?.root ?? null, rec.seal, task.state.dir, p.rel, MAX_CRITICISED_FILE_BYTES);
  } catch (e) {
    return { verified: false, evidence: `${p.rel}: ${(e as Error).message}` };
  }
  const lines = lineCount(text);
  if (c.line > lines) return { verified: false, evidence: `${p.rel} has ${lines} line(s), not ${c.line}` };
  const shown = (text.split('\n')[c.line - 1] ?? '').trim();
  return { verified: true, evidence: `${p.rel}:${c.line}: ${shown.length > 200 ? `${shown.slice(0, 199)}…` : shown}` };
}

/** What a criticism's command did on the empty control tree, from its receipt: passed, or how it did not. Pure. */
function controlRun(receipt: Receipt): ControlRun {
  return receipt.exitCode === 0
    ? { passed: true }
    : {
        passed: false,
        how: receipt.timedOut
          ? 'it ran out of time'
          : receipt.spawnError
            ? 'it could not start'
            : receipt.exitCode === null
              ? `ended by ${receipt.signal ?? 'a signal'}`
              : `exited ${receipt.exitCode}`,
      };
}

/**
 * Whether criticism `c` points at something checkable in this attempt's proposal, with the evidence or why not.
 * @throws Cancelled when the task was stopped while its command ran
 */
async function checkCriticism(
  ctx: AttemptContext,
  task: TaskRuntime,
  rec: AttemptRecord,
  io: AttemptIo,
  c: Criticism,
  o: { critic: number; index: number; log: string; controlLog: string },
): Promise<{ verified: boolean; evidence: string }> {
  if (!isCommand(c)) return checkFileCriticism(ctx, task, rec, c);
  // A command that can never exit 0 fails on anything: dropped without running it.
  const never = cannotPass(c.command);
  if (never) return { verified: false, evidence: never };
  const { spec } = task;
  const scratch = stepScratch(ctx.opts.home, ctx.runId, spec.key, rec.attempt, `critique-${o.critic}-${o.index}`);
  try {
    let dir = task.state.dir;
    if (!io.boxed) {
      // No sandbox to make the task dir read-only: the command runs in a copy of it (without .git), discarded after.
      dir = path.join(scratch, 'proposal');
      fs.cpSync(task.state.dir, dir, { recursive: true, verbatimSymlinks: true, filter: (src) => path.basename(src) !== '.git' });
    }
    const git = task.links && io.boxed ? worktreeReadAccess(task.links) : { env: {}, readOnly: [] };
    const run = (where: string, readOnly: string[], log: string, env: Record<string, string>) =>
      runCheck({
        check: c.command,
        taskDir: where,
        logFile: log,
        timeoutMs: spec.checkTimeoutMs,
        env: { ...io.taskEnv(), VERDICT_TASK_DIR: where, ...(io.boxed ? scratchEnv(scratch) : { TMPDIR: path.join(scratch, 'tmp') }), ...env },
        expectFiles: [],
        signal: task.abort.signal,
        sandbox: stepPlan(ctx, task.containment, {
          writable: [scratch],
          network: spec.network,
          readOnly,
          hidden: hiddenFromSteps(ctx.opts.home, ctx.opts.manifest.worktrees ? null : ctx.opts.manifest.workdir),
        }),
        ...stepCaps(spec),
      });
    const result = await run(dir, [task.state.dir, ...git.readOnly], o.log, git.env);
    const receipt = result.receipt;
    if (receipt.cancelled) throw new Cancelled();
    if (receipt.spawnError) return { verified: false, evidence: `the command could not start: ${receipt.spawnError}` };
    if (receipt.timedOut)
      return {
        verified: false,
        evidence: `the command ran out of time after ${Math.round(spec.checkTimeoutMs / 1000)} s: a criticism's command must fail on its own`,
      };
    if (receipt.exitCode === 0) return { verified: false, evidence: 'the command passed (exit 0) on the proposal: it points at nothing' };
    if (receipt.exitCode === null) return { verified: false, evidence: `the command was ended by ${receipt.signal ?? 'a signal'}` };
    // It failed on the proposal; it counts only if that failure is about the proposal (run/workflows/critique/command.ts).
    const named = await firstSealedFile(ctx.repo?.root ?? null, rec.seal, task.state.dir, namedPaths(c.command));
    let control: ControlRun | null = null;
    if (named === null) {
      // The control: an empty tree, read-only like the proposal (sandboxed), writable like its copy (unsandboxed).
      const empty = path.join(scratch, 'control');
      fs.mkdirSync(empty);
      const ran = await run(empty, [empty], o.controlLog, {});
      if (ran.receipt.cancelled) throw new Cancelled();
      control = controlRun(ran.receipt);
    }
    const counts = commandCounts(named, control);
    return counts.verified
      ? { verified: true, evidence: commandEvidence(receipt.exitCode, result.output, counts.why) }
      : { verified: false, evidence: counts.why };
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
