import assert from 'node:assert/strict';
import { evalRow, rowBase, type AttemptRecord } from '../../extension/core/run/attempt-record';
import { critiqueRow } from '../../extension/core/run/workflows/critique/record';
import { reviewRow } from '../../extension/core/run/review-record';
import { rankRow } from '../../extension/core/run/workflows/best-of-n/rank-record';
import { selectRow } from '../../extension/core/run/workflows/best-of-n/select-row';
import { evalRowProblems } from '../../extension/core/store/eval-log';

function record(over: Partial<AttemptRecord> = {}): AttemptRecord {
  return {
    runId: '20261201-000000-abcd',
    runName: 'r',
    identity: 'me',
    host: 'h',
    taskKey: 'fix--c2',
    spec: 'do it',
    engine: 'codex',
    harness: 'codex-cli',
    model: 'openai/gpt-5-mini',
    taskType: 'parser',
    reasoningEffort: null,
    accessPlan: 'plus',
    sandbox: 'bwrap',
    attempt: 3,
    retry: true,
    branch: 'verdict/20261201-000000-abcd/fix--c2',
    dir: '/records/fix--c2/attempt-3',
    startedAt: 1_000,
    phase: 'done',
    steps: [],
    workerPid: null,
    workerStartTime: null,
    worker: null,
    usage: null,
    seal: null,
    check: null,
    verdict: 'PASS',
    reason: '',
    endedAt: 3_500,
    costMicroUsd: 12,
    commit: 'c'.repeat(40),
    sealed: null,
    rowStep: 'work',
    group: 'fix',
    candidate: 2,
    forced: true,
    ...over,
  };
}
const reader = { engine: 'claude', harness: 'claude-code', model: 'opus', startedAt: 2_000, endedAt: 3_000, receipt: null, usage: null, costMicroUsd: null };
const BASE = [
  'run_id',
  'run_name',
  'identity',
  'host',
  'task_key',
  'spec',
  'task_type',
  'retry',
  'attempt',
  'access_plan',
  'sandbox',
  'branch',
  'group',
  'candidate',
  'forced',
] as const;
const baseOf = (row: Record<string, unknown>) => Object.fromEntries(BASE.filter((k) => k in row).map((k) => [k, row[k]]));

describe("the eval-row builders share one base built from the attempt's record", () => {
  it('work, review and critique rows of one attempt carry the same base, forced included, each a valid row', () => {
    const rec = record();
    const rows = [
      evalRow(rec),
      reviewRow(rec, { ...reader, reviewer: 1, verdict: 'changes', concerns: ['no tests'], error: null }),
      critiqueRow(rec, { ...reader, critic: 1, round: 1, criticisms: [], error: null }),
    ];
    for (const row of rows) {
      assert.deepEqual(evalRowProblems(row), [], row.step);
      assert.deepEqual(baseOf(row as unknown as Record<string, unknown>), rowBase(rec), row.step);
    }
    assert.deepEqual(
      rows.map((r) => [r.step, r.forced, r.group, r.candidate, r.attempt]),
      [
        ['work', true, 'fix', 2, 3],
        ['review', true, 'fix', 2, 3],
        ['critique', true, 'fix', 2, 3],
      ],
    );
    const plain = record({ forced: undefined });
    assert.equal('forced' in evalRow(plain), false, 'a run not forced says nothing of it');
  });

  it("the select row is the winner's base on the group's key; a rank row is the group's, its round as the attempt", () => {
    const select = selectRow(evalRow, record(), 'fix', 'winner: candidate 2', 10_000);
    assert.deepEqual([select.task_key, select.run_id, select.attempt, select.group, select.candidate], ['fix', '20261201-000000-abcd', 3, 'fix', 2]);
    const rank = rankRow(
      {
        runId: 'r1',
        runName: 'n',
        identity: 'me',
        host: 'h',
        taskKey: 'fix',
        spec: 'do it',
        taskType: 't',
        branch: null,
        sandbox: 'none',
        round: 2,
        dir: '/d',
        names: { A: 1 },
      },
      { ...reader, reviewer: 1, scores: { A: 5 }, reasons: {}, error: null, cancelled: false },
    );
    assert.deepEqual(evalRowProblems(rank), []);
    assert.deepEqual(baseOf(rank as unknown as Record<string, unknown>), {
      run_id: 'r1',
      run_name: 'n',
      identity: 'me',
      host: 'h',
      task_key: 'fix',
      spec: 'do it',
      task_type: 't',
      retry: false,
      attempt: 2,
      access_plan: null,
      sandbox: 'none',
      branch: null,
      group: 'fix',
      candidate: null,
    });
  });
});
