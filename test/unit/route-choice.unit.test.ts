import assert from 'node:assert/strict';
import type { RouteSpec } from '../../extension/core/manifest/types';
import type { GroupStats } from '../../extension/core/scoreboard/group-stats';
import { routeAttempt, routeColumn, type RoutableTask } from '../../extension/core/run/route-choice';

const row = (model: string, tasks: number, firstTry: number, cost: number): GroupStats => ({
  model,
  task_type: 'ui',
  tasks,
  attempts: tasks + tasks - firstTry,
  passed: firstTry,
  first_tries: tasks,
  first_try: firstTry,
  pass_rate: firstTry / tasks,
  first_try_pass_rate: firstTry / tasks,
  median_duration_ms: 1000,
  median_tokens: null,
  median_cost_microusd: cost,
  errors: 0,
  rate_limits: 0,
  other: 0,
  last_seen: null,
  engines: [],
  lab: null,
});
const SPEC: RouteSpec = {
  from: [
    { id: 'a:new', engine: 'a', model: 'new' },
    { id: 'b:good', engine: 'b', model: 'good' },
  ],
  prefer: 'cost',
  explore: 0,
  minTasks: 3,
  seed: null,
  source: 'manifest',
};
// new: 1000 ÷ posterior mean 1/3 = 3000 per PASS expected, no challenger to good's 900.
const EVIDENCE = [row('new', 1, 0, 1000), row('good', 10, 10, 900)];
const task = (verdicts: (string | null)[]): RoutableTask => ({
  spec: { key: 'k', taskType: 'ui', route: SPEC },
  state: { attempts: verdicts.map((verdict) => ({ verdict })) },
});

describe('route-choice: an attempt of engine "auto" in a run', () => {
  it('decides once per attempt number and keeps it: a second question gets the same decision, whatever is excluded by then', () => {
    const t = task([]);
    const first = routeAttempt(t, 'run-1', EVIDENCE, () => null);
    assert.equal(first.attempt, 1);
    assert.equal(first.seed, 'run-1/k/1');
    assert.equal(first.decision.chosen.candidate, 'b:good');
    const again = routeAttempt(t, 'run-1', EVIDENCE, () => 'everything is held now');
    assert.equal(again, first);
  });

  it('excluded candidates are skipped with the reason the run gives', () => {
    const r = routeAttempt(task([]), 'run-1', EVIDENCE, (engine) => (engine === 'b' ? 'engine b is at its limit (2 running)' : null));
    assert.equal(r.decision.chosen.candidate, 'a:new');
    assert.deepEqual(r.decision.skipped, [{ candidate: 'b:good', reason: 'engine b is at its limit (2 running)' }]);
  });

  it('the attempt after a FAIL on the candidate routed for it is a retry (thin evidence moves); after a rate limit it is not', () => {
    const t = task([]);
    routeAttempt(t, 'run-1', EVIDENCE, (engine) => (engine === 'b' ? 'held' : null)); // attempt 1 on a:new
    t.state.attempts.push({ verdict: 'FAIL' });
    const retry = routeAttempt(t, 'run-1', EVIDENCE, () => null);
    assert.equal(retry.attempt, 2);
    assert.equal(retry.decision.basis, 'retry-moves');
    assert.equal(retry.decision.chosen.candidate, 'b:good');
    const u = task([]);
    routeAttempt(u, 'run-1', EVIDENCE, (engine) => (engine === 'b' ? 'held' : null));
    u.state.attempts.push({ verdict: 'RATE_LIMITED' });
    assert.equal(routeAttempt(u, 'run-1', EVIDENCE, () => null).decision.basis, 'proven');
  });

  it('route.seed replaces the run id in the seed; the row column carries the policy, the evidence and the line', () => {
    const t: RoutableTask = { ...task([]), spec: { key: 'k', taskType: 'ui', route: { ...SPEC, seed: 'fixed' } } };
    const r = routeAttempt(t, 'run-1', EVIDENCE, () => null);
    assert.equal(r.seed, 'fixed/k/1');
    const col = routeColumn(r, SPEC);
    assert.deepEqual(col.policy, { from: ['a:new', 'b:good'], prefer: 'cost', explore: 0, min_tasks: 3, source: 'manifest' });
    assert.equal(col.evidence.cost_per_pass_microusd, 900);
    assert.equal(col.line, 'auto → b/good (proven, $0.0009/PASS over 10 tasks)');
  });
});

describe('route-choice: catalog cost hints for candidates the scoreboard has no cost of', () => {
  const prices: Record<string, { promptMicroUsd: number; completionMicroUsd: number }> = {
    dear: { promptMicroUsd: 3, completionMicroUsd: 15 },
    cheap: { promptMicroUsd: 0.1, completionMicroUsd: 0.4 },
  };
  const price = (m: string) => prices[m] ?? null;
  const spec: RouteSpec = {
    from: [
      { id: 'x:dear', engine: 'x', model: 'dear' },
      { id: 'y:cheap', engine: 'y', model: 'cheap' },
      { id: 'z:unpriced', engine: 'z', model: 'unpriced' },
    ],
    prefer: 'cost',
    explore: 0.1,
    minTasks: 3,
    seed: null,
    source: 'manifest',
  };

  it("an attempt is priced at the median tokens of the type's known candidates (90 % in), else 20,000 tokens; unlisted models get none", async () => {
    const { costHint } = await import('../../extension/core/scoreboard/route');
    assert.equal(costHint('dear', 'ui', spec, [], price), Math.round(18_000 * 3 + 2_000 * 15));
    const withTokens = [{ ...row('cheap', 4, 2, 500), median_tokens: 10_000 }];
    assert.equal(costHint('dear', 'ui', spec, withTokens, price), Math.round(9_000 * 3 + 1_000 * 15));
    assert.equal(costHint('unpriced', 'ui', spec, [], price), null);
    assert.equal(costHint(null, 'ui', spec, [], price), null);
  });

  it('with no evidence at all, the cheap listed model is drawn most often and the dear one least: cheapest first among equals', () => {
    const wins: Record<string, number> = {};
    for (let i = 0; i < 2000; i++) {
      const t: RoutableTask = { spec: { key: `k${i}`, taskType: 'ui', route: spec }, state: { attempts: [] } };
      const c = routeAttempt(t, 'run', [], () => null, price).decision.chosen.candidate;
      wins[c] = (wins[c] ?? 0) + 1;
    }
    // unpriced is taken at the lowest known hint (cheap's): it ties with cheap in expectation; dear is 30× dearer.
    assert.ok((wins['y:cheap'] ?? 0) > 700 && (wins['z:unpriced'] ?? 0) > 700 && (wins['x:dear'] ?? 0) < 100, JSON.stringify(wins));
  });
});
