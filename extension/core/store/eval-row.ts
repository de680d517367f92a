import type { Verdict } from '../../../schemas/status';

/** Verdicts of one attempt: schemas/status.ts (the status table). */
export type { Verdict };

/**
 * One row of runs.jsonl: one attempt. Ringer's columns first (run_id … notes), kept with their names and meaning
 * so Ringer's logs and tools read it, then Verdict's. Unknown numbers are null, never 0.
 * Units: durations in ms, cost in integer micro-USD (1 USD = 1,000,000), timestamps ISO 8601 UTC.
 */
export interface EvalRow {
  run_id: string;
  task_key: string;
  spec: string;
  worker_engine: string;
  verdict: Verdict;
  /** Worker + check wall time of this attempt, ms. */
  duration_ms: number;
  /** tokens_in + tokens_out, or null when either is unknown. */
  worker_tokens: number | null;
  /** The model requested (manifest or engine default), null when the engine chose. */
  model: string | null;
  task_type: string | null;
  /** True when this attempt is a retry (attempt > 1). */
  retry: boolean;
  identity: string;
  /** Short human notes: why it failed, what was odd. */
  notes: string;
  attempt: number;
  harness: string;
  /** The lab behind the model when the model id names it (`openai/gpt-5` → openai), else null. */
  lab: string | null;
  reported_model: string | null;
  /** How the model was paid for (api, subscription, free…), from $VERDICT_ACCESS_PLAN; null when not stamped. */
  access_plan: string | null;
  /** The reasoning effort asked for in engine_args (see model-identity.ts), null when none. */
  reasoning_effort: string | null;
  /**
   * The containment the attempt's steps ran under: `bwrap` (bubblewrap: own PID namespace, read-only filesystem but
   * the task's own dirs), `none` (--no-sandbox, or an allowed full_access task); null when unknown (reconciled rows).
   */
  sandbox: 'bwrap' | 'none' | null;
  /**
   * The memory containment the attempt's worker ran under (core/process/memory-cap.ts): `cgroup2` or `cgroup1` (its
   * own cgroup with `memory_mb` as its limit), `none` (no cgroup could be had: the limit was not enforced); absent in
   * older rows and in rows of steps other than the work.
   */
  mem_cap?: 'cgroup2' | 'cgroup1' | 'none';
  /** The memory cap asked for the attempt's steps, MB (enforced unless mem_cap is `none`); absent with mem_cap. */
  memory_mb?: number;
  /**
   * The network the attempt's steps ran with: `netns` (a network namespace of each step's own, outbound through
   * slirp4netns), `none` (`"network": false`: no way out), `host` (the host's: `"network": "host"` or no sandbox); null
   * or absent when unknown (rows written before it was recorded, reconciled rows).
   */
  network?: 'netns' | 'none' | 'host' | null;
  tokens_in: number | null;
  tokens_out: number | null;
  tokens_cached: number | null;
  tokens_reasoning: number | null;
  /** Input tokens written to the prompt cache (a subset of tokens_in); absent when the engine does not report them. */
  tokens_cache_write?: number | null;
  /**
   * `subscription`: the engine ran on a flat-rate login (config/manifest `logins`, `billing: "subscription"`): its
   * tokens are recorded, cost_microusd is null, and it counts against budget_tokens only. Absent: billed per token.
   */
  billing?: 'subscription';
  cost_microusd: number | null;
  check_exit_code: number | null;
  /** Verbatim tail of the check's output, at most 64 KiB. */
  check_output: string;
  worker_exit_code: number | null;
  run_name: string;
  host: string;
  /** Attempt start, ISO 8601. */
  started_at: string;
  ended_at: string;
  /** Worktree mode: the task branch, and the commit that holds the work after a PASS. */
  branch: string | null;
  commit: string | null;
  prompt_path: string;
  worker_log: string;
  check_log: string;
  receipt_path: string;
  /**
   * SHA-256 (hex) of the canonical form (extension/core/store/chain.ts canonicalJson) of the previous row of this
   * host's chain in the log, null for the first row of a chain. appendEvalRow sets it under the log's lock, whatever
   * the caller put here; rows from before the chain (Ringer's) have no such field.
   */
  prev_hash: string | null;
  /**
   * What the check judged: the sealed commit (worktree mode) or `sha256:<hex>` of the task dir's content (plain mode,
   * run/tree-hash.ts); null when no check ran.
   */
  sealed: string | null;
  /**
   * What the row is about: `work` (a worker's attempt: counted and credited to its model by the scoreboard) or another
   * step a model performed and is credited for on a row of its own (`review`, `rank`; `critique`: one critic's criticisms
   * of a proposal, run/workflows/critique/record.ts), or a best-of-N group's decision (`select`: run/workflows/best-of-n/select-row.ts, credited
   * to the winner's model). Rows from before the field: `work`.
   */
  step: string;
  /** The workflow group the task belongs to (a best-of-N task's key); null outside a workflow. */
  group: string | null;
  /** The candidate's number within its group (1…N); null outside a workflow. */
  candidate: number | null;
  /** Only on `step: "review"` rows: which reviewer and what it answered (run/review-record.ts). */
  review?: ReviewColumn;
  /** Only on `step: "critique"` rows: which critic, which round, and its criticisms as checked (run/workflows/critique/record.ts). */
  critique?: CritiqueColumn;
  /**
   * On the work and critique rows of a task with `critique` once a round ran: the loop's report (markdown, in the
   * task's records: `runs/<run_id>/tasks/<key>/critique.md`, rewritten each round; every round stays in it).
   */
  critique_report?: string;
  /** The engine this attempt was moved off before it started (rate-limited or waiting for its quota; run/reassign.ts). */
  reassigned_from?: string;
  /**
   * On the work row of a phases test phase whose check passed ("red before green", run/workflows/phases/red-step.ts): the same check
   * on the tree without `files` (the implementation); `exit_code` 0 (not timed out) made the attempt FAIL.
   */
  red?: { files: string[]; exit_code: number | null; timed_out: boolean; check_log: string };
  /**
   * On the work row of an attempt whose check passed and that has a `suite` (run/steps/suite.ts): the full regression
   * check's command, whether it passed, its exit code (null: killed), whether its time limit stopped it, how long it
   * ran (ms) and its log (suite.log); absent when no suite ran.
   */
  suite?: { command: string; passed: boolean; exit_code: number | null; timed_out: boolean; duration_ms: number; log: string };
  /**
   * On the work rows of a pool run (docs/scale.md "Trust"): the worker that reported the attempt, the trust in force
   * (`check`: a reported PASS counted only once the orchestrator's re-run of the check on its commit passed; `worker`:
   * taken as reported) and that re-run; `worker_check_output` (tail) when it failed where the worker said PASS.
   */
  pool?: PoolColumn;
  /** Only on `step: "rank"` rows: which ranking reviewer, the names it saw and its scores (run/workflows/best-of-n/rank-record.ts). */
  rank?: RankColumn;
  /** Only on the `select` row of a ranked group: what decided it (run/workflows/best-of-n/select-row.ts). */
  ranking?: RankingColumn;
  /** Only on the `select` row of a consensus group: its groups, the inputs that split them, why the winner won (run/workflows/best-of-n/consensus.ts). */
  consensus?: ConsensusColumn;
  /**
   * On every row of a run started or resumed with `--force` (MCP `force: true`) over lint errors in its manifest
   * (core/manifest/lint.ts startGate), e.g. a check that cannot fail; absent otherwise.
   */
  forced?: true;
  /** On the work row of an attempt of `engine: "auto"`: how it was routed (run/route-choice.ts routeColumn). */
  route?: RouteColumn;
}

/** One candidate's evidence as a routing decision saw it (scoreboard/route.ts CandidateEvidence). */
export interface RouteEvidenceColumn {
  candidate: string;
  tier: 'proven' | 'probation' | 'untried';
  tasks: number;
  first_try_pass_rate: number | null;
  pass_rate: number | null;
  /** micro-USD, null when unknown. */
  cost_per_pass_microusd: number | null;
  /** ms, null when unknown. */
  time_per_pass_ms: number | null;
}

/**
 * A routed attempt (docs/scoreboard.md "Routing"): the policy, the chosen candidate and why (`basis`), whether it was
 * an exploration, the chosen one's and the runner-up's evidence, the candidates skipped and why, the seed its draws
 * came from (seededRandom(seed) replays them), the explore draw, and the lines shown.
 */
export interface RouteColumn {
  policy: { from: string[]; prefer: 'cost' | 'time' | 'pass_rate'; explore: number; min_tasks: number; source: 'manifest' | 'config' };
  chosen: string;
  basis: 'proven' | 'challenge' | 'explore' | 'no-proven' | 'retry-stays' | 'retry-moves';
  exploration: boolean;
  evidence: RouteEvidenceColumn;
  runner_up: RouteEvidenceColumn | null;
  skipped: { candidate: string; reason: string }[];
  seed: string;
  draw: number | null;
  reason: string;
  /** `auto → claude/haiku (proven, $0.0040/PASS over 12 tasks)`. */
  line: string;
}

/** A pool run's work row: who reported the attempt, the trust in force, the orchestrator's re-check (null: none ran). */
export interface PoolColumn {
  worker: string | null;
  trust: 'check' | 'worker';
  recheck: { passed: boolean; exit_code: number | null } | null;
  worker_check_output?: string;
}

/**
 * A rank row's answer: the reviewer's 1-based position in `rank.engines`, each neutral name shown and the candidate
 * number it stood for, the scores (0–10) by name, null when the reviewer gave no valid ranking.
 */
export interface RankColumn {
  reviewer: number;
  names: Record<string, number>;
  scores: Record<string, number> | null;
  reasons?: Record<string, string>;
}

/** A ranked group's decision on its select row: mean scores by candidate key (empty when not ranked), tie, disagreement. */
export interface RankingColumn {
  ranked: boolean;
  scores: Record<string, number>;
  tie: string | null;
  disagreement: string | null;
}

/**
 * A consensus group's decision on its select row (docs/workflows.md "Consensus"): `inputs` used of `given` made by the
 * inputs command; `groups` the passing candidates that behaved alike (largest first; each member with its engine and
 * model, so the scoreboard credits a passing candidate that lost on consensus to them); `splitting` the inputs on which
 * not every candidate behaved alike (index from 0, its text cut to 200 characters); `decided` how the winner was chosen
 * (`undecided`: consensus could not decide and the first to pass won; `why` says why); `tie` the tie between groups,
 * said, or null.
 */
export interface ConsensusColumn {
  inputs: number;
  given: number;
  groups: { members: { key: string; candidate: number; engine: string; model: string | null }[]; size: number }[];
  splitting: { input: number; text: string }[];
  decided: 'largest' | 'tie-agreement' | 'tie-ranked' | 'tie-cheapest' | 'undecided';
  tie: string | null;
  why: string;
}

/** A critique row's answer, as checked: each criticism verified (evidence) or dropped (why, in `evidence`). */
export interface CritiqueColumn {
  critic: number;
  round: number;
  verified: number;
  dropped: number;
  criticisms: { file?: string; line?: number; command?: string; claim: string; verified: boolean; evidence: string }[];
}

/** A review row's answer: the reviewer's 1-based position in `review.engines`; verdict null when it gave no valid one. */
export interface ReviewColumn {
  reviewer: number;
  verdict: 'approve' | 'changes' | 'reject' | null;
  concerns: string[];
}

/** Bytes of check output kept in an eval row. */
export const CHECK_OUTPUT_ROW_BYTES = 64 * 1024;

/** `lab/model` ids name their lab; bare ids do not (we do not guess). */
export function labOf(model: string | null): string | null {
  const m = model?.match(/^([A-Za-z0-9_.-]+)\//);
  return m?.[1] ?? null;
}

/** The last `maxBytes` bytes of `text` (UTF-8), cut on a character boundary. */
export function tailBytes(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  let start = buf.length - maxBytes;
  while (start < buf.length && ((buf[start] ?? 0) & 0xc0) === 0x80) start++;
  return buf.subarray(start).toString('utf8');
}

/** An eval row (or Ringer's) in messages: `run_id/task_key attempt n`. */
export function evalRowLabel(row: Record<string, unknown>): string {
  const id = `${typeof row.run_id === 'string' ? row.run_id : '?'}/${typeof row.task_key === 'string' ? row.task_key : '?'}`;
  return typeof row.attempt === 'number' ? `${id} attempt ${row.attempt}` : id;
}
