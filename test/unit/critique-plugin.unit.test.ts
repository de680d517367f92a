import assert from 'node:assert/strict';
import { critiqueWorkflow, isRevision, markRevision } from '../../extension/core/run/workflows/critique';
import { poolPartUses, workflowPrompt } from '../../extension/core/run/workflows';
import type { AttemptRecord } from '../../extension/core/run/attempt-record';
import type { AttemptContext, TaskRuntime } from '../../extension/core/run/steps/context';

const taskOf = (): TaskRuntime => ({ spec: { key: 't', spec: 'Write a.txt' }, failure: null, state: {} }) as unknown as TaskRuntime;
const passed = (revision?: string) =>
  ({ verdict: 'PASS', ...(revision === undefined ? {} : { workflows: { critique: { revision } } }) }) as unknown as AttemptRecord;
const ctx = {} as AttemptContext;

describe('critique plugin: a revision is handed through the workflow table, and is one exactly while it is the failure text', () => {
  it('a PASS whose round asked a revision asks one more attempt with its text; a PASS without one asks none', () => {
    const task = taskOf();
    assert.equal(critiqueWorkflow.onAttemptEnd?.(ctx, task, passed(), { goOn: true, stopped: false }), null);
    assert.equal(critiqueWorkflow.onAttemptEnd?.(ctx, task, passed('fix line 3'), { goOn: true, stopped: false }), 'fix line 3');
    task.failure = 'fix line 3';
    assert.equal(isRevision(task), true);
    assert.match(
      workflowPrompt(task, task.failure) ?? '',
      /^Write a\.txt\n\n---\nYour previous proposal for this task passed its check and was then criticised\..*\nfix line 3$/s,
    );
  });

  it('a stopped task, a draining run or a restart asks no revision', () => {
    const task = taskOf();
    assert.equal(critiqueWorkflow.onAttemptEnd?.(ctx, task, passed('fix'), { goOn: false, stopped: true }), null);
    assert.equal(critiqueWorkflow.onAttemptEnd?.(ctx, task, passed('fix'), { goOn: false, stopped: false }), null);
    task.failure = 'fix';
    assert.equal(isRevision(task), false, 'nothing was handed');
  });

  it("after a retry replaced the revision's text, or a rerun cleared it, the next attempt is no revision; the handed text is the task's own", () => {
    const task = taskOf();
    critiqueWorkflow.onAttemptEnd?.(ctx, task, passed('the points'), { goOn: true, stopped: false });
    task.failure = 'the points';
    task.failure = 'Attempt 2 failed: the check exited 1';
    assert.equal(isRevision(task), false);
    assert.equal(workflowPrompt(task, task.failure), null, 'an ordinary retry gets the ordinary retry prompt');
    task.failure = null;
    assert.equal(isRevision(task), false);
    const other = taskOf();
    other.failure = 'the points';
    assert.equal(isRevision(other), false, "the handed text is the task's own, not any task's");
  });

  it("a revision's pool part: sent for a revision only, refused unless true, and the worker's task built from it is a revision with the revision prompt", () => {
    const part = critiqueWorkflow.pool!;
    const check = { bad: (want: string): never => assert.fail(`refused: ${want}`), isKey: () => true, isCommit: () => true };
    const task = taskOf();
    assert.equal(part.send(ctx, task), null, 'no revision: no part');
    critiqueWorkflow.onAttemptEnd?.(ctx, task, passed('fix line 3'), { goOn: true, stopped: false });
    task.failure = 'fix line 3';
    assert.equal(part.send(ctx, task), true);
    assert.throws(
      () =>
        part.parse('yes', {
          ...check,
          bad: (want) => {
            throw new Error(want);
          },
        }),
      /true \(the attempt is a revision\)$/,
    );
    // On the worker: a fresh task with the payload's failure, then the parts applied (pool/worker.ts taskOf).
    const onWorker = taskOf();
    onWorker.failure = 'fix line 3';
    assert.equal(workflowPrompt(onWorker, onWorker.failure), null, 'before the part: an ordinary retry');
    poolPartUses({ critique: part.parse(true, check) }).apply(onWorker);
    assert.equal(isRevision(onWorker), true);
    assert.match(workflowPrompt(onWorker, onWorker.failure) ?? '', /^Write a\.txt\n\n---\nYour previous proposal/);
  });

  it("a pool worker marks the job's failure as the revision it is", () => {
    const task = taskOf();
    task.failure = 'criticisms';
    assert.equal(isRevision(task), false);
    markRevision(task);
    assert.equal(isRevision(task), true);
  });
});
