/**
 * Running a consensus group's `distinguish` block (docs/workflows.md "Consensus"): its inputs command once (or, when
 * `inputs` names an engine, the writer the caller hands it: inputs-engine.ts), then its
 * probe on every passing candidate's sealed tree once per input, each run with the check's containment (its own
 * bubblewrap sandbox, no network, a fresh scratch dir as its only writable place, VERDICT_HOME and in plain mode the
 * workdir hidden, in worktree mode the repository's git dir too) and the block's time limit.
 *
 * What each run sees: the inputs command, the base tree (worktree mode: a copy of the base commit; plain mode: the
 * manifest's folder), read-only, and an empty folder $VERDICT_CASES it may write one file per input into. A probe run:
 * a copy of its candidate's sealed tree (worktree mode: the sealed commit; plain mode: its task dir) as its working
 * directory and the inputs folder, both read-only, and its input as $VERDICT_CASE (the text) and $VERDICT_CASE_FILE (a
 * file holding it); no other candidate's tree, and nothing it writes outlives it. What it printed on stdout (stderr is
 * not compared) and how it exited are its behaviour (consensus.ts decides from them).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { supervise } from '../../../process/supervisor';
import { hiddenFromSteps, scratchEnv, stepCaps, stepPlan } from '../../containment';
import { copyCommitTree, INPUTS_MAX_ENTRIES, INPUTS_TOTAL_BYTES, type CopyBudget } from '../../inputs';
import type { DistinguishPolicy } from '../../../manifest/types';
import type { AttemptContext, TaskRuntime } from '../../steps/context';
import type { Behaviour } from './consensus';
import { readCases } from './cases';

/** The most bytes of a candidate's sealed tree copied for its probe runs (as for a task's inputs: the rest is left out, and said). */
export const PROBE_TREE_BYTES = INPUTS_TOTAL_BYTES;
/** The most entries of a candidate's sealed tree copied for its probe runs. */
const PROBE_TREE_ENTRIES = INPUTS_MAX_ENTRIES;

/** One passing candidate to probe: its key and number, and where its sealed tree is. */
export interface ProbeCandidate {
  key: string;
  candidate: number;
  tree: { mode: 'worktree'; sha: string } | { mode: 'plain'; dir: string };
}

/** What running the block found. */
export interface DistinguishResult {
  /** The inputs used (the first `max_inputs`), their text. */
  inputs: string[];
  /** How many inputs the command made. */
  given: number;
  /** By candidate key, one behaviour per input, in input order (empty when no probe ran). */
  behaviours: Map<string, Behaviour[]>;
  /** Why consensus cannot decide before any behaviour is compared (the inputs command failed or made none), or null. */
  undecidable: string | null;
  /** What was left out or could not be copied, said in the records. */
  notes: string[];
}

/**
 * Makes the inputs of a `distinguish` whose inputs come from an engine (inputs-engine.ts): given the round's scratch
 * root (removed after the round) and the notes to add to, the inputs it wrote (the first `max_inputs`) and how many
 * it wrote, or why it made none that can be used.
 */
export type InputsWriter = (root: string, notes: string[]) => Promise<{ inputs: string[]; given: number } | string>;

/** What an earlier comparison of the same round found (an early probe, for stop_after): its inputs and, by key, the behaviours of the candidates it probed. */
export interface PriorComparison {
  inputs: string[];
  given: number;
  behaviours: ReadonlyMap<string, Behaviour[]>;
}

/**
 * Runs `policy` for `group` over `candidates`: scratch under `<home>/scratch/<run>/<group>/consensus-<round>/`
 * (removed at the end), logs and receipt under `recordsDir`. The inputs come from its command, or, when the policy
 * names an engine, from `more.writer`; with `more.prior` they are the prior's (nothing makes them again) and a
 * candidate the prior probed is not probed again (its behaviours are the prior's). Stopped by the group's abort
 * signal (what ran so far is returned; the caller sees the signal).
 * @throws Error only when a record cannot be written, or when the policy names an engine and no writer is given
 */
export async function runDistinguish(
  ctx: AttemptContext,
  group: TaskRuntime,
  policy: DistinguishPolicy,
  candidates: readonly ProbeCandidate[],
  round: number,
  recordsDir: string,
  more: { writer?: InputsWriter; prior?: PriorComparison } = {},
): Promise<DistinguishResult> {
  const { home } = ctx.opts;
  const root = path.join(home, 'scratch', ctx.runId, group.spec.key, `consensus-${round}`);
  fs.rmSync(root, { recursive: true, force: true });
  fs.mkdirSync(root, { recursive: true });
  fs.mkdirSync(recordsDir, { recursive: true });
  const notes: string[] = [];
  const result: DistinguishResult = { inputs: [], given: 0, behaviours: new Map(), undecidable: null, notes };
  try {
    const made = more.prior ? { inputs: more.prior.inputs, given: more.prior.given } : await inputsOf(ctx, group, policy, root, recordsDir, notes, more.writer);
    if (typeof made === 'string') return { ...result, undecidable: made };
    result.given = made.given;
    result.inputs = made.inputs;
    // Every input as a file of its own, in a folder every probe run sees read-only.
    const casesDir = path.join(root, 'inputs');
    fs.mkdirSync(casesDir);
    result.inputs.forEach((text, i) => fs.writeFileSync(path.join(casesDir, caseName(i)), text));
    for (const c of candidates) {
      if (group.abort.signal.aborted) break;
      const known = more.prior?.behaviours.get(c.key);
      if (known) {
        result.behaviours.set(c.key, known);
        continue;
      }
      const tree = path.join(root, 'trees', `c${c.candidate}`);
      fs.mkdirSync(tree, { recursive: true });
      const copied = await copyTree(ctx, c, tree);
      if (copied) notes.push(copied);
      const runs: Behaviour[] = [];
      for (let i = 0; i < result.inputs.length && !group.abort.signal.aborted; i++) {
        runs.push(await probeOnce(ctx, group, policy, { tree, casesDir, root, index: i, text: result.inputs[i] as string, candidate: c.candidate }));
      }
      result.behaviours.set(c.key, runs);
    }
    fs.writeFileSync(
      path.join(recordsDir, 'receipt.json'),
      JSON.stringify({ round, inputs: result.inputs, given: result.given, notes, behaviours: Object.fromEntries(result.behaviours) }, null, 2),
    );
    return result;
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/**
 * The inputs of `policy`: its command's (makeInputs) or its engine's (`writer`), the first `max_inputs` and how many
 * were made (more than `max_inputs` said in `notes`), or why there are none to use.
 * @throws Error when the policy names an engine and no writer is given
 */
async function inputsOf(
  ctx: AttemptContext,
  group: TaskRuntime,
  policy: DistinguishPolicy,
  root: string,
  recordsDir: string,
  notes: string[],
  writer: InputsWriter | undefined,
): Promise<{ inputs: string[]; given: number } | string> {
  const { inputs } = policy;
  let made: { inputs: string[]; given: number } | string;
  if (typeof inputs === 'string') made = await makeInputs(ctx, group, { ...policy, inputs }, root, recordsDir, notes);
  else if (writer) made = await writer(root, notes);
  else throw new Error(`the inputs of ${group.spec.key} come from the engine ${inputs.engine}, but no inputs writer was given`);
  if (typeof made === 'string') return made;
  const who = typeof inputs === 'string' ? 'the inputs command' : 'the inputs engine';
  if (made.given > policy.maxInputs) notes.push(`${who} made ${made.given} inputs; the first ${policy.maxInputs} (max_inputs) were used`);
  const used = made.inputs.slice(0, policy.maxInputs);
  if (used.length) return { inputs: used, given: made.given };
  return typeof inputs === 'string'
    ? 'the inputs command made no input (it printed no line and wrote no file into $VERDICT_CASES)'
    : 'the inputs engine made no input (it wrote no file that can be read into its folder)';
}

/** The file name of input `i` in the inputs folder: `0001`, `0002`, … */
function caseName(i: number): string {
  return String(i + 1).padStart(4, '0');
}

/** `s` quoted for bash: one single-quoted word. */
function shellWord(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs the inputs command: returns the inputs it made (files in $VERDICT_CASES, by name, when it wrote any: cases.ts
 * readCases, the first `max_inputs` read; else its stdout's non-blank lines) and how many, or why it made none that
 * can be used.
 */
async function makeInputs(
  ctx: AttemptContext,
  group: TaskRuntime,
  policy: DistinguishPolicy & { inputs: string },
  root: string,
  recordsDir: string,
  notes: string[],
): Promise<{ inputs: string[]; given: number } | string> {
  const { spec } = group;
  const scratch = path.join(root, 'inputs-scratch');
  const out = path.join(root, 'cases');
  fs.mkdirSync(path.join(scratch, 'tmp'), { recursive: true });
  fs.mkdirSync(out);
  let cwd: string;
  if (ctx.repo) {
    cwd = path.join(root, 'base');
    fs.mkdirSync(cwd);
    const omitted = await copyCommitTree(ctx.repo.root, ctx.repo.baseSha, cwd, { bytes: 0, entries: 0 }, 'base');
    if (omitted.length)
      notes.push(
        `the base tree the inputs command ran on left out ${omitted.length} entr${omitted.length === 1 ? 'y' : 'ies'} (${omitted
          .slice(0, 3)
          .map((o) => `${o.path}: ${o.reason}`)
          .join('; ')})`,
      );
  } else cwd = path.dirname(ctx.opts.manifest.file);
  const stdout = path.join(recordsDir, 'inputs.stdout');
  const stderr = path.join(scratch, 'stderr');
  const sandbox = stepPlan(ctx, group.containment, {
    writable: [scratch, out],
    network: false,
    readOnlyDirs: cwd.startsWith(root) ? [cwd] : [],
    hidden: hidden(ctx),
  });
  const { receipt } = await supervise({
    file: 'bash',
    args: ['-o', 'pipefail', '-c', `exec 2>${shellWord(stderr)}\n${policy.inputs}`],
    cwd,
    env: { ...(sandbox ? scratchEnv(scratch) : {}), VERDICT_CASES: out, VERDICT_RUN_ID: ctx.runId, VERDICT_TASK_KEY: spec.key },
    inherit: ctx.inheritedEnv,
    logFile: stdout,
    timeoutMs: policy.timeoutMs,
    signal: group.abort.signal,
    sandbox,
    ...caps(group),
  });
  const errTail = readTail(stderr, 2000).trim();
  if (errTail) fs.writeFileSync(path.join(recordsDir, 'inputs.stderr'), errTail + '\n');
  if (receipt.spawnError) return `the inputs command could not start: ${receipt.spawnError}`;
  if (receipt.timedOut) return `the inputs command timed out after ${policy.timeoutMs / 1000} s`;
  if (receipt.cancelled) return 'the inputs command was stopped';
  if (receipt.exitCode !== 0) return `the inputs command exited ${receipt.exitCode ?? receipt.signal}${errTail ? `: ${errTail.split('\n').at(-1)}` : ''}`;
  const files = readCases(out, policy.maxInputs, '$VERDICT_CASES');
  if (files.any) {
    notes.push(...files.notes);
    return { inputs: files.inputs, given: files.given };
  }
  const lines = fs
    .readFileSync(stdout, 'utf8')
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() !== '');
  return { inputs: lines, given: lines.length };
}

/** Copies candidate `c`'s sealed tree into `dest`; returns what it left out, said, or null. */
async function copyTree(ctx: AttemptContext, c: ProbeCandidate, dest: string): Promise<string | null> {
  if (c.tree.mode === 'worktree') {
    const budget: CopyBudget = { bytes: 0, entries: 0 };
    const omitted = await copyCommitTree((ctx.repo as NonNullable<AttemptContext['repo']>).root, c.tree.sha, dest, budget, `c${c.candidate}`);
    return omitted.length
      ? `candidate ${c.candidate}'s tree copy left out ${omitted.length} entr${omitted.length === 1 ? 'y' : 'ies'} (${omitted
          .slice(0, 3)
          .map((o) => `${o.path}: ${o.reason}`)
          .join('; ')})`
      : null;
  }
  // Plain mode: its task dir, links kept as written (never followed), only folders, files and links copied.
  const from = c.tree.dir;
  let bytes = 0;
  let entries = 0;
  const left: string[] = [];
  fs.cpSync(from, dest, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (src) => {
      const st = fs.lstatSync(src);
      if (!st.isFile() && !st.isDirectory() && !st.isSymbolicLink()) return (left.push(path.relative(from, src)), false);
      bytes += st.isFile() ? st.size : 0;
      entries++;
      if (bytes > PROBE_TREE_BYTES || entries > PROBE_TREE_ENTRIES) return (left.push(path.relative(from, src)), false);
      return true;
    },
  });
  return left.length
    ? `candidate ${c.candidate}'s tree copy left out ${left.length} entr${left.length === 1 ? 'y' : 'ies'} (special files, or past ${PROBE_TREE_BYTES} bytes)`
    : null;
}

/** One probe run: candidate tree `tree` (read-only, its working directory) on input `index`. */
async function probeOnce(
  ctx: AttemptContext,
  group: TaskRuntime,
  policy: DistinguishPolicy,
  o: { tree: string; casesDir: string; root: string; index: number; text: string; candidate: number },
): Promise<Behaviour> {
  const scratch = path.join(o.root, 'probe-scratch');
  fs.rmSync(scratch, { recursive: true, force: true });
  fs.mkdirSync(path.join(scratch, 'tmp'), { recursive: true });
  const log = path.join(o.root, `probe-c${o.candidate}-${caseName(o.index)}.stdout`);
  const sandbox = stepPlan(ctx, group.containment, { writable: [scratch], network: false, readOnlyDirs: [o.tree, o.casesDir], hidden: hidden(ctx) });
  const caseFile = path.join(o.casesDir, caseName(o.index));
  // An environment value cannot hold a NUL: an input with one is given by its file alone.
  const text = o.text.includes('\0') ? '' : o.text;
  const { receipt } = await supervise({
    file: 'bash',
    args: ['-o', 'pipefail', '-c', `exec 2>/dev/null\n${policy.probe}`],
    cwd: o.tree,
    env: {
      ...(sandbox ? scratchEnv(scratch) : {}),
      VERDICT_CASE: text,
      VERDICT_CASE_FILE: caseFile,
      VERDICT_CASE_INDEX: String(o.index),
      VERDICT_RUN_ID: ctx.runId,
      VERDICT_TASK_KEY: group.spec.key,
    },
    inherit: ctx.inheritedEnv,
    logFile: log,
    timeoutMs: policy.timeoutMs,
    signal: group.abort.signal,
    sandbox,
    ...caps(group),
  });
  const out = fs.existsSync(log) ? fs.readFileSync(log) : Buffer.alloc(0);
  fs.rmSync(log, { force: true });
  const exitCode = receipt.spawnError ? null : receipt.exitCode;
  return {
    exitCode,
    timedOut: receipt.timedOut,
    digest: crypto.createHash('sha256').update(out).digest('hex'),
    preview: out.subarray(0, 200).toString('utf8'),
  };
}

/** What no inputs or probe run may see: VERDICT_HOME, in plain mode the workdir, in worktree mode the git dir. */
function hidden(ctx: AttemptContext): string[] {
  return [...hiddenFromSteps(ctx.opts.home, ctx.opts.manifest.worktrees ? null : ctx.opts.manifest.workdir), ...(ctx.repo ? [ctx.repo.commonDir] : [])];
}

/** The group's memory and log caps (its spec's, as for its candidates' checks). */
function caps(group: TaskRuntime): { memoryMb: number; logMaxBytes: number } {
  return stepCaps(group.spec);
}

/** The last `bytes` of a file as text, or '' when it is missing. */
function readTail(file: string, bytes: number): string {
  try {
    const buf = fs.readFileSync(file);
    return buf.subarray(Math.max(0, buf.length - bytes)).toString('utf8');
  } catch {
    return '';
  }
}
