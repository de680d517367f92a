import type { ModelPrice } from './pricing';

/** Output tokens assumed by the catalog estimate, as a share of the context window. */
const WORST_CASE_OUTPUT_SHARE = 0.1;

/** A reservation taken before an attempt and settled after it. */
export interface Reservation {
  /** The model key the attempt ran (engine/model), for the observed maximum. */
  key: string;
  /** Micro-USD held back while the attempt runs. */
  microUsd: number;
}

/**
 * A run's spending cap (manifest `budget_usd`), enforced before each attempt (issue 6, "Cost and budget"): an
 * attempt starts only when what is spent, plus what running attempts hold, plus this attempt's worst-case estimate
 * stays within the cap; otherwise it is not started and its task ends BUDGET_EXCEEDED.
 *
 * The worst-case estimate of an attempt is the larger of
 * - the most any finished attempt of this run on the same engine and model cost, and
 * - one full context window of input plus a tenth of it as output at the catalog price (when the catalog has one).
 * With neither known it is 0: such attempts start while the cap is not yet reached. An attempt whose cost stays
 * unknown is charged its reservation (unknown is never 0). The estimate bounds new attempts, not a running one:
 * a single attempt can still cost more than estimated.
 */
export class Budget {
  private spent = 0;
  private held = 0;
  private readonly observedMax = new Map<string, number>();

  /** @param capMicroUsd the cap, micro-USD; null: no cap (spend is still counted) */
  constructor(readonly capMicroUsd: number | null) {}

  /** Known spend so far, integer micro-USD (settled attempts). */
  get spentMicroUsd(): number {
    return this.spent;
  }

  /** The worst-case estimate of one attempt on `key` (engine/model), micro-USD. */
  estimate(key: string, price: ModelPrice | null): number {
    const catalog = price?.contextLength ? price.contextLength * price.promptMicroUsd + price.contextLength * WORST_CASE_OUTPUT_SHARE * price.completionMicroUsd : 0;
    return Math.ceil(Math.max(this.observedMax.get(key) ?? 0, catalog));
  }

  /**
   * Reserves the estimate for one attempt, or returns null when it would exceed the cap (the attempt must not
   * start). Always succeeds without a cap.
   */
  reserve(key: string, price: ModelPrice | null): Reservation | null {
    const microUsd = this.estimate(key, price);
    if (this.capMicroUsd !== null) {
      const committed = this.spent + this.held;
      if (committed >= this.capMicroUsd || committed + microUsd > this.capMicroUsd) return null;
    }
    this.held += microUsd;
    return { key, microUsd };
  }

  /** Releases a reservation and charges the attempt's cost (its reservation when the cost is unknown). */
  settle(r: Reservation, costMicroUsd: number | null): void {
    this.held -= r.microUsd;
    this.spent += costMicroUsd ?? r.microUsd;
    if (costMicroUsd !== null) this.observedMax.set(r.key, Math.max(this.observedMax.get(r.key) ?? 0, costMicroUsd));
  }

  /** Why an attempt was not started, for the task's reason. */
  refusal(key: string, price: ModelPrice | null): string {
    const usd = (n: number) => `$${(n / 1_000_000).toFixed(2)}`;
    return `budget: ${usd(this.spent)} spent${this.held ? ` and ${usd(this.held)} held by running attempts` : ''}, and this attempt may cost up to ${usd(this.estimate(key, price))}: that would pass budget_usd ${usd(this.capMicroUsd ?? 0)}; the attempt was not started`;
  }
}
