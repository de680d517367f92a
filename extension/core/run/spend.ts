import type { EngineSpec, UsageReport } from '../../../engines/types';
import type { TaskSpec } from '../manifest/types';
import { spendLine, type RunSpendState } from '../../../schemas/spend';
import { refreshInBackground } from '../catalog/refresh';
import { readSnapshotQuietly } from '../catalog/snapshot';
import { Budget, type AttemptBounds, type BudgetWait, type Reservation } from '../cost/budget';
import { attemptCostMicroUsd, priceOf } from '../cost/pricing';
import { evalLogPath } from '../config/home';
import { currentColumns } from '../scoreboard/load';
import { PostgresMirror } from '../store/postgres';

/** How a run ended money-wise, for its summary. */
export interface RunSpendReport {
  /** Known spend, integer micro-USD (attempts of unknown cost count their reservation). */
  spentMicroUsd: number;
  /** The manifest's budget_usd in micro-USD, null without one. */
  budgetMicroUsd: number | null;
  /** null when every row reached Postgres (or none is configured), else why rows wait in the outbox. */
  postgresPending: string | null;
}

/** The shares of the budget (percent of it spent) at which a run note says so, lowest first. */
const BUDGET_SHARES = [50, 80, 100] as const;

/** ms a run waits at its end for rows to reach Postgres; the rest waits in the outbox for the next sync. */
const POSTGRES_FLUSH_MS = 10_000;

/**
 * What a run does about money and shared records, kept out of the runner's lifecycle code: the budget
 * (extension/core/cost/budget.ts), each attempt's cost (CLI report, else tokens × catalog price), the catalog's
 * background refresh (at most once in 24 h, stopped when the run ends), and the Postgres mirror of eval rows.
 * None of these ever fails a run.
 */
export class RunSpend {
  private readonly budget: Budget;
  private readonly catalog;
  private readonly mirror: PostgresMirror | null;
  private readonly refresh = new AbortController();
  /** p90 cost (micro-USD) of past work attempts per `model\0task_type`, from the eval log (loadHistory). */
  private history = new Map<string, number>();
  /** Keys whose one-at-a-time note was already emitted. */
  private readonly saidUnpriced = new Set<string>();

  /**
   * @param budgetUsd the manifest's budget_usd, null for none
   * @param postgresUrl where rows are mirrored (VERDICT_PG_URL / config postgres_url), null for nowhere
   */
  constructor(home: string, budgetUsd: number | null, postgresUrl: string | null) {
    this.budget = new Budget(budgetUsd === null ? null : Math.round(budgetUsd * 1_000_000));
    this.catalog = readSnapshotQuietly(home)?.data ?? [];
    this.mirror = postgresUrl ? new PostgresMirror(home, postgresUrl) : null;
    void refreshInBackground(home, this.refresh.signal);
  }

  /**
   * Reserves an attempt's worst case (against the run's budget and the task's own budget_usd); a string (the reason)
   * when the attempt must not start; a BudgetWait (with the run note to show once) when its cost is unbounded and an
   * attempt of the same engine and model is running unpriced (extension/core/cost/budget.ts): queue it again when that
   * one settles. While admitted, the task's worker reports its spend through progress().
   */
  admit(engine: Pick<EngineSpec, 'name' | 'maxAttemptMicroUsd'>, model: string | null, task: Pick<TaskSpec, 'key' | 'taskType' | 'budgetUsd' | 'maxAttemptUsd'>): Reservation | string | (BudgetWait & { note: string | null }) {
    const key = `${engine.name}/${model ?? ''}`;
    const price = priceOf(this.catalog, model);
    const bounds = this.bounds(engine, model, task);
    const r = this.budget.reserve(key, price, true, bounds);
    if (r === null) return this.budget.refusal(key, price, bounds);
    if (!('waitFor' in r)) {
      this.workers.set(task.key, r);
      this.ended.delete(task.key);
      this.changed();
      return r;
    }
    const first = !this.saidUnpriced.has(key);
    this.saidUnpriced.add(key);
    const note = first
      ? `budget: the cost of an attempt on ${engine.name}${model ? ` (${model})` : ''} is unknown (no catalog price, none priced yet, no max_attempt_usd): its attempts run one at a time until one has finished and priced it`
      : null;
    return { ...r, note };
  }

  /**
   * admit for a step that cannot be queued again (a ranking reader of the group `task`; a reviewer or critic of the
   * task's running attempt, `reader` true): a Reservation, or a string (the reason) when it must not start; where admit
   * would wait it starts at once (reserving 0). A reader's estimate is the p90 of the eval log for its model and the task's
   * type, else its engine's max_attempt_usd (else the task's), with the catalog's and this run's observed maximum;
   * settled with its cost, or when that stays unknown, charged its reservation (Budget.settle) — a reader of unknown
   * cost never counts $0 when anything bounds it.
   */
  admitNow(engine: Pick<EngineSpec, 'name' | 'maxAttemptMicroUsd'>, model: string | null, task: Pick<TaskSpec, 'key' | 'taskType' | 'budgetUsd' | 'maxAttemptUsd'>, reader = false): Reservation | string {
    const key = `${engine.name}/${model ?? ''}`;
    const price = priceOf(this.catalog, model);
    const own = this.bounds(engine, model, task);
    const bounds = reader ? { ...own, maxAttemptMicroUsd: engine.maxAttemptMicroUsd ?? own.maxAttemptMicroUsd } : { ...own, historyMicroUsd: null };
    const r = this.budget.reserve(key, price, false, bounds);
    if (r === null) return this.budget.refusal(key, price, bounds);
    this.changed();
    return r as Reservation;
  }

  /** Spent (settled and reported so far), reserved (held beyond that by running steps) and the budget, micro-USD. */
  snapshot(): RunSpendState {
    return { spentMicroUsd: this.budget.spentLiveMicroUsd, reservedMicroUsd: this.budget.reservedMicroUsd, budgetMicroUsd: this.budget.capMicroUsd };
  }

  /**
   * Told the new snapshot whenever the spend or what is reserved changes (a step admitted, usage reported, a step
   * settled), and a note the first time what is spent reaches 50 %, 80 % and 100 % of the budget (null otherwise).
   */
  onChange: ((spend: RunSpendState, note: string | null) => void) | null = null;
  /** The budget shares (percent) whose note was already given. */
  private readonly saidShare = new Set<number>();

  private changed(): void {
    if (!this.onChange) return;
    const s = this.snapshot();
    let note: string | null = null;
    const cap = s.budgetMicroUsd;
    if (cap !== null && cap > 0) {
      // One note for the highest share newly reached (a settle can jump from 40 % past 100 %).
      const reached = BUDGET_SHARES.filter((p) => s.spentMicroUsd * 100 >= p * cap && !this.saidShare.has(p));
      for (const p of reached) this.saidShare.add(p);
      const top = reached.at(-1);
      if (top !== undefined) note = `budget: ${top} % used — ${spendLine(s) ?? ''}`;
    }
    this.onChange(s, note);
  }

  private bounds(engine: Pick<EngineSpec, 'maxAttemptMicroUsd'>, model: string | null, task: Pick<TaskSpec, 'key' | 'taskType' | 'budgetUsd' | 'maxAttemptUsd'>): AttemptBounds {
    const maxAttempt = task.maxAttemptUsd !== undefined ? Math.round(task.maxAttemptUsd * 1_000_000) : (engine.maxAttemptMicroUsd ?? null);
    return {
      historyMicroUsd: model === null ? null : (this.history.get(`${model}\0${task.taskType ?? ''}`) ?? null),
      maxAttemptMicroUsd: maxAttempt,
      task: { key: task.key, capMicroUsd: task.budgetUsd === undefined ? null : Math.round(task.budgetUsd * 1_000_000) },
    };
  }

  /**
   * The running worker of `taskKey` reported usage (its engine's streamUsage, run/usage-meter.ts): its spend so far
   * counts against the budgets; when the run's or the task's spend passes its cap, onOver is told (once per cap and
   * task) so the attempts under it are stopped. A usage whose cost cannot be known (no CLI cost, no catalog price)
   * changes nothing.
   */
  progress(taskKey: string, usage: UsageReport, model: string | null, engine?: Pick<EngineSpec, 'cachedInInput'>): void {
    const r = this.workers.get(taskKey);
    const cost = this.cost(usage, model, engine);
    if (!r || cost === null) return;
    this.budget.progress(r, cost);
    this.changed();
    this.checkCaps(taskKey);
  }

  /** Tells onOver about a cap passed (the run's, else the task's); each at most once. */
  private checkCaps(taskKey: string): void {
    if (!this.onOver) return;
    if (this.budget.exceeded && !this.saidOver.has('')) {
      this.saidOver.add('');
      this.onOver(null, this.overBudget() as string);
    } else if (this.budget.taskExceeded(taskKey) && !this.saidOver.has(taskKey)) {
      this.saidOver.add(taskKey);
      this.onOver(taskKey, this.taskOverBudget(taskKey) as string);
    }
  }

  /**
   * Called when the spend reported while attempts run passes a cap: `task` null for the run's budget_usd (stop every
   * running attempt), else the task whose own budget_usd was passed (stop its attempt); `reason` for the task.
   */
  onOver: ((task: string | null, reason: string) => void) | null = null;
  /** Caps already reported to onOver ('' for the run's). */
  private readonly saidOver = new Set<string>();
  /** Tasks whose worker process has ended in their running attempt (workerEnded): they spend nothing more. */
  private readonly ended = new Set<string>();

  /**
   * The task's worker has exited (its whole process group is gone): what is left of its attempt (the check, the seal)
   * spends nothing on its engine. Not an engine's final event, which a worker can forge into its log and go on.
   */
  workerEnded(taskKey: string): void {
    if (this.workers.has(taskKey)) this.ended.add(taskKey);
  }

  /**
   * True when the task's worker has exited in its running attempt: stopping the attempt for the budget would save
   * nothing and throw away finished work (its reviewers and critics, which do spend, count when they end).
   */
  spendingOver(taskKey: string): boolean {
    return this.ended.has(taskKey);
  }

  /** The open reservation of each task's running worker, by task key. */
  private readonly workers = new Map<string, Reservation>();

  /**
   * Reads the p90 cost of past work attempts per (model, task_type) from the eval log through the scoreboard's
   * columns (extension/core/scoreboard/load.ts currentColumns; p90 by nearest rank over the attempts of known cost).
   * Only with a budget; a log that cannot be read leaves the history empty (never fails a run).
   */
  async loadHistory(home: string): Promise<void> {
    if (this.budget.capMicroUsd === null) return;
    try {
      const c = await currentColumns(home, evalLogPath(home));
      const costs = new Map<string, number[]>();
      for (let i = 0; i < c.rows; i++) {
        const g = c.groups[c.group[i] ?? -1];
        const cost = c.cost[i] ?? NaN;
        if (c.step[i] !== 0 || !g || g[0] < 0 || !Number.isFinite(cost)) continue;
        const k = `${c.strings[g[0]] ?? ''}\0${c.strings[g[1]] ?? ''}`;
        costs.set(k, [...(costs.get(k) ?? []), cost]);
      }
      for (const [k, v] of costs) {
        v.sort((a, b) => a - b);
        this.history.set(k, v[Math.max(0, Math.ceil(0.9 * v.length) - 1)] ?? 0);
      }
    } catch {
      // no log yet, or one the scoreboard cannot read: no history
    }
  }

  /**
   * The attempt's cost, integer micro-USD or null: see attemptCostMicroUsd. `engine`: the engine that reported the usage
   * (its cachedInInput says whether cached input is priced apart); absent: it is not.
   */
  cost(usage: UsageReport | null, model: string | null, engine?: Pick<EngineSpec, 'cachedInInput'>): number | null {
    if (!usage) return null;
    return attemptCostMicroUsd(usage.costMicroUsd, usage.tokensIn, usage.tokensOut, priceOf(this.catalog, model ?? usage.reportedModel), engine?.cachedInInput ? usage.tokensCached : null);
  }

  /** Settles a reservation with the attempt's cost. */
  settle(r: Reservation, costMicroUsd: number | null): void {
    if (r.task !== null && this.workers.get(r.task) === r) this.workers.delete(r.task);
    this.budget.settle(r, costMicroUsd);
    this.changed();
  }

  /**
   * null while the spend is within the budget (or there is none); once what is spent alone passes it, the reason a
   * running attempt is stopped and its task ends BUDGET_EXCEEDED (resumable with a higher budget).
   */
  overBudget(): string | null {
    if (!this.budget.exceeded) return null;
    const usd = (n: number) => `$${(n / 1_000_000).toFixed(4)}`;
    return `budget: ${usd(this.budget.spentLiveMicroUsd)} spent passed budget_usd ${usd(this.budget.capMicroUsd ?? 0)}; this attempt was stopped (its work is kept; resume with a higher budget_usd)`;
  }

  /** Like overBudget, for the task's own budget_usd: null while within it (or it has none). */
  taskOverBudget(taskKey: string): string | null {
    if (!this.budget.taskExceeded(taskKey)) return null;
    const usd = (n: number) => `$${(n / 1_000_000).toFixed(4)}`;
    return `budget: task ${taskKey}'s ${usd(this.budget.taskSpentLive(taskKey))} spent passed its budget_usd ${usd(this.budget.taskCap(taskKey) ?? 0)}; this attempt was stopped (its work is kept; resume with a higher budget_usd)`;
  }

  /** An eval row was appended: send it (and any waiting) to Postgres in the background. */
  rowWritten(): void {
    this.mirror?.kick();
  }

  /** Stops the catalog refresh, gives Postgres a last chance, and reports the spend. */
  async finish(): Promise<RunSpendReport> {
    this.refresh.abort();
    const postgresPending = this.mirror ? await this.mirror.flush(POSTGRES_FLUSH_MS) : null;
    return { spentMicroUsd: this.budget.spentMicroUsd, budgetMicroUsd: this.budget.capMicroUsd, postgresPending };
  }
}
