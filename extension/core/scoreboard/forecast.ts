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

function nearestRank(sorted: number[], q: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] as number;
}

/** One past task (a unit of the eval log): its model, engine and task type, and totals of its work attempts. */
interface PastTask {
  model: string;
  engine: string;
  taskType: string;
  attempts: number;
  /** micro-USD, of the attempts of known cost; `costKnown` false when any attempt's cost is unknown. */
  cost: number;
  costKnown: boolean;
  /** ms, likewise. */
  duration: number;
  durationKnown: boolean;
}

/** Per past task (unit), its model and task type strings and totals of its work attempts. */
function pastTasks(c: AttemptColumns): Map<number, PastTask> {
  const units = new Map<number, PastTask>();
  for (let i = 0; i < c.rows; i++) {
    if (c.step[i] !== 0) continue;
    const g = c.groups[c.group[i] ?? -1];
    if (!g || g[0] < 0) continue;
    const unit = c.unit[i] as number;
    let u = units.get(unit);
    if (!u)
      units.set(
        unit,
        (u = {
          model: c.strings[g[0]] ?? '',
          engine: c.strings[c.engine[i] ?? -1] ?? '',
          taskType: c.strings[g[1]] ?? '',
          attempts: 0,
          cost: 0,
          costKnown: true,
          duration: 0,
          durationKnown: true,
        }),
      );
    u.attempts++;
    const cost = c.cost[i] ?? NaN;
    if (Number.isFinite(cost)) u.cost += cost;
    else u.costKnown = false;
    const d = c.duration[i] ?? NaN;
    if (Number.isFinite(d)) u.duration += d;
    else u.durationKnown = false;
  }
  return units;
}

function figuresOf(units: { attempts: number; cost: number; costKnown: boolean; duration: number; durationKnown: boolean }[]): PastFigures | null {
  if (!units.length) return null;
  const attempts = units.map((u) => u.attempts).sort((a, b) => a - b);
  const costs = units
    .filter((u) => u.costKnown)
    .map((u) => u.cost)
    .sort((a, b) => a - b);
  const durations = units
    .filter((u) => u.durationKnown)
    .map((u) => u.duration)
    .sort((a, b) => a - b);
  return {
    tasks: units.length,
    attempts: nearestRank(attempts, 0.5) as number,
    costMedianMicroUsd: nearestRank(costs, 0.5),
    costP90MicroUsd: nearestRank(costs, 0.9),
    durationMedianMs: nearestRank(durations, 0.5),
  };
}

/**
 * Forecasts `tasks` from the eval log's columns: each task from the past tasks of its model and task type, else of its
 * model on any task type (a task whose model the engine picks: of its engine, likewise), else none (flagged). Medians
 * and p90 by nearest rank. A total is the sum of its tasks' figures, or null (unknown) when any of them is unknown
 * (ForecastTotal); a task whose engine runs no model (`free`) costs 0.
 */
export function forecast(tasks: readonly PlanTask[], columns: AttemptColumns | null): Forecast {
  const units = columns ? [...pastTasks(columns).values()] : [];
  const out: TaskForecast[] = tasks.map((t) => forecastTask(t, units));
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
function forecastTask(t: PlanTask, units: PastTask[]): TaskForecast {
  if (t.model === null) {
    // The engine picks its own model: its past tasks on this engine, whatever model answered.
    const onEngine = figuresOf(units.filter((u) => u.engine === t.engine && u.taskType === (t.taskType ?? '')));
    if (onEngine) return { ...t, basis: 'engine+task_type', figures: onEngine };
    const engine = figuresOf(units.filter((u) => u.engine === t.engine));
    return engine ? { ...t, basis: 'engine', figures: engine } : { ...t, basis: 'none', figures: null };
  }
  const exact = figuresOf(units.filter((u) => u.model === t.model && u.taskType === (t.taskType ?? '')));
  if (exact) return { ...t, basis: 'model+task_type', figures: exact };
  const model = figuresOf(units.filter((u) => u.model === t.model));
  return model ? { ...t, basis: 'model', figures: model } : { ...t, basis: 'none', figures: null };
}
