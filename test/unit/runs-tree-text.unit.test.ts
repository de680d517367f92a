import assert from 'node:assert/strict';
import type { TaskState } from '../../extension/core/live/state';
import { groupedOrder } from '../../schemas/task-order';
import { taskRowText } from '../../extension/vscode/task-row-text';

// The runs tree's rows as text (extension/vscode/task-row-text.ts; runs-tree.ts makes TreeItems of it): a validated
// task's workers under the validator with role, number, letter and engine; the blocked validator names its blocker.

function state(key: string, status: TaskState['status'], extra: Partial<TaskState> = {}): TaskState {
  const attempts =
    status === 'BLOCKED' || status === 'queued'
      ? []
      : [
          {
            attempt: 1,
            phase: 'done' as const,
            verdict: status as 'PASS',
            startedAt: 0,
            endedAt: 1500,
            workerPid: null,
            tokensIn: null,
            tokensOut: null,
            costMicroUsd: null,
            checkExitCode: status === 'PASS' ? 0 : 1,
            dir: '/d',
            notes: '',
            step: 'check' as const,
          },
        ];
  return {
    key,
    engine: 'script',
    model: null,
    taskType: null,
    verified: `${key} works`,
    status,
    dir: `/w/${key}`,
    branch: null,
    commit: null,
    port: null,
    attempts,
    ...extra,
  };
}

describe("the runs tree's rows: workflow members under their lead", () => {
  const tasks: TaskState[] = [
    state('sort--w1', 'PASS', { model: 'm1', workflow: { lead: 'sort', role: 'worker', member: 1 } }),
    state('sort--w2', 'FAIL', { model: 'm2', workflow: { lead: 'sort', role: 'worker', member: 2 } }),
    state('sort', 'BLOCKED', {
      after: ['sort--w1', 'sort--w2'],
      reason: 'prerequisite sort--w2 ended FAIL, not PASS; this task did not start',
      workflow: { lead: 'sort', role: 'validator' },
    }),
    // A plain task named like a worker: a row of the run, not a member.
    state('sort--w3', 'PASS'),
  ];

  it("the validator's row says what it is over and which worker blocked it; its workers are its children, not rows of the run", () => {
    const rows = groupedOrder(tasks, { sort: { 'sort--w1': 'B', 'sort--w2': 'A' } });
    assert.deepEqual(
      rows.map((r) => r.task.key),
      ['sort', 'sort--w3'],
    );
    const lead = taskRowText(rows[0]?.task as TaskState, { row: rows[0] });
    assert.equal(lead.description, 'BLOCKED · validator of 2 workers · blocked by worker 2 · A (sort--w2 FAIL) · 0 attempts');
    assert.deepEqual(lead.icon, ['lock', 'disabledForeground']);
    assert.match(lead.tooltip, /prerequisite sort--w2 ended FAIL/);
    const members = rows[0]?.members.map((member) => taskRowText(member.task, { member }, 0)) ?? [];
    assert.deepEqual(
      members.map((m) => [m.label, m.description]),
      [
        ['sort--w1', 'PASS · worker 1 · B · script/m1 · 1 attempt · 1.5s'],
        ['sort--w2', 'FAIL at check · worker 2 · A · script/m2 · blocked its lead · 1 attempt · 1.5s'],
      ],
    );
    assert.equal(taskRowText(rows[1]?.task as TaskState, { row: rows[1] }).description, 'PASS · 1 attempt · 1.5s');
  });

  it('a best-of-N candidate keeps its row: number, winner starred, engine', () => {
    const group = [
      state('p', 'PASS', { group: 'p', select: 'all', winner: 'p--c1', after: ['p--c1'], reason: 'winner: candidate 1 (p--c1, script)' }),
      state('p--c1', 'PASS', { group: 'p', candidate: 1 }),
    ];
    const [row] = groupedOrder(group);
    assert.equal(taskRowText(row?.task as TaskState, { row }).description, 'PASS · 1 candidates · select all · winner: candidate 1 (p--c1, script)');
    const c = taskRowText(row?.candidates[0]?.task as TaskState, { candidate: row?.candidates[0] }, 0);
    assert.equal(c.description, 'PASS · candidate 1 · winner · script · 1 attempt · 1.5s');
    assert.deepEqual(c.icon, ['star-full', 'testing.iconPassed']);
  });
});

describe("the runs tree's rows: merged and discarded", () => {
  const sha = 'a'.repeat(40);
  it('a merged task shows MERGED with its commit and is no longer `passed` (its Merge action is gone); its work can still be reviewed', () => {
    const t = state('m', 'PASS', { branch: 'verdict/r/m', commit: 'c'.repeat(40), merged: { commit: sha, into: 'main', at: 1 } });
    const row = taskRowText(t, {}, 0);
    assert.equal(row.description, `MERGED ${sha.slice(0, 10)} · 1 attempt · 1.5s`);
    assert.equal(row.contextValue, 'task.merged.worktree');
    assert.equal(taskRowText({ ...t, merged: undefined }, {}, 0).contextValue, 'task.passed.worktree');
  });

  it('a discarded task shows DISCARDED with the commit that recovers it and has no worktree actions', () => {
    const row = taskRowText(state('d', 'FAIL', { branch: 'verdict/r/d', discarded: { commit: sha, at: 1 } }), {}, 0);
    assert.equal(row.description, `DISCARDED ${sha.slice(0, 10)} · 1 attempt · 1.5s`);
    assert.equal(row.contextValue, 'task.discarded');
  });
});
