import type { ModelPrice } from './pricing';

/** Output tokens assumed by the catalog estimate, as a share of the context window. */
const WORST_CASE_OUTPUT_SHARE = 0.1;

/** A reservation taken before an attempt and settled after it. */
export interface Reservation {
  /** The model key the attempt ran (engine/model), for the observed maximum. */
  key: string;
  /** Micro-USD held back while the attempt runs. */
  microUsd: number;
  /**
   * True when nothing bounded this attempt's cost (no catalog price, no earlier priced attempt of `key`) under a
   * cap: it runs alone on `key` until it is settled.
   */
  unpriced?: boolean;
}

/** An attempt that must wait before it may start: another attempt of its unpriced `key` runs (see Budget). */
export interface BudgetWait {
  /** The model key (engine/model) whose first priced attempt is awaited. */
  waitFor: string;
}

/**
 * A run's spending cap (manifest `budget_usd`), enforced before each attempt (issue 6, "Cost and budget"): an
 * attempt starts only when what is spent, plus what running attempts hold, plus this attempt's worst-case estimate
 * stays within the cap; otherwise it is not started and its task ends BUDGET_EXCEEDED.
 *
 * The worst-case estimate of an attempt is the larger of
 * - the most any finished attempt of this run on the same engine and model cost, and
 * - one full context window of input plus a tenth of it as output at the catalog price (when the catalog has one),
 * - the p90 cost of past attempts of the same model and task type in the eval log (when it has any).
 * With neither known (an engine the catalog does not price, not yet priced in this run) and a cap set, nothing
 * bounds the attempt: at most one attempt of that key runs at a time until one has finished with a known cost
 * (issue 29: three parallel first attempts under a $0.005 cap each reserved $0 and the run spent 7× its cap). The
 * others wait (reserve answers a BudgetWait), then are admitted against the observed cost. An attempt whose cost
 * stays unknown is charged its reservation (unknown is never 0). The estimate bounds new attempts, not a running
 * one: a single attempt can still cost more than estimated.
 */
export class Budget {
  private spent = 0;
  private held = 0;
  private readonly observedMax = new Map<string, number>();
  /** Keys (engine/model) with an unpriced attempt running: no second one starts until it settles. */
  private readonly unpricedRunning = new Set<string>();

  /** @param capMicroUsd the cap, micro-USD; null: no cap (spend is still counted) */
  constructor(readonly capMicroUsd: number | null) {}

  /** Known spend so far, integer micro-USD (settled attempts). */
  get spentMicroUsd(): number {
    return this.spent;
  }

  /** True when what is spent alone passes the cap (running attempts are then stopped); false without a cap. */
  get exceeded(): boolean {
    return this.capMicroUsd !== null && this.spent > this.capMicroUsd;
  }

  /** The worst-case estimate of one attempt on `key` (engine/model), micro-USD. */
  /** @param historyMicroUsd the p90 cost of past attempts of this model and task type (eval log), null when none */
  estimate(key: string, price: ModelPrice | null, historyMicroUsd: number | null = null): number {
    const catalog = price?.contextLength ? price.contextLength * price.promptMicroUsd + price.contextLength * WORST_CASE_OUTPUT_SHARE * price.completionMicroUsd : 0;
    return Math.ceil(Math.max(this.observedMax.get(key) ?? 0, catalog, historyMicroUsd ?? 0));
  }

  /**
   * Reserves the estimate for one attempt, or returns null when it would exceed the cap (the attempt must not
   * start), or a BudgetWait when nothing bounds its cost and another attempt of `key` is still running unpriced
   * (start it again once that one settles). Always succeeds without a cap.
   * @param mayWait false for a step that cannot be queued again (a ranking reader): it then starts beside the
   *   unpriced attempt, reserving 0
   */
  reserve(key: string, price: ModelPrice | null, mayWait = true, historyMicroUsd: number | null = null): Reservation | BudgetWait | null {
    const microUsd = this.estimate(key, price, historyMicroUsd);
    if (this.capMicroUsd === null) {
      this.held += microUsd;
      return { key, microUsd };
    }
    const committed = this.spent + this.held;
    if (committed >= this.capMicroUsd || committed + microUsd > this.capMicroUsd) return null;
    const unpriced = microUsd === 0 && !this.observedMax.has(key) && historyMicroUsd === null;
    if (unpriced) {
      if (this.unpricedRunning.has(key)) return mayWait ? { waitFor: key } : { key, microUsd };
      this.unpricedRunning.add(key);
    }
    this.held += microUsd;
    return unpriced ? { key, microUsd, unpriced } : { key, microUsd };
  }

  /** Releases a reservation and charges the attempt's cost (its reservation when the cost is unknown). */
  settle(r: Reservation, costMicroUsd: number | null): void {
    if (r.unpriced) this.unpricedRunning.delete(r.key);
    this.held -= r.microUsd;
    this.spent += costMicroUsd ?? r.microUsd;
    if (costMicroUsd !== null) this.observedMax.set(r.key, Math.max(this.observedMax.get(r.key) ?? 0, costMicroUsd));
  }

  /** Why an attempt was not started, for the task's reason. */
  refusal(key: string, price: ModelPrice | null, historyMicroUsd: number | null = null): string {
    const usd = (n: number) => `$${(n / 1_000_000).toFixed(2)}`;
    return `budget: ${usd(this.spent)} spent${this.held ? ` and ${usd(this.held)} held by running attempts` : ''}, and this attempt may cost up to ${usd(this.estimate(key, price, historyMicroUsd))}: that would pass budget_usd ${usd(this.capMicroUsd ?? 0)}; the attempt was not started`;
  }
}
