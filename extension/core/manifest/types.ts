import type { WorkflowPlace } from '../../../schemas/run-state';
import type { SourceRange } from './positions';

/** The engine a task without `engine` runs on. */
export const DEFAULT_ENGINE = 'codex';

/** A task's full regression check: the command (run with `bash -o pipefail -c` in the task dir) and its time limit, ms. */
export interface SuiteSpec {
  command: string;
  timeoutMs: number;
}

/** One task of a loaded manifest, with defaults applied and paths left as written. */
export interface TaskSpec {
  /** Unique id, safe as a directory and branch name (`[A-Za-z0-9._-]`, no leading dot, never `..`). */
  key: string;
  /** The worker's prompt (for the script engine: a bash script). */
  spec: string;
  /** Shell command run with `bash -c` in the task dir; exit 0 is the only PASS. */
  check: string;
  /** Paths relative to the task dir that must exist and be non-empty after the check. */
  expectFiles: string[];
  engine: string;
  /** Requested model id, or null for the engine's default. */
  model: string | null;
  taskType: string | null;
  /** Worker time limit, ms. */
  timeoutMs: number;
  /** Check time limit, ms. */
  checkTimeoutMs: number;
  /**
   * `suite` (the task's, else the run's): the full regression check run after the check passed (step `suite`,
   * run/steps/suite.ts), with its time limit in ms (`suite_timeout_s`, the task's, else the run's, else 600 s). Absent:
   * none — also on council answers, reviews and chairs, validators and planners, which never get the run's.
   */
  suite?: SuiteSpec;
  /** No-output watchdog, ms; null when off. */
  watchdogMs: number | null;
  /**
   * The memory cap of each of the task's steps, MB (the task's `memory_mb`, else the manifest's); absent: the run's
   * default (the config's memory_mb, else core/process/memory-cap.ts DEFAULT_MEMORY_MB).
   */
  memoryMb?: number;
  /** The most each of the task's step logs keeps, MB (`log_max_mb`, as memoryMb); absent: the run's default. */
  logMaxMb?: number;
  /** Extra engine argv elements. */
  engineArgs: string[];
  /** One sentence: what a passing check proves; null when the manifest gives none. */
  verified: string | null;
  fullAccess: boolean;
  /**
   * Under the sandbox: true, each step its own network namespace with outbound access through slirp4netns (the host's
   * loopback as 10.0.2.2); false, no network (only its own loopback); `'host'`, the host's network namespace
   * (`"network": "host"`). Unsandboxed steps always share the host's.
   */
  network: boolean | 'host';
  /** `protect` globs (task's, else the run's); null: the default set; []: none (see run/protect.ts). */
  protect: string[] | null;
  /** Attempts allowed, ≥ 1 (2 = one retry). */
  maxAttempts: number;
  /**
   * `on_quota`: when its engine is rate-limited or waits for a quota, `fallback` moves its next attempt to the next
   * `fallback` engine at once (run/reassign.ts); `wait` keeps it waiting. Absent: `fallback`.
   */
  onQuota?: 'fallback' | 'wait';
  /** `budget_usd`: this task's spending envelope (attempts, reviewers, critics, rankers), USD; absent: none. */
  budgetUsd?: number;
  /** `max_attempt_usd`: the reserve of one attempt when the eval log knows no p90, USD; absent: the engine's. */
  maxAttemptUsd?: number;
  /** `budget_tokens`: this task's envelope in tokens (input plus output, every engine's); absent: none. */
  budgetTokens?: number;
  /** `max_attempt_tokens`: the token reserve of one attempt when the eval log knows no p90 of its tokens; absent: none. */
  maxAttemptTokens?: number;
  /**
   * `fallback`: the engines of attempts 2, 3, … in order (model null: that engine's default); past the list the last
   * entry goes on. Empty: every attempt runs on `engine`. See run/decide.ts attemptEngine.
   */
  fallback: EngineChoice[];
  /**
   * `engine: "auto"` (the task's, or the manifest's `engine` default): the candidates and policy each attempt is routed
   * by (run/route-choice.ts). `engine` and `model` then hold the first candidate until an attempt is routed.
   */
  route?: RouteSpec;
  /** `after`: keys of the tasks this one waits for; it starts once all of them PASS, else it ends BLOCKED. */
  after: string[];
  /**
   * Best-of-N (run/workflows/best-of-n/ compiles `repeat`/`candidates` into ordinary tasks): on a candidate, the key of the
   * task it is a candidate of; on that task's own entry (the group, which runs no worker), its own key. Absent
   * outside a workflow.
   */
  group?: string;
  /** On a candidate: its number, 1…N (the worker's VERDICT_CANDIDATE). */
  candidate?: number;
  /** On a group's own entry: how its winner is chosen (its `after` lists its candidates). */
  select?: SelectMode;
  /**
   * Validated, council, phases: the task's place in its workflow (lead or member N), set by the compiler only
   * (run/workflows/validate/, council/, phases/); state.json carries it for the views. Absent outside them.
   */
  workflow?: WorkflowPlace;
  /**
   * On a group's own entry with `select: "ranked"`: who scores the passing candidates, against what; with
   * `select: "consensus"`: who breaks a tie between groups of candidates that behave alike.
   */
  rank?: RankPolicy;
  /** On a group's own entry (`stop_after`): once this many candidates passed, the others are cancelled. */
  stopAfter?: number;
  /** On a group's own entry with `select: "consensus"`: how its passing candidates are told apart (`distinguish`). */
  distinguish?: DistinguishPolicy;
  /** `review` (the task's, else the run's): reviewers that must approve a passed check; null for none. */
  review: ReviewPolicy | null;
  /** `guard`: which built-in guards run on the worker's work (run/guards; all true unless turned off). */
  guard: GuardSwitches;
  /** `allow_deps`: dependencies the worker may add — true: any; else names or globs (empty: none). */
  allowDeps: true | string[];
  /** `allow_paths`: globs of the only paths the worker may change; null: anywhere. */
  allowPaths: string[] | null;
  /** `sparse` (the task's, else the run's): folders or globs of a `tree: "sparse"` checkout (git/sparse-cone.ts); null: none. */
  sparse?: string[] | null;
  /**
   * A planner (`generate`): its worker writes `file` (relative to the task dir), a JSON array of at most `maxTasks`
   * tasks that join the run once the planner passes (run/workflows/generate/).
   */
  generate?: { file: string; maxTasks: number };
  /** `critique`: a critique loop after the check passes (run/workflows/critique/step.ts, docs/workflows.md "Critique loop"). */
  critique?: CritiquePolicy;
  /**
   * `inputs`: prerequisites whose sealed work this task reads, as read-only copies under `$VERDICT_INPUTS/<name>/`
   * (run/inputs.ts, run/steps/inputs.ts; docs/workflows.md "Inputs"). Absent: none.
   */
  inputs?: TaskInputs;
  /**
   * The test phase of `phases` ("red before green", run/workflows/phases/red-step.ts): the phase files, each with the implement task
   * that owns it. Once the check passed, it runs again on the tree without them (each put back as it was before its
   * implement task ran) and must fail there. Absent on every other task, and with `phases.test.red: false`. `start`:
   * the commit the implement task started from, when resolved elsewhere (a pool job: the orchestrator's).
   */
  red?: { file: string; implement: string; start?: string }[];
}

/**
 * What a task reads of its prerequisites' sealed work (every `from` key is in its `after`). Each source is copied to
 * `$VERDICT_INPUTS/[<folder>/]<name>/`, where name is the member's key, or — `anonymous` — a capital letter drawn at
 * random once per run and `scope`, recorded in state.json (so tasks of one scope name each member alike).
 */
export interface TaskInputs {
  from: InputSource[];
  /** true: names are letters (A, B, …) that say nothing of the task key, engine or model; false: the member's key. */
  anonymous: boolean;
  /** Anonymous names are drawn once per run and scope; tasks sharing a scope (one council) share the letters. Default: the task's key. */
  scope?: string;
  /** Keys (or members) never copied, whatever `from` says: a council reviewer's own answer. Dropped ones are recorded. */
  exclude?: string[];
}

/** One prerequisite whose sealed tree is copied (a best-of-N task's: its winner's). */
export interface InputSource {
  /** The prerequisite's task key (one of the task's `after`). */
  key: string;
  /** Whom the name stands for (default `key`): a council's review is named after the member that wrote it. */
  member?: string;
  /** A subfolder of `$VERDICT_INPUTS` the copy goes in (`answers`, `reviews`); absent: at the top. */
  folder?: string;
}

/** Who criticises a task's passed proposals, and how long the loop may go on. */
export interface CritiquePolicy {
  /** The critics, in order (model null: that engine's default). */
  critics: EngineChoice[];
  /** The most revisions (≥ 1). */
  rounds: number;
  /** No revision is asked once this long has passed since the first round began, ms; null: no time limit. */
  timeLimitMs: number | null;
}

/** The built-in guards of a task, each on or off (the manifest's `guard`, task keys over run keys over true). */
export interface GuardSwitches {
  secrets: boolean;
  stubs: boolean;
  deps: boolean;
  paths: boolean;
}

/**
 * Who reviews a task's work after its check passed, and how many approvals it needs (run/steps/review.ts,
 * run/review-verdict.ts).
 */
export interface ReviewPolicy {
  /** The reviewers, in order (model null: that engine's default). */
  engines: EngineChoice[];
  /** Approvals needed: every reviewer, more than half, or one. */
  require: 'all' | 'majority' | 'any';
}

/**
 * How a best-of-N group picks its winner: `first-pass` (the first candidate to PASS; the others are stopped), `all`
 * (every candidate runs to its end; the lowest-numbered one that passed) or `ranked` (every candidate runs to its end;
 * the `rank` reviewers score those that passed: run/workflows/best-of-n/rank.ts) or `consensus` (every candidate runs
 * to its end; those that passed are grouped by what their probe does on `distinguish`'s inputs, and the largest group
 * wins: run/workflows/best-of-n/consensus.ts).
 */
export type SelectMode = 'first-pass' | 'all' | 'ranked' | 'consensus';

/**
 * `distinguish` of a `select: "consensus"` task (run/workflows/best-of-n/consensus.ts): what makes the inputs — a
 * command (a string), or an engine asked to write them (run/workflows/best-of-n/inputs-engine.ts) — the probe run on
 * each passing candidate's sealed tree per input, how many inputs at most, and the time limit of the inputs command
 * and of each probe run, ms (an inputs engine runs under the task's `timeout_s` and `watchdog_s`, as a reader does).
 */
export interface DistinguishPolicy {
  inputs: string | EngineChoice;
  probe: string;
  maxInputs: number;
  timeoutMs: number;
}

/**
 * `rank` of a `select: "ranked"` task: the reviewers that score its passing candidates (one after the other; model
 * null: that engine's default) and the rubric they score against (run/workflows/best-of-n/ranking.ts).
 */
export interface RankPolicy {
  rubric: string;
  engines: EngineChoice[];
}

/** An engine and the model asked of it (null: the engine's default). */
export interface EngineChoice {
  engine: string;
  model: string | null;
}

/** What `engine: "auto"` minimises: cost per PASS (the default), time per PASS, or maximises the pass rate. */
export type RoutePreference = 'cost' | 'time' | 'pass_rate';

/** The routing policy of `engine: "auto"` (scoreboard/route.ts applies it). */
export interface RoutePolicy {
  prefer: RoutePreference;
  /** Share of decisions that draw to explore, in [0, 1]. */
  explore: number;
  /** Tasks of the task type a candidate needs, besides its proven tier, before it is exploited. */
  minTasks: number;
}

/** One `route.from` entry, `engine:model` (`engine` alone: its default model, unknown before it runs). */
export interface RouteChoice extends EngineChoice {
  /** As written, e.g. `claude:haiku`. */
  id: string;
}

/** The `route` block (the manifest's, else the config's), parsed. */
export interface RouteSpec extends RoutePolicy {
  from: RouteChoice[];
  /** `seed`: the run's routing seed; null: the run id (so each run draws anew, and replays from its rows). */
  seed: string | null;
  /** Where the block came from, for notes: `manifest` or `config`. */
  source: 'manifest' | 'config';
}

/** `tree`: a full worktree per task, a sparse (cone) checkout, or an overlay on one shared checkout. */
export type TreeKind = 'worktree' | 'sparse' | 'overlay';

/** A loaded, validated manifest. All paths are absolute. */
export interface Manifest {
  /** Absolute path of the manifest file. */
  file: string;
  runName: string;
  /** Plain mode task root: tasks run in `<workdir>/<key>`. */
  workdir: string;
  maxParallel: number;
  worktrees: boolean;
  /** Worktree mode: how each task's tree is made (`tree`; docs/manifest.md "Trees"). */
  tree?: TreeKind;
  /** Worktree mode: absolute path of the repository. */
  repo: string;
  baseRef: string;
  budgetUsd: number | null;
  /** `budget_tokens`: the run's cap in tokens (input plus output of every engine, subscription ones included); null: none. */
  budgetTokens: number | null;
  /**
   * `logins`: named groups of engines sharing one subscription, with their machine-wide limit (run/slots.ts) and how
   * they are billed (`subscription`: flat rate, cost null in the rows, counted by budget_tokens only).
   */
  logins?: Record<string, { engines: string[]; maxParallel: number; billing?: 'subscription' | 'metered' }>;
  setup: string | null;
  /** Worktree mode: repo-relative paths copied into each worktree. */
  include: string[];
  /** `pool`: the Postgres URL of the worker pool the attempts run on (docs/scale.md); absent: they run here. */
  pool?: string | null;
  /** `remote`: the git remote of a pool run (a URL, or an absolute path); absent when not given. */
  remote?: string | null;
  /**
   * `hide`: more places no sandboxed step may read (absolute or `~/…`, as written), besides the user's secrets every
   * sandbox hides (core/process/secrets.ts) and the config's `hide`. A manifest can add, never remove (no `expose`).
   */
  hide?: string[];
  tasks: TaskSpec[];
  /** The manifest as written (parsed JSONC), frozen into the run's records. */
  raw: unknown;
  /**
   * Every task key the text compiles to, in order, before a caller leaves some out (`--only`): the keys of the run's
   * frozen manifest, which holds the whole text. Absent in a Manifest built by hand: its tasks' keys.
   */
  taskKeys?: readonly string[];
}

/**
 * What kind of loader problem this is, so the linter maps problems to rule ids without reading messages:
 * `syntax` (malformed JSON), `schema` (fails schemas/manifest.schema.json), `duplicate-property` (one object
 * names a property twice), `duplicate-key` / `unsafe-key` (task keys), `unknown-engine`, `unknown-field`,
 * `engine-args` (shell operators in a string engine_args), `task-graph` (an `after` naming no task, or a cycle),
 * `repeat` (a best-of-N task that cannot be compiled: see workflows/best-of-n/rule.ts), `generate` (a planner or a generated task
 * that breaks the rules of run/workflows/generate/rule.ts), `inputs` (rules/inputs.ts), `validate`, `council`, `critique`, `phases` (each workflow section's own
 * problems: run/workflows/index.ts WORKFLOW_SECTIONS), `unreadable` (the file could not be read).
 */
export type ProblemCode =
  | 'syntax'
  | 'schema'
  | 'duplicate-property'
  | 'duplicate-key'
  | 'unsafe-key'
  | 'unknown-engine'
  | 'unknown-field'
  | 'engine-args'
  | 'suite'
  | 'task-graph'
  | 'repeat'
  | 'generate'
  | 'inputs'
  | 'validate'
  | 'council'
  | 'critique'
  | 'phases'
  | 'unreadable';

/** A problem found while loading: where it is and what is wrong. */
export interface ManifestProblem {
  severity: 'error' | 'warning';
  /** The kind of problem; set by the loader on every problem it reports. */
  code?: ProblemCode;
  /** Absolute file path. */
  file: string;
  /** The value's range; line/column are 1-based. */
  range: SourceRange | null;
  /** Field path as users read it, e.g. `tasks[2].key`. */
  path: string;
  message: string;
}

/** Thrown by the loader when the manifest cannot run; `problems` lists every error (and warning) found. */
export class ManifestError extends Error {
  constructor(readonly problems: ManifestProblem[]) {
    super(
      problems
        .filter((p) => p.severity === 'error')
        .map(formatProblem)
        .join('\n'),
    );
    this.name = 'ManifestError';
  }
}

/** `file:line:column: path: message`, the form editors and terminals turn into links. */
export function formatProblem(p: ManifestProblem): string {
  const where = p.range ? `${p.file}:${p.range.start.line}:${p.range.start.column}` : p.file;
  return `${where}: ${p.severity}: ${p.path}: ${p.message}`;
}
