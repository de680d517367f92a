/**
 * A consensus group's inputs engine (docs/workflows.md "Consensus"): `distinguish.inputs` naming an engine instead of a
 * command. Once per consensus round, before any probe, the engine is asked to write inputs on which the passing
 * candidates might disagree (inputs-record.ts inputsPrompt), one file per input into its working directory.
 *
 * What it sees and may do, in its own sandbox (whatever the task's full_access, as a ranking reviewer): the task's
 * spec, check and probe and each passing candidate's work under a neutral name (rank-material.ts, as `ranked` shows
 * it), in its prompt and as read-only copies in a folder of its own; its working directory — the inputs folder — and
 * its own TMPDIR are the only places it may write (with its own, empty view of its engine's state dirs: containment.ts
 * readerStateView); VERDICT_HOME (the candidates' worktrees, trees and records), the plain-mode workdir and the
 * repository's git dir are hidden behind read-only empty folders, and its environment holds no VERDICT_* variable. Its inputs count only when it ended
 * on its own (run/reader-end.ts), and only what cases.ts readCases reads of the folder: regular files, never a link.
 * It is priced and counted against budget_usd and budget_tokens like a ranking reviewer, and recorded as an eval row of
 * its own (inputs-record.ts inputsRow).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { EngineSpec } from '../../../../../engines/types';
import type { EngineChoice } from '../../../manifest/types';
import { hiddenFromSteps } from '../../containment';
import type { AttemptContext, TaskRuntime } from '../../steps/context';
import { superviseReadOnly, uncutUsage } from '../../steps/reader';
import { FINAL_EVENT_GRACE_MS, readLog } from '../../steps/work';
import { readerEnd } from '../../reader-end';
import { usageTokens, type ReaderStep, type SpendHold } from '../../spend';
import type { ReviewMaterial } from '../../review-material';
import { readCases } from './cases';
import { inputsFiles, inputsPrompt, type InputsRecord } from './inputs-record';
import { redact, writeRankMaterial, type CandidateSource, type Redaction } from './rank-material';

/** Inherited environment variables an inputs engine never gets (they name Verdict's home, the run or its identity). */
const PRIVATE_ENV = /^(VERDICT|RINGER|FLEET)_/;

/** An inputs engine, as the budget knows its reader (spend.ts ReaderStep). */
const INPUTS_ENGINE: ReaderStep = { step: 'distinguish', who: 'an inputs engine' };

/** One round's inputs engine: who, for which group, with what it is shown. */
export interface InputsRound {
  group: TaskRuntime;
  choice: EngineChoice;
  /** The round's records folder (`consensus-<round>/`): its prompt, log and record, out of its sight. */
  dir: string;
  /** The round's scratch root (hidden from it but for its three folders; removed after the round). */
  root: string;
  probe: string;
  maxInputs: number;
  /** The passing candidates' work under their names, in name order. */
  work: { name: string; source: CandidateSource; material: ReviewMaterial }[];
  redaction: Redaction;
}

/**
 * Runs the inputs engine of `r` and reads what it wrote. Returns its record (for its eval row) and the inputs (the
 * first `maxInputs`, and how many it wrote) or why there are none that count; `notes` gains what was left out. Never
 * throws.
 */
export async function runInputsEngine(
  ctx: AttemptContext,
  r: InputsRound,
  notes: string[],
): Promise<{ record: InputsRecord; made: { inputs: string[]; given: number } | string }> {
  const { spec } = r.group;
  const engine = ctx.opts.engines.get(r.choice.engine) as EngineSpec;
  const model = r.choice.model ?? engine.defaultModel;
  const startedAt = Date.now();
  const rec: InputsRecord = {
    engine: engine.name,
    harness: engine.harness,
    ...ctx.spend.billingOf(engine.name),
    model,
    startedAt,
    endedAt: startedAt,
    receipt: null,
    usage: null,
    costMicroUsd: null,
    given: 0,
    error: null,
    cancelled: false,
  };
  const done = (why: string | null, made?: { inputs: string[]; given: number }) => {
    rec.error = why;
    return { record: rec, made: why === null && made ? made : `the inputs engine ${engine.name}${model ? `/${model}` : ''} made no input: ${why ?? 'none'}` };
  };
  // Its known cost counts against budget_usd and budget_tokens like a ranking reviewer's; past them it does not start.
  const reservation = await ctx.spend.admitReader(engine, model, spec, INPUTS_ENGINE, r.group.abort.signal, (note) => ctx.emit({ type: 'run-note', note }));
  if (reservation === null) {
    rec.cancelled = true;
    return done('stopped before it started');
  }
  if (typeof reservation === 'string') return done(`not started: ${reservation}`);
  try {
    const made = await writeInputs(ctx, r, { engine, model, hold: reservation }, rec, notes);
    return typeof made === 'string' ? done(made) : done(null, made);
  } catch (e) {
    rec.cancelled = r.group.abort.signal.aborted;
    return done(`it could not run: ${(e as Error).message}`);
  } finally {
    rec.endedAt = Date.now();
    ctx.spend.settle(reservation, rec.costMicroUsd, usageTokens(rec.usage));
  }
}

/** The supervised run of the inputs engine once its cost is reserved, and the reading of its folder. */
async function writeInputs(
  ctx: AttemptContext,
  r: InputsRound,
  who: { engine: EngineSpec; model: string | null; hold: SpendHold },
  rec: InputsRecord,
  notes: string[],
): Promise<{ inputs: string[]; given: number } | string> {
  const { opts } = ctx;
  const { engine, model, hold } = who;
  const { spec } = r.group;
  const base = path.join(r.root, 'inputs-engine');
  const folder = path.join(base, 'inputs');
  const material = path.join(base, 'material');
  const tmp = path.join(base, 'tmp');
  for (const d of [folder, material, tmp]) fs.mkdirSync(d, { recursive: true });
  const files = inputsFiles(r.dir);
  const written = writeRankMaterial(material, r.work, r.redaction);
  const prompt = inputsPrompt({
    spec: spec.spec,
    check: spec.check,
    probe: r.probe,
    maxInputs: r.maxInputs,
    folder,
    material: { dir: material, files: written },
    work: r.work.map((w) => ({ name: w.name, text: redact(w.material.text, r.redaction) })),
  });
  fs.writeFileSync(files.prompt, prompt);
  const boxed = ctx.bwrap !== null;
  const { receipt, tail, cutUsage } = await superviseReadOnly(ctx, {
    engine,
    model,
    prompt,
    scratch: folder,
    writable: [tmp],
    logFile: files.log,
    env: { ...engine.env, ...(boxed ? { TMPDIR: tmp, TMP: tmp, TEMP: tmp } : {}) },
    unsetEnv: Object.keys(process.env).filter((k) => PRIVATE_ENV.test(k)),
    timeouts: spec,
    signal: r.group.abort.signal,
    containment: boxed ? 'bwrap' : 'none',
    readOnly: [material],
    hidden: [...hiddenFromSteps(opts.home, opts.manifest.worktrees ? null : opts.manifest.workdir), ...(ctx.repo ? [ctx.repo.commonDir] : [])],
    // Not even a throwaway place there: its writes land in its folder (and TMPDIR) or nowhere.
    hiddenReadOnly: true,
    noteKey: spec.key,
    role: 'the inputs engine',
    // Its spend counts as it streams: past the run's or the group's budget it is stopped (the group ends BUDGET_EXCEEDED).
    onUsage: (usage) => ctx.spend.readerProgress(hold, usage, model, engine),
  });
  const log = readLog(files.log);
  rec.receipt = receipt;
  rec.usage = uncutUsage(engine.parseOutput(log), cutUsage);
  rec.costMicroUsd = ctx.spend.cost(rec.usage, model, engine);
  if (receipt.cancelled) {
    rec.cancelled = true;
    const why: unknown = r.group.abort.signal.reason;
    return `stopped before it ended (${typeof why === 'string' ? why : 'the run was cancelled'})`;
  }
  // Its inputs count only from an engine that ended on its own (run/reader-end.ts), as a reviewer's answer does.
  const errorClass = receipt.exitCode !== 0 && !receipt.stoppedAfterFinal ? engine.classifyError(tail) : null;
  const ended = readerEnd(
    receipt,
    'the inputs engine',
    { timeoutMs: spec.timeoutMs, watchdogMs: spec.watchdogMs, finalGraceMs: opts.finalGraceMs ?? FINAL_EVENT_GRACE_MS },
    errorClass,
  );
  if (ended) return ended;
  const cases = readCases(folder, r.maxInputs, 'the inputs folder');
  notes.push(...cases.notes);
  rec.given = cases.given;
  if (!cases.inputs.length) return 'it wrote no file that can be read into its folder';
  return { inputs: cases.inputs, given: cases.given };
}
