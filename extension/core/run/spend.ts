import type { UsageReport } from '../../../engines/types';
import { refreshInBackground } from '../catalog/refresh';
import { readSnapshotQuietly } from '../catalog/snapshot';
import { Budget, type BudgetWait, type Reservation } from '../cost/budget';
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
   * Reserves an attempt's worst case; a string (the reason) when the attempt must not start; a BudgetWait (with the
   * run note to show once) when its cost is unbounded and an attempt of the same engine and model is running unpriced
   * (extension/core/cost/budget.ts): queue it again when that one settles.
   */
  admit(engine: string, model: string | null, taskType: string | null = null): Reservation | string | (BudgetWait & { note: string | null }) {
    const key = `${engine}/${model ?? ''}`;
    const price = priceOf(this.catalog, model);
    const history = model === null ? null : (this.history.get(`${model}\0${taskType ?? ''}`) ?? null);
    const r = this.budget.reserve(key, price, true, history);
    if (r === null) return this.budget.refusal(key, price, history);
    if (!('waitFor' in r)) return r;
    const first = !this.saidUnpriced.has(key);
    this.saidUnpriced.add(key);
    const note = first
      ? `budget: the cost of an attempt on ${engine}${model ? ` (${model})` : ''} is unknown (no catalog price, none priced yet): its attempts run one at a time until one has finished and priced it`
      : null;
    return { ...r, note };
  }

  /**
   * admit for a step that cannot be queued again (a ranking reader): a Reservation, or a string (the reason) when it
   * must not start; where admit would wait it starts at once (reserving 0).
   */
  admitNow(engine: string, model: string | null): Reservation | string {
    const key = `${engine}/${model ?? ''}`;
    const price = priceOf(this.catalog, model);
    const r = this.budget.reserve(key, price, false);
    return r === null ? this.budget.refusal(key, price) : (r as Reservation);
  }

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

  /** The attempt's cost, integer micro-USD or null: see attemptCostMicroUsd. */
  cost(usage: UsageReport | null, model: string | null): number | null {
    if (!usage) return null;
    return attemptCostMicroUsd(usage.costMicroUsd, usage.tokensIn, usage.tokensOut, priceOf(this.catalog, model ?? usage.reportedModel));
  }

  /** Settles a reservation with the attempt's cost. */
  settle(r: Reservation, costMicroUsd: number | null): void {
    this.budget.settle(r, costMicroUsd);
  }

  /**
   * null while the spend is within the budget (or there is none); once what is spent alone passes it, the reason a
   * running attempt is stopped and its task ends BUDGET_EXCEEDED (resumable with a higher budget).
   */
  overBudget(): string | null {
    if (!this.budget.exceeded) return null;
    const usd = (n: number) => `$${(n / 1_000_000).toFixed(4)}`;
    return `budget: ${usd(this.budget.spentMicroUsd)} spent passed budget_usd ${usd(this.budget.capMicroUsd ?? 0)}; this attempt was stopped (its work is kept; resume with a higher budget_usd)`;
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
