import { CANONICAL_ISO, type AttemptColumns } from './columns';
import type { GroupStats } from './group-stats';
import type { ReviewerStats } from './review-stats';
import type { WonStats } from './won-stats';

/** The filters applied while aggregating: exact engine, and attempts that ended at or after `sinceIso`. */
export interface AggregationFilter {
  engine?: string | null;
  /** ISO 8601 (Date.toISOString of the --since date); rows compare as strings, as SQL `ended_at >= ?` does. */
  sinceIso?: string | null;
}

/**
 * The scoreboard's three aggregations over the rows `filter` selects — the same figures, in the same order, as
 * group-stats.ts `groupStatsSql`, review-stats.ts and won-stats.ts compute in SQL (their docs hold the rules) — by one
 * scan of the columns (columns.ts). Medians are exact: every selected value is kept and sorted.
 * test/unit/scoreboard-filters.unit.test.ts holds it equal to the SQL over the same rows filtered beforehand.
 */
export function filteredStats(c: AttemptColumns, filter: AggregationFilter): { stats: GroupStats[]; reviews: ReviewerStats[]; won: WonStats[] } {
  const engineId = filter.engine ? c.strings.indexOf(filter.engine) : -2;
  if (engineId === -1) return { stats: [], reviews: [], won: [] };
  const s = scanRows(c, engineId, filter.sinceIso ?? null);
  return { stats: groupRows(c, s), reviews: reviewerRows(c, s), won: wonRows(c, s) };
}

/** One reviewing model's tallies (review-stats.ts's columns) while scanning; engines and times as ids and ms. */
interface ReviewerTally {
  reviews: number;
  approve: number;
  changes: number;
  reject: number;
  errors: number;
  engines: Set<number>;
  lastMs: number;
  lastText: string | undefined;
}

/**
 * What one scan of the selected rows gathers. Arrays indexed by group (index into `c.groups`, length G) unless said
 * otherwise; times as ms since the epoch, with the text of an ended_at not in toISOString's form beside.
 */
interface Scan {
  G: number;
  /** Strings in the dictionary (`engineSeen` is G × E). */
  E: number;
  /** Best-of-N ids in use + 1: `took` and `wonKeys` hold group × B + best-of-N id. */
  B: number;
  /** 1 when the group has a selected work row. */
  work: Uint8Array;
  attempts: Float64Array;
  errors: Float64Array;
  rateLimits: Float64Array;
  other: Float64Array;
  lastMs: Float64Array;
  lastText: (string | undefined)[];
  /** The greatest lab id named (by its string), -1 when none. */
  lab: Int32Array;
  engineSeen: Uint8Array;
  /** Selected judged work rows (PASS, FAIL, TIMEOUT): the first `judgedCount` entries. */
  judged: Int32Array;
  judgedCount: number;
  /** Per (value column k: duration, tokens, cost; group): how many known values the judged rows hold, at k × G + g. */
  counts: Int32Array;
  /** Per unit (task): its first judged attempt's and first PASS's `ord`, Infinity when none; its group, -1 when unseen. */
  firstJudged: Float64Array;
  firstPass: Float64Array;
  unitGroup: Int32Array;
  /** Per unit: its whole task (columns' `task`). */
  unitTask: Int32Array;
  /**
   * Per whole task: the `ord` of its first judged work row of any model, over every row whatever the filter (as the SQL's
   * `tf`); Infinity when none.
   */
  taskFirst: Float64Array;
  /** By model id. */
  reviewers: Map<number, ReviewerTally>;
  /** Best-of-N groups a group's candidates took part in, and those it won. */
  took: Set<number>;
  wonKeys: Set<number>;
  /** The same keys for the groups where a passing candidate of the group was outvoted by consensus. */
  lostKeys: Set<number>;
  /**
   * The candidates consensus decided against, by best-of-N id (a bit per candidate number), from every select row
   * (filters do not apply: what is filtered is the losing candidate's work row, as in won-stats.ts).
   */
  outvotedBy: Map<number, number>;
}

/** The value columns whose medians the scoreboard shows, in the order of `Scan.counts`. */
const valueColumns = (c: AttemptColumns): Float64Array[] => [c.duration, c.tokens, c.cost];

/** ended_at >= `since` for row i, as SQL compares the strings (canonical ISO strings of one length order as their times). */
function endedAtLeast(c: AttemptColumns, since: string): (i: number) => boolean {
  const sinceMs = CANONICAL_ISO.test(since) ? Date.parse(since) : NaN;
  return (i) => {
    const ms = c.ended[i] as number;
    if (!Number.isNaN(ms) && !Number.isNaN(sinceMs)) return ms >= sinceMs;
    const text = Number.isNaN(ms) ? c.endedText[i] : new Date(ms).toISOString();
    return text !== undefined && text >= since;
  };
}

/** One pass over the rows of engine `engineId` (-2: any) ended at or after `since` (null: any). */
function scanRows(c: AttemptColumns, engineId: number, since: string | null): Scan {
  const G = c.groups.length;
  const s: Scan = {
    G,
    E: c.strings.length,
    B: c.bestOfs + 1,
    work: new Uint8Array(G),
    attempts: new Float64Array(G),
    errors: new Float64Array(G),
    rateLimits: new Float64Array(G),
    other: new Float64Array(G),
    lastMs: new Float64Array(G).fill(-Infinity),
    lastText: new Array<string | undefined>(G),
    lab: new Int32Array(G).fill(-1),
    engineSeen: new Uint8Array(G * c.strings.length),
    judged: new Int32Array(c.rows),
    judgedCount: 0,
    counts: new Int32Array(3 * G),
    firstJudged: new Float64Array(c.units).fill(Infinity),
    firstPass: new Float64Array(c.units).fill(Infinity),
    unitGroup: new Int32Array(c.units).fill(-1),
    unitTask: new Int32Array(c.units).fill(-1),
    taskFirst: new Float64Array(c.tasks).fill(Infinity),
    reviewers: new Map(),
    took: new Set(),
    wonKeys: new Set(),
    lostKeys: new Set(),
    outvotedBy: new Map(),
  };
  for (let i = 0; i < c.rows; i++) {
    if (c.step[i] === 2 && (c.bestOf[i] as number) >= 0 && c.outvoted[i]) s.outvotedBy.set(c.bestOf[i] as number, c.outvoted[i] as number);
    if (c.step[i] === 0 && (c.verdict[i] as number) <= 2 && (c.ord[i] as number) < (s.taskFirst[c.task[i] as number] as number))
      s.taskFirst[c.task[i] as number] = c.ord[i] as number;
  }
  const selected = since === null ? null : endedAtLeast(c, since);
  const valueCols = valueColumns(c);
  for (let i = 0; i < c.rows; i++) {
    if (engineId >= 0 && c.engine[i] !== engineId) continue;
    if (selected && !selected(i)) continue;
    const g = c.group[i] as number;
    const step = c.step[i];
    if (step === 0) noteWork(c, s, valueCols, i, g);
    else if (step === 1) noteReview(c, s, i, g);
    else if (step === 2 && (c.bestOf[i] as number) >= 0) s.wonKeys.add(g * s.B + (c.bestOf[i] as number));
  }
  return s;
}

/** Counts work row i (step 0) into group g. */
function noteWork(c: AttemptColumns, s: Scan, valueCols: Float64Array[], i: number, g: number): void {
  s.work[g] = 1;
  const v = c.verdict[i] as number;
  if (v <= 2) {
    s.attempts[g]!++;
    const u = c.unit[i] as number;
    s.unitGroup[u] = g;
    s.unitTask[u] = c.task[i] as number;
    const ord = c.ord[i] as number;
    if (ord < (s.firstJudged[u] as number)) s.firstJudged[u] = ord;
    if (v === 0 && ord < (s.firstPass[u] as number)) s.firstPass[u] = ord;
    s.judged[s.judgedCount++] = i;
    for (let k = 0; k < 3; k++) if (!Number.isNaN((valueCols[k] as Float64Array)[i] as number)) s.counts[k * s.G + g]!++;
  } else if (v === 3) s.errors[g]!++;
  else if (v === 4) s.rateLimits[g]!++;
  else s.other[g]!++;
  const ms = c.ended[i] as number;
  if (!Number.isNaN(ms)) {
    if (ms > (s.lastMs[g] as number)) s.lastMs[g] = ms;
  } else {
    const t = c.endedText[i];
    if (t !== undefined && (s.lastText[g] === undefined || t > (s.lastText[g] as string))) s.lastText[g] = t;
  }
  const l = c.lab[i] as number;
  if (l >= 0 && (s.lab[g] === -1 || (c.strings[l] as string) > (c.strings[s.lab[g] as number] as string))) s.lab[g] = l;
  s.engineSeen[g * s.E + (c.engine[i] as number)] = 1;
  if ((c.bestOf[i] as number) >= 0 && c.candidate[i]) s.took.add(g * s.B + (c.bestOf[i] as number));
  const mask = s.outvotedBy.get(c.bestOf[i] as number);
  if (mask !== undefined && v === 0 && c.candidate[i] && Math.floor(mask / 2 ** ((c.candidate[i] as number) - 1)) % 2 === 1)
    s.lostKeys.add(g * s.B + (c.bestOf[i] as number));
}

/** Counts review row i (step 1) for the reviewing model of group g. */
function noteReview(c: AttemptColumns, s: Scan, i: number, g: number): void {
  const m = (c.groups[g] as [number, number])[0];
  let r = s.reviewers.get(m);
  if (!r) s.reviewers.set(m, (r = { reviews: 0, approve: 0, changes: 0, reject: 0, errors: 0, engines: new Set(), lastMs: -Infinity, lastText: undefined }));
  r.reviews++;
  const rv = c.review[i];
  if (rv === 1) r.approve++;
  else if (rv === 2) r.changes++;
  else if (rv === 3) r.reject++;
  else if (rv === 0) r.errors++;
  r.engines.add(c.engine[i] as number);
  const ms = c.ended[i] as number;
  if (!Number.isNaN(ms)) r.lastMs = Math.max(r.lastMs, ms);
  else if (c.endedText[i] !== undefined && (r.lastText === undefined || (c.endedText[i] as string) > r.lastText)) r.lastText = c.endedText[i];
}

/** The later of a time in ms (-Infinity: none) and an ended_at text, as SQL's MAX over the strings; null when neither. */
function maxText(ms: number, text: string | undefined): string | null {
  const a = ms === -Infinity ? undefined : new Date(ms).toISOString();
  if (a === undefined) return text ?? null;
  return text !== undefined && text > a ? text : a;
}

/** A dictionary id's string; null for -1. */
const str = (c: AttemptColumns, id: number): string | null => (id < 0 ? null : (c.strings[id] as string));

/** SQL's order of names: NULL first, then by code unit. */
const byName = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1);

/**
 * Per group: tasks, tasks passed, tasks whose first judged attempt of any model was the group's (first tries), and of
 * those the ones passed at it.
 */
function taskCounts(c: AttemptColumns, s: Scan): { tasks: Float64Array; passed: Float64Array; firstTries: Float64Array; firstTry: Float64Array } {
  const tasks = new Float64Array(s.G);
  const passed = new Float64Array(s.G);
  const firstTries = new Float64Array(s.G);
  const firstTry = new Float64Array(s.G);
  for (let u = 0; u < c.units; u++) {
    const g = s.unitGroup[u] as number;
    if (g < 0) continue;
    const fj = s.firstJudged[u] as number;
    const fp = s.firstPass[u] as number;
    tasks[g]!++;
    if (fp !== Infinity) passed[g]!++;
    if (fj !== s.taskFirst[s.unitTask[u] as number]) continue;
    firstTries[g]!++;
    if (fp === fj) firstTry[g]!++;
  }
  return { tasks, passed, firstTries, firstTry };
}

/** Per value column (duration, tokens, cost), per group: the median of the judged rows' known values, or null. */
function groupMedians(c: AttemptColumns, s: Scan): (number | null)[][] {
  // Each column's known values grouped by group (offsets from the counts), then each group's median by selection.
  const G = s.G;
  return valueColumns(c).map((col, k) => {
    const start = new Int32Array(G + 1);
    for (let g = 0; g < G; g++) start[g + 1] = (start[g] as number) + (s.counts[k * G + g] as number);
    const fill = start.slice(0, G);
    const vals = new Float64Array(start[G] as number);
    for (let j = 0; j < s.judgedCount; j++) {
      const i = s.judged[j] as number;
      const x = col[i] as number;
      if (!Number.isNaN(x)) {
        const g = c.group[i] as number;
        vals[fill[g]!++] = x;
      }
    }
    const out: (number | null)[] = new Array(G).fill(null);
    for (let g = 0; g < G; g++) if ((start[g + 1] as number) > (start[g] as number)) out[g] = median(vals.subarray(start[g], start[g + 1]));
    return out;
  });
}

/** group-stats.ts's rows, in its order (GROUP BY model, task_type: NULL model first; '' before other task types). */
function groupRows(c: AttemptColumns, s: Scan): GroupStats[] {
  const { tasks, passed, firstTries, firstTry } = taskCounts(c, s);
  const medians = groupMedians(c, s);
  const enginesOf = (g: number): string[] => {
    const out: string[] = [];
    for (let e = 0; e < s.E; e++) if (s.engineSeen[g * s.E + e]) out.push(c.strings[e] as string);
    return out.sort();
  };
  const stats: GroupStats[] = [];
  for (let g = 0; g < s.G; g++) {
    if (!s.work[g]) continue;
    const [m, t] = c.groups[g] as [number, number];
    const n = tasks[g] as number;
    const cost = medians[2]![g] ?? null;
    stats.push({
      model: str(c, m),
      task_type: str(c, t) || null,
      tasks: n,
      attempts: s.attempts[g] as number,
      passed: passed[g] as number,
      first_tries: firstTries[g] as number,
      first_try: firstTry[g] as number,
      pass_rate: n ? (passed[g] as number) / n : null,
      first_try_pass_rate: firstTries[g] ? (firstTry[g] as number) / (firstTries[g] as number) : null,
      median_duration_ms: medians[0]![g] ?? null,
      median_tokens: medians[1]![g] ?? null,
      median_cost_microusd: cost === null ? null : Math.round(cost),
      errors: s.errors[g] as number,
      rate_limits: s.rateLimits[g] as number,
      other: s.other[g] as number,
      last_seen: maxText(s.lastMs[g] as number, s.lastText[g]),
      engines: enginesOf(g),
      lab: str(c, s.lab[g] as number),
    });
  }
  stats.sort((a, b) => byName(a.model, b.model) || byName(a.task_type ?? '', b.task_type ?? ''));
  return stats;
}

/** review-stats.ts's rows, in its order (most reviews first, then by model). */
function reviewerRows(c: AttemptColumns, s: Scan): ReviewerStats[] {
  const reviews: ReviewerStats[] = [...s.reviewers].map(([m, r]) => ({
    model: str(c, m),
    reviews: r.reviews,
    approve: r.approve,
    changes: r.changes,
    reject: r.reject,
    errors: r.errors,
    engines: [...r.engines].map((e) => c.strings[e] as string).sort(),
    last_seen: maxText(r.lastMs, r.lastText),
  }));
  reviews.sort((a, b) => b.reviews - a.reviews || byName(a.model, b.model));
  return reviews;
}

/** won-stats.ts's rows, in its order (by model, then task type). */
function wonRows(c: AttemptColumns, s: Scan): WonStats[] {
  const wonBy = new Map<number, { groups: number; won: number; lost: number }>();
  for (const key of s.took) {
    const g = Math.floor(key / s.B);
    const w = wonBy.get(g) ?? { groups: 0, won: 0, lost: 0 };
    w.groups++;
    if (s.wonKeys.has(key)) w.won++;
    if (s.lostKeys.has(key)) w.lost++;
    wonBy.set(g, w);
  }
  const won: WonStats[] = [...wonBy].map(([g, w]) => {
    const [m, t] = c.groups[g] as [number, number];
    return { model: str(c, m), task_type: str(c, t) || null, groups: w.groups, won: w.won, lost_consensus: w.lost };
  });
  won.sort((a, b) => byName(a.model, b.model) || byName(a.task_type ?? '', b.task_type ?? ''));
  return won;
}

/**
 * The median of `xs` (not empty; reordered in place): the middle value, or the mean of the two middle values for an
 * even count — what the SQL's AVG over rows (cnt + 1) / 2 and (cnt + 2) / 2 gives. Quickselect: O(n), no full sort.
 */
function median(xs: Float64Array): number {
  const n = xs.length;
  const hi = select(xs, Math.floor(n / 2));
  if (n % 2) return hi;
  // The lower middle is the largest value left of the upper one after the selection.
  let lo = -Infinity;
  for (let i = 0; i < Math.floor(n / 2); i++) if ((xs[i] as number) > lo) lo = xs[i] as number;
  return (lo + hi) / 2;
}

/** The k-th smallest value of `xs` (0-based), leaving smaller values before index k and larger after (Hoare partition). */
function select(xs: Float64Array, k: number): number {
  let left = 0;
  let right = xs.length - 1;
  while (left < right) {
    const pivot = xs[(left + right) >> 1] as number;
    let i = left;
    let j = right;
    while (i <= j) {
      while ((xs[i] as number) < pivot) i++;
      while ((xs[j] as number) > pivot) j--;
      if (i <= j) {
        const t = xs[i] as number;
        xs[i] = xs[j] as number;
        xs[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) right = j;
    else if (k >= i) left = i;
    else return xs[k] as number;
  }
  return xs[k] as number;
}
