/**
 * Step `review` (after a passed check, before deliver; only for tasks with `review`): each reviewer engine, one
 * after the other, reads the work (run/review-material.ts: the diff in worktree mode, the files in plain mode) and the
 * check's output, in its own sandbox where the task dir is read-only (and VERDICT_HOME hidden: it can write only its
 * scratch dir, where it starts, and its engine's state dirs, whose guarded settings are put back after it, as after
 * a worker), and
 * answers in its final message (engines/*: finalMessage; run/review-verdict.ts parseReviewAnswer). judgeReviews turns
 * the answers into the attempt's verdict under the task's `require`. Each review is kept on the record
 * (rec.reviews) and becomes an eval row of its own when the attempt settles (run/review-record.ts).
 *
 * Unsandboxed (--no-sandbox, a full_access task), the task dir is hashed before the first reviewer and after each: a
 * reviewer that changed it makes the attempt ERROR — what the check judged is no longer what is there, so nothing is
 * delivered. In the sandbox the task dir is mounted read-only (a write fails with EROFS), so it is not hashed: the
 * hash reads every file, twice per reviewer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expandArgv } from '../../../../engines';
import type { EngineSpec } from '../../../../engines/types';
import { restoreWorktreeLinks, worktreeStepAccess } from '../../git/worktree';
import { RingBuffer } from '../../process/ring-buffer';
import { supervise } from '../../process/supervisor';
import { runDir } from '../../config/home';
import type { EngineChoice } from '../../manifest/types';
import { engineState, hiddenFromSteps, scratchEnv, stepPlan, stepScratch } from '../containment';
import { restoreState, snapshotState, type StateSnapshot } from '../state-guard';
import { treeHash } from '../tree-hash';
import { diffMaterial, filesMaterial, type ReviewMaterial } from '../review-material';
import { reviewPrompt } from '../review-prompt';
import { reviewFiles, reviewerName, type ReviewRecord } from '../review-record';
import { judgeReviews, parseReviewAnswer } from '../review-verdict';
import type { AttemptRecord } from '../attempt-record';
import { Cancelled, type AttemptContext, type AttemptIo, type Step, type TaskRuntime } from './context';
import { FINAL_EVENT_GRACE_MS, finalEventSeen, readLog } from './work';

export const reviewStep: Step = {
  name: 'review',
  when: (rec, task) => rec.verdict === 'PASS' && (task.spec.review?.engines.length ?? 0) > 0,
  async run(ctx, task, rec, io) {
    const policy = task.spec.review!;
    const { spec } = task;
    task.state.status = 'checking';
    rec.phase = 'checking';
    io.sync();
    const material = task.links && rec.seal ? await diffMaterial(task.links, rec.seal, spec.checkTimeoutMs) : filesMaterial(task.state.dir);
    fs.writeFileSync(path.join(rec.dir, 'review-material.txt'), material.text);
    const before = io.boxed ? null : treeHash(task.state.dir);
    const reviews: ReviewRecord[] = (rec.reviews = []);
    for (const [i, choice] of policy.engines.entries()) {
      const review = await runReviewer(ctx, task, rec, io, i + 1, choice, material);
      reviews.push(review);
      ctx.emit({ type: 'task-note', key: spec.key, note: `review ${i + 1}/${policy.engines.length} by ${reviewerName(review)}: ${review.verdict ?? `ERROR (${review.error})`}` });
      if (before !== null && treeHash(task.state.dir) !== before) {
        review.verdict = null;
        review.concerns = [];
        review.error = 'the reviewer changed the task dir during its review';
        return { verdict: 'ERROR', reason: `reviewer ${i + 1} (${reviewerName(review)}) changed the task dir during its review; what the check judged is no longer what is there, so nothing is delivered` };
      }
    }
    const judged = judgeReviews(
      reviews.map((r) => ({ who: reviewerName(r), verdict: r.verdict ?? 'error', concerns: r.concerns, error: r.error })),
      policy.require,
    );
    // An approved attempt keeps what the check said of it (e.g. the worker's exit code).
    return judged.verdict === 'PASS' ? { verdict: 'PASS', reason: rec.reason } : judged;
  },
};

/** Runs reviewer `n` (1-based) on the attempt and reads its answer. Never throws but Cancelled (the task was stopped). */
async function runReviewer(ctx: AttemptContext, task: TaskRuntime, rec: AttemptRecord, io: AttemptIo, n: number, choice: EngineChoice, material: ReviewMaterial): Promise<ReviewRecord> {
  const { opts } = ctx;
  const { spec } = task;
  const engine = opts.engines.get(choice.engine) as EngineSpec;
  const model = choice.model ?? engine.defaultModel;
  const startedAt = Date.now();
  const review: ReviewRecord = { reviewer: n, engine: engine.name, harness: engine.harness, model, startedAt, endedAt: startedAt, receipt: null, usage: null, costMicroUsd: null, verdict: null, concerns: [], error: null };
  const files = reviewFiles(rec, n);
  const scratch = stepScratch(opts.home, ctx.runId, spec.key, rec.attempt, `review-${n}`);
  try {
    // The reviewer's own copy of the material, inside its sandbox (the attempt's records are hidden from it).
    const materialFile = path.join(scratch, 'review-material.txt');
    fs.writeFileSync(materialFile, material.text);
    const prompt = reviewPrompt({ spec: spec.spec, check: spec.check, verified: spec.verified, checkOutput: rec.check?.output ?? '', material, materialFile, taskDir: task.state.dir });
    fs.writeFileSync(files.prompt, prompt);
    const state = engineState(engine, ctx.env);
    const gitAccess = task.links && io.boxed ? worktreeStepAccess(task.links) : { writable: [], env: {} };
    const env: Record<string, string> = { ...engine.env, ...io.taskEnv(), ...(io.boxed ? scratchEnv(scratch) : {}), ...gitAccess.env, VERDICT_REVIEWER: String(n), VERDICT_REVIEW_MATERIAL: materialFile };
    // The reviewer starts in its scratch dir, not in the task dir: project files the worker wrote there (AGENTS.md,
    // CLAUDE.md, .claude/settings.json with hooks, opencode.json, .codex/) must not configure or instruct it. It
    // reads the task dir by its path (VERDICT_TASK_DIR, named in the prompt).
    const argv = expandArgv(engine, { spec: prompt, taskdir: scratch, model, engineArgs: [], fullAccess: false, nested: io.boxed });
    let guard: StateSnapshot | null = null;
    if (io.boxed && state.guarded.length) {
      guard = ctx.stateBaselines.get(engine.name) ?? snapshotState(state.guarded, path.join(runDir(opts.home, ctx.runId), 'engine-state', engine.name));
      ctx.stateBaselines.set(engine.name, guard);
    }
    const recent = new RingBuffer(256 * 1024);
    const { receipt, tail } = await supervise({
      file: ctx.binaries.get(engine.name) ?? engine.binary,
      args: argv,
      cwd: scratch,
      env,
      logFile: files.log,
      timeoutMs: spec.timeoutMs,
      signal: task.abort.signal,
      killGraceMs: opts.killGraceMs,
      idleTimeoutMs: spec.watchdogMs ?? undefined,
      finalEvent: { seen: finalEventSeen(engine, recent), graceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
      onOutput: (chunk) => recent.push(chunk),
      sandbox: stepPlan(ctx.bwrap, task.containment, {
        // Read-only: the task dir (bound back over the hidden workdir / VERDICT_HOME) and the worktree's git objects.
        writable: [scratch, ...state.dirs],
        network: spec.network,
        privateFiles: state.files,
        readOnly: [task.state.dir, ...gitAccess.writable],
        hidden: hiddenFromSteps(opts.home, opts.manifest.worktrees ? null : opts.manifest.workdir),
      }),
    });
    const putBack = guard ? restoreState(guard) : [];
    if (putBack.length) ctx.emit({ type: 'task-note', key: spec.key, note: `reviewer ${n} changed ${engine.name}'s own settings; put back: ${putBack.join(', ')}` });
    if (task.links) restoreWorktreeLinks(task.links);
    if (receipt.cancelled) throw new Cancelled();
    const log = readLog(files.log);
    review.receipt = receipt;
    review.usage = engine.parseOutput(log);
    review.costMicroUsd = ctx.spend.cost(review.usage, model);
    const seconds = (ms: number) => Math.round(ms / 1000);
    if (receipt.spawnError) review.error = `the reviewer could not start: ${receipt.spawnError}`;
    else if (receipt.stalled) review.error = `the reviewer printed nothing for ${seconds(spec.watchdogMs ?? 0)} s and was stopped`;
    else if (receipt.timedOut) review.error = `the reviewer ran out of time after ${seconds(spec.timeoutMs)} s and was stopped`;
    else {
      const parsed = parseReviewAnswer(engine.finalMessage(log));
      if (parsed.ok) {
        review.verdict = parsed.answer.verdict;
        review.concerns = parsed.answer.concerns;
      } else {
        const errorClass = receipt.exitCode !== 0 && !receipt.stoppedAfterFinal ? engine.classifyError(tail) : null;
        review.error = parsed.error + (receipt.exitCode !== 0 ? `; the reviewer exited ${receipt.exitCode ?? receipt.signal}${errorClass ? ` (${errorClass})` : ''}` : '');
      }
    }
  } catch (e) {
    if (e instanceof Cancelled || task.abort.signal.aborted) throw e instanceof Cancelled ? e : new Cancelled();
    review.error = `the reviewer could not run: ${(e as Error).message}`;
  } finally {
    review.endedAt = Date.now();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  return review;
}
