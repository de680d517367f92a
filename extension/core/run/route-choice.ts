/**
 * `engine: "auto"` in a run: the scoreboard's evidence read once at the run's start, and each attempt's routing
 * decision (scoreboard/route.ts route) made when the attempt's engine is first asked for, with the candidates the run
 * cannot use now excluded (its engine waits for its quota, is at its limit, or its reservation would pass the budget).
 * The decision is kept on the task for that attempt number, so every later question (the scheduler's group, the quota
 * gate, the budget) gets the same answer, and recorded in the attempt's row (`route`).
 */
import type { RouteSpec, TaskSpec } from '../manifest/types';
import type { GroupStats } from '../scoreboard/group-stats';
import { loadScoreboard } from '../scoreboard/load';
import { seededRandom } from '../scoreboard/random';
import { costHint, route, routeLine, type CandidateEvidence, type RouteDecision } from '../scoreboard/route';
import type { RouteColumn } from '../store/eval-row';

/** A routed attempt: its number (1-based, every attempt begun), the decision, and the seed its draws came from. */
export interface RoutedAttempt {
  attempt: number;
  decision: RouteDecision;
  seed: string;
}

/** The verdicts after which the next attempt is a retry of the work (schemas/status.ts: retryable). */
const RETRIED = new Set(['FAIL', 'TIMEOUT', 'STALLED']);

/**
 * The run's evidence for routing: the unfiltered scoreboard of the home's eval log as it stood when the run started
 * (rows of this run's attempts are not added while it runs, so every decision of a run rests on the same evidence and
 * replays from it and the seed). Empty when the log cannot be read (every candidate is then untried).
 */
export async function loadRouteEvidence(home: string): Promise<{ rows: GroupStats[]; note: string | null }> {
  try {
    const { view } = await loadScoreboard({ home });
    return { rows: view.rows, note: null };
  } catch (e) {
    return { rows: [], note: `route: the eval log could not be read (${(e as Error).message}); auto treats every candidate as untried` };
  }
}

/** What a decision needs of the task. */
export interface RoutableTask {
  spec: Pick<TaskSpec, 'key' | 'taskType'> & { route?: RouteSpec };
  state: { attempts: { verdict: string | null; engine?: string; model?: string | null }[] };
  routed?: RoutedAttempt;
}

/**
 * The decision for the task's next attempt (number = attempts begun + 1): the one kept on the task when it is for that
 * number, else a new one (kept). `excluded(engine, model)`: why that candidate cannot run now, or null. The seed of
 * attempt n of task K is `<route seed, else run id>/K/n`.
 */
export function routeAttempt(
  task: RoutableTask,
  runId: string,
  evidence: readonly GroupStats[],
  excluded: (engine: string, model: string | null) => string | null,
  price: (model: string) => { promptMicroUsd: number; completionMicroUsd: number } | null = () => null,
): RoutedAttempt {
  const spec = task.spec.route as RouteSpec;
  const n = task.state.attempts.length + 1;
  if (task.routed?.attempt === n) return task.routed;
  const last = task.state.attempts[n - 2];
  const retryAfter = last && last.verdict && RETRIED.has(last.verdict) && task.routed?.attempt === n - 1 ? task.routed.decision.chosen.candidate : null;
  const seed = `${spec.seed ?? runId}/${task.spec.key}/${n}`;
  const out = new Map<string, string>();
  for (const c of spec.from) {
    const why = excluded(c.engine, c.model);
    if (why) out.set(c.id, why);
  }
  const candidates = spec.from.map((c) => ({ ...c, costHintMicroUsd: costHint(c.model, task.spec.taskType, spec, evidence, price) }));
  const decision = route({ taskType: task.spec.taskType, candidates, evidence, policy: spec, random: seededRandom(seed), excluded: out, retryAfter });
  task.routed = { attempt: n, decision, seed };
  return task.routed;
}

function figures(e: CandidateEvidence): RouteColumn['evidence'] {
  return {
    candidate: e.candidate,
    tier: e.tier,
    tasks: e.tasks,
    first_try_pass_rate: e.firstTryPassRate,
    pass_rate: e.passRate,
    cost_per_pass_microusd: e.costPerPassMicroUsd === null ? null : Math.round(e.costPerPassMicroUsd),
    time_per_pass_ms: e.timePerPassMs === null ? null : Math.round(e.timePerPassMs),
  };
}

/** The eval row's `route` of a routed attempt (store/eval-row.ts RouteColumn). */
export function routeColumn(r: RoutedAttempt, spec: RouteSpec): RouteColumn {
  const d = r.decision;
  return {
    policy: { from: spec.from.map((c) => c.id), prefer: spec.prefer, explore: spec.explore, min_tasks: spec.minTasks, source: spec.source },
    chosen: d.chosen.candidate,
    basis: d.basis,
    exploration: d.exploration,
    evidence: figures(d.chosen),
    runner_up: d.runnerUp ? figures(d.runnerUp) : null,
    skipped: d.skipped,
    seed: r.seed,
    draw: d.draw,
    reason: d.reason,
    line: routeLine(d, spec.prefer),
  };
}
