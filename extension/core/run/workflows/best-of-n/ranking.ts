/**
 * The ranking reviewers of a `select: "ranked"` best-of-N group (docs/workflows.md "Ranked"), one after the other. Each
 * runs like a reviewer of run/steps/review.ts — its own scratch dir as its working directory, the rest of the
 * filesystem read-only, its engine's guarded settings put back after it — but sees less: no task dir at all. Its
 * scratch holds copies of the passing candidates' work under their neutral names (rank-material.ts); VERDICT_HOME
 * (the candidates' worktrees, records and state), the plain-mode workdir (their dirs) and the repository's git dir
 * (their branches `…--c<N>`) are hidden from its sandbox, and its environment holds no VERDICT_* variable. It answers
 * per schemas/rank-answer.schema.json (rank.ts parseRankAnswer).
 */
import fs from 'node:fs';
import type { EngineSpec } from '../../../../../engines/types';
import type { EngineChoice } from '../../../manifest/types';
import { hiddenFromSteps, scratchEnv, stepScratch } from '../../containment';
import type { AttemptContext, TaskRuntime } from '../../steps/context';
import { superviseReadOnly, uncutUsage } from '../../steps/reader';
import { FINAL_EVENT_GRACE_MS, readLog } from '../../steps/work';
import { readerEnd } from '../../reader-end';
import { parseRankAnswer, rankPrompt } from './rank';
import { rankFiles, type RankRecord } from './rank-record';
import { redact, writeRankMaterial, type CandidateSource, type Redaction } from './rank-material';
import type { ReviewMaterial } from '../../review-material';
import { usageTokens, type ReaderStep } from '../../spend';

/** Inherited environment variables a ranking reviewer never gets (they name Verdict's home, the run or its identity). */
const PRIVATE_ENV = /^(VERDICT|RINGER|FLEET)_/;

/** A ranking reviewer, as the budget knows its reader (spend.ts ReaderStep). */
const RANKER: ReaderStep = { step: 'rank', who: 'a ranking reviewer' };

/** One round of ranking: the group, its round's records folder and what the reviewers are shown. */
export interface RankingRound {
  group: TaskRuntime;
  round: number;
  /** The round's records folder (rank-record.ts rankDir): prompts and logs, out of every reviewer's sight. */
  dir: string;
  /** The passing candidates' work under their names, in name order. */
  work: { name: string; source: CandidateSource; material: ReviewMaterial }[];
  redaction: Redaction;
}

/**
 * Runs every reviewer of the group's `rank` on the round, one after the other, handing each record to `onRecord` as it
 * ends. Stops early when the group is stopped (the stopped reviewer's record is `cancelled`). Never throws.
 */
export async function runRankers(ctx: AttemptContext, r: RankingRound, onRecord: (rec: RankRecord) => void): Promise<RankRecord[]> {
  const records: RankRecord[] = [];
  const engines = r.group.spec.rank?.engines ?? [];
  for (const [i, choice] of engines.entries()) {
    if (r.group.abort.signal.aborted) break;
    const rec = await runRanker(ctx, r, i + 1, choice);
    records.push(rec);
    onRecord(rec);
    if (rec.cancelled) break;
  }
  return records;
}

/**
 * Reads into `rec` what ranking reviewer `rec.reviewer` left (`run`: its receipt, tail, usage cut from its log, and its
 * log): usage and cost, then its scores and reasons when it ended on its own with a valid answer naming `names`, else
 * why not (stopped: `cancelled`).
 */
function readRanking(
  ctx: AttemptContext,
  r: RankingRound,
  rec: RankRecord,
  engine: EngineSpec,
  run: Awaited<ReturnType<typeof superviseReadOnly>> & { log: string },
  names: string[],
): void {
  const { receipt, tail, cutUsage, log } = run;
  rec.receipt = receipt;
  rec.usage = uncutUsage(engine.parseOutput(log), cutUsage);
  rec.costMicroUsd = ctx.spend.cost(rec.usage, rec.model, engine);
  // An answer counts only from a ranking reviewer that ended on its own (run/reader-end.ts).
  const errorClass = receipt.exitCode !== 0 && !receipt.stoppedAfterFinal ? engine.classifyError(tail) : null;
  const ended = readerEnd(
    receipt,
    'the ranking reviewer',
    { timeoutMs: r.group.spec.timeoutMs, watchdogMs: r.group.spec.watchdogMs, finalGraceMs: ctx.opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
    errorClass,
  );
  if (receipt.cancelled) {
    rec.cancelled = true;
    const why: unknown = r.group.abort.signal.reason;
    rec.error = `stopped before it answered (${typeof why === 'string' ? why : 'the run was cancelled'})`;
  } else if (ended) rec.error = ended;
  else {
    const parsed = parseRankAnswer(engine.finalMessage(log), names);
    if (parsed.ok) {
      rec.scores = parsed.answer.scores;
      rec.reasons = parsed.answer.reasons;
    } else rec.error = parsed.error;
  }
}

/** Runs ranking reviewer `n` (1-based) and reads its answer. Never throws. */
async function runRanker(ctx: AttemptContext, r: RankingRound, n: number, choice: EngineChoice): Promise<RankRecord> {
  const { opts } = ctx;
  const { spec } = r.group;
  const engine = opts.engines.get(choice.engine) as EngineSpec;
  const model = choice.model ?? engine.defaultModel;
  const startedAt = Date.now();
  const rec: RankRecord = {
    reviewer: n,
    engine: engine.name,
    harness: engine.harness,
    ...ctx.spend.billingOf(engine.name),
    model,
    startedAt,
    endedAt: startedAt,
    receipt: null,
    usage: null,
    costMicroUsd: null,
    scores: null,
    reasons: {},
    error: null,
    cancelled: false,
  };
  // Its known cost counts against budget_usd like an attempt's (waiting while a step of its engine that nothing prices
  // runs); past the budget it does not start.
  const reservation = await ctx.spend.admitReader(engine, model, spec, RANKER, r.group.abort.signal, (note) => ctx.emit({ type: 'run-note', note }));
  if (reservation === null) {
    rec.cancelled = true;
    rec.error = 'stopped before it started';
    return rec;
  }
  if (typeof reservation === 'string') {
    rec.error = `not started: ${reservation}`;
    return rec;
  }
  const files = rankFiles(r.dir, n);
  const scratch = stepScratch(opts.home, ctx.runId, spec.key, r.round, `rank-${n}`);
  const boxed = ctx.bwrap !== null;
  try {
    const written = writeRankMaterial(scratch, r.work, r.redaction);
    const names = r.work.map((w) => w.name);
    const prompt = rankPrompt({
      spec: spec.spec,
      check: spec.check,
      rubric: spec.rank?.rubric ?? '',
      work: r.work.map((w) => ({ name: w.name, text: redact(w.material.text, r.redaction) })),
      files: written,
    });
    fs.writeFileSync(files.prompt, prompt);
    const { receipt, tail, cutUsage } = await superviseReadOnly(ctx, {
      engine,
      model,
      prompt,
      scratch,
      logFile: files.log,
      env: { ...engine.env, ...(boxed ? scratchEnv(scratch) : {}) },
      unsetEnv: Object.keys(process.env).filter((k) => PRIVATE_ENV.test(k)),
      timeouts: spec,
      signal: r.group.abort.signal,
      // Sandboxed whatever the task's full_access: a ranking reviewer needs nothing but its scratch and engine state.
      containment: boxed ? 'bwrap' : 'none',
      readOnly: [],
      hidden: [...hiddenFromSteps(opts.home, opts.manifest.worktrees ? null : opts.manifest.workdir), ...(ctx.repo ? [ctx.repo.commonDir] : [])],
      noteKey: spec.key,
      role: `ranking reviewer ${n}`,
      // Its spend counts as it streams: past the run's or the group's budget it is stopped (the group ends BUDGET_EXCEEDED).
      onUsage: (usage) => ctx.spend.readerProgress(reservation, usage, model, engine),
    });
    readRanking(ctx, r, rec, engine, { receipt, tail, cutUsage, log: readLog(files.log) }, names);
  } catch (e) {
    rec.cancelled = r.group.abort.signal.aborted;
    rec.error = `the ranking reviewer could not run: ${(e as Error).message}`;
  } finally {
    rec.endedAt = Date.now();
    ctx.spend.settle(reservation, rec.costMicroUsd, usageTokens(rec.usage));
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  return rec;
}
