/**
 * The eval row that records a best-of-N group's decision (docs/workflows.md "Best-of-N"): step `select`, on the
 * group's own key, credited to the engine and model of the winning candidate (`candidate` its number, `commit` its
 * commit). It is how the scoreboard's "won" column (scoreboard/won-stats.ts) knows which candidate was chosen; it is
 * not an attempt: no duration, tokens or cost of its own (the winner's work row has them), and the pass rates never
 * read it (they count step `work` rows only).
 */
import type { ConsensusColumn, EvalRow, RankingColumn } from '../../../store/eval-row';
import type { AttemptRecord } from '../../attempt-record';

/**
 * The `select` row of group `groupKey`, from the winner's settled PASS record and its work row (`workRow`, the
 * WorkflowHost's); `reason` is the decision as the task's
 * state says it (e.g. `winner: candidate 2 (slug--c2, script)`), `decidedAt` epoch ms; `ranking`, for a
 * `select: "ranked"` group only (or a consensus tie the ranking broke), what decided it (its `ranking` column);
 * `consensus`, for a `select: "consensus"` group that compared its candidates, its groups and why (`consensus`).
 * @throws Error when the record is not a settled PASS of a candidate
 */
export function selectRow(
  workRow: (rec: AttemptRecord) => EvalRow,
  winner: AttemptRecord,
  groupKey: string,
  reason: string,
  decidedAt: number,
  ranking?: RankingColumn,
  consensus?: ConsensusColumn,
): EvalRow {
  if (winner.verdict !== 'PASS')
    throw new Error(`${winner.taskKey} attempt ${winner.attempt} is ${winner.verdict ?? 'not settled'}: only a PASS can win ${groupKey}`);
  if (winner.candidate === null) throw new Error(`${winner.taskKey} is not a candidate: it cannot win ${groupKey}`);
  const at = new Date(decidedAt).toISOString();
  return {
    ...workRow(winner),
    task_key: groupKey,
    notes: reason,
    duration_ms: 0,
    worker_tokens: null,
    tokens_in: null,
    tokens_out: null,
    tokens_cached: null,
    tokens_reasoning: null,
    cost_microusd: null,
    check_exit_code: null,
    check_output: '',
    started_at: at,
    ended_at: at,
    step: 'select',
    group: groupKey,
    candidate: winner.candidate,
    ...(ranking ? { ranking } : {}),
    ...(consensus ? { consensus } : {}),
  };
}
