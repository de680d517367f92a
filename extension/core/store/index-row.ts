/**
 * The columns the scoreboard needs from one eval row, read from either format runs.jsonl holds: Verdict's rows
 * (extension/core/store/eval-row.ts) and Ringer's (its columns only: run_id, task_key, spec, worker_engine, verdict,
 * duration_ms, worker_tokens, model, task_type, retry, identity, notes). Ringer's rows import as they are: what
 * they lack stays null.
 */
export interface IndexRow {
  run_id: string;
  task_key: string;
  /** 1-based attempt number; null for Ringer rows, which have none. */
  attempt: number | null;
  /** Order of attempts within a task: the attempt number, or for Ringer rows the line number in the log. */
  ord: number;
  /**
   * The stamped model: the row's `model`, else the model the CLI reported. Null means quarantined: such a row is
   * shown apart and never credited to the engine's default model (store/model-identity.ts).
   */
  model: string | null;
  /** '' when the row has no task type (SQLite groups '' and NULL apart; one key keeps grouping simple). */
  task_type: string;
  engine: string;
  harness: string | null;
  lab: string | null;
  reported_model: string | null;
  access_plan: string | null;
  reasoning_effort: string | null;
  verdict: string;
  /** ms */
  duration_ms: number | null;
  /** tokens in + out (worker_tokens), null when unknown. */
  tokens: number | null;
  /** Integer micro-USD, null when unknown (unknown is never 0). */
  cost_microusd: number | null;
  /** ISO 8601 end of the attempt (Ringer: logged_at when present), null when the row has no time. */
  ended_at: string | null;
  identity: string | null;
  host: string | null;
  format: 'verdict' | 'ringer';
  /**
   * What the row is about (eval row `step`): `work` (a worker's attempt: what the scoreboard's rates count; rows
   * without the field are work), `review` (one reviewer's review of the attempt `attempt`), `rank` (one ranking
   * reviewer's scores of a ranked group, round `attempt`) or `select` (a best-of-N group's decision).
   */
  step: string;
  /** Review and rank rows: the reviewer's 1-based position in the task's `review.engines` / `rank.engines`; null on work rows. */
  reviewer: number | null;
  /** Review rows: approve, changes or reject; null when the reviewer gave no valid answer (verdict ERROR) and on work rows. */
  review_verdict: string | null;
  /** Eval row `group`: the workflow group (a best-of-N task's key) the row belongs to; null outside one. */
  group_key: string | null;
  /** Eval row `candidate`: the candidate's number within the group; null outside one. */
  candidate: number | null;
  /**
   * 1 when the row says `forced: true` (its run was started over lint errors with --force: a check that cannot fail,
   * a worker that may rewrite its check), else 0. Such rows are kept and shown as a count, never counted as evidence.
   */
  forced: number;
  /**
   * Select rows of a consensus group that consensus decided (eval row `consensus`, `decided` not `undecided`): the
   * passing candidates it decided against — the members of every group but the winner's — as a bit mask (bit N−1 for
   * candidate N; best-of-N has at most 32 candidates); null on every other row.
   */
  outvoted: number | null;
}

/** Verdicts that judge the model: they count in the pass rates. ERROR and RATE_LIMITED are shown apart. */
export const JUDGED_VERDICTS = ['PASS', 'FAIL', 'TIMEOUT'] as const;

/** Thrown for a row that cannot be indexed; the message names the field. */
export class RowError extends Error {
  override name = 'RowError';
}

type Obj = Record<string, unknown>;

function str(o: Obj, field: string, required: boolean): string | null {
  const v = o[field];
  if (v === undefined || v === null) {
    if (required) throw new RowError(`field "${field}" is missing`);
    return null;
  }
  if (typeof v !== 'string') throw new RowError(`field "${field}" must be a string, got ${JSON.stringify(v)}`);
  if (required && !v) throw new RowError(`field "${field}" is empty`);
  return v;
}

function num(o: Obj, field: string, integer = false): number | null {
  const v = o[field];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v))) {
    throw new RowError(`field "${field}" must be a${integer ? 'n integer' : ' number'} ≥ 0 or null, got ${JSON.stringify(v)}`);
  }
  return v;
}

/**
 * Reads one parsed JSON line of runs.jsonl into the indexed columns.
 * @param line 1-based line number, used as the attempt order of Ringer rows
 * @throws RowError naming the field when the row is not an object or a required field (run_id, task_key,
 *   worker_engine, verdict) is missing or of the wrong type, or a number field is not a number ≥ 0
 */
export function toIndexRow(value: unknown, line: number): IndexRow {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new RowError('the line is not a JSON object');
  const o = value as Obj;
  const attempt = num(o, 'attempt', true);
  if (attempt === 0) throw new RowError('field "attempt" must be ≥ 1');
  const tokensIn = num(o, 'tokens_in');
  const tokensOut = num(o, 'tokens_out');
  const tokens = tokensIn !== null && tokensOut !== null ? tokensIn + tokensOut : num(o, 'worker_tokens');
  const model = str(o, 'model', false) || null;
  const reported = str(o, 'reported_model', false) || null;
  return {
    run_id: str(o, 'run_id', true) as string,
    task_key: str(o, 'task_key', true) as string,
    attempt,
    ord: attempt ?? line,
    model: model ?? reported,
    task_type: str(o, 'task_type', false) ?? '',
    engine: str(o, 'worker_engine', true) as string,
    harness: str(o, 'harness', false),
    lab: str(o, 'lab', false),
    reported_model: reported,
    access_plan: str(o, 'access_plan', false),
    reasoning_effort: str(o, 'reasoning_effort', false),
    verdict: (str(o, 'verdict', true) as string).toUpperCase(),
    duration_ms: num(o, 'duration_ms'),
    tokens,
    cost_microusd: num(o, 'cost_microusd', true),
    ended_at: str(o, 'ended_at', false) ?? str(o, 'logged_at', false),
    identity: str(o, 'identity', false),
    host: str(o, 'host', false),
    format: attempt !== null && typeof o.harness === 'string' ? 'verdict' : 'ringer',
    step: str(o, 'step', false) || 'work',
    ...reviewColumns(o.review ?? o.rank),
    group_key: typeof o.group === 'string' && o.group ? o.group : null,
    candidate: typeof o.candidate === 'number' && Number.isInteger(o.candidate) && o.candidate >= 1 ? o.candidate : null,
    forced: o.forced === true ? 1 : 0,
    outvoted: outvotedMask(o),
  };
}

/** {@link IndexRow.outvoted} of a row: null unless it is a decided consensus group's select row. */
function outvotedMask(o: Obj): number | null {
  const c = o.consensus as { decided?: unknown; groups?: unknown } | undefined;
  if (o.step !== 'select' || !c || typeof c !== 'object' || c.decided === 'undecided' || !Array.isArray(c.groups)) return null;
  const winner = typeof o.candidate === 'number' ? o.candidate : null;
  const groups = c.groups.filter(
    (g): g is { members: { candidate: unknown }[] } => !!g && typeof g === 'object' && Array.isArray((g as { members?: unknown }).members),
  );
  let mask = 0;
  for (const g of groups) {
    const numbers = g.members.map((m) =>
      m && typeof m.candidate === 'number' && Number.isInteger(m.candidate) && m.candidate >= 1 && m.candidate <= 32 ? m.candidate : null,
    );
    if (winner !== null && numbers.includes(winner)) continue;
    for (const n of numbers) if (n !== null) mask = (mask | (1 << (n - 1))) >>> 0;
  }
  return mask;
}

/**
 * The `review` object of a review row (or the `rank` object of a rank row: its reviewer, no verdict) as the reviewer
 * and review_verdict columns (nulls when absent or malformed). The reviewer keeps each reviewer's row apart in
 * Postgres' row_key.
 */
function reviewColumns(v: unknown): { reviewer: number | null; review_verdict: string | null } {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return { reviewer: null, review_verdict: null };
  const o = v as Obj;
  return {
    reviewer: typeof o.reviewer === 'number' && Number.isInteger(o.reviewer) && o.reviewer >= 1 ? o.reviewer : null,
    review_verdict: typeof o.verdict === 'string' ? o.verdict : null,
  };
}
