import assert from 'node:assert/strict';
import { spendLine } from '../../schemas/spend';
import { runView } from '../../extension/core/dashboard/run-view';
import type { RunInfo } from '../../extension/core/live/registry';
import { Budget } from '../../extension/core/cost/budget';

// The one line of spend every view prints (schemas/spend.ts): `verdict runs RUN`, the runs tree's run row and the
// dashboard's run document, and what the dashboard is given of it (dashboard/run-view.ts).

describe('spend in the views: spent / reserved / budget', () => {
  it('spendLine: spent, what running steps hold, the budget and the share of it spent or held', () => {
    assert.equal(
      spendLine({ spentMicroUsd: 1_200, reservedMicroUsd: 4_000, budgetMicroUsd: 10_000 }),
      'spent $0.0012 · reserved $0.0040 · budget $0.0100 (52 %)',
    );
    assert.equal(spendLine({ spentMicroUsd: 1_200, reservedMicroUsd: 0, budgetMicroUsd: 10_000 }), 'spent $0.0012 · budget $0.0100 (12 %)');
    assert.equal(spendLine({ spentMicroUsd: 2_500_000, reservedMicroUsd: 500_000, budgetMicroUsd: null }), 'spent $2.50 · reserved $0.5000');
    // Past the budget (a run stopped at it is a little over): the share says so, never capped at 100.
    assert.equal(spendLine({ spentMicroUsd: 10_400, reservedMicroUsd: 0, budgetMicroUsd: 10_000 }), 'spent $0.0104 · budget $0.0100 (104 %)');
    // A run older than the field shows nothing rather than a false $0.
    assert.equal(spendLine(undefined), null);
    // Nothing known spent and no budget (scripts: cost unknown) reads as nothing, never as free.
    assert.equal(spendLine({ spentMicroUsd: 0, reservedMicroUsd: 0, budgetMicroUsd: null }), null);
    assert.equal(spendLine({ spentMicroUsd: 0, reservedMicroUsd: 0, budgetMicroUsd: 10_000 }), 'spent $0.0000 · budget $0.0100 (0 %)');
    // budget_tokens: the tokens follow in the same form; without a token budget they are not shown.
    assert.equal(
      spendLine({ spentMicroUsd: 0, reservedMicroUsd: 0, budgetMicroUsd: null, tokens: { spent: 12_000, reserved: 3_000, budget: 50_000 } }),
      'tokens 12,000 · reserved 3,000 · budget 50,000 tokens (30 %)',
    );
    assert.equal(
      spendLine({ spentMicroUsd: 1_200, reservedMicroUsd: 0, budgetMicroUsd: 10_000, tokens: { spent: 21_000, reserved: 0, budget: 20_000 } }),
      'spent $0.0012 · budget $0.0100 (12 %) · tokens 21,000 · budget 20,000 tokens (105 %)',
    );
    assert.equal(spendLine({ spentMicroUsd: 0, reservedMicroUsd: 0, budgetMicroUsd: null, tokens: { spent: 5_000, reserved: 0, budget: null } }), null);
  });

  it("the dashboard gets the run's spend from its state file (and nothing where an older record has none)", () => {
    const state = {
      version: 1,
      runId: 'r1',
      runName: 'n',
      manifestFile: 'm.json',
      identity: 'me',
      host: 'h',
      pid: 1,
      status: 'running',
      startedAt: 0,
      heartbeatAt: 0,
      endedAt: null,
      maxParallel: 1,
      worktrees: false,
      repo: null,
      baseRef: null,
      baseSha: null,
      tasks: [],
    } as RunInfo['state'];
    const info = (s: RunInfo['state']): RunInfo => ({
      state: s,
      liveness: 'running',
      stateFile: '/x/state.json',
      counts: { total: 0, queued: 0, active: 0, passed: 0, failed: 0, other: 0 },
      tokens: 0,
      costMicroUsd: null,
    });
    const spend = { spentMicroUsd: 3, reservedMicroUsd: 4, budgetMicroUsd: 10 };
    assert.deepEqual(runView(info({ ...state, spend })).spend, spend);
    assert.equal('spend' in runView(info(state)), false);
  });

  it('reserved is what running steps hold beyond what they reported, so spent + reserved is what the budget counts', () => {
    const b = new Budget(10_000);
    const r = b.reserve('e/m', null, true, { maxAttemptMicroUsd: 4_000 });
    assert.ok(r && !('waitFor' in r));
    assert.equal(b.reservedMicroUsd, 4_000);
    b.progress(r, 1_500);
    assert.deepEqual([b.spentLiveMicroUsd, b.reservedMicroUsd], [1_500, 2_500]);
    b.progress(r, 5_000);
    assert.deepEqual([b.spentLiveMicroUsd, b.reservedMicroUsd], [5_000, 0]);
    b.settle(r, null);
    assert.deepEqual([b.spentMicroUsd, b.reservedMicroUsd], [5_000, 0]);
  });
});
