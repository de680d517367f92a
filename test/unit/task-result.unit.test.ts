import assert from 'node:assert/strict';
import { STATUS, resultSummary, roundCounts, runResult, taskResult, type TaskStatus } from '../../schemas/status';

describe('taskResult and runResult: one outcome per task for every view', () => {
  it('reads every status of the table', () => {
    const got = Object.fromEntries((Object.keys(STATUS) as TaskStatus[]).map((s) => [s, taskResult(s)]));
    assert.deepEqual(got, {
      queued: 'queued',
      preparing: 'running',
      baseline: 'running',
      running: 'running',
      checking: 'running',
      retry_queued: 'running',
      PASS: 'passed',
      FAIL: 'failed',
      TIMEOUT: 'failed',
      STALLED: 'failed',
      ERROR: 'failed',
      RATE_LIMITED: 'failed',
      INTERRUPTED: 'failed',
      CANCELLED: 'skipped',
      BUDGET_EXCEEDED: 'skipped',
      BLOCKED: 'skipped',
      SKIPPED: 'skipped',
    });
  });

  it('reads an unknown status (a newer or damaged record) as unfinished, never as passed', () => {
    assert.equal(taskResult('MERGED_BY_A_NEWER_VERSION'), 'running');
    assert.equal(taskResult(''), 'running');
  });

  it('ranks a run as the Test Explorer ranks a parent: a failure wins, a skipped task does not make a run red', () => {
    assert.equal(runResult(['PASS', 'CANCELLED']), 'passed');
    assert.equal(runResult(['PASS', 'BLOCKED', 'FAIL']), 'failed');
    assert.equal(runResult(['PASS', 'running']), 'running');
    assert.equal(runResult(['FAIL', 'running']), 'failed');
    assert.equal(runResult(['CANCELLED', 'SKIPPED']), 'skipped');
    assert.equal(runResult([]), 'skipped');
  });

  it('counts the dashboard bars: a retry that passed is one failure in round 1, a pass in round 2 and on the run; BLOCKED and CANCELLED are skipped', () => {
    const tasks = [
      { status: 'PASS', attempts: [{ verdict: 'FAIL' }, { verdict: 'PASS' }] },
      { status: 'FAIL', attempts: [{ verdict: 'FAIL' }, { verdict: 'FAIL' }] },
      { status: 'BLOCKED', attempts: [] },
      { status: 'CANCELLED', attempts: [{ verdict: 'CANCELLED' }] },
      { status: 'running', attempts: [{ verdict: null }] },
    ];
    assert.deepEqual(roundCounts(tasks, null), { queued: 0, running: 1, passed: 1, failed: 1, skipped: 2 });
    assert.deepEqual(roundCounts(tasks, 1), { queued: 0, running: 1, passed: 0, failed: 2, skipped: 2 });
    assert.deepEqual(roundCounts([{ status: 'queued', attempts: [] }], 1), { queued: 1, running: 0, passed: 0, failed: 0, skipped: 0 });
    assert.deepEqual(roundCounts(tasks, 2), { queued: 0, running: 0, passed: 1, failed: 1, skipped: 0 });
    assert.equal(resultSummary(tasks.map((t) => t.status)), '1/5 passed · 1 failed · 2 skipped');
    assert.equal(resultSummary(['PASS']), '1/1 passed');
  });
});
