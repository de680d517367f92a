/**
 * Step `review` (after a passed check, before deliver; only for tasks with `review`): each reviewer engine, one
 * after the other, reads the work (run/review-material.ts: the diff in worktree mode, the files in plain mode) and the
 * check's output, read-only (run/steps/reader.ts: its own sandbox, VERDICT_HOME hidden, started in its scratch dir), and
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
import type { EngineSpec } from '../../../../engines/types';
import type { EngineChoice } from '../../manifest/types';
import { stepScratch } from '../containment';
import { treeHash } from '../tree-hash';
import { diffMaterial, filesMaterial, type ReviewMaterial } from '../review-material';
import { reviewPrompt } from '../review-prompt';
import { reviewFiles, reviewerName, type ReviewRecord } from '../review-record';
import { judgeReviews, parseReviewAnswer } from '../review-verdict';
import type { AttemptRecord } from '../attempt-record';
import { Cancelled, type AttemptContext, type AttemptIo, type Step, type TaskRuntime } from './context';
import { ReaderStopped, runReader } from './reader';
import { REVIEWER } from '../spend';

export const reviewStep: Step = {
  name: 'review',
  phase: 'checking',
  when: (rec, task) => rec.verdict === 'PASS' && (task.spec.review?.engines.length ?? 0) > 0,
  async run(ctx, task, rec, io) {
    const policy = task.spec.review!;
    const { spec } = task;
    const material = task.links && rec.seal ? await diffMaterial(task.links, rec.seal, spec.checkTimeoutMs) : filesMaterial(task.state.dir);
    fs.writeFileSync(path.join(rec.dir, 'review-material.txt'), material.text);
    const before = io.boxed ? null : treeHash(task.state.dir);
    const reviews: ReviewRecord[] = (rec.reviews = []);
    for (const [i, choice] of policy.engines.entries()) {
      const review = await runReviewer(ctx, task, rec, io, i + 1, choice, material).catch((e: unknown) => {
        // Stopped while it ran (the spend passed a budget, a stop): its row keeps what it spent.
        if (e instanceof StoppedReview) reviews.push(e.review);
        throw e;
      });
      reviews.push(review);
      ctx.emit({
        type: 'task-note',
        key: spec.key,
        note: `review ${i + 1}/${policy.engines.length} by ${reviewerName(review)}: ${review.verdict ?? `ERROR (${review.error})`}`,
      });
      if (before !== null && treeHash(task.state.dir) !== before) {
        review.verdict = null;
        review.concerns = [];
        review.error = 'the reviewer changed the task dir during its review';
        return {
          verdict: 'ERROR',
          reason: `reviewer ${i + 1} (${reviewerName(review)}) changed the task dir during its review; what the check judged is no longer what is there, so nothing is delivered`,
        };
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

/** A reviewer stopped while it ran: a Cancelled carrying its record (cancelled, with what it spent until then). */
class StoppedReview extends Cancelled {
  constructor(readonly review: ReviewRecord) {
    super(review.error ?? 'stopped');
  }
}

/**
 * Runs reviewer `n` (1-based) on the attempt and reads its answer. Never throws but Cancelled (the task was stopped;
 * StoppedReview once the reviewer had started).
 */
async function runReviewer(
  ctx: AttemptContext,
  task: TaskRuntime,
  rec: AttemptRecord,
  io: AttemptIo,
  n: number,
  choice: EngineChoice,
  material: ReviewMaterial,
): Promise<ReviewRecord> {
  const { opts } = ctx;
  const { spec } = task;
  const engine = opts.engines.get(choice.engine) as EngineSpec;
  const startedAt = Date.now();
  const review: ReviewRecord = {
    reviewer: n,
    engine: engine.name,
    harness: engine.harness,
    ...ctx.spend.billingOf(engine.name),
    model: choice.model ?? engine.defaultModel,
    startedAt,
    endedAt: startedAt,
    receipt: null,
    usage: null,
    costMicroUsd: null,
    verdict: null,
    concerns: [],
    error: null,
  };
  const files = reviewFiles(rec, n);
  const scratch = stepScratch(opts.home, ctx.runId, spec.key, rec.attempt, `review-${n}`);
  try {
    // The reviewer's own copy of the material, inside its sandbox (the attempt's records are hidden from it).
    const materialFile = path.join(scratch, 'review-material.txt');
    fs.writeFileSync(materialFile, material.text);
    const prompt = reviewPrompt({
      spec: spec.spec,
      check: spec.check,
      verified: spec.verified,
      checkOutput: rec.check?.output ?? '',
      material,
      materialFile,
      taskDir: task.state.dir,
    });
    fs.writeFileSync(files.prompt, prompt);
    const run = await runReader(ctx, task, io, {
      choice,
      role: `reviewer ${n}`,
      reader: REVIEWER,
      prompt,
      scratch,
      logFile: files.log,
      env: { VERDICT_REVIEWER: String(n), VERDICT_REVIEW_MATERIAL: materialFile },
    });
    review.receipt = run.receipt;
    review.usage = run.usage;
    review.costMicroUsd = run.costMicroUsd;
    if (run.failure) review.error = run.failure;
    else {
      const parsed = parseReviewAnswer(run.message);
      if (parsed.ok) {
        review.verdict = parsed.answer.verdict;
        review.concerns = parsed.answer.concerns;
      } else review.error = parsed.error;
    }
  } catch (e) {
    if (e instanceof ReaderStopped) {
      Object.assign(review, { receipt: e.run.receipt, usage: e.run.usage, costMicroUsd: e.run.costMicroUsd, error: e.run.failure, cancelled: true });
      review.endedAt = Date.now();
      throw new StoppedReview(review);
    }
    if (e instanceof Cancelled || task.abort.signal.aborted) throw e instanceof Cancelled ? e : new Cancelled();
    review.error = `the reviewer could not run: ${(e as Error).message}`;
  } finally {
    review.endedAt = Date.now();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  return review;
}
