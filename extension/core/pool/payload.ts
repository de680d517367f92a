/**
 * What travels through the queue for one attempt: the task as the manifest states it and where its code is — never
 * a key, a token, an environment variable or a path on the orchestrator's machine (a worker machine keeps its own
 * logins and must learn nothing of the orchestrator's). A worker accepts a payload only after {@link parseJob}:
 * every field typed, nothing unknown, and the names that become paths (run id, task key) safe.
 */
import { MAX_TIMER_MS } from '../fs/timer';
import { taskBranch } from '../git/worktree';
import type { EngineChoice, GuardSwitches, ReviewPolicy } from '../manifest/types';
import { parsePoolParts } from '../run/workflows';

/**
 * Payload format version; a worker refuses another (2: `inputs`; 3: `red`; 4: `revising`; 5: both as parts of
 * `workflows`; 6: the worker reports the attempt's spend while it runs, JobSpend in verdict_pool_attempts.spend, so
 * that a run's budget stops it: an older worker, which reports it only in its record at the end, takes no job of a
 * run that counts on it).
 */
export const JOB_VERSION = 6;

/**
 * What an attempt on a pool worker has spent so far, as its worker writes it into verdict_pool_attempts.spend while
 * the attempt runs (at most every few hundred ms) and the orchestrator reads it (pool/dispatch.ts): the attempt's
 * engine and the reviewers that run on the worker with it, each figure a running total that never goes down.
 */
export interface JobSpend {
  /** Integer micro-USD; null when not known (no cost reported, no price on the worker). */
  usd: number | null;
  /** Tokens in + out; null when not known. */
  tokens: number | null;
}

/**
 * Reads a JobSpend from the database (written by a worker, so checked): exactly {usd, tokens}, each a non-negative
 * safe integer or null. null for anything else (never throws: a value that cannot be read counts nothing, and the
 * attempt's record still brings its cost at its end).
 */
export function parseJobSpend(v: unknown): JobSpend | null {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
  const r = v as Record<string, unknown>;
  const ok = (n: unknown) => n === null || (Number.isSafeInteger(n) && (n as number) >= 0);
  if (Object.keys(r).length !== 2 || !ok(r.usd) || !ok(r.tokens)) return null;
  return { usd: r.usd as number | null, tokens: r.tokens as number | null };
}

/** One attempt to run. Times ms. */
export interface AttemptJob {
  v: typeof JOB_VERSION;
  runId: string;
  runName: string;
  /** Who started the run (recorded in the eval row as on a local run). */
  identity: string;
  key: string;
  attempt: number;
  /** An attempt after a judged one. */
  retry: boolean;
  engine: string;
  model: string | null;
  taskType: string | null;
  /** The task's spec as written (the eval row's `spec`). */
  spec: string;
  /** The previous attempt's failure text, injected into this one as on a local run (run/prompt.ts), or null. */
  failure: string | null;
  check: string;
  expectFiles: string[];
  timeoutMs: number;
  checkTimeoutMs: number;
  watchdogMs: number | null;
  engineArgs: string[];
  verified: string | null;
  network: boolean | 'host';
  protect: string[] | null;
  setup: string | null;
  /** The git remote every worker fetches from and pushes to (a URL, or a path on a shared filesystem). */
  remote: string;
  /** The run's base commit (on the remote as refs/verdict/<runId>/base). */
  baseSha: string;
  /** The task branch, `verdict/<runId>/<key>`. */
  branch: string;
  /** Passed prerequisites: their commits are on the remote's task branches. */
  startFrom: { key: string; commit: string }[];
  group: string | null;
  candidate: number | null;
  /** `review`: reviewers that must approve a passed check (they run on the worker: it needs their engines too). */
  review: ReviewPolicy | null;
  /** `guard`, `allow_deps`, `allow_paths` as the manifest states them (run/guards). */
  guard: GuardSwitches;
  allowDeps: true | string[];
  allowPaths: string[] | null;
  /**
   * A task with `inputs` (validate, council, phases' test phase): what it reads, as resolved by the orchestrator —
   * each a path under VERDICT_INPUTS (`[<folder>/]<name>`; anonymous: the name is the scope's letter) and the sealed
   * commit it holds, on the remote as `refs/verdict-sealed/<runId>/<commit>`. Never a key of the orchestrator's
   * (anonymous), a path of its machine or a git dir: the worker copies each commit's tree from its own checkout, as
   * run/inputs.ts does locally. null: the task has no inputs.
   */
  inputs: JobInputs | null;
  /**
   * The workflows' parts (run/workflows/workflow.ts WorkflowPoolPart), keyed by workflow name, each checked by its
   * workflow's `parse` on the worker: e.g. `phases`, a test phase's phase files and their start commits; `critique`,
   * that the attempt is a revision. Empty: none. A worker refuses a part of a workflow it does not have.
   */
  workflows: Record<string, unknown>;
  /**
   * The manifest's `hide`: more places no step may read (absolute or `~/…`, the worker's home), besides the secrets every
   * sandbox hides. Absent: none (a worker that does not know the field refuses a payload that has it).
   */
  hide?: string[];
  /**
   * The task's full regression check (manifest/types.ts SuiteSpec), run by step `suite` after the check passed. Absent:
   * none (a worker that does not know the field refuses a payload that has it, so no suite is ever skipped unsaid).
   */
  suite?: { command: string; timeoutMs: number };
}

/** The payload's `inputs`. */
export interface JobInputs {
  /** The names are letters (A…Z) that say nothing of whose work each is; the step hides the checkout's git dir. */
  anonymous: boolean;
  entries: { path: string; commit: string }[];
}

/** At most this many inputs in one payload. */
export const MAX_JOB_INPUTS = 256;

/** The ref a sealed input commit is pushed to on the run's remote, for workers to fetch. */
export function sealedRef(runId: string, commit: string): string {
  return `refs/verdict-sealed/${runId}/${commit}`;
}

/** A payload a worker will not run, and why (recorded as the attempt's ERROR). */
export class BadJobError extends Error {}

const RUN_ID = /^\d{8}-\d{6}-[0-9a-f]{4}$/;
/** The manifest's rule for task keys (safe as a folder and a branch name). */
const KEY = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const SHA = /^[0-9a-f]{40,64}$/;
const FIELDS: (keyof AttemptJob)[] = [
  'v',
  'runId',
  'runName',
  'identity',
  'key',
  'attempt',
  'retry',
  'engine',
  'model',
  'taskType',
  'spec',
  'failure',
  'check',
  'expectFiles',
  'timeoutMs',
  'checkTimeoutMs',
  'watchdogMs',
  'engineArgs',
  'verified',
  'network',
  'protect',
  'setup',
  'remote',
  'baseSha',
  'branch',
  'startFrom',
  'group',
  'candidate',
  'review',
  'guard',
  'allowDeps',
  'allowPaths',
  'inputs',
  'workflows',
  'hide',
  'suite',
];

/**
 * Readers of the payload `d`'s fields, each returning the field's value when it has the type it names and else
 * throwing through `bad`: a BadJobError naming the field, what it should be and (its first 80 characters) what it is.
 */
function fieldReaders(d: Record<string, unknown>) {
  const bad = (field: string, want: string): never => {
    throw new BadJobError(`payload field ${field}: expected ${want}, got ${JSON.stringify(d[field])?.slice(0, 80)}`);
  };
  return {
    bad,
    str: (f: string) => (typeof d[f] === 'string' ? (d[f] as string) : bad(f, 'a string')),
    strOrNull: (f: string) => (d[f] === null || typeof d[f] === 'string' ? (d[f] as string | null) : bad(f, 'a string or null')),
    posInt: (f: string) => (Number.isInteger(d[f]) && (d[f] as number) > 0 ? (d[f] as number) : bad(f, 'a positive integer')),
    // A time limit a Node timer can hold (fs/timer.ts): a larger one would fire after 1 ms.
    timerMs: (f: string) =>
      Number.isInteger(d[f]) && (d[f] as number) > 0 && (d[f] as number) <= MAX_TIMER_MS
        ? (d[f] as number)
        : bad(f, `an integer number of ms from 1 to ${MAX_TIMER_MS}`),
    strings: (f: string) =>
      Array.isArray(d[f]) && (d[f] as unknown[]).every((s) => typeof s === 'string') ? (d[f] as string[]) : bad(f, 'an array of strings'),
    bool: (f: string) => (typeof d[f] === 'boolean' ? (d[f] as boolean) : bad(f, 'true or false')),
  };
}

/**
 * The payload's place fields, checked in this order: the run id, the task key (no leading dot, no ..), the base
 * commit, the task's branch (exactly the run's branch for the key), the commits to start from, the remote (not an
 * option to git).
 * @throws BadJobError naming the first that is wrong
 */
function jobPlace(d: Record<string, unknown>): Pick<AttemptJob, 'runId' | 'key' | 'baseSha' | 'branch' | 'startFrom' | 'remote'> {
  const { bad, str } = fieldReaders(d);
  const runId = str('runId');
  if (!RUN_ID.test(runId)) bad('runId', 'a run id (YYYYMMDD-HHMMSS-xxxx)');
  const key = str('key');
  if (!KEY.test(key) || key.includes('..')) bad('key', 'a task key ([A-Za-z0-9._-], no leading dot, no ..)');
  const baseSha = str('baseSha');
  if (!SHA.test(baseSha)) bad('baseSha', 'a commit sha');
  const branch = str('branch');
  if (branch !== taskBranch(runId, key)) bad('branch', `${taskBranch(runId, key)}`);
  const startFrom = Array.isArray(d.startFrom) ? (d.startFrom as unknown[]) : bad('startFrom', 'an array');
  for (const p of startFrom) {
    const ok =
      p &&
      typeof p === 'object' &&
      typeof (p as { key?: unknown }).key === 'string' &&
      KEY.test((p as { key: string }).key) &&
      typeof (p as { commit?: unknown }).commit === 'string' &&
      SHA.test((p as { commit: string }).commit) &&
      Object.keys(p).length === 2;
    if (!ok) bad('startFrom', 'entries {key, commit}');
  }
  const remote = str('remote');
  // A remote starting with '-' would be read by git as an option.
  if (!remote || remote.startsWith('-')) bad('remote', 'a git URL or path');
  return { runId, key, baseSha, branch, startFrom: startFrom as AttemptJob['startFrom'], remote };
}

/**
 * Checks a payload taken from the queue.
 * @throws BadJobError naming the first field that is missing, mistyped, unknown or unsafe
 */
export function parseJob(data: unknown): AttemptJob {
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new BadJobError('the payload is not an object');
  const d = data as Record<string, unknown>;
  const unknown = Object.keys(d).filter((k) => !(FIELDS as string[]).includes(k));
  if (unknown.length) throw new BadJobError(`the payload has field(s) a worker does not take: ${unknown.join(', ')}`);
  const { bad, str, strOrNull, posInt, timerMs, strings, bool } = fieldReaders(d);
  if (d.v !== JOB_VERSION) bad('v', String(JOB_VERSION));
  const { runId, key, baseSha, branch, startFrom, remote } = jobPlace(d);
  const watchdogMs = d.watchdogMs === null ? null : timerMs('watchdogMs');
  const protect = d.protect === null ? null : strings('protect');
  const candidate = d.candidate === null ? null : posInt('candidate');
  const guard = d.guard as Record<string, unknown> | null;
  const switches = ['secrets', 'stubs', 'deps', 'paths'];
  if (!guard || typeof guard !== 'object' || Object.keys(guard).length !== 4 || !switches.every((k) => typeof guard[k] === 'boolean'))
    bad('guard', '{secrets, stubs, deps, paths} each true or false');
  const allowDeps = d.allowDeps === true ? true : strings('allowDeps');
  const allowPaths = d.allowPaths === null ? null : strings('allowPaths');
  const review = d.review === null ? null : reviewOf(d.review, bad);
  const inputs = d.inputs === null ? null : inputsOf(d.inputs, bad);
  const workflows = workflowsOf(d.workflows, bad);
  const hide = d.hide === undefined ? [] : strings('hide');
  const suite = d.suite === undefined ? null : suiteOf(d.suite, bad);
  if (hide.some((p) => !p.startsWith('/') && !p.startsWith('~/'))) bad('hide', 'absolute or ~/ paths');
  return {
    v: JOB_VERSION,
    runId,
    runName: str('runName'),
    identity: str('identity'),
    key,
    attempt: posInt('attempt'),
    retry: bool('retry'),
    engine: str('engine'),
    model: strOrNull('model'),
    taskType: strOrNull('taskType'),
    spec: str('spec'),
    failure: strOrNull('failure'),
    check: str('check'),
    expectFiles: strings('expectFiles'),
    timeoutMs: timerMs('timeoutMs'),
    checkTimeoutMs: timerMs('checkTimeoutMs'),
    watchdogMs,
    engineArgs: strings('engineArgs'),
    verified: strOrNull('verified'),
    network: d.network === 'host' ? 'host' : bool('network'),
    protect,
    setup: strOrNull('setup'),
    remote,
    baseSha,
    branch,
    startFrom,
    group: strOrNull('group'),
    candidate,
    review,
    guard: guard as unknown as GuardSwitches,
    allowDeps,
    allowPaths,
    inputs,
    workflows,
    ...(hide.length ? { hide } : {}),
    ...(suite ? { suite } : {}),
  };
}

/**
 * The payload's `workflows`, checked: an object whose every entry is the part of a workflow this worker has, as that
 * workflow's `parse` accepts it (run/workflows/index.ts parsePoolParts).
 */
function workflowsOf(v: unknown, bad: (field: string, want: string) => never): Record<string, unknown> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return bad('workflows', 'an object of workflow parts');
  return parsePoolParts(v as Record<string, unknown>, (name) => ({
    bad: (want) => {
      throw new BadJobError(`payload field workflows.${name}: expected ${want}, got ${JSON.stringify((v as Record<string, unknown>)[name])?.slice(0, 80)}`);
    },
    isKey: (s) => KEY.test(s) && !s.includes('..'),
    isCommit: (s) => SHA.test(s),
  }));
}

/** The payload's `suite`, checked: exactly {command, timeoutMs}, a non-blank command and a time limit a timer holds. */
function suiteOf(v: unknown, bad: (field: string, want: string) => never): { command: string; timeoutMs: number } {
  const want = `{command: a non-blank string, timeoutMs: an integer number of ms from 1 to ${MAX_TIMER_MS}}`;
  const r = v as Record<string, unknown> | null;
  if (!r || typeof r !== 'object' || Array.isArray(r) || Object.keys(r).length !== 2) return bad('suite', want);
  if (
    typeof r.command !== 'string' ||
    !r.command.trim() ||
    !Number.isInteger(r.timeoutMs) ||
    (r.timeoutMs as number) < 1 ||
    (r.timeoutMs as number) > MAX_TIMER_MS
  )
    return bad('suite', want);
  return { command: r.command, timeoutMs: r.timeoutMs as number };
}

function reviewOf(v: unknown, bad: (field: string, want: string) => never): ReviewPolicy {
  const r = v as { engines?: unknown; require?: unknown };
  const engines = Array.isArray(r?.engines) ? (r.engines as unknown[]) : bad('review', '{engines, require}');
  const okEngine = (e: unknown) =>
    !!e &&
    typeof e === 'object' &&
    typeof (e as EngineChoice).engine === 'string' &&
    ((e as EngineChoice).model === null || typeof (e as EngineChoice).model === 'string') &&
    Object.keys(e).length === 2;
  if (!engines.length || !engines.every(okEngine) || !['all', 'majority', 'any'].includes(r.require as string) || Object.keys(r).length !== 2)
    bad('review', '{engines: [{engine, model}], require: all|majority|any}');
  return { engines: engines as EngineChoice[], require: r.require as ReviewPolicy['require'] };
}

/**
 * The payload's `inputs`, checked: exactly {anonymous, entries}; each entry exactly {path, commit}; a path of one or
 * two names (a folder and a name), each safe as a folder name (no `..`, no leading dot or dash, no slash but the one);
 * an anonymous entry's name one capital letter; no path twice; a commit a full sha (never read as an option).
 */
function inputsOf(v: unknown, bad: (field: string, want: string) => never): JobInputs {
  const want = '{anonymous, entries: [{path, commit}]}';
  if (!v || typeof v !== 'object' || Array.isArray(v)) return bad('inputs', want);
  const r = v as Record<string, unknown>;
  if (Object.keys(r).length !== 2 || typeof r.anonymous !== 'boolean' || !Array.isArray(r.entries)) return bad('inputs', want);
  if (r.entries.length > MAX_JOB_INPUTS) return bad('inputs', `at most ${MAX_JOB_INPUTS} entries`);
  const seen = new Set<string>();
  for (const e of r.entries as unknown[]) {
    const entry = e as Record<string, unknown> | null;
    if (
      !entry ||
      typeof entry !== 'object' ||
      Array.isArray(entry) ||
      Object.keys(entry).length !== 2 ||
      typeof entry.path !== 'string' ||
      typeof entry.commit !== 'string'
    )
      return bad('inputs', want);
    const parts = entry.path.split('/');
    if (parts.length > 2 || !parts.every((p) => KEY.test(p) && !p.includes('..')))
      bad('inputs', `entry paths "[folder/]name", each part [A-Za-z0-9._-] with no leading dot and no .. (got ${JSON.stringify(entry.path).slice(0, 80)})`);
    if (r.anonymous && !/^[A-Z]$/.test(parts.at(-1) as string))
      bad('inputs', `anonymous names are one capital letter (got ${JSON.stringify(entry.path).slice(0, 80)})`);
    if (seen.has(entry.path)) bad('inputs', `each path once (${entry.path} is there twice)`);
    seen.add(entry.path);
    if (!SHA.test(entry.commit)) bad('inputs', `entry commits are full commit shas (got ${JSON.stringify(entry.commit).slice(0, 80)})`);
  }
  return { anonymous: r.anonymous, entries: (r.entries as { path: string; commit: string }[]).map((e) => ({ path: e.path, commit: e.commit })) };
}

/** The pg-boss queue of an engine's attempts: `verdict-attempt-<engine>` (characters pg-boss refuses become `_`). */
export function queueOf(engine: string): string {
  return `verdict-attempt-${engine.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}
