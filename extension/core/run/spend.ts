import type { EngineSpec, UsageReport } from '../../../engines/types';
import type { Manifest, TaskSpec } from '../manifest/types';
import type { RunState } from '../../../schemas/run-state';
import type { StepName } from '../../../schemas/status';
import { spendLine, type RunSpendState } from '../../../schemas/spend';
import { refreshInBackground } from '../catalog/refresh';
import { readSnapshotQuietly } from '../catalog/snapshot';
import { Budget, type AttemptBounds, type BudgetWait, type Reservation } from '../cost/budget';
import { attemptCostMicroUsd, priceOf, type ModelPrice } from '../cost/pricing';
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

/**
 * What one admitted step (an attempt's worker, a reviewer, a critic, a ranking reviewer) holds until it is settled:
 * its reservation against budget_usd (null for an engine of a subscription login, which spends no money per token)
 * and against budget_tokens.
 */
export interface SpendHold {
  usd: Reservation | null;
  tokens: Reservation;
  /** The task the step runs for (its worker, or the task its reader reads for). */
  task: string;
  /**
   * The key of the envelope it counts against (the task's own budget_usd / budget_tokens): the task's key, or for a
   * best-of-N candidate its group's, so that one envelope covers every candidate and the group's readers.
   */
  envelope: string;
  /**
   * False for the built-in script engine, which runs a bash script and calls no model; true for every other engine: an
   * attempt of it whose cost (or tokens) stays unknown with nothing bounding it is uncounted spend (Budget.priced).
   */
  spends: boolean;
}

/**
 * The least share of the tokens a step streamed that its final report must count for its final cost to be believed by
 * the budget (RunSpend.believed).
 */
const BELIEVED_SHARE = 0.9;

/** The envelope key of a task: a best-of-N candidate counts against its group's budget, any other task its own. */
export function envelopeOf(task: SpendTask): string {
  return task.candidate !== undefined && task.group !== undefined ? task.group : task.key;
}

/** False for the built-in script engine (a bash script, no model: it spends nothing); see SpendHold.spends. */
function spendsOf(engine: Pick<EngineSpec, 'name'> & Partial<Pick<EngineSpec, 'harness'>>): boolean {
  return engine.harness !== 'script';
}

/** What a run spent before this orchestrator took it over (a resumed run), per budget and per task; see RunSpend.seed. */
export interface PriorSpend {
  /** Micro-USD spent in all, and per task key. */
  usd: { total: number; perTask: ReadonlyMap<string, number> };
  /** Tokens used in all, and per task key. */
  tokens: { total: number; perTask: ReadonlyMap<string, number> };
  /** The engine/model keys whose spend (USD) or tokens could not be counted (Budget.uncountedKeys): refused again. */
  uncounted?: { usd: readonly string[]; tokens: readonly string[] };
}

/** The task fields the budgets read: its key and type, its envelopes and its per-attempt reserves. */
export type SpendTask = Pick<TaskSpec, 'key' | 'taskType' | 'budgetUsd' | 'maxAttemptUsd' | 'budgetTokens' | 'maxAttemptTokens'> &
  Partial<Pick<TaskSpec, 'group' | 'candidate'>>;

/**
 * Which reader a step runs, said by whoever runs it: its step, for the eval log's p90 of that step (review rows are
 * their own kind; every other reader step's — a workflow's — are one kind), and how a note names one (`a reviewer`).
 * The workflows' readers are declared in their folders (run/workflows/<name>/), so this file names none of them.
 */
export interface ReaderStep {
  step: StepName;
  /** How a note names one: `a reviewer`. */
  who: string;
}

/** The reviewer of step `review` (run/steps/review.ts), a default step's reader. */
export const REVIEWER: ReaderStep = { step: 'review', who: 'a reviewer' };

/** The shares of the budget (percent of it spent) at which a run note says so, lowest first. */
const BUDGET_SHARES = [50, 80, 100] as const;

/** ms a run waits at its end for rows to reach Postgres; the rest waits in the outbox for the next sync. */
const POSTGRES_FLUSH_MS = 10_000;

/** The history's kind of a row by the scoreboard's step column (0 work, 1 review, 2 select, 3 another reader step). */
const HISTORY_KIND = ['work', 'review', null, 'other'] as const;

/** The engines of the logins (manifest's and config's) whose `billing` is `subscription`. */
export function subscriptionEngines(...logins: (Record<string, { engines: string[]; billing?: 'subscription' | 'metered' }> | undefined)[]): Set<string> {
  const out = new Set<string>();
  for (const group of logins) for (const l of Object.values(group ?? {})) if (l.billing === 'subscription') for (const e of l.engines) out.add(e);
  return out;
}

/**
 * The budgets a run goes on under: a new run's are its manifest's; a continued one's are what its resume gave
 * (--budget-usd, --budget-tokens), else the ones it last ran under (state.json `spend`, which holds an earlier resume's
 * raise), else its frozen manifest's. budget_usd in USD, budget_tokens in tokens; null: none.
 */
export function continuedBudgets(
  manifest: Pick<Manifest, 'budgetUsd' | 'budgetTokens'>,
  state: Pick<RunState, 'spend'> | null,
  req?: { budgetUsd?: number; budgetTokens?: number },
): { usd: number | null; tokens: number | null } {
  const had = state?.spend;
  const usd = req?.budgetUsd ?? (had ? (had.budgetMicroUsd === null ? null : had.budgetMicroUsd / 1_000_000) : manifest.budgetUsd);
  const tokens = req?.budgetTokens ?? (had?.tokens ? had.tokens.budget : manifest.budgetTokens);
  return { usd, tokens };
}

/**
 * What a run that ended had spent, for its resume (RunSpend.seed): the spend its state.json last recorded (settled and
 * reported by attempts still running when it was written; per task from `byTask`), and where that is missing (a run
 * older than the field, or a task not in `byTask`) the sum of its attempts' costs and tokens as state.json lists them
 * (an attempt of unknown cost counts 0 there: the only figure left). The larger of the two counts. Per envelope: a
 * best-of-N candidate's attempts count under its group's key (envelopeOf). With the engine/model keys whose spend the
 * run could not count (`spend.uncounted`), which the resumed run refuses as the run did.
 */
export function priorSpend(state: Pick<RunState, 'spend' | 'tasks'>): PriorSpend {
  // Per envelope (a best-of-N candidate's attempts count against its group's: envelopeOf): its attempts' sum.
  const attemptsUsd = new Map<string, number>();
  const attemptsTokens = new Map<string, number>();
  for (const t of state.tasks) {
    const key = t.candidate !== undefined && t.group !== undefined ? t.group : t.key;
    for (const a of t.attempts ?? []) {
      attemptsUsd.set(key, (attemptsUsd.get(key) ?? 0) + (a.costMicroUsd ?? 0));
      attemptsTokens.set(key, (attemptsTokens.get(key) ?? 0) + (a.tokensIn ?? 0) + (a.tokensOut ?? 0));
    }
  }
  const usd = new Map<string, number>();
  const tokens = new Map<string, number>();
  let usdSum = 0;
  let tokenSum = 0;
  for (const key of new Set([...attemptsUsd.keys(), ...Object.keys(state.spend?.byTask ?? {})])) {
    const recorded = state.spend?.byTask?.[key];
    usd.set(key, Math.max(attemptsUsd.get(key) ?? 0, recorded?.usd ?? 0));
    tokens.set(key, Math.max(attemptsTokens.get(key) ?? 0, recorded?.tokens ?? 0));
    usdSum += usd.get(key) ?? 0;
    tokenSum += tokens.get(key) ?? 0;
  }
  return {
    usd: { total: Math.max(usdSum, state.spend?.spentMicroUsd ?? 0), perTask: usd },
    tokens: { total: Math.max(tokenSum, state.spend?.tokens?.spent ?? 0), perTask: tokens },
    uncounted: { usd: state.spend?.uncounted?.usd ?? [], tokens: state.spend?.uncounted?.tokens ?? [] },
  };
}

/** Tokens in plus out of a usage (either alone when only one is known); null when neither is known. */
export function usageTokens(usage: Pick<UsageReport, 'tokensIn' | 'tokensOut'> | null): number | null {
  if (!usage || (usage.tokensIn === null && usage.tokensOut === null)) return null;
  return (usage.tokensIn ?? 0) + (usage.tokensOut ?? 0);
}

/**
 * What a run does about money and shared records, kept out of the runner's lifecycle code: the budgets
 * (extension/core/cost/budget.ts: budget_usd in micro-USD, budget_tokens in tokens), each attempt's cost (CLI report,
 * else tokens × catalog price; null for an engine of a subscription login), the catalog's background refresh (at most
 * once in 24 h, stopped when the run ends), and the Postgres mirror of eval rows. None of these ever fails a run.
 */
export class RunSpend {
  private readonly budget: Budget;
  private readonly tokenBudget: Budget;
  private readonly catalog;
  private readonly mirror: PostgresMirror | null;
  private readonly refresh = new AbortController();
  private readonly subscription: ReadonlySet<string>;
  /** p90 cost (micro-USD) of past attempts per `model\0task_type\0kind` (kind: work, review, other), from the eval log. */
  private history = new Map<string, number>();
  /** p90 tokens (in + out) of past attempts, keyed as `history`. */
  private tokenHistory = new Map<string, number>();
  /** Keys whose one-at-a-time note was already emitted (`usd:` or `tokens:` before the engine/model). */
  private readonly saidUnpriced = new Set<string>();

  /**
   * @param budgetUsd the manifest's budget_usd, null for none
   * @param postgresUrl where rows are mirrored (VERDICT_PG_URL / config postgres_url), null for nowhere
   * @param more `budgetTokens`: the run's budget_tokens, null or absent for none; `subscription`: engines of a
   *   subscription login (subscriptionEngines), priced at nothing and counted in tokens only
   */
  constructor(
    home: string,
    budgetUsd: number | null,
    postgresUrl: string | null,
    more: { budgetTokens?: number | null; subscription?: ReadonlySet<string> } = {},
  ) {
    this.budget = new Budget(budgetUsd === null ? null : Math.round(budgetUsd * 1_000_000));
    this.tokenBudget = new Budget(more.budgetTokens ?? null, 'tokens');
    this.subscription = more.subscription ?? new Set();
    this.catalog = readSnapshotQuietly(home)?.data ?? [];
    this.mirror = postgresUrl ? new PostgresMirror(home, postgresUrl) : null;
    void refreshInBackground(home, this.refresh.signal);
  }

  /** `{billing: 'subscription'}` for an engine of a subscription login (the eval row's column), else nothing. */
  billingOf(engine: string): { billing?: 'subscription' } {
    return this.subscription.has(engine) ? { billing: 'subscription' } : {};
  }

  /**
   * Counts what the run spent before this orchestrator took it over (verdict resume / rerun of a run that ended), so a
   * resumed run goes on from its spend, never from 0. Call before any step is admitted.
   */
  seed(prior: PriorSpend): void {
    this.budget.seed(prior.usd.total, prior.usd.perTask);
    this.tokenBudget.seed(prior.tokens.total, prior.tokens.perTask);
    this.budget.seedUncounted(prior.uncounted?.usd ?? []);
    this.tokenBudget.seedUncounted(prior.uncounted?.tokens ?? []);
    this.changed();
  }

  /**
   * Reserves an attempt's worst case against both budgets (the run's and the task's own, in USD and in tokens); a
   * string (the reason) when the attempt must not start; a BudgetWait (with the run note to show once) when its cost
   * or tokens are unbounded and an attempt of the same engine and model is running unbounded
   * (extension/core/cost/budget.ts): queue it again when that one settles. While admitted, the task's worker reports
   * its spend through progress().
   */
  admit(
    engine: Pick<EngineSpec, 'name' | 'maxAttemptMicroUsd' | 'maxAttemptTokens'> & Partial<Pick<EngineSpec, 'harness'>>,
    model: string | null,
    task: SpendTask,
  ): SpendHold | string | (BudgetWait & { note: string | null }) {
    const key = `${engine.name}/${model ?? ''}`;
    const price = priceOf(this.catalog, model);
    const usdBounds = this.bounds(engine, model, task, 'work');
    const tokenBounds = this.tokenBounds(engine, model, task, 'work');
    const usd = this.subscription.has(engine.name) ? null : this.budget.reserve(key, price, true, usdBounds);
    if (usd === null && !this.subscription.has(engine.name)) return this.budget.refusal(key, price, usdBounds);
    if (usd && 'waitFor' in usd) return this.waitNote(usd, 'usd', engine.name, model, 'work');
    const tokens = this.tokenBudget.reserve(key, null, true, tokenBounds);
    if (tokens === null || 'waitFor' in tokens) {
      if (usd) this.release(usd);
      return tokens === null ? this.tokenBudget.refusal(key, null, tokenBounds) : this.waitNote(tokens, 'tokens', engine.name, model, 'work');
    }
    const hold: SpendHold = { usd, tokens, task: task.key, envelope: envelopeOf(task), spends: spendsOf(engine) };
    this.workers.set(task.key, hold);
    this.ended.delete(task.key);
    this.changed();
    return hold;
  }

  /** A BudgetWait with its one-at-a-time note the first time for its key and unit; `step`: who waits. */
  private waitNote(
    w: BudgetWait,
    unit: 'usd' | 'tokens',
    engine: string,
    model: string | null,
    step: 'work' | ReaderStep,
  ): BudgetWait & { note: string | null } {
    const said = `${unit}:${w.waitFor}`;
    const first = !this.saidUnpriced.has(said);
    this.saidUnpriced.add(said);
    const on = `${engine}${model ? ` (${model})` : ''}`;
    const who = step === 'work' ? 'an attempt' : step.who;
    const note = !first
      ? null
      : unit === 'usd'
        ? `budget: the cost of ${who} on ${on} is unknown (no catalog price, none priced yet, no max_attempt_usd): its attempts and readers run one at a time until one has finished and priced it (one that ends with its cost still unknown cannot be counted: no further one starts under the budget unless the engine or task has a max_attempt_usd)`
        : `budget: the tokens of ${who} on ${on} are unknown (no p90 in the eval log, none finished yet, no max_attempt_tokens): under budget_tokens its attempts and readers run one at a time until one has finished and counted them`;
    return { ...w, note };
  }

  /**
   * admit for a reader — a reviewer or critic of the task's running attempt, a ranking reader of the group `task` —
   * which is not put back in the queue but waits here: a SpendHold, a string (the reason) when it must not start, or
   * null when `signal` stopped it while it waited. Its estimate is the p90 of the eval log's rows of its own step
   * (reviews; critiques and rankings) for its model and the task's type, else its engine's max_attempt_usd (else the
   * task's), else the p90 of work attempts of its model and type (an upper bound), with the catalog's and this run's
   * observed maximum; in tokens the same p90s, else the task's max_attempt_tokens. With none of these it is run as an
   * attempt nothing prices is (Budget.reserve): one at a time on its engine and model, the others (readers and attempts
   * alike) waiting until it has finished and priced it, the first wait saying so through `say`; readers of unknown
   * cost reserved $0 and ran side by side before. While it runs, its engine's streamed usage counts (readerProgress)
   * and it is stopped, as a worker is, once what is spent passes a cap. Settled with its cost and tokens, or when those
   * stay unknown, charged its reservation (Budget.settle): a reader of unknown cost never counts 0 when anything bounds it.
   */
  async admitReader(
    engine: Pick<EngineSpec, 'name' | 'maxAttemptMicroUsd' | 'maxAttemptTokens'> & Partial<Pick<EngineSpec, 'harness'>>,
    model: string | null,
    task: SpendTask,
    step: ReaderStep,
    signal: AbortSignal,
    say: (note: string) => void,
  ): Promise<SpendHold | string | null> {
    for (;;) {
      if (signal.aborted) return null;
      const got = this.reserveReader(engine, model, task, step);
      if (typeof got === 'string' || !('waitFor' in got)) return got;
      if (got.note) say(got.note);
      await this.nextFree(signal);
    }
  }

  /** admitReader's one try: a hold, a refusal, or the BudgetWait (with its note) of an engine nothing prices. */
  private reserveReader(
    engine: Pick<EngineSpec, 'name' | 'maxAttemptMicroUsd' | 'maxAttemptTokens'> & Partial<Pick<EngineSpec, 'harness'>>,
    model: string | null,
    task: SpendTask,
    step: ReaderStep,
  ): SpendHold | string | (BudgetWait & { note: string | null }) {
    const key = `${engine.name}/${model ?? ''}`;
    const price = priceOf(this.catalog, model);
    const usdBounds = this.bounds(engine, model, task, step);
    const tokenBounds = this.tokenBounds(engine, model, task, step);
    const usd = this.subscription.has(engine.name) ? null : this.budget.reserve(key, price, true, usdBounds);
    if (usd === null && !this.subscription.has(engine.name)) return this.budget.refusal(key, price, usdBounds);
    if (usd && 'waitFor' in usd) return this.waitNote(usd, 'usd', engine.name, model, step);
    const tokens = this.tokenBudget.reserve(key, null, true, tokenBounds);
    if (tokens === null || 'waitFor' in tokens) {
      if (usd) this.release(usd);
      return tokens === null ? this.tokenBudget.refusal(key, null, tokenBounds) : this.waitNote(tokens, 'tokens', engine.name, model, step);
    }
    const hold: SpendHold = { usd, tokens, task: task.key, envelope: envelopeOf(task), spends: spendsOf(engine) };
    const open = this.readers.get(task.key) ?? new Set<SpendHold>();
    open.add(hold);
    this.readers.set(task.key, open);
    this.changed();
    return hold;
  }

  /** The open holds of running readers (reviewers, critics, ranking reviewers, inputs engines), by the task they count against. */
  private readonly readers = new Map<string, Set<SpendHold>>();

  /**
   * True while a reader admitted for `taskKey` (admitReader) has not been settled: a reviewer or critic of its running
   * attempt, or, for a best-of-N group, a ranking reviewer or its inputs engine.
   */
  readersRunning(taskKey: string): boolean {
    return (this.readers.get(taskKey)?.size ?? 0) > 0;
  }

  /** Readers waiting for an unpriced attempt or reader to end (admitReader): each woken once by wake(). */
  private readonly waiting = new Set<() => void>();

  /** Resolves at the next wake(), or when `signal` aborts. */
  private nextFree(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiting.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiting.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * Told when a step that held an engine nothing prices may have let go of it (a step settled, a worker ended, a
   * reservation released): attempts held back by the budget (admit's BudgetWait) can ask again.
   */
  onFreed: (() => void) | null = null;

  /** Wakes the waiting readers and tells onFreed. */
  private wake(): void {
    for (const done of [...this.waiting]) done();
    this.onFreed?.();
  }

  /**
   * Drops a USD reservation that another budget refused; when it held its engine as unpriced, wakes whoever waited for
   * it. A plain reservation wakes nobody: nobody waited for it, and waking the held-back attempts then had two of them
   * admit and release each other forever (the orchestrator spun at 100 % CPU under a budget_tokens with three tasks).
   */
  private release(r: Reservation): void {
    const held = r.unpriced === true;
    this.budget.release(r);
    if (held) this.wake();
  }

  /**
   * Why admit() would refuse an attempt on `engine`/`model` of `task` now (the refusal's text: its USD or its token
   * budget), or null; reserves nothing (routing skips such a candidate: run/route-choice.ts).
   */
  refusalOf(engine: Pick<EngineSpec, 'name' | 'maxAttemptMicroUsd' | 'maxAttemptTokens'>, model: string | null, task: SpendTask): string | null {
    const key = `${engine.name}/${model ?? ''}`;
    const price = priceOf(this.catalog, model);
    const usdBounds = this.bounds(engine, model, task, 'work');
    if (!this.subscription.has(engine.name) && this.budget.wouldRefuse(key, price, usdBounds)) return this.budget.refusal(key, price, usdBounds);
    const tokenBounds = this.tokenBounds(engine, model, task, 'work');
    return this.tokenBudget.wouldRefuse(key, null, tokenBounds) ? this.tokenBudget.refusal(key, null, tokenBounds) : null;
  }

  /** The catalog's price of `model` (micro-USD per token), or null when the catalog does not list it. */
  priceOf(model: string | null): ModelPrice | null {
    return priceOf(this.catalog, model);
  }

  /** Spent (settled and reported so far), reserved (held beyond that by running steps) and the budgets. */
  snapshot(): RunSpendState {
    const t = this.tokenBudget;
    return {
      spentMicroUsd: this.budget.spentLiveMicroUsd,
      reservedMicroUsd: this.budget.reservedMicroUsd,
      budgetMicroUsd: this.budget.capMicroUsd,
      tokens: { spent: t.spentLiveMicroUsd, reserved: t.reservedMicroUsd, budget: t.capMicroUsd },
      byTask: this.byTask(),
      ...this.uncountedState(),
    };
  }

  /** `{uncounted}` when some engine/model's spend could not be counted (Budget.uncountedKeys), else nothing. */
  private uncountedState(): Pick<RunSpendState, 'uncounted'> {
    const usd = this.budget.uncountedKeys();
    const tokens = this.tokenBudget.uncountedKeys();
    return usd.length || tokens.length ? { uncounted: { usd, tokens } } : {};
  }

  /**
   * Spend per envelope (micro-USD and tokens: settled, plus what running steps reported so far), for a resumed run's
   * seed, after a crash too; only envelopes that spent or have a step running.
   */
  private byTask(): Record<string, { usd: number; tokens: number }> {
    const out: Record<string, { usd: number; tokens: number }> = {};
    for (const k of new Set([...this.budget.taskKeys(), ...this.tokenBudget.taskKeys()]))
      out[k] = { usd: this.budget.taskSpentLive(k), tokens: this.tokenBudget.taskSpentLive(k) };
    return out;
  }

  /**
   * Told the new snapshot whenever the spend or what is reserved changes (a step admitted, usage reported, a step
   * settled), and a note the first time what is spent reaches 50 %, 80 % and 100 % of a budget (null otherwise).
   */
  onChange: ((spend: RunSpendState, note: string | null) => void) | null = null;
  /** The budget shares (percent, `usd:` or `tokens:` before it) whose note was already given. */
  private readonly saidShare = new Set<string>();

  private changed(): void {
    if (!this.onChange) return;
    const s = this.snapshot();
    const notes: string[] = [];
    const share = (unit: string, spent: number, cap: number | null) => {
      if (cap === null || cap <= 0) return null;
      // One note for the highest share newly reached (a settle can jump from 40 % past 100 %).
      const reached = BUDGET_SHARES.filter((p) => spent * 100 >= p * cap && !this.saidShare.has(`${unit}:${p}`));
      for (const p of reached) this.saidShare.add(`${unit}:${p}`);
      return reached.at(-1) ?? null;
    };
    const usdTop = share('usd', s.spentMicroUsd, s.budgetMicroUsd);
    if (usdTop !== null) notes.push(`budget: ${usdTop} % used — ${spendLine({ ...s, tokens: undefined }) ?? ''}`);
    const tokTop = share('tokens', s.tokens?.spent ?? 0, s.tokens?.budget ?? null);
    if (tokTop !== null)
      notes.push(
        `budget_tokens: ${tokTop} % used — ${spendLine({ spentMicroUsd: 0, reservedMicroUsd: 0, budgetMicroUsd: null, ...(s.tokens ? { tokens: s.tokens } : {}) }) ?? ''}`,
      );
    this.onChange(s, notes.length ? notes.join('; ') : null);
  }

  private key(model: string | null, task: SpendTask, kind: 'work' | 'review' | 'other'): string {
    return `${model ?? ''}\0${task.taskType ?? ''}\0${kind}`;
  }

  private bounds(engine: Pick<EngineSpec, 'maxAttemptMicroUsd'>, model: string | null, task: SpendTask, step: 'work' | ReaderStep): AttemptBounds {
    const taskMax = task.maxAttemptUsd !== undefined ? Math.round(task.maxAttemptUsd * 1_000_000) : null;
    const envelope = { key: envelopeOf(task), capMicroUsd: task.budgetUsd === undefined ? null : Math.round(task.budgetUsd * 1_000_000) };
    const work = model === null ? null : (this.history.get(this.key(model, task, 'work')) ?? null);
    if (step === 'work') return { historyMicroUsd: work, maxAttemptMicroUsd: taskMax ?? engine.maxAttemptMicroUsd ?? null, task: envelope };
    // A reader: its own step's p90, else its engine's (else the task's) max_attempt_usd, else the work p90 as a bound.
    const own = model === null ? null : (this.history.get(this.key(model, task, step.step === 'review' ? 'review' : 'other')) ?? null);
    const maxAttempt = engine.maxAttemptMicroUsd ?? taskMax;
    return { historyMicroUsd: own ?? (maxAttempt === null ? work : null), maxAttemptMicroUsd: maxAttempt, task: envelope };
  }

  private tokenBounds(engine: Pick<EngineSpec, 'maxAttemptTokens'>, model: string | null, task: SpendTask, step: 'work' | ReaderStep): AttemptBounds {
    const envelope = { key: envelopeOf(task), capMicroUsd: task.budgetTokens ?? null };
    const work = model === null ? null : (this.tokenHistory.get(this.key(model, task, 'work')) ?? null);
    // As in USD: an attempt takes the task's max_attempt_tokens before its engine's, a reader its engine's first.
    if (step === 'work') return { historyMicroUsd: work, maxAttemptMicroUsd: task.maxAttemptTokens ?? engine.maxAttemptTokens ?? null, task: envelope };
    const maxAttempt = engine.maxAttemptTokens ?? task.maxAttemptTokens ?? null;
    const own = model === null ? null : (this.tokenHistory.get(this.key(model, task, step.step === 'review' ? 'review' : 'other')) ?? null);
    return { historyMicroUsd: own ?? (maxAttempt === null ? work : null), maxAttemptMicroUsd: maxAttempt, task: envelope };
  }

  /**
   * The running worker of `taskKey` reported usage (its engine's streamUsage, run/usage-meter.ts): its spend and tokens
   * so far count against the budgets; when the run's or the task's spend passes a cap, onOver is told (once per cap and
   * task) so the attempts under it are stopped. A figure that cannot be known (no CLI cost, no catalog price; no
   * tokens) changes nothing of its budget.
   */
  progress(taskKey: string, usage: UsageReport, model: string | null, engine?: Pick<EngineSpec, 'name' | 'cachedInInput'>): void {
    const hold = this.workers.get(taskKey);
    if (hold) this.report(hold, usage, model, engine);
  }

  /**
   * progress for a running reader (`hold`: what admitReader gave it) from its engine's streamed usage: its spend so far
   * counts against the run's and its task's budgets while it runs, and once what is spent passes a cap onOver is told
   * as for a worker, so a reader that keeps spending is stopped (its task ends BUDGET_EXCEEDED) instead of being
   * counted only when it ends. Ignored once the hold is settled.
   */
  readerProgress(hold: SpendHold, usage: UsageReport, model: string | null, engine?: Pick<EngineSpec, 'name' | 'cachedInInput'>): void {
    if (this.readers.get(hold.task)?.has(hold)) this.report(hold, usage, model, engine);
  }

  /**
   * progress for an attempt that runs on a pool worker (pool/dispatch.ts): `spent` is what its worker reported the
   * attempt has spent so far — its engine and the reviewers that run on the worker with it — in micro-USD (null: not
   * known, or `engine` is of a subscription login here, which pays nothing per token) and tokens (in + out; null: not
   * known), each a running total. Counted as a local worker's streamed usage is: past a cap, onOver is told.
   */
  remoteProgress(taskKey: string, spent: { usd: number | null; tokens: number | null }, engine: string): void {
    const hold = this.workers.get(taskKey);
    if (hold) this.count(hold, this.subscription.has(engine) ? null : spent.usd, spent.tokens);
  }

  /** Counts a running step's usage so far against its hold, then tells onOver about a cap it passed. */
  private report(hold: SpendHold, usage: UsageReport, model: string | null, engine?: Pick<EngineSpec, 'name' | 'cachedInInput'>): void {
    this.count(hold, this.streamedCost(hold, usage, model, engine), usageTokens(usage));
  }

  /** The priced models each running step's log has named so far (UsageReport.reportedModel), for streamedCost. */
  private readonly namedModels = new WeakMap<SpendHold, Set<string>>();

  /**
   * A running step's cost so far (see cost). Without a model of its own, a step is priced by the model its log names,
   * which the worker can write into its engine's output (a forged assistant line naming a model the catalog does not
   * price, or a cheap one, after each real message): so the usage is priced at the dearest of every model its log has
   * named so far (the engine's first event, printed before any tool of the worker runs, names the session's own).
   */
  private streamedCost(hold: SpendHold, usage: UsageReport, model: string | null, engine?: Pick<EngineSpec, 'name' | 'cachedInInput'>): number | null {
    let most = this.cost(usage, model, engine);
    if (model !== null) return most;
    const named = this.namedModels.get(hold) ?? new Set<string>();
    this.namedModels.set(hold, named);
    // Only a model the catalog prices is kept (the set stays within the catalog, however many names the log holds).
    if (usage.reportedModel && this.cost(usage, usage.reportedModel, engine) !== null) named.add(usage.reportedModel);
    for (const m of named) {
      const c = this.cost(usage, m, engine);
      if (c !== null && (most === null || c > most)) most = c;
    }
    return most;
  }

  /** Counts a running step's spend so far (micro-USD and tokens, null: unknown) against its hold; see report. */
  private count(hold: SpendHold, cost: number | null, tokens: number | null): void {
    if (cost === null && tokens === null) return;
    if (hold.usd && cost !== null) this.budget.progress(hold.usd, cost);
    if (tokens !== null) this.tokenBudget.progress(hold.tokens, tokens);
    this.changed();
    this.checkCaps(hold.envelope);
  }

  /** Tells onOver about a cap passed (the run's, else the task's; USD first, then tokens); each at most once. */
  private checkCaps(taskKey: string): void {
    if (!this.onOver) return;
    const run = this.overBudget();
    if (run !== null && !this.saidOver.has('')) {
      this.saidOver.add('');
      this.onOver(null, run);
      return;
    }
    const task = this.taskOverBudget(taskKey);
    if (task !== null && !this.saidOver.has(taskKey)) {
      this.saidOver.add(taskKey);
      this.onOver(taskKey, task);
    }
  }

  /**
   * Called when the spend reported while steps run (workers and readers) passes a cap: `task` null for the run's budget
   * (stop every running attempt and reader), else the task whose own budget was passed (stop its attempt, or a group's
   * readers); `reason` for the task.
   */
  onOver: ((task: string | null, reason: string) => void) | null = null;
  /** Caps already reported to onOver ('' for the run's). */
  private readonly saidOver = new Set<string>();
  /** Tasks whose worker process has ended in their running attempt (workerEnded): they spend nothing more. */
  private readonly ended = new Set<string>();

  /**
   * The task's worker has exited (its whole process group is gone) having spent `costMicroUsd` and used `tokens` (in +
   * out; each null when unknown): what is left of its attempt (the check, the seal, its readers, which reserve their
   * own) spends nothing on its engine, so its cost prices its engine and model for the steps admitted after it and an
   * attempt nothing priced lets the next one of its engine start (Budget.priced). Not an engine's final event, which a
   * worker can forge into its log and go on.
   */
  workerEnded(taskKey: string, costMicroUsd: number | null, tokens: number | null): void {
    const hold = this.workers.get(taskKey);
    if (!hold) return;
    this.ended.add(taskKey);
    if (hold.usd) this.budget.priced(hold.usd, this.believed(hold, costMicroUsd, tokens), hold.spends);
    this.tokenBudget.priced(hold.tokens, tokens, hold.spends);
    this.changed();
    this.wake();
  }

  /**
   * True when the task's worker has exited in its running attempt and no reader of it (reviewer, critic) is running:
   * stopping the attempt for the budget would save nothing and throw away finished work. While a reader runs it spends,
   * and the attempt is stopped with it.
   */
  spendingOver(taskKey: string): boolean {
    return this.ended.has(taskKey) && !this.readersRunning(taskKey);
  }

  /** The open holds of each task's running worker, by task key. */
  private readonly workers = new Map<string, SpendHold>();

  /**
   * Reads the p90 cost and the p90 tokens of past attempts per (model, task_type, step kind: work, review, other
   * readers) from the eval log through the scoreboard's columns (extension/core/scoreboard/load.ts currentColumns; p90
   * by nearest rank over the rows of known cost, or known tokens). Only with a budget; a log that cannot be read leaves
   * the history empty (never fails a run).
   * @param taskBudgets true when some task has its own budget_usd or budget_tokens (the history is read for it too)
   */
  async loadHistory(home: string, taskBudgets = false): Promise<void> {
    if (this.budget.capMicroUsd === null && this.tokenBudget.capMicroUsd === null && !taskBudgets) return;
    try {
      const c = await currentColumns(home, evalLogPath(home));
      const costs = new Map<string, number[]>();
      const tokens = new Map<string, number[]>();
      const push = (m: Map<string, number[]>, k: string, v: number) => {
        const list = m.get(k);
        if (list) list.push(v);
        else m.set(k, [v]);
      };
      for (let i = 0; i < c.rows; i++) {
        const g = c.groups[c.group[i] ?? -1];
        const kind = HISTORY_KIND[c.step[i] ?? 2] ?? null;
        if (!g || g[0] < 0 || kind === null) continue;
        const k = `${c.strings[g[0]] ?? ''}\0${c.strings[g[1]] ?? ''}\0${kind}`;
        const cost = c.cost[i] ?? NaN;
        const used = c.tokens[i] ?? NaN;
        if (Number.isFinite(cost)) push(costs, k, cost);
        if (Number.isFinite(used)) push(tokens, k, used);
      }
      const p90 = (from: Map<string, number[]>, to: Map<string, number>) => {
        for (const [k, v] of from) {
          v.sort((a, b) => a - b);
          to.set(k, v[Math.max(0, Math.ceil(0.9 * v.length) - 1)] ?? 0);
        }
      };
      p90(costs, this.history);
      p90(tokens, this.tokenHistory);
    } catch {
      // no log yet, or one the scoreboard cannot read: no history
    }
  }

  /**
   * The attempt's cost, integer micro-USD or null: see attemptCostMicroUsd. `engine`: the engine that reported the usage
   * (its cachedInInput says whether cached input is priced apart); absent: it is not. null for an engine of a
   * subscription login: it pays no money per token (the row says `billing: "subscription"`).
   */
  cost(usage: UsageReport | null, model: string | null, engine?: Pick<EngineSpec, 'name' | 'cachedInInput'>): number | null {
    if (!usage || (engine && this.subscription.has(engine.name))) return null;
    const priced = {
      costMicroUsd: usage.costMicroUsd,
      tokensIn: usage.tokensIn,
      tokensOut: usage.tokensOut,
      cachedInInput: engine?.cachedInInput ? usage.tokensCached : null,
      cacheWriteInInput: usage.tokensCacheWrite,
      reasoningInOutput: usage.tokensReasoning,
    };
    return attemptCostMicroUsd(priced, priceOf(this.catalog, model ?? usage.reportedModel));
  }

  /**
   * Settles a hold with the step's cost (micro-USD) and tokens (in + out): each unknown one is charged the larger of its
   * reservation and what the step reported while running.
   */
  settle(hold: SpendHold, costMicroUsd: number | null, tokens: number | null = null): void {
    if (this.workers.get(hold.task) === hold) this.workers.delete(hold.task);
    const readers = this.readers.get(hold.task);
    if (readers?.delete(hold) && !readers.size) this.readers.delete(hold.task);
    if (hold.usd) this.budget.settle(hold.usd, this.believed(hold, costMicroUsd, tokens), hold.spends);
    this.tokenBudget.settle(hold.tokens, tokens, hold.spends);
    this.changed();
    this.wake();
  }

  /**
   * The final cost of a step as the budget takes it: null (unknown) when its final report counts far fewer tokens than
   * the step streamed while it ran (under BELIEVED_SHARE of them) — a final event the worker forged with small totals
   * and then killed its engine before the real one (four Claude Code sessions of 420,000 tokens each were counted 1 µUSD
   * apiece and priced their engine at that). Unknown, it is charged what it reported while running, or counted as
   * uncounted spend (Budget.settle). A final report a little below the stream is believed: an honest Claude Code session
   * woken for a second turn after its result (a background subagent) streams a few more tokens than its result counts.
   */
  private believed(hold: SpendHold, costMicroUsd: number | null, tokens: number | null): number | null {
    return tokens !== null && tokens < BELIEVED_SHARE * hold.tokens.liveMicroUsd ? null : costMicroUsd;
  }

  /**
   * null while the spend is within the run's budgets (or there are none); once what is spent alone passes budget_usd
   * (or the tokens used pass budget_tokens), the reason a running attempt is stopped and its task ends BUDGET_EXCEEDED
   * (resumable with a higher budget).
   */
  overBudget(): string | null {
    if (this.budget.exceeded) {
      const usd = (n: number) => `$${(n / 1_000_000).toFixed(4)}`;
      return `budget: ${usd(this.budget.spentLiveMicroUsd)} spent passed budget_usd ${usd(this.budget.capMicroUsd ?? 0)}; this attempt was stopped (its work is kept; resume with a higher budget: verdict resume RUN --budget-usd N)`;
    }
    if (this.tokenBudget.exceeded) {
      const t = this.tokenBudget;
      return `budget: ${t.format(t.spentLiveMicroUsd)} used passed budget_tokens ${t.format(t.capMicroUsd ?? 0)}; this attempt was stopped (its work is kept; resume with a higher budget: verdict resume RUN --budget-tokens N)`;
    }
    return null;
  }

  /** Like overBudget, for the task's own budget_usd and budget_tokens: null while within them (or it has none). */
  taskOverBudget(taskKey: string): string | null {
    if (this.budget.taskExceeded(taskKey)) {
      const usd = (n: number) => `$${(n / 1_000_000).toFixed(4)}`;
      return `budget: task ${taskKey}'s ${usd(this.budget.taskSpentLive(taskKey))} spent passed its budget_usd ${usd(this.budget.taskCap(taskKey) ?? 0)}; this attempt was stopped (its work is kept; resume with a higher budget_usd)`;
    }
    if (this.tokenBudget.taskExceeded(taskKey)) {
      const t = this.tokenBudget;
      return `budget: task ${taskKey}'s ${t.format(t.taskSpentLive(taskKey))} used passed its budget_tokens ${t.format(t.taskCap(taskKey) ?? 0)}; this attempt was stopped (its work is kept; resume with a higher budget_tokens)`;
    }
    return null;
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
