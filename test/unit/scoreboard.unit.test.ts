import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { loadScoreboard, openScoreboardIndex } from '../../extension/core/scoreboard/load';
import { dashboardScoreboard } from '../../extension/core/dashboard/scoreboard';
import { scoreboardView, tierOf } from '../../extension/core/scoreboard/view';
import { parseCatalog } from '../../extension/core/catalog/openrouter';
import { EvalIndex } from '../../extension/core/store/sqlite-index';
import { appendEvalRow } from '../../extension/core/store/eval-log';
import { sampleRow, tempDir } from '../helpers/fixtures';

const FIXTURES = path.resolve('test/fixtures/scoreboard');
const catalogA = () => parseCatalog(JSON.parse(fs.readFileSync(path.join(FIXTURES, 'catalog-a.json'), 'utf8')), 'catalog-a.json');

let clock = 0;
/** A Verdict-format eval row with the fields the scoreboard reads; ended_at increases row by row. */
function row(
  run: string,
  key: string,
  attempt: number,
  verdict: string,
  model: string | null,
  taskType: string | null,
  engine: string,
  dur: number,
  tokens: number | null,
  cost: number | null,
) {
  clock++;
  return {
    run_id: run,
    task_key: key,
    spec: 's',
    worker_engine: engine,
    verdict,
    duration_ms: dur,
    worker_tokens: tokens,
    model,
    task_type: taskType,
    retry: attempt > 1,
    identity: 'me',
    notes: '',
    attempt,
    harness: engine,
    lab: model?.includes('/') ? model.split('/')[0] : null,
    reported_model: null,
    tokens_in: null,
    tokens_out: null,
    cost_microusd: cost,
    ended_at: `2026-01-01T00:00:${String(clock).padStart(2, '0')}.000Z`,
  };
}

/**
 * The generated log, with the figures computed by hand:
 * lab/alpha × parser (codex): t1 PASS; t2 FAIL then PASS (rescued: not first-try); t3 PASS; t4 RATE_LIMITED then PASS
 *   (a rate limit is not the model's attempt: first-try); t5 ERROR only (no judged attempt: not a task).
 *   tasks 4, passed 4, first-try 3 → 0.75, proven. Judged attempts 5: durations 100..500 → median 300, tokens
 *   median 30, cost median 3000. errors 1, rate limits 1.
 * beta × parser (opencode): t1 PASS, t2 PASS, t3 FAIL, FAIL → tasks 3, first-try 2/3 = 0.666… < 0.67: probation.
 *   Durations 10, 20, 30, 40 → median 25; tokens 1, 2, (unknown), 4 → median 2; cost unknown → null.
 * beta × ui (opencode): t1 TIMEOUT then PASS → 1 task, pass 100 %, first-try 0 %.
 * No stamped model (codex): one PASS → quarantined, never credited to codex's default.
 */
function generatedLog(): object[] {
  clock = 0;
  return [
    row('r1', 't1', 1, 'PASS', 'lab/alpha', 'parser', 'codex', 100, 10, 1000),
    row('r1', 't2', 1, 'FAIL', 'lab/alpha', 'parser', 'codex', 200, 20, 2000),
    row('r1', 't2', 2, 'PASS', 'lab/alpha', 'parser', 'codex', 300, 30, 3000),
    row('r1', 't3', 1, 'PASS', 'lab/alpha', 'parser', 'codex', 400, 40, 4000),
    row('r1', 't4', 1, 'RATE_LIMITED', 'lab/alpha', 'parser', 'codex', 5, null, null),
    row('r1', 't4', 2, 'PASS', 'lab/alpha', 'parser', 'codex', 500, 50, 5000),
    row('r1', 't5', 1, 'ERROR', 'lab/alpha', 'parser', 'codex', 7, null, null),
    row('r2', 't1', 1, 'PASS', 'beta', 'parser', 'opencode', 10, 1, null),
    row('r2', 't2', 1, 'PASS', 'beta', 'parser', 'opencode', 20, 2, null),
    row('r2', 't3', 1, 'FAIL', 'beta', 'parser', 'opencode', 30, null, null),
    row('r2', 't3', 2, 'FAIL', 'beta', 'parser', 'opencode', 40, 4, null),
    row('r2', 'u1', 1, 'TIMEOUT', 'beta', 'ui', 'opencode', 60, 6, null),
    row('r2', 'u1', 2, 'PASS', 'beta', 'ui', 'opencode', 70, 7, null),
    row('r3', 'q1', 1, 'PASS', null, 'parser', 'codex', 1, 1, null),
  ];
}

function writeLog(file: string, rows: object[]): void {
  fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

describe('scoreboard (unit)', () => {
  it('computes every figure of the generated log as computed by hand', async () => {
    const home = tempDir();
    writeLog(path.join(home, 'runs.jsonl'), generatedLog());
    const { view, source } = await loadScoreboard({ home });
    assert.equal(source.rows, 14);
    const key = (r: { model: string; task_type: string | null }) => `${r.model}|${r.task_type}`;
    assert.deepEqual(view.rows.map(key), ['lab/alpha|parser', 'beta|parser', 'beta|ui']);
    const alpha = view.rows[0]!;
    assert.deepEqual(
      {
        tier: alpha.tier,
        tasks: alpha.tasks,
        attempts: alpha.attempts,
        passed: alpha.passed,
        first_try: alpha.first_try,
        pass: alpha.pass_rate,
        ft: alpha.first_try_pass_rate,
        d: alpha.median_duration_ms,
        t: alpha.median_tokens,
        c: alpha.median_cost_microusd,
        e: alpha.errors,
        rl: alpha.rate_limits,
        seen: alpha.last_seen,
        lab: alpha.lab,
      },
      {
        tier: 'proven',
        tasks: 4,
        attempts: 5,
        passed: 4,
        first_try: 3,
        pass: 1,
        ft: 0.75,
        d: 300,
        t: 30,
        c: 3000,
        e: 1,
        rl: 1,
        seen: '2026-01-01T00:00:07.000Z',
        lab: 'lab',
      },
    );
    const beta = view.rows.find((r) => key(r) === 'beta|parser')!;
    assert.deepEqual(
      {
        tier: beta.tier,
        tasks: beta.tasks,
        attempts: beta.attempts,
        passed: beta.passed,
        first_try: beta.first_try,
        d: beta.median_duration_ms,
        t: beta.median_tokens,
        c: beta.median_cost_microusd,
      },
      { tier: 'probation', tasks: 3, attempts: 4, passed: 2, first_try: 2, d: 25, t: 2, c: null },
    );
    assert.equal(beta.pass_rate, 2 / 3);
    const ui = view.rows.find((r) => key(r) === 'beta|ui')!;
    assert.deepEqual([ui.tasks, ui.pass_rate, ui.first_try_pass_rate, ui.tier], [1, 1, 0, 'probation']);
    assert.equal(view.quarantined.length, 1);
    assert.deepEqual([view.quarantined[0]!.model, view.quarantined[0]!.tasks, view.quarantined[0]!.engines], [null, 1, ['codex']]);
    assert.ok(!view.rows.some((r) => r.engines.includes('codex') && r.model !== 'lab/alpha'), 'the unstamped row is credited to no model');
    assert.deepEqual(view.errors, [{ model: 'lab/alpha', task_type: 'parser', errors: 1, rate_limits: 1, engines: ['codex'] }]);
    assert.deepEqual(view.totals, { tasks: 8, attempts: 11, errors: 1, rate_limits: 1, quarantined_attempts: 1 });
    assert.deepEqual(view.task_types, ['parser', 'ui']);
    assert.deepEqual(view.models, ['beta', 'lab/alpha']);
  });

  it('applies filters: task type and model on the aggregates, engine and since while aggregating', async () => {
    const home = tempDir();
    writeLog(path.join(home, 'runs.jsonl'), generatedLog());
    const byType = (await loadScoreboard({ home, filters: { taskType: 'ui' } })).view;
    assert.deepEqual(
      byType.rows.map((r) => r.model),
      ['beta'],
    );
    const byModel = (await loadScoreboard({ home, filters: { model: 'ALPHA' } })).view;
    assert.deepEqual(
      byModel.rows.map((r) => r.model),
      ['lab/alpha'],
    );
    const byEngine = (await loadScoreboard({ home, filters: { engine: 'opencode' } })).view;
    assert.deepEqual(byEngine.rows.map((r) => `${r.model}|${r.task_type}`).sort(), ['beta|parser', 'beta|ui']);
    // since the 10th row: beta's t3 second attempt (FAIL) and the ui task remain; t3's first attempt is gone, so
    // the remaining FAIL is t3's first judged attempt in this window.
    const since = (await loadScoreboard({ home, filters: { since: '2026-01-01T00:00:11Z' } })).view;
    const p = since.rows.find((r) => r.task_type === 'parser')!;
    assert.deepEqual([p.model, p.tasks, p.attempts, p.passed], ['beta', 1, 1, 0]);
    await assert.rejects(loadScoreboard({ home, filters: { since: 'yesterday-ish' } }), /since: "yesterday-ish" is not a date/);
  });

  it("a retry moved to another model (auto's retry rule, a fallback) is not that model's first try, filtered or not; a rate limit moved is", async () => {
    const home = tempDir();
    clock = 0;
    // x: a FAILs, the retry moves to b and PASSes. y: a is rate-limited, the task moves to b, which PASSes at its first
    // judged attempt. z: b PASSes at once. Counting per model alone, x's PASS was b's first try (3 of 3: proven).
    writeLog(path.join(home, 'runs.jsonl'), [
      row('r9', 'x', 1, 'FAIL', 'lab/a', 'ui', 'eng-a', 10, 1, 100),
      row('r9', 'x', 2, 'PASS', 'lab/b', 'ui', 'eng-b', 10, 1, 100),
      row('r9', 'y', 1, 'RATE_LIMITED', 'lab/a', 'ui', 'eng-a', 1, null, null),
      row('r9', 'y', 2, 'PASS', 'lab/b', 'ui', 'eng-b', 10, 1, 100),
      row('r9', 'z', 1, 'PASS', 'lab/b', 'ui', 'eng-b', 10, 1, 100),
    ]);
    const figures = (
      rows: { model: string; tasks: number; passed: number; first_tries: number; first_try: number; first_try_pass_rate: number | null; tier: string }[],
    ) => rows.map((r) => [r.model, r.tasks, r.passed, r.first_tries, r.first_try, r.first_try_pass_rate, r.tier]);
    const all = (await loadScoreboard({ home })).view.rows;
    assert.deepEqual(figures(all), [
      ['lab/b', 3, 3, 2, 2, 1, 'probation'],
      ['lab/a', 1, 0, 1, 0, 0, 'probation'],
    ]);
    // Filtered to b's engine (the scan over the columns, not the materialized SQL): a's FAIL still makes x a retry.
    const onB = (await loadScoreboard({ home, filters: { engine: 'eng-b' } })).view.rows;
    assert.deepEqual(figures(onB), [['lab/b', 3, 3, 2, 2, 1, 'probation']]);
  });

  it('proven needs 3 first tries and first_try ≥ 0.67 (2 of 3 is not enough)', () => {
    assert.equal(tierOf({ first_tries: 3, first_try_pass_rate: 1 }), 'proven');
    assert.equal(tierOf({ first_tries: 3, first_try_pass_rate: 2 / 3 }), 'probation');
    assert.equal(tierOf({ first_tries: 2, first_try_pass_rate: 1 }), 'probation');
    assert.equal(tierOf({ first_tries: 100, first_try_pass_rate: 0.67 }), 'proven');
  });

  it('suggests untested catalog models: text→text, ≥ 32k context, unseen, free first then cheapest, at most 10', async () => {
    const home = tempDir();
    writeLog(path.join(home, 'runs.jsonl'), generatedLog());
    const { view } = await loadScoreboard({ home });
    const withCatalog = scoreboardView([...view.rows, ...view.quarantined], catalogA());
    // lab/alpha is in the log; img/gen is text→image; small/ctx has 8k context; cheap/two takes images (not text→text).
    assert.deepEqual(
      withCatalog.untested.map((u) => [u.model, u.free]),
      [
        ['free/one', true],
        ['pricey/three', false],
      ],
    );
    const many = Array.from({ length: 15 }, (_, i) => ({
      id: `m/${String(i).padStart(2, '0')}`,
      context_length: 32000,
      pricing: { prompt: String((15 - i) / 1e6), completion: '0' },
      architecture: { modality: 'text->text' },
    }));
    const u = scoreboardView([], many).untested;
    assert.equal(u.length, 10);
    assert.equal(u[0]!.model, 'm/14', 'cheapest first');
  });

  it('imports a Ringer-format log as it is', async () => {
    const home = tempDir();
    const { view, source } = await loadScoreboard({ home, logFile: path.join(FIXTURES, 'ringer-runs.jsonl') });
    assert.equal(source.corrupt, 0);
    assert.equal(view.rows.length, 1);
    const glm = view.rows[0]!;
    assert.deepEqual(
      {
        model: glm.model,
        type: glm.task_type,
        tasks: glm.tasks,
        attempts: glm.attempts,
        passed: glm.passed,
        ft: glm.first_try,
        d: glm.median_duration_ms,
        t: glm.median_tokens,
        e: glm.errors,
        tier: glm.tier,
        seen: glm.last_seen,
      },
      { model: 'glm-4.6', type: 'cli', tasks: 3, attempts: 4, passed: 3, ft: 2, d: 2500, t: 600, e: 1, tier: 'probation', seen: null },
    );
    assert.equal(view.quarantined[0]?.tasks, 1);
    assert.ok(fs.existsSync(path.join(home, 'index')), 'the index of another log lives under <home>/index/');
  });

  it('updates incrementally by byte offset, never reads a half-written line, skips and counts corrupt lines', async () => {
    const home = tempDir();
    const log = path.join(home, 'runs.jsonl');
    const rows = generatedLog();
    writeLog(log, rows.slice(0, 3));
    fs.appendFileSync(log, 'not json at all\n{"run_id": "r1"}\n');
    const half = JSON.stringify(rows[3]);
    fs.appendFileSync(log, half.slice(0, 20));
    let index = await openScoreboardIndex(home);
    assert.equal(Number(index.db.exec('SELECT COUNT(*) FROM attempts')[0]!.values[0]![0]), 3);
    assert.equal(index.corruptCount, 2);
    assert.deepEqual(
      index.corruptSamples().map((c) => c.line),
      [4, 5],
    );
    assert.match(index.corruptSamples()[1]!.reason, /field "task_key" is missing/);
    const offset = index.offset;
    assert.equal(offset, fs.statSync(log).size - 20, 'stops before the half-written line');
    index.close();
    fs.appendFileSync(log, half.slice(20) + '\n');
    index = await openScoreboardIndex(home);
    assert.equal(Number(index.db.exec('SELECT COUNT(*) FROM attempts')[0]!.values[0]![0]), 4);
    assert.equal(index.corruptCount, 2, 'corrupt lines are counted once');
    index.close();
    // Unchanged log: the stored index is used as it is.
    const before = fs.statSync(path.join(home, 'verdict.sqlite')).mtimeMs;
    (await openScoreboardIndex(home)).close();
    assert.equal(fs.statSync(path.join(home, 'verdict.sqlite')).mtimeMs, before);
    // A replaced log (another head) is rebuilt from byte 0.
    writeLog(log, rows.slice(7, 9));
    index = await openScoreboardIndex(home);
    assert.equal(Number(index.db.exec('SELECT COUNT(*) FROM attempts')[0]!.values[0]![0]), 2);
    assert.equal(index.corruptCount, 0);
    index.close();
  });

  it('review rows are not attempts: the figures do not move; each reviewing model gets its own line of verdicts', async () => {
    const home = tempDir();
    const review = (
      base: ReturnType<typeof row>,
      engine: string,
      model: string | null,
      reviewer: number,
      verdict: 'approve' | 'changes' | 'reject' | null,
    ) => ({
      ...base,
      worker_engine: engine,
      harness: engine,
      model,
      step: 'review',
      verdict: verdict === 'approve' ? 'PASS' : verdict === null ? 'ERROR' : 'FAIL',
      review: { reviewer, verdict, concerns: verdict === 'approve' || verdict === null ? [] : ['x'] },
    });
    const rows = generatedLog();
    const withReviews: object[] = [];
    clock = 100;
    for (const r of rows as ReturnType<typeof row>[]) {
      withReviews.push({ ...r, step: 'work' });
      if (r.verdict !== 'PASS' && r.verdict !== 'FAIL') continue;
      // Two reviewers of every judged attempt: claude approves a PASS and asks changes of a FAIL; gemini errs on r2.
      withReviews.push(
        review(
          row(r.run_id, r.task_key, r.attempt, '', null, r.task_type, '', 5, 7, 11),
          'claude',
          'rev/claude',
          1,
          r.verdict === 'PASS' ? 'approve' : 'changes',
        ),
      );
      withReviews.push(
        review(row(r.run_id, r.task_key, r.attempt, '', null, r.task_type, '', 5, 7, 11), 'gemini', 'rev/gemini', 2, r.run_id === 'r2' ? null : 'reject'),
      );
    }
    writeLog(path.join(home, 'runs.jsonl'), withReviews);
    const { view, source } = await loadScoreboard({ home });
    const plain = tempDir();
    writeLog(path.join(plain, 'runs.jsonl'), generatedLog());
    const expected = (await loadScoreboard({ home: plain })).view;
    // Every figure as without the reviews (last_seen aside: the review rows came later).
    const strip = (v: typeof view) => ({
      ...v,
      rows: v.rows.map((r) => ({ ...r, last_seen: null })),
      quarantined: v.quarantined.map((r) => ({ ...r, last_seen: null })),
      reviews: [],
    });
    assert.deepEqual(strip(view), strip(expected));
    assert.equal(source.rows, 14);
    assert.deepEqual(
      view.reviews.map((r) => [r.model, r.reviews, r.approve, r.changes, r.reject, r.errors, r.engines]),
      [
        ['rev/claude', 11, 8, 3, 0, 0, ['claude']],
        ['rev/gemini', 11, 0, 0, 6, 5, ['gemini']],
      ],
    );
    // From the cache (unchanged log) and filtered by engine and model, the same way.
    assert.deepEqual((await loadScoreboard({ home })).view.reviews, view.reviews);
    assert.deepEqual(
      (await loadScoreboard({ home, filters: { engine: 'gemini' } })).view.reviews.map((r) => r.model),
      ['rev/gemini'],
    );
    assert.deepEqual(
      (await loadScoreboard({ home, filters: { model: 'claude' } })).view.reviews.map((r) => r.model),
      ['rev/claude'],
    );
    assert.deepEqual((await loadScoreboard({ home, filters: { engine: 'gemini' } })).view.rows, []);
    // The dashboard gets the same lines (protocol ReviewerRow).
    const dash = await dashboardScoreboard(home);
    assert.deepEqual(dash.reviews, [
      { model: 'rev/claude', reviews: 11, approve: 8, changes: 3, reject: 0, errors: 0, engines: ['claude'] },
      { model: 'rev/gemini', reviews: 11, approve: 0, changes: 0, reject: 6, errors: 5, engines: ['gemini'] },
    ]);
    assert.match(dash.source, /\(14 attempts\)/);
  });

  it('an incremental update gives the same figures as a rebuild', async () => {
    const home = tempDir();
    const log = path.join(home, 'runs.jsonl');
    const rows = generatedLog();
    for (let i = 0; i < rows.length; i += 3) {
      fs.appendFileSync(
        log,
        rows
          .slice(i, i + 3)
          .map((r) => JSON.stringify(r) + '\n')
          .join(''),
      );
      (await openScoreboardIndex(home)).close();
    }
    const incremental = (await loadScoreboard({ home })).view;
    fs.rmSync(path.join(home, 'verdict.sqlite'));
    const rebuilt = (await loadScoreboard({ home })).view;
    assert.deepEqual(incremental, rebuilt);
    const mem = await EvalIndex.open(log, null);
    assert.equal(mem.update().added, 14);
    mem.close();
  });
});

describe('dashboard scoreboard over rows with no stamped model', () => {
  it("an empty scoreboard over a full log says how many attempts were set aside (the demo's script rows)", async () => {
    const home = tempDir();
    const log = path.join(home, 'runs.jsonl');
    for (let i = 1; i <= 3; i++) await appendEvalRow(log, sampleRow({ run_id: 'r1', task_key: `t${i}`, model: null, verdict: i === 3 ? 'FAIL' : 'PASS' }));
    const dash = await dashboardScoreboard(home);
    assert.deepEqual(dash.rows, []);
    assert.equal(dash.quarantined, 3);
    // One attempt with a model is scored; the others stay set aside.
    await appendEvalRow(log, sampleRow({ run_id: 'r2', task_key: 'm', model: 'openai/gpt-5-mini', worker_engine: 'codex' }));
    const again = await dashboardScoreboard(home);
    assert.deepEqual(
      again.rows.map((r) => r.model),
      ['openai/gpt-5-mini'],
    );
    assert.equal(again.quarantined, 3);
  });
});
