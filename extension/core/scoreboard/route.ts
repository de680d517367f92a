/**
 * Routing by evidence (`"engine": "auto"`): which candidate (engine and model) an attempt runs on, decided from the
 * scoreboard's rows for the task's task type. A pure function of (the rows, the candidates, the policy, a seeded random
 * source, what is excluded now): no I/O, no clock, so a run's choices replay from the seed its rows record.
 *
 * The rules (docs/scoreboard.md "Routing"):
 * - A candidate is **proven** for routing when its scoreboard tier is proven (view.ts tierOf) and it has at least the
 *   policy's `minTasks` tasks of this task type; **probation** when it has a judged task but is not proven;
 *   **untried** when the scoreboard has no judged task of it on this task type.
 * - **Exploit.** Among proven candidates, the lowest expected cost per PASS (`prefer: "cost"`): its median attempt
 *   cost × its judged attempts per task ÷ its pass rate, i.e. median cost × attempts ÷ tasks passed. The attempts per
 *   task count the retry lane as it happened; with no retries this is the attempt cost ÷ the first-try pass rate.
 *   `prefer: "time"` ranks the same way by median duration; `prefer: "pass_rate"` by first-try pass rate, then pass
 *   rate, then cost per PASS. A proven candidate of unknown cost ranks after those with one. Ties: the cheaper
 *   median attempt, then the order of `from`.
 * - **Explore.** With probability `explore` (one uniform draw per decision, below `explore`), and always while no
 *   candidate is proven, a probation or untried candidate (any candidate when none is proven) chosen by Thompson
 *   sampling: each gets θ ~ Beta(1 + first-try passes, 1 + other tasks) and the lowest sampled cost per first-try
 *   PASS, attempt cost ÷ θ, wins (`time`: duration ÷ θ; `pass_rate`: the highest θ). The best proven candidate is
 *   drawn with them and, when it wins, the decision is not an exploration: a candidate the evidence has ruled out,
 *   or one too dear ever to be cheaper per PASS, is seldom explored (the replay benchmark spent up to 15 % over the
 *   oracle exploring them without this). So among candidates of equal
 *   evidence the cheaper wins more often, and one never tried is as likely as a coin. An attempt cost the scoreboard
 *   does not know is the candidate's `costHintMicroUsd` (a catalog price), else the lowest of the known ones in the
 *   draw (optimism: a median there left a cheap model untried for ever in the replay benchmark), else 1 for all (the
 *   draw is then by θ alone). Nothing to explore (every candidate proven): exploit.
 * - **Challenge.** Not exploring, but some probation or untried candidate's expected figure — its attempt cost (or
 *   duration) ÷ its posterior mean first-try pass rate (1 + passes) ÷ (2 + tasks) — beats the best proven one's cost
 *   (time) per PASS (`pass_rate`: its posterior mean beats the proven first-try rate): a Thompson draw between the
 *   best proven and those challengers decides. So a cheap model that started unlucky, or one the proven tier never
 *   admits (a low first-try rate that is still the cheapest per PASS), keeps being tried while the evidence says it
 *   may be the better buy, and stops once it says it is not; exploring at the `explore` share alone left it starved
 *   (the replay benchmark, test/bench/routing.bench.ts, was 33 % over the oracle on one seed without this rule).
 * - **Retry.** After an attempt that FAILed (or ran out of time or stalled) on candidate C, the retry stays on C when C
 *   is proven or has at least {@link THIN_TASKS} tasks of this type (its retry lane is part of its cost per PASS, and
 *   the failure it is shown is the cheapest lead); when C's evidence is thin (not proven and fewer tasks) the retry
 *   goes to the next-best other candidate — the best proven one, else a Thompson draw among the others — because a
 *   second try on a model with next to no record is the worst-informed spend. No exploration draw is made for a
 *   retry.
 * - **Exclusions.** Candidates the caller excludes now (the budget would refuse the reservation, the engine is at its
 *   limit, or waits for its quota) are left out and named in `skipped`; the next one is picked. When every candidate
 *   is excluded the decision is made as if none were (`allExcluded`), and the caller's own gates (the budget's
 *   refusal, the quota wait, the slot wait) deal with it as for any engine.
 */
import type { RoutePolicy, RoutePreference } from '../manifest/types';
import type { GroupStats } from './group-stats';
import { betaSample, type RandomSource } from './random';
import { tierOf } from './view';

export type { RoutePolicy, RoutePreference } from '../manifest/types';
/** One entry of `route.from`: `engine:model` (the model as the eval row stamps it). */
export interface RouteCandidate {
  /** As written in `from`, e.g. `claude:haiku`; the candidate's name in rows and notes. */
  id: string;
  engine: string;
  /** null: the engine's default model, unknown before it runs (never matches evidence: untried). */
  model: string | null;
  /** A guess at one attempt's cost, micro-USD, used only while the scoreboard knows none (catalog price × tokens). */
  costHintMicroUsd?: number | null;
}

/** A candidate's evidence on the task type, as the decision saw it. */
export interface CandidateEvidence {
  candidate: string;
  tier: 'proven' | 'probation' | 'untried';
  tasks: number;
  /** null when untried. */
  firstTryPassRate: number | null;
  passRate: number | null;
  /** Judged attempts per task (≥ 1), null when untried. */
  attemptsPerTask: number | null;
  /** Median attempt cost from the scoreboard, else the hint, micro-USD; null when neither is known. */
  attemptCostMicroUsd: number | null;
  /** median cost × attempts ÷ passed, micro-USD; null when unknown or nothing passed. */
  costPerPassMicroUsd: number | null;
  /** median duration × attempts ÷ passed, ms; null when unknown or nothing passed. */
  timePerPassMs: number | null;
  /** The Thompson draw θ when this decision sampled it. */
  sampled?: number;
}

/** Everything the decision needs; see the module's doc for the rules. */
export interface RouteInput {
  /** The task's task type (null: rows without one). */
  taskType: string | null;
  candidates: readonly RouteCandidate[];
  /** Scoreboard rows (group-stats.ts GroupStats), any task types: only this task type's are read. */
  evidence: readonly GroupStats[];
  policy: RoutePolicy;
  random: RandomSource;
  /** Candidate id → why it cannot be picked now (budget, limit, quota wait). */
  excluded?: ReadonlyMap<string, string>;
  /** Set for a retry: the candidate whose attempt just FAILed. */
  retryAfter?: string | null;
}

/** Why the chosen candidate won. */
export type RouteBasis = 'proven' | 'challenge' | 'explore' | 'no-proven' | 'retry-stays' | 'retry-moves';

/** The decision, with everything its row and notes say. */
export interface RouteDecision {
  chosen: CandidateEvidence;
  /** The engine and model of the chosen candidate. */
  engine: string;
  model: string | null;
  basis: RouteBasis;
  /** True when the choice was an exploration (Thompson draw), not the best proven. */
  exploration: boolean;
  /** The best other candidate of the ranking it was chosen from (null when it had no rival). */
  runnerUp: CandidateEvidence | null;
  /** Excluded candidates and why. */
  skipped: { candidate: string; reason: string }[];
  /** Every candidate was excluded: chosen as if none were. */
  allExcluded: boolean;
  /** The uniform draw compared with `explore` (null for a retry). */
  draw: number | null;
  /** One line for notes and rows. */
  reason: string;
}

/**
 * Below this many tasks of a task type a candidate that is not proven has thin evidence: a FAIL on it sends the retry
 * to another candidate. At 10 tasks one task moves its first-try rate by 10 points; past that its record (retry lane
 * included) says more than a move to a model the retry would have to start cold on. The replay benchmark moved every
 * retry off a model of 300 tasks and 40 % first-try (the cheapest per PASS on its type) while "thin" meant only "not
 * proven", 20 % over the oracle on one seed.
 */
export const THIN_TASKS = 10;

/** A candidate's evidence on `taskType` from the scoreboard rows (the row of its model and task type). */
export function candidateEvidence(c: RouteCandidate, taskType: string | null, evidence: readonly GroupStats[], minTasks: number): CandidateEvidence {
  const s = c.model === null ? undefined : evidence.find((g) => g.model === c.model && g.task_type === taskType && g.tasks > 0);
  const hint = c.costHintMicroUsd ?? null;
  if (!s)
    return {
      candidate: c.id,
      tier: 'untried',
      tasks: 0,
      firstTryPassRate: null,
      passRate: null,
      attemptsPerTask: null,
      attemptCostMicroUsd: hint,
      costPerPassMicroUsd: null,
      timePerPassMs: null,
    };
  const perPass = (median: number | null) => (median === null || s.passed === 0 ? null : (median * s.attempts) / s.passed);
  return {
    candidate: c.id,
    tier: tierOf(s) === 'proven' && s.tasks >= minTasks ? 'proven' : 'probation',
    tasks: s.tasks,
    firstTryPassRate: s.first_try_pass_rate,
    passRate: s.pass_rate,
    attemptsPerTask: s.tasks ? s.attempts / s.tasks : null,
    attemptCostMicroUsd: s.median_cost_microusd ?? hint,
    costPerPassMicroUsd: perPass(s.median_cost_microusd),
    timePerPassMs: perPass(s.median_duration_ms),
  };
}

/** Ranks proven candidates best first by the policy (the exploit order). */
export function rankProven(list: readonly CandidateEvidence[], prefer: RoutePreference, order: readonly string[]): CandidateEvidence[] {
  const metric = (e: CandidateEvidence) => (prefer === 'time' ? e.timePerPassMs : e.costPerPassMicroUsd);
  const byMetric = (a: CandidateEvidence, b: CandidateEvidence) => {
    const x = metric(a);
    const y = metric(b);
    if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
    return x - y;
  };
  const cheaper = (a: CandidateEvidence, b: CandidateEvidence) => (a.attemptCostMicroUsd ?? Infinity) - (b.attemptCostMicroUsd ?? Infinity) || 0;
  return [...list].sort(
    (a, b) =>
      (prefer === 'pass_rate'
        ? (b.firstTryPassRate ?? 0) - (a.firstTryPassRate ?? 0) || (b.passRate ?? 0) - (a.passRate ?? 0) || byMetric(a, b)
        : byMetric(a, b)) ||
      cheaper(a, b) ||
      order.indexOf(a.candidate) - order.indexOf(b.candidate),
  );
}

/**
 * One Thompson draw over `list` (in `from` order, one θ per candidate from `random`): the candidates sorted by their
 * sampled score, best first, each with `sampled` set. Ties: the cheaper attempt, then the order of `from`.
 */
export function thompson(
  list: readonly CandidateEvidence[],
  evidence: ReadonlyMap<string, { firstTry: number; tasks: number }>,
  prefer: RoutePreference,
  random: RandomSource,
  order: readonly string[],
  durations: ReadonlyMap<string, number | null>,
): CandidateEvidence[] {
  const known = (xs: (number | null)[]) => xs.filter((x): x is number => x !== null && x > 0).sort((a, b) => a - b);
  // Unknown figures are taken as the lowest known one (optimism: a candidate is not kept untried for being unknown).
  const neutral = (xs: number[]) => (xs.length ? (xs[0] as number) : 1);
  const costs = known(list.map((e) => e.attemptCostMicroUsd));
  const times = known(list.map((e) => durations.get(e.candidate) ?? null));
  const drawn = list.map((e) => {
    const r = evidence.get(e.candidate) ?? { firstTry: 0, tasks: 0 };
    const theta = betaSample(1 + r.firstTry, 1 + r.tasks - r.firstTry, random);
    const cost = e.attemptCostMicroUsd !== null && e.attemptCostMicroUsd > 0 ? e.attemptCostMicroUsd : costs.length ? neutral(costs) : 1;
    const d = durations.get(e.candidate) ?? null;
    const time = d !== null && d > 0 ? d : times.length ? neutral(times) : 1;
    const score = prefer === 'pass_rate' ? -theta : (prefer === 'time' ? time : cost) / theta;
    return { e: { ...e, sampled: theta }, score, cost };
  });
  drawn.sort((a, b) => a.score - b.score || a.cost - b.cost || order.indexOf(a.e.candidate) - order.indexOf(b.e.candidate));
  return drawn.map((d) => d.e);
}

/**
 * Whether a probation or untried candidate's expected figure beats the best proven one's: its attempt cost (or
 * duration) ÷ its posterior mean first-try pass rate, (1 + first-try passes) ÷ (2 + tasks), below the proven one's
 * cost (time) per PASS; for `pass_rate`, its posterior mean above the proven one's first-try rate. An unknown figure is
 * taken as the lowest known one of any candidate (`lowest`), as in the Thompson draw.
 */
function promising(
  e: CandidateEvidence,
  best: CandidateEvidence,
  r: { firstTry: number; tasks: number },
  prefer: RoutePreference,
  duration: number | null,
  lowest: { cost: number | null; time: number | null },
): boolean {
  const mean = (1 + r.firstTry) / (2 + r.tasks);
  if (prefer === 'pass_rate') return mean > (best.firstTryPassRate ?? 1);
  const own = prefer === 'time' ? (duration ?? lowest.time) : (e.attemptCostMicroUsd ?? lowest.cost);
  const theirs = prefer === 'time' ? best.timePerPassMs : best.costPerPassMicroUsd;
  return own !== null && theirs !== null && own / mean < theirs;
}

const usd = (micro: number): string => `$${(micro / 1e6).toFixed(micro >= 1e6 ? 2 : micro >= 1e4 ? 3 : 4)}`;

/** How a candidate's evidence reads in a line: `proven, $0.004/PASS over 12 tasks`, `probation, 2 tasks`, `untried`. */
export function evidenceLine(e: CandidateEvidence, prefer: RoutePreference = 'cost'): string {
  if (e.tier === 'untried') return 'untried';
  const n = `${e.tasks} task${e.tasks === 1 ? '' : 's'}`;
  const figure =
    prefer === 'time' && e.timePerPassMs !== null
      ? `${(e.timePerPassMs / 1000).toFixed(1)} s/PASS`
      : e.costPerPassMicroUsd !== null
        ? `${usd(e.costPerPassMicroUsd)}/PASS`
        : `${Math.round((e.firstTryPassRate ?? 0) * 100)} % first try`;
  return `${e.tier}, ${figure} over ${n}`;
}

/**
 * What every branch of a route decision reads: the input, every candidate's evidence (`all`) and those open to be
 * picked (`open`: not excluded, or all when every one is), candidate order, per-candidate first-try record and median
 * duration (ms), and `decide`, which makes the decision of a chosen candidate (with its runner-up, basis, explore draw
 * and why) and adds the skipped ones to its reason.
 */
interface RouteScene {
  input: RouteInput;
  all: CandidateEvidence[];
  open: CandidateEvidence[];
  order: string[];
  stats: Map<string, { firstTry: number; tasks: number; duration: number | null }>;
  durations: Map<string, number | null>;
  decide: (chosen: CandidateEvidence, runnerUp: CandidateEvidence | null, basis: RouteBasis, draw: number | null, why: string) => RouteDecision;
}

/** The scene of one route decision (see RouteScene); draws nothing. */
function routeScene(input: RouteInput): RouteScene {
  const { candidates, policy } = input;
  const order = candidates.map((c) => c.id);
  const byId = new Map(candidates.map((c) => [c.id, c]));
  const all = candidates.map((c) => candidateEvidence(c, input.taskType, input.evidence, policy.minTasks));
  const stats = new Map(
    candidates.map((c) => {
      const s = c.model === null ? undefined : input.evidence.find((g) => g.model === c.model && g.task_type === input.taskType && g.tasks > 0);
      // The pass record is its first tries (tasks it got as a retry are no draw of its first try).
      return [c.id, { firstTry: s?.first_try ?? 0, tasks: s?.first_tries ?? 0, duration: s?.median_duration_ms ?? null }] as const;
    }),
  );
  const durations = new Map([...stats].map(([id, s]) => [id, s.duration]));
  const excluded = input.excluded ?? new Map<string, string>();
  const skipped = all.filter((e) => excluded.has(e.candidate)).map((e) => ({ candidate: e.candidate, reason: excluded.get(e.candidate) as string }));
  const allExcluded = skipped.length === all.length;
  const open = allExcluded ? all : all.filter((e) => !excluded.has(e.candidate));
  const skipNote = skipped.length
    ? `; skipped ${skipped.map((s) => `${s.candidate} (${s.reason})`).join(', ')}${allExcluded ? ' — every candidate is held, so the first choice waits' : ''}`
    : '';
  const decide = (chosen: CandidateEvidence, runnerUp: CandidateEvidence | null, basis: RouteBasis, draw: number | null, why: string): RouteDecision => {
    const c = byId.get(chosen.candidate) as RouteCandidate;
    return {
      chosen,
      engine: c.engine,
      model: c.model,
      basis,
      exploration: basis === 'explore' || basis === 'no-proven' || basis === 'challenge' || (basis === 'retry-moves' && chosen.tier !== 'proven'),
      runnerUp,
      skipped,
      allExcluded,
      draw,
      reason: `${why}${skipNote}`,
    };
  };
  return { input, all, open, order, stats, durations, decide };
}

/**
 * The candidate of a retry after `failed` FAILed: it stays on a proven candidate, one whose evidence is not thin, or
 * the only one open; else it moves to the best proven other, or the first of a Thompson draw among the others.
 */
function routeRetry(scene: RouteScene, retryAfter: string): RouteDecision {
  const { open, order, stats, durations, decide } = scene;
  const { policy, random } = scene.input;
  const failed = open.find((e) => e.candidate === retryAfter);
  const others = open.filter((e) => e.candidate !== retryAfter);
  if (failed && (failed.tier === 'proven' || failed.tasks >= THIN_TASKS || !others.length)) {
    const why = failed.tier === 'proven' ? 'proven' : failed.tasks >= THIN_TASKS ? `its evidence is not thin (${failed.tasks} tasks ≥ ${THIN_TASKS})` : null;
    return decide(
      failed,
      others.length
        ? (rankProven(
            others.filter((e) => e.tier === 'proven'),
            policy.prefer,
            order,
          )[0] ?? null)
        : null,
      'retry-stays',
      null,
      why
        ? `retry stays on ${failed.candidate}: ${why} (${evidenceLine(failed, policy.prefer)}), its retry lane is part of its cost`
        : `retry stays on ${failed.candidate}: no other candidate is open`,
    );
  }
  const provenOthers = rankProven(
    others.filter((e) => e.tier === 'proven'),
    policy.prefer,
    order,
  );
  const ranked = provenOthers.length ? provenOthers : thompson(others.length ? others : open, stats, policy.prefer, random, order, durations);
  const [first, second] = ranked as [CandidateEvidence, CandidateEvidence | undefined];
  return decide(
    first,
    second ?? null,
    'retry-moves',
    null,
    `retry moves off ${retryAfter} (${failed ? evidenceLine(failed, policy.prefer) : 'held'}: thin evidence) to ${first.candidate} (${provenOthers.length ? evidenceLine(first, policy.prefer) : `Thompson draw, ${evidenceLine(first, policy.prefer)}`})`,
  );
}

/**
 * The candidate an attempt of `engine: "auto"` runs on (rules in the module's doc). Draws from `random`: one uniform
 * for the explore decision (not for a retry), then one θ per candidate in a Thompson draw.
 * @throws Error when `candidates` is empty
 */
export function route(input: RouteInput): RouteDecision {
  const { candidates, policy, random } = input;
  if (!candidates.length) throw new Error('route: no candidates (route.from is empty)');
  const scene = routeScene(input);
  const { open, order, stats, durations, decide } = scene;
  if (input.retryAfter) return routeRetry(scene, input.retryAfter);
  const proven = rankProven(
    open.filter((e) => e.tier === 'proven'),
    policy.prefer,
    order,
  );
  const draw = random();
  const rest = open.filter((e) => e.tier !== 'proven');
  if (!proven.length) {
    const [first, second] = thompson(open, stats, policy.prefer, random, order, durations) as [CandidateEvidence, CandidateEvidence | undefined];
    return decide(
      first,
      second ?? null,
      'no-proven',
      draw,
      `no candidate is proven on ${input.taskType ?? 'this task type'}: explores ${first.candidate} (Thompson draw θ=${first.sampled?.toFixed(2)}, ${evidenceLine(first, policy.prefer)})`,
    );
  }
  return routeProven(scene, proven, rest, draw);
}

/**
 * The candidate when some are proven (`proven`, best first, not empty): with `draw` under the explore share, the first of a
 * Thompson draw among the best and the unproven (`rest`); else the first of a draw among the best and the challengers
 * that may beat it (see promising); else the best proven.
 */
function routeProven(scene: RouteScene, proven: readonly CandidateEvidence[], rest: readonly CandidateEvidence[], draw: number): RouteDecision {
  const { all, order, stats, durations, decide } = scene;
  const { policy, random } = scene.input;
  const [best, second] = proven as [CandidateEvidence, CandidateEvidence | undefined];
  if (draw < policy.explore && rest.length) {
    // The best proven candidate takes part in the draw: one the evidence has ruled out (or too dear to ever be
    // cheaper per PASS) seldom beats it, so the explore share goes to candidates that may still be the better buy.
    const [first, next] = thompson([best, ...rest], stats, policy.prefer, random, order, durations) as [CandidateEvidence, CandidateEvidence];
    if (first.candidate !== best.candidate)
      return decide(
        first,
        best,
        'explore',
        draw,
        `explores ${first.candidate} (draw ${draw.toFixed(3)} < explore ${policy.explore}; Thompson θ=${first.sampled?.toFixed(2)}, ${evidenceLine(first, policy.prefer)}) instead of ${best.candidate}`,
      );
    return decide(
      best,
      second ?? next,
      'proven',
      draw,
      `${best.candidate}: ${evidenceLine(best, policy.prefer)}; it won the explore draw (${draw.toFixed(3)} < explore ${policy.explore}) against ${rest.map((c) => c.candidate).join(', ')}`,
    );
  }
  // Challengers: a probation or untried candidate whose expected figure (posterior mean) beats the best proven one's
  // is drawn against it, so a good model that started unlucky is not left to the explore share alone.
  const lowestOf = (xs: (number | null)[]) =>
    xs.filter((x): x is number => x !== null && x > 0).reduce<number | null>((m, x) => (m === null || x < m ? x : m), null);
  const lowest = { cost: lowestOf(all.map((e) => e.attemptCostMicroUsd)), time: lowestOf([...durations.values()]) };
  const challengers = rest.filter((e) =>
    promising(e, best, stats.get(e.candidate) as { firstTry: number; tasks: number }, policy.prefer, durations.get(e.candidate) ?? null, lowest),
  );
  if (challengers.length) {
    const [first, next] = thompson([best, ...challengers], stats, policy.prefer, random, order, durations) as [CandidateEvidence, CandidateEvidence];
    if (first.candidate !== best.candidate)
      return decide(
        first,
        next,
        'challenge',
        draw,
        `${first.candidate} challenges ${best.candidate} (${evidenceLine(best, policy.prefer)}): its expected ${policy.prefer === 'pass_rate' ? 'pass rate' : `${policy.prefer} per PASS`} is better on ${evidenceLine(first, policy.prefer)}; Thompson θ=${first.sampled?.toFixed(2)}`,
      );
    return decide(
      best,
      second ?? next,
      'proven',
      draw,
      `${best.candidate}: ${evidenceLine(best, policy.prefer)}; won the draw against ${challengers.map((c) => c.candidate).join(', ')}`,
    );
  }
  return decide(
    best,
    second ?? null,
    'proven',
    draw,
    `${best.candidate}: ${evidenceLine(best, policy.prefer)}${second ? `; runner-up ${second.candidate} (${evidenceLine(second, policy.prefer)})` : ''}`,
  );
}

/** The dashboard's and plan's line: `auto → claude/haiku (proven, $0.004/PASS over 12 tasks)`. */
export function routeLine(d: Pick<RouteDecision, 'engine' | 'model' | 'chosen' | 'basis'>, prefer: RoutePreference = 'cost'): string {
  const what =
    d.basis === 'explore' || d.basis === 'no-proven' || d.basis === 'challenge'
      ? `exploring; ${evidenceLine(d.chosen, prefer)}`
      : d.basis.startsWith('retry')
        ? `retry; ${evidenceLine(d.chosen, prefer)}`
        : evidenceLine(d.chosen, prefer);
  return `auto → ${d.engine}/${d.model ?? 'default'} (${what})`;
}

/** Tokens of one attempt assumed for a catalog price when the evidence gives no median (in + out), and the share in. */
export const HINT_TOKENS = 20_000;
const HINT_INPUT_SHARE = 0.9;

/**
 * A guess at one attempt's cost on `model` (micro-USD) from the catalog's price, for a candidate whose cost the
 * scoreboard does not know: the median tokens of the task type's attempts of the other candidates (else HINT_TOKENS),
 * 90 % of them in and 10 % out, at the model's prompt and completion prices. Null without a price. So among untried
 * candidates the cheaper is drawn more often ("cheapest first among equals"), on the same scale as known costs.
 */
export function costHint(
  model: string | null,
  taskType: string | null,
  spec: { from: readonly { model: string | null }[] },
  evidence: readonly GroupStats[],
  price: (model: string) => { promptMicroUsd: number; completionMicroUsd: number } | null,
): number | null {
  if (model === null) return null;
  const p = price(model);
  if (!p) return null;
  const models = new Set(spec.from.map((c) => c.model));
  const tokens = evidence
    .filter((g) => g.task_type === taskType && models.has(g.model) && g.median_tokens !== null)
    .map((g) => g.median_tokens as number)
    .sort((a, b) => a - b);
  const n = tokens.length ? (tokens[Math.floor((tokens.length - 1) / 2)] as number) : HINT_TOKENS;
  return Math.round(n * HINT_INPUT_SHARE * p.promptMicroUsd + n * (1 - HINT_INPUT_SHARE) * p.completionMicroUsd);
}

/** What `verdict models --route TYPE` and `verdict plan` show of a task type: the candidates ranked, and auto's pick. */
export interface RouteRanking {
  taskType: string | null;
  policy: RoutePolicy;
  /** Proven candidates by the policy, then the others by expected cost (time) per PASS, posterior mean; untried last. */
  candidates: CandidateEvidence[];
  /** What auto picks for a first attempt, drawn from `seededRandom(seed)`. */
  pick: RouteDecision;
  seed: string;
}

/**
 * The candidates of `taskType` ranked as auto sees them, and the decision of a first attempt with the given seed (the
 * same function a run calls: route). Pure.
 * @throws Error when `candidates` is empty
 */
export function routeRanking(
  taskType: string | null,
  candidates: readonly RouteCandidate[],
  policy: RoutePolicy,
  evidence: readonly GroupStats[],
  random: RandomSource,
  seed: string,
): RouteRanking {
  const order = candidates.map((c) => c.id);
  const all = candidates.map((c) => candidateEvidence(c, taskType, evidence, policy.minTasks));
  const proven = rankProven(
    all.filter((e) => e.tier === 'proven'),
    policy.prefer,
    order,
  );
  const expected = (e: CandidateEvidence) => {
    const s = evidence.find((g) => g.model === candidates[order.indexOf(e.candidate)]?.model && g.task_type === taskType);
    const mean = (1 + (s?.first_try ?? 0)) / (2 + (s?.first_tries ?? 0));
    const figure = policy.prefer === 'time' ? (s?.median_duration_ms ?? null) : e.attemptCostMicroUsd;
    return policy.prefer === 'pass_rate' ? -mean : figure === null ? Infinity : figure / mean;
  };
  const rest = all
    .filter((e) => e.tier !== 'proven')
    .sort(
      (a, b) =>
        Number(a.tier === 'untried') - Number(b.tier === 'untried') || expected(a) - expected(b) || order.indexOf(a.candidate) - order.indexOf(b.candidate),
    );
  return { taskType, policy, candidates: [...proven, ...rest], pick: route({ taskType, candidates, evidence, policy, random }), seed };
}
