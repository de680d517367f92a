import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, tempDir, writeManifest } from '../helpers/fixtures';

// Routing by evidence (docs/scoreboard.md "Routing"): 12 tasks of two task types with `engine: "auto"` over three fake
// engines of different quality and price, starting from a seeded eval log. The fake engines are custom engines (a
// bash that runs the spec with WHO set, printing Claude Code's JSON result with its cost), so one spec behaves as
// each engine would: `cheap` does parsers and fails UI work, `mid` and `dear` do both at 5× and 20× the price.

const env = { ...process.env, VERDICT_PG_URL: '' } as Record<string, string>;
const COST: Record<string, number> = { cheap: 0.001, mid: 0.005, dear: 0.02 };
/** The spec every task runs: writes out.txt unless this engine cannot do this task type, then prints its JSON result. */
const SPEC = (type: string) =>
  `case "$WHO:${type}" in cheap:ui) echo nope > out.txt;; *) echo ok > out.txt;; esac; echo '{"type":"result","is_error":false,"total_cost_usd":'"$COST"',"usage":{"input_tokens":10,"output_tokens":5}}'`;
const CHECK = 'grep -qx ok out.txt || { echo "out.txt is not ok"; exit 1; }';

function config(dir: string): string {
  const file = path.join(dir, 'config.json');
  const engine = (who: string) => ({
    binary: 'bash',
    argv: ['-c', '{spec}'],
    install: 'a test fixture',
    output: 'claude',
    retry_context: 'file',
    model: `acme/${who}`,
    env: { WHO: who, COST: String(COST[who]) },
  });
  fs.writeFileSync(file, JSON.stringify({ engines: { cheap: engine('cheap'), mid: engine('mid'), dear: engine('dear') } }));
  return file;
}

/** Seeded history: per (engine, task type), `tasks` past tasks of which `passed` passed first time, at `cost` USD each. */
function seedLog(home: string, history: [string, string, number, number][]): void {
  fs.mkdirSync(home, { recursive: true });
  const rows: string[] = [];
  for (const [who, type, tasks, passed] of history) {
    for (let i = 0; i < tasks; i++) {
      rows.push(
        JSON.stringify({
          run_id: `seed-${who}-${type}`,
          task_key: `t${i}`,
          attempt: 1,
          step: 'work',
          worker_engine: who,
          model: `acme/${who}`,
          task_type: type,
          verdict: i < passed ? 'PASS' : 'FAIL',
          cost_microusd: Math.round(COST[who]! * 1e6),
          duration_ms: 1000,
          ended_at: '2026-12-01T00:00:00.000Z',
        }),
      );
    }
  }
  fs.writeFileSync(path.join(home, 'runs.jsonl'), rows.join('\n') + '\n');
}

const FROM = ['dear:acme/dear', 'mid:acme/mid', 'cheap:acme/cheap'];

describe('engine "auto": routing by evidence (e2e, built CLI)', () => {
  it('12 tasks of two types over three engines: the cheap good model wins its type, the proven mid one the other; every row says what was chosen, why, and the runner-up', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // parser: all three proven (5 of 5), cheap cheapest. ui: cheap failed 6 of 6 (expected 1000 ÷ 1/8 = $0.008 per PASS,
    // above mid's $0.005: no challenger), mid and dear proven.
    seedLog(home, [
      ['cheap', 'parser', 5, 5],
      ['mid', 'parser', 5, 5],
      ['dear', 'parser', 5, 5],
      ['cheap', 'ui', 6, 0],
      ['mid', 'ui', 5, 5],
      ['dear', 'ui', 5, 5],
    ]);
    const tasks = [...Array(6).keys()].flatMap((i) => [
      { key: `parse-${i}`, spec: SPEC('parser'), check: CHECK, task_type: 'parser', verified: 'out.txt says ok', max_attempts: 1 },
      { key: `ui-${i}`, spec: SPEC('ui'), check: CHECK, task_type: 'ui', verified: 'out.txt says ok', max_attempts: 1 },
    ]);
    const manifest = writeManifest(dir, {
      run_name: 'route',
      engine: 'auto',
      route: { from: FROM, prefer: 'cost', explore: 0, min_tasks: 3, seed: 'e2e' },
      max_parallel: 3,
      workdir: path.join(dir, 'work'),
      tasks,
    });
    // Before the run: plan says what auto would pick per task, and why; models --route ranks the candidates.
    const plan = await cli(['plan', manifest, '--home', home, '--config', config(dir)], { env });
    assert.equal(plan.exitCode, 0, plan.all);
    assert.match(plan.stdout, /^parse-0: auto → cheap\/acme\/cheap \(proven, \$0\.0010\/PASS over 5 tasks\) — cheap:acme\/cheap: proven/m);
    assert.match(plan.stdout, /^ui-0: auto → mid\/acme\/mid \(proven, \$0\.0050\/PASS over 5 tasks\)/m);
    const ranking = await cli(['models', '--route', 'ui', '--manifest', manifest, '--home', home, '--config', config(dir)], { env });
    assert.equal(ranking.exitCode, 0, ranking.all);
    assert.deepEqual(
      ranking.stdout
        .split('\n')
        .slice(1, 4)
        .map((l) => l.split(/\s+/).slice(0, 3).join(' ')),
      ['1 mid:acme/mid proven', '2 dear:acme/dear proven', '3 cheap:acme/cheap probation'],
      ranking.stdout,
    );
    const r = await cli(['run', manifest, '--home', home, '--config', config(dir), '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home).filter((x) => !String(x.run_id).startsWith('seed-'));
    assert.equal(rows.length, 12, r.all);
    for (const x of rows) {
      const route = x.route as Record<string, any>;
      assert.ok(route, `${x.task_key as string} has a route`);
      assert.deepEqual(route.policy, { from: FROM, prefer: 'cost', explore: 0, min_tasks: 3, source: 'manifest' });
      assert.equal(route.basis, 'proven');
      assert.equal(route.exploration, false);
      assert.equal(route.seed, `e2e/${x.task_key as string}/1`);
      assert.equal(route.evidence.tier, 'proven');
      assert.equal(route.evidence.tasks, 5);
      const parser = x.task_type === 'parser';
      assert.equal(route.chosen, parser ? 'cheap:acme/cheap' : 'mid:acme/mid', `${x.task_key as string}: ${route.reason}`);
      assert.equal(x.worker_engine, parser ? 'cheap' : 'mid');
      assert.equal(x.model, parser ? 'acme/cheap' : 'acme/mid');
      assert.equal(route.evidence.cost_per_pass_microusd, parser ? 1000 : 5000);
      assert.equal(route.runner_up.candidate, parser ? 'mid:acme/mid' : 'dear:acme/dear');
      assert.equal(
        route.line,
        parser ? 'auto → cheap/acme/cheap (proven, $0.0010/PASS over 5 tasks)' : 'auto → mid/acme/mid (proven, $0.0050/PASS over 5 tasks)',
      );
      assert.equal(x.verdict, 'PASS');
    }
    assert.match(r.all, /attempt 1: auto → cheap\/acme\/cheap \(proven, \$0\.0010\/PASS over 5 tasks\)/);
    // The view keeps the line for the dashboard's task view.
    const runId = rows[0]!.run_id as string;
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as {
      tasks: { key: string; attempts: { route?: string }[] }[];
    };
    assert.equal(state.tasks.find((t) => t.key === 'ui-0')?.attempts[0]?.route, 'auto → mid/acme/mid (proven, $0.0050/PASS over 5 tasks)');
  });

  it('a retry after a FAIL on a thin-evidence candidate moves to the best proven one; a candidate over the budget is skipped and named', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // ui: cheap untried; mid and dear proven. explore 1 draws cheap against mid (dear is over the budget).
    seedLog(home, [
      ['mid', 'ui', 5, 5],
      ['dear', 'ui', 5, 5],
    ]);
    // explore 1 with seed 'r2': the first attempt explores cheap (asserted below, the draw is seeded), it FAILs,
    // and the retry moves off it (thin: untried) to mid, the best proven.
    const manifest = writeManifest(dir, {
      run_name: 'route-retry',
      route: { from: FROM, explore: 1, seed: 'r2' },
      budget_usd: 1,
      workdir: path.join(dir, 'work'),
      tasks: [{ key: 'ui-x', engine: 'auto', spec: SPEC('ui'), check: CHECK, task_type: 'ui', verified: 'ok', max_attempts: 2, budget_usd: 0.015 }],
    });
    const r = await cli(['run', manifest, '--home', home, '--config', config(dir), '--no-dashboard'], { env });
    const rows = readRows(home).filter((x) => x.run_id !== undefined && !String(x.run_id).startsWith('seed-'));
    const routes = rows.map((x) => x.route as Record<string, any>);
    console.log(`      ${routes.map((x) => `${x.chosen} (${x.basis}): ${x.reason}`).join('\n      ')}`);
    assert.equal(rows.length, 2, r.all);
    assert.equal(routes[0]!.chosen, 'cheap:acme/cheap', 'the seeded draw explores the untried cheap candidate');
    assert.equal(routes[0]!.exploration, true);
    assert.equal(rows[0]!.verdict, 'FAIL');
    assert.equal(routes[1]!.basis, 'retry-moves');
    assert.equal(routes[1]!.chosen, 'mid:acme/mid');
    assert.match(routes[1]!.reason, /^retry moves off cheap:acme\/cheap \(untried: thin evidence\) to mid:acme\/mid/);
    // dear's reservation ($0.02 observed in no run, but its p90 in the log) would pass the task's $0.015 budget.
    for (const x of routes)
      assert.ok(
        x.skipped.some((s: { candidate: string; reason: string }) => s.candidate === 'dear:acme/dear' && /would pass the task's budget_usd/.test(s.reason)),
        JSON.stringify(x.skipped),
      );
    assert.equal(rows[1]!.verdict, 'PASS');
    assert.equal(r.exitCode, 0, r.all);
  });

  it("auto never picks a candidate whose reservation would pass what is left of the run's budget: once dear no longer fits, the next task goes to mid and passes", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // prefer pass_rate: dear (5 of 5 first try) ranks above mid (4 of 5). Each dear attempt reserves its p90, $0.02,
    // under a run budget of $0.05: two fit ($0.04 spent), a third would reach $0.06. Without the exclusion auto picked
    // dear again and the budget refused it (the task ended BUDGET_EXCEEDED with $0.01 left and a $0.005 candidate).
    seedLog(home, [
      ['mid', 'ui', 5, 4],
      ['dear', 'ui', 5, 5],
    ]);
    const tasks = ['a', 'b', 'c'].map((k) => ({ key: `ui-${k}`, spec: SPEC('ui'), check: CHECK, task_type: 'ui', verified: 'ok', max_attempts: 1 }));
    const manifest = writeManifest(dir, {
      run_name: 'route-budget',
      engine: 'auto',
      route: { from: FROM, prefer: 'pass_rate', explore: 0, seed: 'b' },
      budget_usd: 0.05,
      max_parallel: 1,
      workdir: path.join(dir, 'work'),
      tasks,
    });
    const r = await cli(['run', manifest, '--home', home, '--config', config(dir), '--no-dashboard'], { env });
    const rows = readRows(home).filter((x) => !String(x.run_id).startsWith('seed-'));
    const routes = rows.map((x) => x.route as Record<string, any>);
    const spent = rows.reduce((n, x) => n + ((x.cost_microusd as number | null) ?? 0), 0);
    console.log(
      `      ${rows.map((x, i) => `${String(x.task_key)} → ${String(routes[i]!.chosen)} ${String(x.verdict)}`).join(', ')}; spent ${spent} of 50000 micro-USD`,
    );
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      routes.map((x) => x.chosen),
      ['dear:acme/dear', 'dear:acme/dear', 'mid:acme/mid'],
      r.all,
    );
    assert.ok(
      routes[2]!.skipped.some((x: { candidate: string; reason: string }) => x.candidate === 'dear:acme/dear' && /would pass budget_usd \$0\.05/.test(x.reason)),
      JSON.stringify(routes[2]!.skipped),
    );
    assert.deepEqual(
      rows.map((x) => x.verdict),
      ['PASS', 'PASS', 'PASS'],
    );
    assert.ok(spent <= 50_000, `spent ${spent}`);
  });

  it("the config's route applies to a manifest without one; the run freezes it, so a resume routes the same way", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    seedLog(home, [
      ['cheap', 'parser', 5, 5],
      ['mid', 'parser', 5, 5],
    ]);
    const cfg = config(dir);
    fs.writeFileSync(cfg, JSON.stringify({ ...JSON.parse(fs.readFileSync(cfg, 'utf8')), route: { from: FROM, explore: 0 } }));
    const manifest = writeManifest(dir, {
      run_name: 'route-config',
      workdir: path.join(dir, 'work'),
      tasks: [{ key: 'p', engine: 'auto', spec: SPEC('parser'), check: CHECK, task_type: 'parser', verified: 'ok' }],
    });
    const r = await cli(['run', manifest, '--home', home, '--config', cfg, '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const row = readRows(home).find((x) => x.task_key === 'p' && !String(x.run_id).startsWith('seed-')) as Record<string, any>;
    assert.equal(row.route.policy.source, 'config');
    assert.equal(row.route.chosen, 'cheap:acme/cheap');
    const frozen = JSON.parse(fs.readFileSync(path.join(home, 'runs', row.run_id, 'manifest.json'), 'utf8')) as { manifest: { route?: unknown } };
    assert.deepEqual(frozen.manifest.route, { from: FROM, prefer: 'cost', explore: 0, min_tasks: 3 });
  });

  it("hostile: a worker cannot write the eval log or the scoreboard its routing reads; the run's routing is unchanged", async function () {
    // Without the sandbox a worker runs as the user and can write the home: what keeps it out is the sandbox.
    if (process.env.VERDICT_TEST_UNSANDBOXED) this.skip();
    const dir = tempDir();
    const home = path.join(dir, 'home');
    seedLog(home, [
      ['cheap', 'parser', 5, 5],
      ['mid', 'parser', 5, 5],
    ]);
    const before = fs.readFileSync(path.join(home, 'runs.jsonl'), 'utf8');
    // The worker knows where the home is and tries to forge evidence for dear, and to poison the index beside it.
    const forged = JSON.stringify({
      run_id: 'forged',
      task_key: 'x',
      attempt: 1,
      step: 'work',
      worker_engine: 'dear',
      model: 'acme/dear',
      task_type: 'parser',
      verdict: 'PASS',
      cost_microusd: 1,
    });
    const attack = `{ echo '${forged}' >> ${home}/runs.jsonl && echo log-written || echo log-denied; echo junk > ${home}/verdict.sqlite && echo index-written || echo index-denied; ls ${home}; } > seen.txt 2>&1; ${SPEC('parser')}`;
    const tasks = [0, 1].map((i) => ({
      key: `p${i}`,
      engine: 'auto',
      spec: attack,
      check: CHECK,
      task_type: 'parser',
      verified: 'ok',
      max_attempts: 1,
      ...(i ? { after: ['p0'] } : {}),
    }));
    const manifest = writeManifest(dir, {
      run_name: 'route-hostile',
      worktrees: false,
      route: { from: FROM, explore: 0, seed: 'h' },
      workdir: path.join(dir, 'work'),
      tasks,
    });
    const r = await cli(['run', manifest, '--home', home, '--config', config(dir), '--no-dashboard'], { env });
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.equal(rows.filter((x) => x.run_id === 'forged').length, 0, 'no forged row reached the eval log');
    const seen = fs.readFileSync(path.join(dir, 'work', 'p0', 'seen.txt'), 'utf8');
    console.log(`      the worker saw: ${seen.trim().replace(/\n/g, ' ')}`);
    // Whatever the worker's writes did inside its sandbox (a path of the home there is not the home), the real log and
    // index are untouched: no forged row, and the index is no "junk" (the scoreboard below reads it).
    assert.notEqual(fs.readFileSync(path.join(home, 'verdict.sqlite')).subarray(0, 5).toString(), 'junk\n');
    assert.ok(fs.readFileSync(path.join(home, 'runs.jsonl'), 'utf8').startsWith(before), 'the seeded rows are intact');
    for (const x of rows.filter((x) => x.run_id !== undefined && !String(x.run_id).startsWith('seed-')))
      assert.equal((x.route as { chosen: string }).chosen, 'cheap:acme/cheap');
    // A later run reads the same evidence: dear is still untried on parser.
    const m = await cli(['models', '--home', home, '--route', 'parser', '--manifest', manifest, '--config', config(dir), '--json'], { env });
    assert.equal(m.exitCode, 0, m.all);
    const ranking = JSON.parse(m.stdout) as { candidates: { candidate: string; tier: string }[] };
    assert.equal(ranking.candidates.find((c) => c.candidate === 'dear:acme/dear')?.tier, 'untried');
  });
});
