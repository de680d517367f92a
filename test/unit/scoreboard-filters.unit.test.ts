import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { indexGroupStats, loadScoreboard, openScoreboardIndex } from '../../extension/core/scoreboard/load';
import { tierOf } from '../../extension/core/scoreboard/view';
import type { ScoreboardFilters } from '../../extension/core/scoreboard/view';
import { tempDir } from '../helpers/fixtures';

/** A seeded generator (the same rows every run). */
function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

const DAY = 86_400_000;
const START = Date.UTC(2026, 0, 1);

/**
 * Random eval rows: several engines per task (fallbacks), tasks whose attempts span days, every verdict, unknown
 * durations, tokens and costs, review and select rows, best-of-N candidates, and ended_at in other forms than
 * toISOString's (no milliseconds, an offset) or missing, and a few rows of runs forced over lint errors.
 */
function randomRows(n: number, seed: number): Record<string, unknown>[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const rows: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const model = pick(['a/m1', 'a/m2', 'b/m3', 'zeta', null]);
    const ms = START + Math.floor(r() * 10 * DAY);
    const iso = new Date(ms).toISOString();
    const endedForm = r();
    const ended_at = endedForm < 0.05 ? null : endedForm < 0.1 ? iso.replace(/\.\d{3}Z$/, 'Z') : endedForm < 0.13 ? iso.replace(/\.\d{3}Z$/, '+01:00') : iso;
    const stepDraw = r();
    const step = stepDraw < 0.85 ? 'work' : stepDraw < 0.95 ? 'review' : 'select';
    const row: Record<string, unknown> = {
      run_id: `r${Math.floor(r() * 20)}`,
      task_key: `t${Math.floor(r() * 30)}`,
      spec: 's',
      worker_engine: pick(['codex', 'opencode', 'claude']),
      verdict: pick(['PASS', 'PASS', 'FAIL', 'TIMEOUT', 'ERROR', 'RATE_LIMITED', 'CANCELLED']),
      duration_ms: r() < 0.1 ? null : Math.floor(r() * 100_000),
      worker_tokens: r() < 0.15 ? null : Math.floor(r() * 50_000),
      model,
      task_type: pick(['parser', 'ui', null]),
      retry: false,
      identity: 'me',
      notes: '',
      attempt: 1 + Math.floor(r() * 3),
      harness: 'h',
      lab: model?.includes('/') ? model.split('/')[0] : r() < 0.5 ? 'x' : null,
      reported_model: null,
      cost_microusd: r() < 0.3 ? null : Math.floor(r() * 10_000),
      ended_at,
      step,
    };
    if (step === 'review') row.review = { reviewer: 1, verdict: pick(['approve', 'changes', 'reject', undefined]) };
    if (step !== 'review' && r() < 0.3) row.group = `g${Math.floor(r() * 4)}`;
    if (step === 'work' && row.group && r() < 0.8) row.candidate = 1 + Math.floor(r() * 3);
    if (r() < 0.05) row.forced = true;
    rows.push(row);
  }
  return rows;
}

const writeLog = (home: string, rows: object[]) => fs.writeFileSync(path.join(home, 'runs.jsonl'), rows.map((x) => JSON.stringify(x) + '\n').join(''));

/** The filter applied to the raw rows, as the issue defines it: the exact engine, ended_at at or after the date. */
function keep(row: Record<string, unknown>, f: ScoreboardFilters): boolean {
  if (f.engine && row.worker_engine !== f.engine) return false;
  if (f.since) {
    const ended = row.ended_at as string | null;
    if (ended === null || ended < new Date(f.since).toISOString()) return false;
  }
  return true;
}

/** The figures of a task's first try, which a filter does not change (a retry stays a retry): compared apart. */
const FIRST_TRY = ['first_tries', 'first_try', 'first_try_pass_rate', 'tier'] as const;

/**
 * A view without the first-try figures (in its rows and in every other list of figures it holds, the quarantined
 * ones too), its rows in model and task type order.
 */
function withoutFirstTry(view: object): Record<string, unknown> {
  const strip = (x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).filter(([k]) => !(FIRST_TRY as readonly string[]).includes(k))) : x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(view)) out[k] = Array.isArray(v) ? v.map(strip) : v;
  const name = (r: unknown) => `${String((r as { model?: unknown }).model)}|${String((r as { task_type?: unknown }).task_type)}`;
  out.rows = (out.rows as unknown[]).slice().sort((a, b) => name(a).localeCompare(name(b)));
  return out;
}

/**
 * The unfiltered scoreboard of a log holding only the rows the filter keeps: the brute-force answer for every figure
 * but the first-try ones (withoutFirstTry), which look at the task's rows the filter drops too (firstTryOracle).
 */
async function bruteForce(rows: Record<string, unknown>[], f: ScoreboardFilters) {
  const home = tempDir();
  writeLog(
    home,
    rows.filter((x) => keep(x, f)),
  );
  const { view, source } = await loadScoreboard({ home });
  return { view: withoutFirstTry({ ...view, filters: f }), rows: source.rows };
}

/**
 * The first-try figures by hand: per (model, task type), over the rows the filter keeps, the tasks whose first judged
 * work row of any model (over every row, kept or not) is the group's first judged one, and of those the ones it passed.
 */
function firstTryOracle(rows: Record<string, unknown>[], f: ScoreboardFilters): Record<string, unknown>[] {
  const judged = (x: Record<string, unknown>) => ['PASS', 'FAIL', 'TIMEOUT'].includes(String(x.verdict));
  const work = rows.filter((x) => (x.step ?? 'work') === 'work' && x.forced !== true);
  const taskFirst = new Map<string, number>();
  for (const x of work.filter(judged)) {
    const t = `${String(x.run_id)}|${String(x.task_key)}`;
    taskFirst.set(t, Math.min(taskFirst.get(t) ?? Infinity, x.attempt as number));
  }
  const units = new Map<string, { group: string; task: string; judged: number; pass: number }>();
  for (const x of work.filter((y) => keep(y, f))) {
    const group = `${String(x.model)}|${String(x.task_type ?? null)}`;
    const task = `${String(x.run_id)}|${String(x.task_key)}`;
    const u = units.get(`${group}|${task}`) ?? { group, task, judged: Infinity, pass: Infinity };
    if (judged(x)) u.judged = Math.min(u.judged, x.attempt as number);
    if (x.verdict === 'PASS') u.pass = Math.min(u.pass, x.attempt as number);
    units.set(`${group}|${task}`, u);
  }
  const groups = new Map<string, { tasks: number; first_tries: number; first_try: number }>();
  for (const u of units.values()) {
    if (u.judged === Infinity) continue;
    const g = groups.get(u.group) ?? { tasks: 0, first_tries: 0, first_try: 0 };
    g.tasks++;
    if (u.judged === taskFirst.get(u.task)) {
      g.first_tries++;
      if (u.pass === u.judged) g.first_try++;
    }
    groups.set(u.group, g);
  }
  return [...groups.entries()]
    .filter(([k]) => !k.startsWith('null|'))
    .map(([k, g]) => {
      const rate = g.first_tries ? g.first_try / g.first_tries : null;
      return {
        group: k,
        first_tries: g.first_tries,
        first_try: g.first_try,
        first_try_pass_rate: rate,
        tier: tierOf({ first_tries: g.first_tries, first_try_pass_rate: rate }),
      };
    })
    .sort((a, b) => a.group.localeCompare(b.group));
}

/** The first-try figures of a view's rows, as firstTryOracle gives them. */
const firstTryOf = (rows: readonly object[]) =>
  (rows as readonly Record<string, unknown>[])
    .map((r) => ({ group: `${String(r.model)}|${String(r.task_type)}`, ...Object.fromEntries(FIRST_TRY.map((k) => [k, r[k]])) }))
    .sort((a, b) => a.group.localeCompare(b.group));

const FILTERS: ScoreboardFilters[] = [
  { engine: 'codex' },
  { engine: 'opencode' },
  { engine: 'nobody' },
  { since: '2026-01-04' },
  { since: '2026-01-05T12:34:56.789Z' },
  { since: '2026-01-06T00:00:00+01:00' },
  { since: '2027-01-01' },
  { engine: 'claude', since: '2026-01-03' },
  { engine: 'codex', since: '2026-01-07T08:00:00.000Z' },
];

describe('scoreboard filters (--engine, --since) over the columns cache', function () {
  this.timeout(120000);

  it('equal, figure for figure (medians exact), the unfiltered scoreboard of the rows the filter keeps: 3,000 random rows', async () => {
    const rows = randomRows(3000, 7);
    const home = tempDir();
    writeLog(home, rows);
    for (const f of FILTERS) {
      const fast = await loadScoreboard({ home, filters: f });
      const slow = await bruteForce(rows, f);
      assert.deepEqual(withoutFirstTry(fast.view), slow.view, `filters ${JSON.stringify(f)}`);
      assert.deepEqual(firstTryOf(fast.view.rows), firstTryOracle(rows, f), `first tries, filters ${JSON.stringify(f)}`);
      // The SQL over the index (as the Postgres path computes it) gives the same first-try figures.
      const index = await openScoreboardIndex(home);
      try {
        const sql = indexGroupStats(index, f).filter((g) => g.model !== null && g.tasks > 0);
        assert.deepEqual(firstTryOf(sql.map((g) => ({ ...g, tier: tierOf(g) }))), firstTryOf(fast.view.rows), `SQL, filters ${JSON.stringify(f)}`);
      } finally {
        index.close();
      }
      assert.equal(fast.source.rows, slow.rows, `attempt count, filters ${JSON.stringify(f)}`);
      if (f.engine !== 'nobody' && f.since !== '2027-01-01')
        assert.ok(fast.view.rows.length > 0, `filters ${JSON.stringify(f)} selected nothing: the test would prove little`);
    }
    // The second time the columns come from their file (the index is not opened): the same answers.
    for (const f of FILTERS.slice(0, 3)) assert.deepEqual(withoutFirstTry((await loadScoreboard({ home, filters: f })).view), (await bruteForce(rows, f)).view);
    assert.ok(fs.existsSync(path.join(home, 'verdict.sqlite.columns')));
  });

  it('after rows are appended the columns are extended, and after the log is replaced they are rebuilt: still equal', async () => {
    const rows = randomRows(1500, 11);
    const home = tempDir();
    writeLog(home, rows);
    const f: ScoreboardFilters = { engine: 'codex', since: '2026-01-03' };
    await loadScoreboard({ home, filters: f });
    const more = randomRows(700, 12);
    fs.appendFileSync(path.join(home, 'runs.jsonl'), more.map((x) => JSON.stringify(x) + '\n').join(''));
    assert.deepEqual(withoutFirstTry((await loadScoreboard({ home, filters: f })).view), (await bruteForce([...rows, ...more], f)).view);
    assert.deepEqual(firstTryOf((await loadScoreboard({ home, filters: f })).view.rows), firstTryOracle([...rows, ...more], f));
    const other = randomRows(900, 13);
    writeLog(home, other);
    assert.deepEqual(withoutFirstTry((await loadScoreboard({ home, filters: f })).view), (await bruteForce(other, f)).view);
    assert.deepEqual(firstTryOf((await loadScoreboard({ home, filters: f })).view.rows), firstTryOracle(other, f));
  });

  it('rows of runs forced over lint errors are never evidence: every figure equals the log without them, counted apart', async () => {
    const rows = randomRows(2000, 31);
    const forced = rows.filter((x) => x.forced === true).length;
    assert.ok(forced > 20, `only ${forced} forced rows: the test would prove little`);
    const home = tempDir();
    writeLog(home, rows);
    const clean = tempDir();
    writeLog(
      clean,
      rows.filter((x) => x.forced !== true),
    );
    for (const f of [{}, { engine: 'codex' }, { since: '2026-01-04' }] as ScoreboardFilters[]) {
      const got = await loadScoreboard({ home, filters: f });
      const want = await loadScoreboard({ home: clean, filters: f });
      assert.deepEqual(got.view, want.view, `filters ${JSON.stringify(f)}`);
      assert.equal(got.source.rows, want.source.rows);
      assert.equal(got.source.forced, forced, `forced count, filters ${JSON.stringify(f)}`);
      assert.equal(want.source.forced, 0);
    }
    // A forced PASS alone: the model has no evidence at all, not a pass.
    const lone = tempDir();
    writeLog(lone, [
      {
        run_id: 'r',
        task_key: 't',
        spec: 's',
        worker_engine: 'codex',
        verdict: 'PASS',
        model: 'm',
        task_type: 'x',
        attempt: 1,
        harness: 'h',
        cost_microusd: 5,
        forced: true,
      },
    ]);
    const only = await loadScoreboard({ home: lone });
    assert.deepEqual(only.view.rows, []);
    assert.equal(only.source.forced, 1);
    // The second read comes from the cached aggregates: the same count.
    assert.equal((await loadScoreboard({ home: lone })).source.forced, 1);
  });

  it('a damaged columns file is only a cache: rebuilt from the index, same answer', async () => {
    const rows = randomRows(800, 21);
    const home = tempDir();
    writeLog(home, rows);
    const f: ScoreboardFilters = { engine: 'opencode' };
    await loadScoreboard({ home, filters: f });
    fs.writeFileSync(path.join(home, 'verdict.sqlite.columns'), 'garbage');
    const again = (await loadScoreboard({ home, filters: f })).view;
    assert.deepEqual(withoutFirstTry(again), (await bruteForce(rows, f)).view);
    assert.deepEqual(firstTryOf(again.rows), firstTryOracle(rows, f));
  });
});
