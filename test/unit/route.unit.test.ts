import assert from 'node:assert/strict';
import type { GroupStats } from '../../extension/core/scoreboard/group-stats';
import { betaSample, seededRandom } from '../../extension/core/scoreboard/random';
import { candidateEvidence, route, routeLine, type RouteCandidate, type RouteInput, type RoutePolicy } from '../../extension/core/scoreboard/route';

/** A scoreboard row of `model` on `type`: `tasks` tasks, `firstTry` of them passed first time, `passed` after retry. */
function row(
  model: string,
  type: string,
  tasks: number,
  firstTry: number,
  costMicro: number | null,
  opts: { passed?: number; attempts?: number; durationMs?: number } = {},
): GroupStats {
  const passed = opts.passed ?? firstTry;
  const attempts = opts.attempts ?? tasks + (tasks - firstTry);
  return {
    model,
    task_type: type,
    tasks,
    attempts,
    passed,
    first_tries: tasks,
    first_try: firstTry,
    pass_rate: passed / tasks,
    first_try_pass_rate: firstTry / tasks,
    median_duration_ms: opts.durationMs ?? 60_000,
    median_tokens: null,
    median_cost_microusd: costMicro,
    errors: 0,
    rate_limits: 0,
    other: 0,
    last_seen: null,
    engines: [],
    lab: null,
  };
}

const cand = (id: string, costHintMicroUsd?: number): RouteCandidate => {
  const [engine, model] = id.split(':') as [string, string];
  return { id, engine, model, costHintMicroUsd };
};
const POLICY: RoutePolicy = { prefer: 'cost', explore: 0.1, minTasks: 3 };
const input = (over: Partial<RouteInput>): RouteInput => ({
  taskType: 'bugfix',
  candidates: [],
  evidence: [],
  policy: POLICY,
  random: seededRandom('t'),
  ...over,
});

describe('route: the decision of engine "auto" (pure)', () => {
  it('the seeded source replays: same seed, same numbers; another seed, others; all in [0, 1)', () => {
    const a = seededRandom('run-1');
    const b = seededRandom('run-1');
    const c = seededRandom('run-2');
    const xs = Array.from({ length: 1000 }, () => a());
    assert.deepEqual(
      xs,
      Array.from({ length: 1000 }, () => b()),
    );
    assert.notDeepEqual(
      xs.slice(0, 5),
      Array.from({ length: 5 }, () => c()),
    );
    assert.ok(xs.every((x) => x >= 0 && x < 1));
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    assert.ok(Math.abs(mean - 0.5) < 0.05, `mean ${mean}`);
  });

  it('Beta draws have the posterior mean a/(a+b) within 0.01 over 10,000 draws', () => {
    const r = seededRandom('beta');
    for (const [a, b] of [
      [1, 1],
      [9, 3],
      [2, 20],
    ] as const) {
      let sum = 0;
      for (let i = 0; i < 10_000; i++) sum += betaSample(a, b, r);
      assert.ok(Math.abs(sum / 10_000 - a / (a + b)) < 0.01, `Beta(${a}, ${b}) mean ${sum / 10_000}`);
    }
    assert.throws(() => betaSample(0, 1, r), /must be ≥ 1/);
  });

  const table: {
    name: string;
    candidates: string[];
    evidence: GroupStats[];
    policy?: Partial<RoutePolicy>;
    excluded?: [string, string][];
    retryAfter?: string;
    chosen: string;
    basis: string;
    runnerUp?: string | null;
    reason?: RegExp;
  }[] = [
    {
      name: 'proven beats probation: a cheaper attempt with a poor record does not challenge it',
      // weak: 4000 ÷ posterior mean (1 + 1) / (2 + 3) = 10,000 per PASS, above solid's 5000 × 11 / 9 = 6111
      candidates: ['a:weak', 'b:solid'],
      evidence: [row('weak', 'bugfix', 3, 1, 4000), row('solid', 'bugfix', 10, 9, 5000)],
      policy: { explore: 0 },
      chosen: 'b:solid',
      basis: 'proven',
      runnerUp: null,
      reason: /^b:solid: proven, \$0\.0061\/PASS over 10 tasks$/,
    },
    {
      name: 'retry after a FAIL on a probation model with a long record (≥ 10 tasks) stays on it',
      candidates: ['a:cheapweak', 'b:proven'],
      evidence: [row('cheapweak', 'bugfix', 40, 16, 100), row('proven', 'bugfix', 10, 10, 9000)],
      retryAfter: 'a:cheapweak',
      chosen: 'a:cheapweak',
      basis: 'retry-stays',
      reason: /^retry stays on a:cheapweak: its evidence is not thin \(40 tasks ≥ 10\)/,
    },
    {
      name: 'among proven: the lowest cost per PASS, not the lowest attempt cost (retry lane counted)',
      candidates: ['a:flaky', 'b:sure'],
      // flaky: 1000 per attempt, 7/10 first try, 3 retries of which 1 passed → 13 attempts, 8 passed → 1625/PASS
      // sure: 1500 per attempt, 10/10 → 1500/PASS
      evidence: [row('flaky', 'bugfix', 10, 7, 1000, { passed: 8, attempts: 13 }), row('sure', 'bugfix', 10, 10, 1500)],
      policy: { explore: 0 },
      chosen: 'b:sure',
      basis: 'proven',
      runnerUp: 'a:flaky',
    },
    {
      name: 'evidence of another task type does not count',
      candidates: ['a:m1', 'b:m2'],
      evidence: [row('m1', 'docs', 20, 20, 10), row('m2', 'bugfix', 5, 5, 900)],
      policy: { explore: 0 },
      chosen: 'b:m2',
      basis: 'proven',
    },
    {
      name: 'min_tasks holds back a candidate proven by the tier but with too few tasks',
      candidates: ['a:new', 'b:old'],
      // new: 2000 ÷ 4/5 = 2500 per PASS expected, no challenger to old's 900 × 35 / 25 = 1260
      evidence: [row('new', 'bugfix', 3, 3, 2000), row('old', 'bugfix', 30, 25, 900)],
      policy: { explore: 0, minTasks: 5 },
      chosen: 'b:old',
      basis: 'proven',
    },
    {
      name: 'prefer time: the fastest per PASS',
      candidates: ['a:slow', 'b:fast'],
      evidence: [row('slow', 'bugfix', 10, 10, 100, { durationMs: 600_000 }), row('fast', 'bugfix', 10, 9, 5000, { durationMs: 30_000 })],
      policy: { explore: 0, prefer: 'time' },
      chosen: 'b:fast',
      basis: 'proven',
    },
    {
      name: 'prefer pass_rate: the highest first-try pass rate whatever it costs',
      candidates: ['a:cheap', 'b:best'],
      evidence: [row('cheap', 'bugfix', 10, 8, 100), row('best', 'bugfix', 10, 10, 9000)],
      policy: { explore: 0, prefer: 'pass_rate' },
      chosen: 'b:best',
      basis: 'proven',
    },
    {
      name: 'ties: equal cost per PASS goes to the cheaper attempt, then the order of from',
      candidates: ['a:x', 'b:y', 'c:z'],
      // x: 2000 × 10 / 10 = 2000; y: 1000 × 20 / 10 = 2000 (cheaper attempt); z = y exactly, later in from
      evidence: [row('x', 'bugfix', 10, 10, 2000), row('y', 'bugfix', 10, 10, 1000, { attempts: 20 }), row('z', 'bugfix', 10, 10, 1000, { attempts: 20 })],
      policy: { explore: 0 },
      chosen: 'b:y',
      basis: 'proven',
      runnerUp: 'c:z',
    },
    {
      name: 'budget exclusion: the best proven is skipped with its reason, the next proven is picked',
      candidates: ['a:best', 'b:second'],
      evidence: [row('best', 'bugfix', 10, 10, 100), row('second', 'bugfix', 10, 10, 200)],
      policy: { explore: 0 },
      excluded: [['a:best', 'its reservation $0.40 would pass the budget ($0.10 left)']],
      chosen: 'b:second',
      basis: 'proven',
      reason: /skipped a:best \(its reservation \$0\.40 would pass the budget/,
    },
    {
      name: 'limit and quota exclusion: held engines are skipped; when every candidate is held the first choice stands (it waits)',
      candidates: ['a:best', 'b:second'],
      evidence: [row('best', 'bugfix', 10, 10, 100), row('second', 'bugfix', 10, 10, 200)],
      policy: { explore: 0 },
      excluded: [
        ['a:best', 'engine a at its limit (2 running)'],
        ['b:second', 'engine b waits for its quota'],
      ],
      chosen: 'a:best',
      basis: 'proven',
      reason: /every candidate is held, so the first choice waits/,
    },
    {
      name: 'retry after a FAIL on a thin-evidence model moves to the best proven other',
      candidates: ['a:new', 'b:proven', 'c:other'],
      evidence: [row('new', 'bugfix', 1, 0, 10), row('proven', 'bugfix', 10, 9, 500), row('other', 'bugfix', 10, 10, 900)],
      retryAfter: 'a:new',
      chosen: 'b:proven',
      basis: 'retry-moves',
      runnerUp: 'c:other',
      reason: /^retry moves off a:new \(probation, .*thin evidence\) to b:proven/,
    },
    {
      name: 'retry after a FAIL on a proven model stays on it',
      candidates: ['a:proven', 'b:other'],
      evidence: [row('proven', 'bugfix', 10, 8, 500), row('other', 'bugfix', 10, 10, 900)],
      retryAfter: 'a:proven',
      chosen: 'a:proven',
      basis: 'retry-stays',
      reason: /^retry stays on a:proven: proven/,
    },
    {
      name: 'retry with a single candidate stays',
      candidates: ['a:only'],
      evidence: [],
      retryAfter: 'a:only',
      chosen: 'a:only',
      basis: 'retry-stays',
      reason: /no other candidate is open/,
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const d = route(
        input({
          candidates: c.candidates.map((id) => cand(id)),
          evidence: c.evidence,
          policy: { ...POLICY, ...c.policy },
          excluded: c.excluded ? new Map(c.excluded) : undefined,
          retryAfter: c.retryAfter,
        }),
      );
      assert.equal(d.chosen.candidate, c.chosen, d.reason);
      assert.equal(d.basis, c.basis);
      if (c.runnerUp !== undefined) assert.equal(d.runnerUp?.candidate ?? null, c.runnerUp);
      if (c.reason) assert.match(d.reason, c.reason);
    });
  }

  it('exploration share: explore 0.1 makes 10 % ± 1 % of 10,000 seeded decisions explore draws; outside them the proven one is picked, inside them a probation one only when it wins the Thompson draw; each decision replays from its seed', () => {
    // good: 1000 × 22 / 18 = 1222 per PASS. maybe: 700 ÷ posterior mean 2/6 = 2100, so no challenger, but it can win a draw.
    const evidence = [row('good', 'bugfix', 20, 18, 1000), row('maybe', 'bugfix', 4, 1, 700)];
    const candidates = [cand('a:good'), cand('b:maybe')];
    let draws = 0;
    let explored = 0;
    for (let i = 0; i < 10_000; i++) {
      const d = route(input({ candidates, evidence, random: seededRandom(`share/${i}`) }));
      const drew = (d.draw as number) < 0.1;
      if (drew) draws++;
      if (d.exploration) {
        explored++;
        assert.ok(drew);
        assert.equal(d.basis, 'explore');
        assert.equal(d.chosen.candidate, 'b:maybe');
        assert.equal(d.runnerUp?.candidate, 'a:good');
      } else assert.equal(d.chosen.candidate, 'a:good');
    }
    assert.ok(Math.abs(draws / 10_000 - 0.1) < 0.01, `explore draws ${draws} of 10,000`);
    assert.ok(explored > 0 && explored < draws, `explored ${explored} of ${draws} draws`);
    const again = (i: number) => route(input({ candidates, evidence, random: seededRandom(`share/${i}`) }));
    for (let i = 0; i < 50; i++) assert.deepEqual(again(i), again(i));
  });

  it('explore 0 never explores a candidate that is no challenger; explore 1 draws every time, and an untried one wins P(θ_new > θ_good) = 1 − 19/22 of them', () => {
    // b:new is untried with no known cost: it is taken at the lowest known (1000) ÷ 0.5 = 2000 > 1222, no challenger.
    const evidence = [row('good', 'bugfix', 20, 18, 1000)];
    const candidates = [cand('a:good'), cand('b:new')];
    let fresh = 0;
    for (let i = 0; i < 10_000; i++) {
      assert.equal(route(input({ candidates, evidence, policy: { ...POLICY, explore: 0 }, random: seededRandom(`z${i}`) })).chosen.candidate, 'a:good');
      const d = route(input({ candidates, evidence, policy: { ...POLICY, explore: 1 }, random: seededRandom(`o${i}`) }));
      if (d.chosen.candidate === 'b:new') fresh++;
    }
    // Equal costs: b:new wins when its θ ~ Beta(1, 1) beats good's θ ~ Beta(19, 3): 1 − E[θ_good] = 3/22 = 0.136.
    assert.ok(Math.abs(fresh / 10_000 - 3 / 22) < 0.01, `untried chosen ${fresh} of 10,000`);
  });

  it('a challenger: a probation candidate whose expected cost per PASS beats the proven one is drawn against it outside the explore share, and wins most draws', () => {
    // cheap: 100 ÷ (1 + 2) / (2 + 2) = 133 per PASS against solid's 6111.
    const evidence = [row('cheap', 'bugfix', 2, 2, 100), row('solid', 'bugfix', 10, 9, 5000)];
    const candidates = [cand('a:cheap'), cand('b:solid')];
    let challenged = 0;
    for (let i = 0; i < 1000; i++) {
      const d = route(input({ candidates, evidence, policy: { ...POLICY, explore: 0 }, random: seededRandom(`c${i}`) }));
      if (d.basis === 'challenge') {
        challenged++;
        assert.equal(d.chosen.candidate, 'a:cheap');
        assert.ok(d.exploration);
        assert.match(d.reason, /^a:cheap challenges b:solid \(proven, \$0\.0061\/PASS over 10 tasks\)/);
      } else assert.equal(d.chosen.candidate, 'b:solid');
    }
    assert.ok(challenged > 900, `challenged ${challenged} of 1000`);
  });

  it('with no candidate proven it always explores (Thompson): a strong probation record wins most draws, a weak one rarely', () => {
    const evidence = [row('strong', 'bugfix', 2, 2, 1000), row('weak', 'bugfix', 2, 0, 1000)];
    const candidates = [cand('a:strong'), cand('b:weak')];
    const wins = { 'a:strong': 0, 'b:weak': 0 } as Record<string, number>;
    for (let i = 0; i < 10_000; i++) {
      const d = route(input({ candidates, evidence, policy: { ...POLICY, explore: 0 }, random: seededRandom(`np${i}`) }));
      assert.equal(d.basis, 'no-proven');
      assert.ok(d.exploration);
      wins[d.chosen.candidate]!++;
    }
    // P(θ_strong > θ_weak) for Beta(3,1) against Beta(1,3) is 1 − 3·B(3,4) = 0.95 (with equal costs); ± 0.01.
    assert.ok(Math.abs(wins['a:strong']! / 10_000 - 0.95) < 0.01, JSON.stringify(wins));
  });

  it('cheapest first among equals: untried candidates are drawn in favour of the cheaper (catalog hint), and all are tried', () => {
    const candidates = [cand('a:dear', 8000), cand('b:cheap', 1000), cand('c:mid', 3000)];
    const wins: Record<string, number> = { 'a:dear': 0, 'b:cheap': 0, 'c:mid': 0 };
    for (let i = 0; i < 10_000; i++) wins[route(input({ candidates, random: seededRandom(`u${i}`) })).chosen.candidate]!++;
    assert.ok(wins['b:cheap']! > wins['c:mid']! && wins['c:mid']! > wins['a:dear']! && wins['a:dear']! > 0, JSON.stringify(wins));
  });

  it('a candidate whose model the engine picks (model null) is untried whatever the log holds', () => {
    const e = candidateEvidence({ id: 'codex', engine: 'codex', model: null }, 'bugfix', [row('gpt-5', 'bugfix', 10, 10, 100)], 3);
    assert.equal(e.tier, 'untried');
  });

  it("routeLine: the dashboard's line", () => {
    const d = route(input({ candidates: [cand('claude:haiku')], evidence: [row('haiku', 'bugfix', 12, 12, 4000)], policy: { ...POLICY, explore: 0 } }));
    assert.equal(routeLine(d), 'auto → claude/haiku (proven, $0.0040/PASS over 12 tasks)');
  });

  it('no candidates is an error', () => {
    assert.throws(() => route(input({ candidates: [] })), /no candidates/);
  });
});
