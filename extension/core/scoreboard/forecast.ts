/**
 * A manifest's forecast before launch (`verdict plan`): per task, from the eval log's past tasks of the same model and
 * task type, the expected attempts, cost (median and p90 of a task's total) and duration, and how many past tasks each
 * figure rests on. Read through the scoreboard's columns (load.ts currentColumns), never the log itself.
 */
import type { AttemptColumns } from './columns';

/** One task to forecast: its key, engine, and the model and task type its first attempt would run. */
export interface PlanTask {
  key: string;
  engine: string;
  /** null: the engine's default, not known before it runs (no history can be matched). */
  model: string | null;
  taskType: string | null;
  /**
   * True when its engine runs no model (the built-in `script` engine: a bash script, no key, no tokens): its cost is
   * known to be 0 with or without history.
   */
  free?: boolean;
}

/** Figures of past tasks, each the whole of one task's work attempts (micro-USD, ms). */
export interface PastFigures {
  /** Past tasks the figures rest on. */
  tasks: number;
  /** Median work attempts per task. */
  attempts: number;
  /** Median and p90 (nearest rank) of a task's known cost, micro-USD; null when no past task has a known cost. */
  costMedianMicroUsd: number | null;
  costP90MicroUsd: number | null;
  /** Median of a task's known duration (its attempts added), ms; null when none is known. */
  durationMedianMs: number | null;
}

/** A task's forecast: `basis` says which history matched, `none` (no history: figures null) flags what is unknown. */
export interface TaskForecast extends PlanTask {
  basis: 'model+task_type' | 'model' | 'engine+task_type' | 'engine' | 'none';
  figures: PastFigures | null;
}

/**
 * The totals of a forecast. A total is null — unknown, never $0 — when some task's figure is unknown (no history, or
 * no past task with a known cost or duration): a manifest nobody ran before may cost anything. `known` holds the same
 * sums over the tasks whose figure is known: with unknowns among them, a lower bound.
 */
export interface ForecastTotal {
  /** Sum of the tasks' median cost, micro-USD; null when some task's cost is unknown. */
  costMedianMicroUsd: number | null;
  /** Sum of the tasks' p90 cost, micro-USD; null when some task's cost is unknown. */
  costP90MicroUsd: number | null;
  /** Sum of the tasks' median duration, ms; null when some task's duration is unknown. */
  durationMedianMs: number | null;
  /** The sums over the tasks whose figure is known (micro-USD, ms). */
  known: { costMedianMicroUsd: number; costP90MicroUsd: number; durationMedianMs: number };
  /** Tasks without any history. */
  withoutHistory: number;
  /** Tasks whose cost is unknown: those without history and those whose past tasks have no known cost. */
  costUnknown: number;
}

/** The whole manifest: each task, and the totals (ForecastTotal: unknown where any task is). */
export interface Forecast {
  tasks: TaskForecast[];
  total: ForecastTotal;
}

function nearestRank(sorted: ArrayLike<number>, q: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] as number;
}

/**
 * The past tasks (units of the eval log: AttemptColumns.unit, 0..units-1) as columns: each one's model, task type and
 * engine (dictionary ids, -1 when it has no work row with a stamped model) and totals of its work attempts. Typed
 * arrays, not one object per past task: a log of 100,000 rows made 50,000 objects and their strings, most of a plan's
 * time and its garbage collection.
 */
interface PastTasks {
  count: number;
  /** Dictionary ids; model -1: the unit has no work row with a stamped model (never matched). */
  model: Int32Array;
  taskType: Int32Array;
  engine: Int32Array;
  attempts: Uint32Array;
  /** micro-USD, of the attempts of known cost; `costUnknown` 1 when any attempt's cost is unknown. */
  cost: Float64Array;
  costUnknown: Uint8Array;
  /** ms, likewise. */
  duration: Float64Array;
  durationUnknown: Uint8Array;
  /** The dictionary's id of each string (AttemptColumns.strings). */
  ids: Map<string, number>;
}

/** Per past task (unit), its model, task type and engine ids and totals of its work attempts. */
function pastTasks(c: AttemptColumns): PastTasks {
  const n = c.units;
  const t: PastTasks = {
    count: n,
    model: new Int32Array(n).fill(-1),
    taskType: new Int32Array(n).fill(-1),
    engine: new Int32Array(n).fill(-1),
    attempts: new Uint32Array(n),
    cost: new Float64Array(n),
    costUnknown: new Uint8Array(n),
    duration: new Float64Array(n),
    durationUnknown: new Uint8Array(n),
    ids: new Map(c.strings.map((s, i) => [s, i])),
  };
  for (let i = 0; i < c.rows; i++) {
    if (c.step[i] !== 0) continue;
    const g = c.groups[c.group[i] ?? -1];
    if (!g || g[0] < 0) continue;
    const u = c.unit[i] as number;
    if (u < 0 || u >= n) continue;
    if (t.attempts[u] === 0) {
      t.model[u] = g[0];
      t.taskType[u] = g[1];
      t.engine[u] = c.engine[i] ?? -1;
    }
    t.attempts[u] = (t.attempts[u] as number) + 1;
    const cost = c.cost[i] ?? NaN;
    if (Number.isFinite(cost)) t.cost[u] = (t.cost[u] as number) + cost;
    else t.costUnknown[u] = 1;
    const d = c.duration[i] ?? NaN;
    if (Number.isFinite(d)) t.duration[u] = (t.duration[u] as number) + d;
    else t.durationUnknown[u] = 1;
  }
  return t;
}

/** The figures of the past tasks `match` takes (by unit id), or null when it takes none. */
function figuresOf(p: PastTasks, match: (u: number) => boolean): PastFigures | null {
  const attempts: number[] = [];
  const costs: number[] = [];
  const durations: number[] = [];
  for (let u = 0; u < p.count; u++) {
    if (p.attempts[u] === 0 || !match(u)) continue;
    attempts.push(p.attempts[u] as number);
    if (!p.costUnknown[u]) costs.push(p.cost[u] as number);
    if (!p.durationUnknown[u]) durations.push(p.duration[u] as number);
  }
  if (!attempts.length) return null;
  // Typed arrays sort by value.
  const sorted = (xs: number[]) => Float64Array.from(xs).sort();
  const a = sorted(attempts);
  const c = sorted(costs);
  const d = sorted(durations);
  return {
    tasks: attempts.length,
    attempts: nearestRank(a, 0.5) as number,
    costMedianMicroUsd: nearestRank(c, 0.5),
    costP90MicroUsd: nearestRank(c, 0.9),
    durationMedianMs: nearestRank(d, 0.5),
  };
}

/**
 * Forecasts `tasks` from the eval log's columns: each task from the past tasks of its model and task type, else of its
 * model on any task type (a task whose model the engine picks: of its engine, likewise), else none (flagged). Medians
 * and p90 by nearest rank. A total is the sum of its tasks' figures, or null (unknown) when any of them is unknown
 * (ForecastTotal); a task whose engine runs no model (`free`) costs 0.
 */
export function forecast(tasks: readonly PlanTask[], columns: AttemptColumns | null): Forecast {
  const past = columns ? pastTasks(columns) : null;
  const out: TaskForecast[] = tasks.map((t) => forecastTask(t, past));
  return { tasks: out, total: totalOf(out) };
}

/** The totals of forecast tasks (ForecastTotal): each sum, or null when any task's figure is unknown. */
export function totalOf(tasks: readonly TaskForecast[]): ForecastTotal {
  const known = (f: (x: PastFigures) => number | null) => tasks.filter((t) => figureOf(t, f) !== null);
  const sum = (f: (x: PastFigures) => number | null) => tasks.reduce((s, t) => s + (figureOf(t, f) ?? 0), 0);
  const total = (f: (x: PastFigures) => number | null) => (known(f).length === tasks.length ? sum(f) : null);
  return {
    costMedianMicroUsd: total((f) => f.costMedianMicroUsd),
    costP90MicroUsd: total((f) => f.costP90MicroUsd),
    durationMedianMs: total((f) => f.durationMedianMs),
    known: {
      costMedianMicroUsd: sum((f) => f.costMedianMicroUsd),
      costP90MicroUsd: sum((f) => f.costP90MicroUsd),
      durationMedianMs: sum((f) => f.durationMedianMs),
    },
    withoutHistory: tasks.filter((t) => t.basis === 'none').length,
    costUnknown: tasks.length - known((f) => f.costMedianMicroUsd).length,
  };
}

/** One task's figure `f`: from its history; a task on an engine that runs no model costs 0 (its duration stays its history's). */
function figureOf(t: TaskForecast, f: (x: PastFigures) => number | null): number | null {
  const v = t.figures ? f(t.figures) : null;
  if (v !== null || !t.free) return v;
  const zero: PastFigures = { tasks: 0, attempts: 0, costMedianMicroUsd: 0, costP90MicroUsd: 0, durationMedianMs: null };
  return f(zero);
}

/** The forecast of one task from the past tasks (see forecast). */
function forecastTask(t: PlanTask, past: PastTasks | null): TaskForecast {
  const none: TaskForecast = { ...t, basis: 'none', figures: null };
  if (!past) return none;
  // A string no row names matches no past task (-2 is no dictionary id).
  const id = (x: string) => past.ids.get(x) ?? -2;
  const type = id(t.taskType ?? '');
  if (t.model === null) {
    // The engine picks its own model: its past tasks on this engine, whatever model answered.
    const engine = id(t.engine);
    const onEngine = figuresOf(past, (u) => past.engine[u] === engine && past.taskType[u] === type);
    if (onEngine) return { ...t, basis: 'engine+task_type', figures: onEngine };
    const any = figuresOf(past, (u) => past.engine[u] === engine);
    return any ? { ...t, basis: 'engine', figures: any } : none;
  }
  const model = id(t.model);
  const exact = figuresOf(past, (u) => past.model[u] === model && past.taskType[u] === type);
  if (exact) return { ...t, basis: 'model+task_type', figures: exact };
  const byModel = figuresOf(past, (u) => past.model[u] === model);
  return byModel ? { ...t, basis: 'model', figures: byModel } : none;
}
