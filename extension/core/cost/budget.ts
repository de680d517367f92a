import type { ModelPrice } from './pricing';

/** Output tokens assumed by the catalog estimate, as a share of the context window. */
const WORST_CASE_OUTPUT_SHARE = 0.1;

/**
 * What a Budget counts: `usd` (amounts in micro-USD: `budget_usd`) or `tokens` (amounts in tokens, input plus output:
 * `budget_tokens`, which also counts subscription engines, whose tokens cost no money per token).
 */
export type BudgetUnit = 'usd' | 'tokens';

/** A reservation taken before an attempt and settled after it. Amounts are in its Budget's unit (micro-USD or tokens). */
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
  /** The task whose envelope (its own budget_usd) the attempt counts against; null for none. */
  task: string | null;
  /** What the running attempt has reported spending so far, micro-USD (Budget.progress); only ever grows. */
  liveMicroUsd: number;
}

/** An attempt that must wait before it may start: another attempt of its unpriced `key` runs (see Budget). */
export interface BudgetWait {
  /** The model key (engine/model) whose first priced attempt is awaited. */
  waitFor: string;
}

/** What bounds one attempt before it starts, besides the catalog and this run's own observations. */
export interface AttemptBounds {
  /** The p90 cost of past attempts of this model and task type (eval log), micro-USD; null when none. */
  historyMicroUsd?: number | null;
  /** The task's or engine's `max_attempt_usd`, micro-USD: the estimate when no p90 is known; null when neither sets it. */
  maxAttemptMicroUsd?: number | null;
  /** The task whose envelope the attempt counts against, and that envelope (its budget_usd) in micro-USD. */
  task?: { key: string; capMicroUsd: number | null } | null;
}

/**
 * A run's spending cap (manifest `budget_usd`) and its tasks' envelopes (a task's own `budget_usd`), enforced before
 * each attempt and while it runs: an attempt starts only when what is spent, plus what running attempts hold (the
 * larger of their reservation and what they reported so far), plus this attempt's worst-case estimate stays within the
 * run's cap and its task's envelope; otherwise it is not started and its task ends BUDGET_EXCEEDED. While attempts
 * run, their reported spend (progress) counts: once what is spent and reported passes a cap, the attempts under it are
 * stopped (exceeded, taskExceeded).
 *
 * The worst-case estimate of an attempt is the largest of
 * - the most any finished attempt of this run on the same engine and model cost,
 * - one full context window of input plus a tenth of it as output at the catalog price (when the catalog has one),
 * - the p90 cost of past attempts of the same model and task type in the eval log, or when it has none, the task's or
 *   engine's `max_attempt_usd`.
 * With none known (an engine the catalog does not price, not yet priced in this run) and a cap set, nothing
 * bounds the attempt: at most one attempt of that key runs at a time until one has finished with a known cost
 * (three parallel first attempts under a $0.005 cap each reserved $0 and a run spent 7× its cap). The
 * others wait (reserve answers a BudgetWait), then are admitted against the observed cost. An attempt whose cost
 * stays unknown is charged the larger of its reservation and what it reported while running. When that is 0 on an
 * engine that spends (any but the script engine, which calls no model: nothing bounded it and it reported nothing
 * priced — an engine that reports tokens but no cost for a model the catalog does not list, one killed or timed out
 * before its final event, one whose final event a worker made unreadable), its spend cannot be counted at all: no
 * further unbounded attempt of its key starts under a cap (reserve refuses it, saying what would bound it), so at most
 * one attempt per key runs uncounted (four such attempts under a $0.005 cap all ran and the run said it had spent $0).
 * The keys are kept in the run's spend state, so a resumed run refuses them too (uncountedKeys, seedUncounted).
 * What is not capped: the tokens an engine spends between two of its usage reports (and all of an attempt on an
 * engine that reports usage only at its end) — the overshoot is at most what was in flight when the last report came.
 */
export class Budget {
  private spent = 0;
  private readonly open = new Set<Reservation>();
  private readonly observedMax = new Map<string, number>();
  /** Keys (engine/model) with an unpriced attempt running: no second one starts until it settles. */
  private readonly unpricedRunning = new Set<string>();
  /**
   * Keys (engine/model) of an engine that spends (not the script engine) an unpriced attempt of which ended with its cost
   * (tokens, in a tokens budget) still unknown and nothing reported: charged 0, since nothing bounded it. Under a cap no
   * further attempt nothing bounds starts on them (reserve refuses it): their spend cannot be counted.
   */
  private readonly uncounted = new Set<string>();
  /** Settled spend per task key, micro-USD. */
  private readonly taskSpent = new Map<string, number>();
  /** Envelopes per task key, micro-USD (as last given to reserve). */
  private readonly taskCaps = new Map<string, number>();

  /**
   * @param capMicroUsd the cap in the budget's unit (micro-USD, or tokens for a `tokens` budget); null: no cap (spend is
   *   still counted). The fields and methods named `…MicroUsd` count tokens in a `tokens` budget.
   * @param unit what the budget counts; a `tokens` budget takes no estimate from the catalog (its prices say nothing of
   *   how many tokens an attempt uses)
   */
  constructor(
    readonly capMicroUsd: number | null,
    readonly unit: BudgetUnit = 'usd',
  ) {}

  /** Known spend so far, integer micro-USD (settled attempts). */
  get spentMicroUsd(): number {
    return this.spent;
  }

  /** Settled spend plus what running attempts reported so far, micro-USD. */
  get spentLiveMicroUsd(): number {
    let live = 0;
    for (const r of this.open) live += r.liveMicroUsd;
    return this.spent + live;
  }

  /** What running attempts hold beyond what they reported so far (each its reservation less its reported spend), micro-USD. */
  get reservedMicroUsd(): number {
    let held = 0;
    for (const r of this.open) held += Math.max(0, r.microUsd - r.liveMicroUsd);
    return held;
  }

  /** True when what is spent (settled, plus reported by running attempts) passes the cap; false without a cap. */
  get exceeded(): boolean {
    return this.capMicroUsd !== null && this.spentLiveMicroUsd > this.capMicroUsd;
  }

  /** The task's settled spend plus what its running attempts reported, micro-USD. */
  taskSpentLive(task: string): number {
    let live = 0;
    for (const r of this.open) if (r.task === task) live += r.liveMicroUsd;
    return (this.taskSpent.get(task) ?? 0) + live;
  }

  /** The envelopes (task keys) with settled spend or a running attempt. */
  taskKeys(): string[] {
    const keys = new Set(this.taskSpent.keys());
    for (const r of this.open) if (r.task !== null) keys.add(r.task);
    return [...keys];
  }

  /** The task's settled spend (its attempts and readers that ended), in the budget's unit. */
  taskSettled(task: string): number {
    return this.taskSpent.get(task) ?? 0;
  }

  /** The task's envelope in micro-USD, null when it has none. */
  taskCap(task: string): number | null {
    return this.taskCaps.get(task) ?? null;
  }

  /** True when the task's spend (settled and reported so far) passes its envelope; false without one. */
  taskExceeded(task: string): boolean {
    const cap = this.taskCaps.get(task);
    return cap !== undefined && this.taskSpentLive(task) > cap;
  }

  /** What is spent plus what running attempts hold (each the larger of its reservation and its reported spend). */
  private committed(task: string | null): number {
    let held = 0;
    for (const r of this.open) if (task === null || r.task === task) held += Math.max(r.microUsd, r.liveMicroUsd);
    return (task === null ? this.spent : (this.taskSpent.get(task) ?? 0)) + held;
  }

  /** The worst-case estimate of one attempt on `key` (engine/model), micro-USD. */
  estimate(key: string, price: ModelPrice | null, bounds: AttemptBounds = {}): number {
    const catalog =
      this.unit === 'usd' && price?.contextLength
        ? price.contextLength * price.promptMicroUsd + price.contextLength * WORST_CASE_OUTPUT_SHARE * price.completionMicroUsd
        : 0;
    return Math.ceil(Math.max(this.observedMax.get(key) ?? 0, catalog, bounds.historyMicroUsd ?? bounds.maxAttemptMicroUsd ?? 0));
  }

  /**
   * Reserves the estimate for one attempt, or returns null when it would pass the run's cap or its task's envelope
   * (the attempt must not start; refusal says why), or a BudgetWait when nothing bounds its cost and another attempt of
   * `key` is still running unpriced (start it again once that one settles). Always succeeds without a cap.
   * @param mayWait false for a step that cannot be queued again (a ranking reader): it then starts beside the
   *   unpriced attempt, reserving 0
   */
  reserve(key: string, price: ModelPrice | null, mayWait = true, bounds: AttemptBounds = {}): Reservation | BudgetWait | null {
    const microUsd = this.estimate(key, price, bounds);
    const task = bounds.task?.key ?? null;
    if (bounds.task && bounds.task.capMicroUsd !== null) this.taskCaps.set(bounds.task.key, bounds.task.capMicroUsd);
    const taskCap = task === null ? null : this.taskCap(task);
    if (this.capMicroUsd === null && taskCap === null) return this.hold({ key, microUsd, task, liveMicroUsd: 0 });
    if (this.capMicroUsd !== null && this.passes(this.committed(null), microUsd, this.capMicroUsd)) return null;
    if (task !== null && taskCap !== null && this.passes(this.committed(task), microUsd, taskCap)) return null;
    const unpriced = this.unbounded(key, microUsd, bounds);
    if (unpriced && this.uncounted.has(key)) return null;
    if (unpriced) {
      if (this.unpricedRunning.has(key)) return mayWait ? { waitFor: key } : this.hold({ key, microUsd, task, liveMicroUsd: 0 });
      this.unpricedRunning.add(key);
    }
    return this.hold(unpriced ? { key, microUsd, unpriced, task, liveMicroUsd: 0 } : { key, microUsd, task, liveMicroUsd: 0 });
  }

  /**
   * Whether reserve() would refuse an attempt on `key` now (its estimate would pass the run's cap or the task's
   * envelope), without reserving anything: routing skips such a candidate and picks the next.
   */
  wouldRefuse(key: string, price: ModelPrice | null, bounds: AttemptBounds = {}): boolean {
    const microUsd = this.estimate(key, price, bounds);
    const task = bounds.task?.key ?? null;
    // As reserve() does: the task's envelope is known from now on (refusal() names it).
    if (bounds.task && bounds.task.capMicroUsd !== null) this.taskCaps.set(bounds.task.key, bounds.task.capMicroUsd);
    const taskCap = task === null ? null : this.taskCap(task);
    if (this.capMicroUsd !== null && this.passes(this.committed(null), microUsd, this.capMicroUsd)) return true;
    if (task !== null && taskCap !== null && this.passes(this.committed(task), microUsd, taskCap)) return true;
    return (this.capMicroUsd !== null || taskCap !== null) && this.uncounted.has(key) && this.unbounded(key, microUsd, bounds);
  }

  /** True when nothing bounds an attempt on `key` of this estimate: no catalog price, none observed, no p90, no max_attempt_usd. */
  private unbounded(key: string, microUsd: number, bounds: AttemptBounds): boolean {
    return microUsd === 0 && !this.observedMax.has(key) && (bounds.historyMicroUsd ?? null) === null && (bounds.maxAttemptMicroUsd ?? null) === null;
  }

  private passes(committed: number, microUsd: number, cap: number): boolean {
    return committed >= cap || committed + microUsd > cap;
  }

  private hold(r: Reservation): Reservation {
    this.open.add(r);
    return r;
  }

  /** Drops a reservation without charging anything (the attempt did not start: another budget refused it). */
  release(r: Reservation): void {
    if (!this.open.delete(r)) return;
    if (r.unpriced) this.unpricedRunning.delete(r.key);
  }

  /**
   * Records what a running attempt has reported spending so far (micro-USD, from its engine's usage events): the
   * larger of this and what it reported before counts. Ignored once the reservation is settled.
   */
  progress(r: Reservation, microUsd: number): void {
    if (this.open.has(r) && microUsd > r.liveMicroUsd) r.liveMicroUsd = microUsd;
  }

  /**
   * The attempt's engine has stopped spending (its worker process ended) and `costMicroUsd` is what it spent, or null
   * when that stays unknown: it counts as reported (progress), prices its key (engine/model) for the attempts reserved
   * after it, and an unpriced attempt no longer holds its key, so the next attempt or reader of that engine may start
   * while this one's check and reviewers go on (its reviewer on the same engine would otherwise wait for it forever).
   * The reservation stays open until settle.
   * @param spends false for an engine that calls no model (the script engine); true: with its cost unknown and nothing
   *   bounding it, its key's further unbounded attempts are refused under a cap (uncounted)
   */
  priced(r: Reservation, costMicroUsd: number | null, spends = false): void {
    if (!this.open.has(r)) return;
    if (r.unpriced) {
      this.unpricedRunning.delete(r.key);
      r.unpriced = false;
      this.noteUncounted(r, costMicroUsd, spends);
    }
    if (costMicroUsd === null) return;
    this.progress(r, costMicroUsd);
    // r.liveMicroUsd: never below what it reported while running (see settle).
    this.observedMax.set(r.key, Math.max(this.observedMax.get(r.key) ?? 0, r.liveMicroUsd));
  }

  /**
   * Releases a reservation and charges the attempt's cost: the larger of its final cost and what it reported while
   * running when the final cost is known, else the larger of its reservation and what it reported. A final figure
   * below the reported one never lowers what counts: both are read from the engine's output, into which the worker
   * can write (a forged final event with small totals after large streamed ones, the engine then killed so its own
   * final event never comes), so a spend once counted stays counted and the cap stays a cap.
   * @param spends as for priced
   */
  settle(r: Reservation, costMicroUsd: number | null, spends = false): void {
    if (!this.open.delete(r)) return;
    if (r.unpriced) {
      this.unpricedRunning.delete(r.key);
      this.noteUncounted(r, costMicroUsd, spends);
    }
    const charged = costMicroUsd === null ? Math.max(r.microUsd, r.liveMicroUsd) : Math.max(costMicroUsd, r.liveMicroUsd);
    this.spent += charged;
    if (r.task !== null) this.taskSpent.set(r.task, (this.taskSpent.get(r.task) ?? 0) + charged);
    if (costMicroUsd !== null) this.observedMax.set(r.key, Math.max(this.observedMax.get(r.key) ?? 0, charged));
  }

  /** An amount in the budget's unit as the reasons show it: `$0.0050` or `12,000 tokens`. */
  format(n: number): string {
    if (this.unit === 'tokens') return `${Math.round(n).toLocaleString('en-US')} tokens`;
    return `$${(n / 1_000_000).toFixed(n !== 0 && n < 10_000 ? 4 : 2)}`;
  }

  /** Why an attempt was not started, for the task's reason (the run's cap when it is the one passed, else the task's). */
  refusal(key: string, price: ModelPrice | null, bounds: AttemptBounds = {}): string {
    const fmt = (n: number) => this.format(n);
    const field = this.unit === 'tokens' ? 'budget_tokens' : 'budget_usd';
    const estimate = this.estimate(key, price, bounds);
    const task = bounds.task?.key ?? null;
    const taskCap = task === null ? null : this.taskCap(task);
    if (this.uncounted.has(key) && this.unbounded(key, estimate, bounds)) return this.uncountedRefusal(key);
    const runPassed = this.capMicroUsd !== null && this.passes(this.committed(null), estimate, this.capMicroUsd);
    if (!runPassed && task !== null && taskCap !== null) {
      const spent = this.taskSpent.get(task) ?? 0;
      const held = this.committed(task) - spent;
      return `budget: task ${task} has ${fmt(spent)} spent${held ? ` and ${fmt(held)} held by its running attempts` : ''}, and this attempt may cost up to ${fmt(estimate)}: that would pass the task's ${field} ${fmt(taskCap)}; the attempt was not started`;
    }
    const held = this.committed(null) - this.spent;
    return `budget: ${fmt(this.spent)} spent${held ? ` and ${fmt(held)} held by running attempts` : ''}, and this attempt may cost up to ${fmt(estimate)}: that would pass ${field} ${fmt(this.capMicroUsd ?? 0)}; the attempt was not started`;
  }

  /** Marks `r`'s key uncounted when the unpriced attempt of an engine that spends ended charged 0. */
  private noteUncounted(r: Reservation, costMicroUsd: number | null, spends: boolean): void {
    if (spends && costMicroUsd === null && r.liveMicroUsd === 0) this.uncounted.add(r.key);
  }

  /** The keys (engine/model) whose spend could not be counted (see uncounted), for the run's spend state. */
  uncountedKeys(): string[] {
    return [...this.uncounted];
  }

  /** Keys a run of this budget found uncounted before (a resumed run): refused as if found by this one. */
  seedUncounted(keys: readonly string[]): void {
    for (const k of keys) this.uncounted.add(k);
  }

  /** Why an attempt on a key of `uncounted` was not started, and what would let it run. */
  private uncountedRefusal(key: string): string {
    const slash = key.indexOf('/');
    const model = key.slice(slash + 1);
    const on = model ? `${key.slice(0, slash)} (${model})` : key.slice(0, slash);
    if (this.unit === 'tokens')
      return `budget: the tokens of ${on} stay unknown: an attempt on it ended without reporting them, so budget_tokens cannot count its attempts; the attempt was not started. Give the engine or the task a max_attempt_tokens (each attempt then counts that much), then verdict resume RUN`;
    return `budget: the cost of ${on} stays unknown: an attempt on it ended with no cost reported and no price to count its tokens by (no catalog price for its model, no max_attempt_usd, no past attempts in the eval log), so budget_usd cannot count its attempts; the attempt was not started. Give the engine or the task a max_attempt_usd (each attempt then counts that much), name a model the catalog prices, or cap the run with budget_tokens; then verdict resume RUN`;
  }

  /**
   * Counts what a run of this budget spent before (a resumed run: what its earlier orchestrators spent, per task), so
   * the resumed run does not start at 0. Only before any reservation.
   * @param perTask spend per task key in the budget's unit; `total` may be more than their sum (steps of no task)
   */
  seed(total: number, perTask: ReadonlyMap<string, number>): void {
    this.spent += Math.max(0, total);
    for (const [k, v] of perTask) this.taskSpent.set(k, (this.taskSpent.get(k) ?? 0) + Math.max(0, v));
  }
}
