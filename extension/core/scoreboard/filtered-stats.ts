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
  const since = filter.sinceIso ?? null;
  const sinceMs = since !== null && CANONICAL_ISO.test(since) ? Date.parse(since) : NaN;
  /** ended_at >= since, as strings (canonical ISO strings of one length order as their times). */
  const endedAtLeast = (i: number): boolean => {
    const ms = c.ended[i] as number;
    if (!Number.isNaN(ms) && !Number.isNaN(sinceMs)) return ms >= sinceMs;
    const text = Number.isNaN(ms) ? c.endedText[i] : new Date(ms).toISOString();
    return text !== undefined && text >= (since as string);
  };

  const G = c.groups.length;
  const work = new Uint8Array(G);
  const attempts = new Float64Array(G);
  const errors = new Float64Array(G);
  const rateLimits = new Float64Array(G);
  const other = new Float64Array(G);
  const lastMs = new Float64Array(G).fill(-Infinity);
  const lastText: (string | undefined)[] = new Array(G);
  const lab = new Int32Array(G).fill(-1);
  const E = c.strings.length;
  const engineSeen = new Uint8Array(G * E);
  const valueCols = [c.duration, c.tokens, c.cost];
  /** Judged work rows selected, and per (column, group) how many known values they hold. */
  const judged = new Int32Array(c.rows);
  let judgedCount = 0;
  const counts = new Int32Array(3 * G);
  const firstJudged = new Float64Array(c.units).fill(Infinity);
  const firstPass = new Float64Array(c.units).fill(Infinity);
  const unitGroup = new Int32Array(c.units).fill(-1);
  const reviewers = new Map<number, { reviews: number; approve: number; changes: number; reject: number; errors: number; engines: Set<number>; lastMs: number; lastText: string | undefined }>();
  const took = new Set<number>();
  const wonKeys = new Set<number>();
  const lostKeys = new Set<number>();
  const B = c.bestOfs + 1;
  // The candidates consensus decided against, by best-of-N group, from every select row (filters do not apply: what
  // is filtered is the losing candidate's work row, as in won-stats.ts).
  const outvotedBy = new Map<number, number>();
  for (let i = 0; i < c.rows; i++) if (c.step[i] === 2 && (c.bestOf[i] as number) >= 0 && c.outvoted[i]) outvotedBy.set(c.bestOf[i] as number, c.outvoted[i] as number);

  for (let i = 0; i < c.rows; i++) {
    if (engineId >= 0 && c.engine[i] !== engineId) continue;
    if (since !== null && !endedAtLeast(i)) continue;
    const g = c.group[i] as number;
    const step = c.step[i];
    if (step === 0) {
      work[g] = 1;
      const v = c.verdict[i] as number;
      if (v <= 2) {
        attempts[g]!++;
        const u = c.unit[i] as number;
        unitGroup[u] = g;
        const ord = c.ord[i] as number;
        if (ord < (firstJudged[u] as number)) firstJudged[u] = ord;
        if (v === 0 && ord < (firstPass[u] as number)) firstPass[u] = ord;
        judged[judgedCount++] = i;
        for (let k = 0; k < 3; k++) if (!Number.isNaN((valueCols[k] as Float64Array)[i] as number)) counts[k * G + g]!++;
      } else if (v === 3) errors[g]!++;
      else if (v === 4) rateLimits[g]!++;
      else other[g]!++;
      noteLast(i, g);
      const l = c.lab[i] as number;
      if (l >= 0 && (lab[g] === -1 || (c.strings[l] as string) > (c.strings[lab[g] as number] as string))) lab[g] = l;
      engineSeen[g * E + (c.engine[i] as number)] = 1;
      if ((c.bestOf[i] as number) >= 0 && c.candidate[i]) took.add(g * B + (c.bestOf[i] as number));
      const mask = outvotedBy.get(c.bestOf[i] as number);
      if (mask !== undefined && v === 0 && c.candidate[i] && Math.floor(mask / 2 ** ((c.candidate[i] as number) - 1)) % 2 === 1) lostKeys.add(g * B + (c.bestOf[i] as number));
    } else if (step === 1) {
      const m = (c.groups[g] as [number, number])[0];
      let r = reviewers.get(m);
      if (!r) reviewers.set(m, (r = { reviews: 0, approve: 0, changes: 0, reject: 0, errors: 0, engines: new Set(), lastMs: -Infinity, lastText: undefined }));
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
    } else if (step === 2 && (c.bestOf[i] as number) >= 0) wonKeys.add(g * B + (c.bestOf[i] as number));
  }

  function noteLast(i: number, g: number): void {
    const ms = c.ended[i] as number;
    if (!Number.isNaN(ms)) {
      if (ms > (lastMs[g] as number)) lastMs[g] = ms;
    } else {
      const t = c.endedText[i];
      if (t !== undefined && (lastText[g] === undefined || t > (lastText[g] as string))) lastText[g] = t;
    }
  }
  const maxText = (ms: number, text: string | undefined): string | null => {
    const a = ms === -Infinity ? undefined : new Date(ms).toISOString();
    if (a === undefined) return text ?? null;
    return text !== undefined && text > a ? text : a;
  };

  const tasks = new Float64Array(G);
  const passed = new Float64Array(G);
  const firstTry = new Float64Array(G);
  for (let u = 0; u < c.units; u++) {
    const g = unitGroup[u] as number;
    if (g < 0) continue;
    const fj = firstJudged[u] as number;
    const fp = firstPass[u] as number;
    tasks[g]!++;
    if (fp !== Infinity) passed[g]!++;
    if (fp === fj) firstTry[g]!++;
  }
  // Each column's known values grouped by group (offsets from the counts), then each group's median by selection.
  const medians = valueCols.map((col, k) => {
    const start = new Int32Array(G + 1);
    for (let g = 0; g < G; g++) start[g + 1] = (start[g] as number) + (counts[k * G + g] as number);
    const fill = start.slice(0, G);
    const vals = new Float64Array(start[G] as number);
    for (let j = 0; j < judgedCount; j++) {
      const i = judged[j] as number;
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

  const str = (id: number): string | null => (id < 0 ? null : (c.strings[id] as string));
  const enginesOf = (g: number): string[] => {
    const out: string[] = [];
    for (let e = 0; e < E; e++) if (engineSeen[g * E + e]) out.push(c.strings[e] as string);
    return out.sort();
  };
  const stats: GroupStats[] = [];
  for (let g = 0; g < G; g++) {
    if (!work[g]) continue;
    const [m, t] = c.groups[g] as [number, number];
    const n = tasks[g] as number;
    const cost = medians[2]![g] ?? null;
    stats.push({
      model: str(m),
      task_type: str(t) || null,
      tasks: n,
      attempts: attempts[g] as number,
      passed: passed[g] as number,
      first_try: firstTry[g] as number,
      pass_rate: n ? (passed[g] as number) / n : null,
      first_try_pass_rate: n ? (firstTry[g] as number) / n : null,
      median_duration_ms: medians[0]![g] ?? null,
      median_tokens: medians[1]![g] ?? null,
      median_cost_microusd: cost === null ? null : Math.round(cost),
      errors: errors[g] as number,
      rate_limits: rateLimits[g] as number,
      other: other[g] as number,
      last_seen: maxText(lastMs[g] as number, lastText[g]),
      engines: enginesOf(g),
      lab: str(lab[g] as number),
    });
  }
  // SQL's order: GROUP BY model, task_type (NULL model first; '' before other task types).
  const byName = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? -1 : b === null ? 1 : a < b ? -1 : 1);
  stats.sort((a, b) => byName(a.model, b.model) || byName(a.task_type ?? '', b.task_type ?? ''));

  const reviews: ReviewerStats[] = [...reviewers].map(([m, r]) => ({ model: str(m), reviews: r.reviews, approve: r.approve, changes: r.changes, reject: r.reject, errors: r.errors, engines: [...r.engines].map((e) => c.strings[e] as string).sort(), last_seen: maxText(r.lastMs, r.lastText) }));
  reviews.sort((a, b) => b.reviews - a.reviews || byName(a.model, b.model));

  const wonBy = new Map<number, { groups: number; won: number; lost: number }>();
  for (const key of took) {
    const g = Math.floor(key / B);
    const w = wonBy.get(g) ?? { groups: 0, won: 0, lost: 0 };
    w.groups++;
    if (wonKeys.has(key)) w.won++;
    if (lostKeys.has(key)) w.lost++;
    wonBy.set(g, w);
  }
  const won: WonStats[] = [...wonBy].map(([g, w]) => {
    const [m, t] = c.groups[g] as [number, number];
    return { model: str(m), task_type: str(t) || null, groups: w.groups, won: w.won, lost_consensus: w.lost };
  });
  won.sort((a, b) => byName(a.model, b.model) || byName(a.task_type ?? '', b.task_type ?? ''));
  return { stats, reviews, won };
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
