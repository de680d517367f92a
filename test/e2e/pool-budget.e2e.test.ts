import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, tempDir, writeManifest } from '../helpers/fixtures';
import { processesWith } from '../helpers/procs';
import { LEASE_MS, meterStep, poolMachine, poolSuite, repoAndRemote, startPoolWorker, unsandboxed, workersUp } from '../helpers/pool-workers';

// A run budget over attempts that run on a pool worker (docs/scale.md "Budget on the pool"): the worker's engine, and
// the reviewers that run on the worker with it, stream their usage (opencode's JSON); the orchestrator must learn that
// spend while the job runs and stop the job once the run's spend passes budget_usd, as it stops a local attempt.

interface State {
  tasks: { key: string; status: string; reason?: string }[];
  spend?: { spentMicroUsd: number };
}
const stateOf = (home: string): State => {
  const runs = path.join(home, 'runs');
  return JSON.parse(fs.readFileSync(path.join(runs, fs.readdirSync(runs)[0] ?? '', 'state.json'), 'utf8')) as State;
};
const spentOf = (rows: Record<string, unknown>[]) => rows.reduce((sum, x) => sum + ((x.cost_microusd as number | null) ?? 0), 0);

describe('budget on a worker pool: spend streamed from pool workers stops the job at the cap (e2e, Postgres)', function () {
  this.timeout(300_000);
  const { url: poolUrl, workers } = poolSuite();

  /**
   * One task `t` on the pool under a $0.005 run budget, its timeout 60 s: `task` adds its engine, spec, check and
   * review. Returns the run's result, its rows, what they spent (micro-USD), its state, the worker's output and how
   * long the run took (s).
   */
  async function onThePool(name: string, engines: string, task: Record<string, unknown>) {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const w = startPoolWorker(url, name, engines, 'bash', 1);
    workers.push(w);
    await workersUp([w]);
    const file = writeManifest(dir, {
      run_name: name,
      worktrees: true,
      repo,
      remote,
      budget_usd: 0.005,
      tasks: [{ key: 't', max_attempts: 1, timeout_s: 60, ...task }],
    });
    const home = path.join(dir, 'home');
    const started = Date.now();
    const r = await cli(['run', file, '--home', home, '--pool', url, '--config', poolMachine(dir, 'bash').config, '--no-dashboard', ...unsandboxed], {
      env: { VERDICT_POOL_LEASE_MS: LEASE_MS },
    });
    const seconds = (Date.now() - started) / 1000;
    const rows = readRows(home);
    const spent = spentOf(rows);
    const state = stateOf(home);
    console.log(
      `      spent ${spent} micro-USD of a 5000 micro-USD budget (${((spent / 5000 - 1) * 100).toFixed(1)} % over), the run took ${seconds.toFixed(1)} s of a 60 s timeout; rows: ${rows
        .map((x) => `${x.step as string} ${x.verdict as string} ${String(x.cost_microusd)}`)
        .join(', ')}; t ${state.tasks[0]?.status}, state.json spent ${String(state.spend?.spentMicroUsd)}`,
    );
    return { r, rows, spent, state, worker: w };
  }

  it("a pool worker's engine that streams its spend past the run's budget is stopped there: BUDGET_EXCEEDED, its row holds what it spent, at most 20 % over", async () => {
    // $0.0001 every 0.2 s, never ending: only the budget (or the 60 s timeout, $0.03) stops it.
    const marker = `pool-meter-${process.pid}-${Date.now()}`;
    const spec = `: ${marker}; echo partial > draft.txt; while :; do echo '${meterStep(0.0001)}'; sleep 0.2; done`;
    const { r, rows, spent, state, worker } = await onThePool('pool-meter', 'meter', { engine: 'meter', spec, check: 'test -s out.txt' });
    assert.equal(r.exitCode, 1, r.all);
    assert.equal(state.tasks[0]?.status, 'BUDGET_EXCEEDED', r.all);
    assert.match(state.tasks[0]?.reason ?? '', /^budget: \$0\.00\d+ spent passed budget_usd \$0\.0050; this attempt was stopped/, r.all);
    assert.deepEqual(
      rows.map((x) => [x.step, x.verdict, x.host]),
      [['work', 'CANCELLED', 'pool-meter']],
      r.all,
    );
    assert.ok(spent > 5000 && spent <= 6000, `spent ${spent} micro-USD: recorded, and at most 20 % over the 5000 budget\n${r.all}`);
    assert.match(worker.out(), /t\/1: CANCELLED/, worker.out());
    assert.deepEqual(processesWith(marker), [], 'the engine is not left running on the worker');
  });

  it("a reviewer on a pool worker that streams its spend past the run's budget is stopped there, and its spend counts against the budget", async () => {
    // The worker's agent writes out.txt for nothing; its check passes; its reviewer (on the worker) reports $0.0001
    // every 0.2 s and never answers: only the budget (or the 60 s timeout) stops it.
    const { r, rows, spent, state, worker } = await onThePool('pool-review', 'agent', {
      engine: 'agent',
      spec: 'echo ok > out.txt',
      check: 'test -s out.txt',
      review: { engines: ['runaway'] },
    });
    assert.equal(r.exitCode, 1, r.all);
    assert.equal(state.tasks[0]?.status, 'BUDGET_EXCEEDED', r.all);
    const review = rows.filter((x) => x.step === 'review');
    assert.deepEqual(
      review.map((x) => [x.verdict, x.worker_engine]),
      [['CANCELLED', 'runaway']],
      r.all,
    );
    assert.ok(spent > 5000 && spent <= 6000, `spent ${spent} micro-USD: recorded, and at most 20 % over the 5000 budget\n${r.all}`);
    assert.ok((state.spend?.spentMicroUsd ?? 0) > 5000, `the run's spend counts the reviewer: ${JSON.stringify(state.spend)}`);
    assert.match(worker.out(), /t\/1: CANCELLED/, worker.out());
  });
});
