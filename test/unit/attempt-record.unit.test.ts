import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { attemptView, evalRow, flatRecord, recordFromView, summarize, type AttemptRecord } from '../../extension/core/run/attempt-record';
import { appendEvalRow, evalRowProblems } from '../../extension/core/store/eval-log';
import type { RunState, TaskState } from '../../extension/core/live/state';
import { sampleRow, tempDir } from '../helpers/fixtures';
import { workRow } from '../../extension/core/run/workflows';

function record(over: Partial<AttemptRecord> = {}): AttemptRecord {
  return {
    runId: '20261201-000000-abcd',
    runName: 'r',
    identity: 'me',
    host: 'h',
    taskKey: 't',
    spec: 'do it',
    engine: 'codex',
    harness: 'codex-cli',
    model: 'openai/gpt-5-mini',
    taskType: 'parser',
    reasoningEffort: null,
    accessPlan: null,
    sandbox: 'bwrap',
    attempt: 1,
    retry: false,
    branch: 'verdict/20261201-000000-abcd/t',
    dir: '/records/t/attempt-1',
    startedAt: 1_000,
    phase: 'done',
    steps: [],
    workerPid: null,
    workerStartTime: null,
    worker: null,
    usage: {
      tokensIn: 100,
      tokensOut: 20,
      tokensCached: 10,
      tokensCacheWrite: null,
      tokensReasoning: 2,
      costMicroUsd: null,
      reportedModel: null,
      finalStatus: 'success',
      finalError: null,
    },
    seal: null,
    check: null,
    verdict: 'FAIL',
    reason: 'the check exited 1',
    endedAt: 3_500,
    costMicroUsd: 1234,
    commit: null,
    sealed: null,
    rowStep: 'work',
    group: null,
    candidate: null,
    ...over,
  };
}

describe('one attempt record, three projections', () => {
  it("the eval row of a record matches schemas/eval-row.schema.json and carries the record's one cost", () => {
    const row = evalRow(record());
    assert.deepEqual(evalRowProblems(row), []);
    assert.equal(row.cost_microusd, 1234);
    assert.equal(row.worker_tokens, 120);
    assert.equal(row.duration_ms, 2500);
    assert.equal(row.lab, 'openai');
  });

  it('state.json shows the step running now, and a verdict only once the attempt is settled', () => {
    const running = record({
      phase: 'checking',
      verdict: 'PASS',
      endedAt: null,
      steps: [
        { step: 'work', startedAt: 1, endedAt: 2, note: '' },
        { step: 'check', startedAt: 2, endedAt: 3, note: 'PASS' },
      ],
      currentStep: 'deliver',
    });
    assert.deepEqual(
      [attemptView(running).step, attemptView(running).verdict],
      ['deliver', null],
      "a PASS from the check is not the attempt's verdict until it settles",
    );
    const { currentStep: _current, ...between } = running;
    assert.equal(attemptView(between).step, 'check', 'between steps: the last one');
    assert.deepEqual([attemptView(record({})).verdict, attemptView(record({})).step], ['FAIL', null]);
  });

  it('state.json shows the same cost and retry flag as the row (they used to disagree)', () => {
    const rec = record({ attempt: 2, retry: true });
    const view = attemptView(rec);
    const row = evalRow(rec);
    assert.equal(view.costMicroUsd, row.cost_microusd);
    assert.equal(view.retry, row.retry);
    assert.equal(view.notes, row.notes);
  });

  it('a commit reaches the row only with PASS', () => {
    const sha = 'a'.repeat(40);
    assert.equal(evalRow(record({ verdict: 'PASS', commit: sha })).commit, sha);
    assert.equal(evalRow(record({ verdict: 'FAIL', commit: sha })).commit, null);
  });

  it('an unsettled record has no row', () => {
    assert.throws(() => evalRow(record({ verdict: null, endedAt: null })), /not settled/);
  });

  it("reconcile rebuilds a record from the state view: the row has the runner's shape and facts", () => {
    const rec = record({ attempt: 2, retry: false, verdict: null, endedAt: null, phase: 'running' });
    const run = { runId: rec.runId, runName: 'r', identity: 'me', host: 'h' } as RunState;
    const task = { key: 't', engine: 'codex', model: rec.model, taskType: 'parser', branch: rec.branch } as TaskState;
    const back = recordFromView(run, task, attemptView(rec), 'do it', 'codex-cli');
    back.verdict = 'INTERRUPTED';
    back.endedAt = 9_000;
    const row = evalRow(back);
    assert.deepEqual(evalRowProblems(row), []);
    assert.deepEqual(Object.keys(row).sort(), Object.keys(evalRow(record())).sort());
    // The runner said attempt 2 was not a retry (it followed a rate limit): reconcile keeps that, not `attempt > 1`.
    assert.equal(row.retry, false);
    assert.equal(row.cost_microusd, 1234);
    assert.equal(row.tokens_in, 100);
  });

  it('summarize adds durations and tokens, and an unknown usage makes the sum unknown', () => {
    const a = record({ attempt: 1 });
    const b = record({ attempt: 2, retry: true, verdict: 'PASS', reason: '', startedAt: 4_000, endedAt: 5_000, usage: null });
    const s = summarize([a, b]);
    assert.equal(s.attempts, 2);
    assert.equal(s.durationMs, 3500);
    assert.equal(s.tokens, null);
    assert.equal(s.verdict, 'PASS');
    assert.equal(s.reason, '');
  });
});

describe('the eval-row schema is enforced on write', () => {
  it('refuses a row that does not match, naming the field, and writes nothing', async () => {
    const log = path.join(tempDir(), 'runs.jsonl');
    await assert.rejects(appendEvalRow(log, sampleRow({ cost_microusd: 1.5 })), /cost_microusd: must be integer.*was not written/);
    await assert.rejects(appendEvalRow(log, { ...sampleRow(), verdict: 'MAYBE' } as never), /verdict: must be equal to one of the allowed values/);
    await assert.rejects(appendEvalRow(log, { ...sampleRow(), extra: 1 } as never), /extra: must NOT have additional properties/);
    assert.equal(fs.existsSync(log), false);
    await appendEvalRow(log, sampleRow());
    assert.equal(fs.readFileSync(log, 'utf8').split('\n').length, 2);
  });

  it("the work row: each workflow's columns after `step` and before `suite` (phases' red, critique's report), none without a workflow's record", () => {
    const receipt = { exitCode: 1, signal: null, timedOut: false, durationMs: 5 } as unknown as NonNullable<AttemptRecord['check']>['receipt'];
    const suite = { command: 'x', passed: true, exitCode: 0, receipt, durationMs: 3, output: '' } as unknown as NonNullable<AttemptRecord['suite']>;
    const red = workRow(record({ workflows: { phases: { red: { files: ['a.sh'], receipt, output: 'x', exitCode: 1 } } }, suite }));
    assert.deepEqual(Object.keys(red).slice(-3), ['step', 'red', 'suite']);
    assert.deepEqual(red.red, { files: ['a.sh'], exit_code: 1, timed_out: false, check_log: path.join(record().dir, 'red.log') });
    const critiqued = workRow(record({ workflows: { critique: { critiqueReport: '/r/critique.md' } } }));
    assert.deepEqual(Object.keys(critiqued).slice(-2), ['step', 'critique_report']);
    assert.equal(JSON.stringify(workRow(record())), JSON.stringify(evalRow(record())), 'no workflow column for a plain attempt');
  });

  it("the flat record a pool worker sends: each workflow's fields among the record's own, under the names they had there", () => {
    const red = { files: ['a.sh'], receipt: null, output: 'x', exitCode: 1 } as never;
    const flat = flatRecord(record({ workflows: { phases: { red } } }));
    assert.equal(flat.red, red);
    assert.equal('workflows' in flat, false);
    assert.deepEqual(Object.keys(flatRecord(record())), Object.keys(record()));
  });
});
