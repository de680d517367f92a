import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { endTask, type TaskEnd } from '../../extension/core/run/end-task';
import type { AttemptRecord } from '../../extension/core/run/attempt-record';
import type { RunEvent } from '../../extension/core/run/run-types';
import type { TaskRuntime } from '../../extension/core/run/steps/context';
import type { StateFile } from '../../extension/core/live/state';

function task(over: Partial<TaskRuntime> = {}): TaskRuntime {
  return {
    spec: { key: 't' },
    state: { key: 't', status: 'running', commit: null, attempts: [] },
    summary: { key: 't', verdict: 'CANCELLED', attempts: 0, durationMs: 0, tokens: 0, verified: null, branch: null, commit: null, reason: '', checkOutput: '' },
    records: [],
    ...over,
  } as unknown as TaskRuntime;
}

function run(): TaskEnd & { events: RunEvent[]; saves: number } {
  const r = {
    events: [] as RunEvent[],
    saves: 0,
    recordErrors: [] as string[],
    emit: (e: RunEvent) => r.events.push(e),
    stateFile: { save: async () => void r.saves++ } as unknown as StateFile,
  };
  return r;
}

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
    model: 'm',
    taskType: 'parser',
    reasoningEffort: null,
    accessPlan: null,
    sandbox: 'none',
    attempt: 1,
    retry: false,
    branch: null,
    dir: '/records/t/attempt-1',
    startedAt: 1_000,
    phase: 'done',
    steps: [],
    workerPid: null,
    workerStartTime: null,
    worker: null,
    usage: null,
    seal: null,
    check: null,
    verdict: 'FAIL',
    reason: 'the check exited 1',
    endedAt: 3_500,
    costMicroUsd: null,
    commit: null,
    sealed: null,
    rowStep: 'work',
    group: null,
    candidate: null,
    ...over,
  };
}

describe("endTask: the one writer of a task's final status", () => {
  it('an ending without an attempt writes the same outcome and reason into the state and the summary, says it once and saves', () => {
    for (const [outcome, event] of [
      ['BLOCKED', 'task-blocked'],
      ['CANCELLED', 'task-cancelled'],
      ['SKIPPED', 'task-skipped'],
      ['BUDGET_EXCEEDED', 'task-skipped'],
      ['ERROR', 'task-note'],
    ] as const) {
      const r = run();
      const t = task();
      endTask(r, t, outcome, `why ${outcome}`);
      assert.deepEqual([t.state.status, t.summary.verdict], [outcome, outcome]);
      assert.deepEqual([t.state.reason, t.summary.reason], [`why ${outcome}`, `why ${outcome}`]);
      assert.deepEqual(
        r.events.map((e) => e.type),
        [event],
      );
      assert.equal(r.saves, 1);
      assert.deepEqual(r.recordErrors, []);
    }
  });

  it('a status that is not final is refused: a task on its way is never ended', () => {
    for (const phase of ['queued', 'running', 'retry_queued', 'checking'] as const) {
      const t = task();
      assert.throws(() => endTask(run(), t, phase as never, 'x'), /not a final status/);
      assert.equal(t.state.status, 'running', 'nothing written');
    }
  });

  it("an attempt's ending takes its summary from the records and leaves state.reason to the attempt (a stop's reason stays)", () => {
    const r = run();
    const t = task({
      records: [record({ attempt: 1 }), record({ attempt: 2, verdict: 'CANCELLED', reason: 'stopped by me', startedAt: 4_000, endedAt: 4_500 })],
    });
    t.state.reason = 'stopped by me';
    endTask(r, t, 'CANCELLED', '', { by: 'attempt', save: false });
    assert.deepEqual([t.state.status, t.summary.verdict, t.summary.attempts, t.summary.durationMs], ['CANCELLED', 'CANCELLED', 2, 3_000]);
    assert.equal(t.state.reason, 'stopped by me');
    assert.match(t.summary.reason, /stopped by me/);
    assert.deepEqual(r.events, [], 'the attempt-finished event already said it');
    assert.equal(r.saves, 0);
  });

  it("a decided group takes its winner's commit in state and summary; a record error is counted with the task's key", () => {
    const r = run();
    const t = task();
    endTask(r, t, 'PASS', 'winner: candidate 2', { commit: 'c'.repeat(40) });
    assert.deepEqual([t.state.commit, t.summary.commit], ['c'.repeat(40), 'c'.repeat(40)]);
    const e = task();
    endTask(r, e, 'ERROR', 'its ranking failed', { recordError: true });
    assert.deepEqual(r.recordErrors, ['t: its ranking failed']);
  });

  it("no other file of the core writes a final status or a summary's verdict by hand", () => {
    const root = path.resolve('extension', 'core');
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.ts')) files.push(p);
      }
    };
    walk(root);
    const finals = 'PASS|FAIL|TIMEOUT|STALLED|ERROR|RATE_LIMITED|CANCELLED|INTERRUPTED|SKIPPED|BUDGET_EXCEEDED|BLOCKED';
    const byHand = [
      /summary\.verdict\s*=[^=]/,
      /summary,\s*\{[^}]*verdict:/,
      new RegExp(`state\\.status\\s*=\\s*'(${finals})'`),
      new RegExp(`state,\\s*\\{[^}]*status:\\s*'(${finals})'`),
    ];
    const found = files
      .filter((f) => !f.endsWith(`${path.sep}end-task.ts`))
      .flatMap((f) =>
        fs
          .readFileSync(f, 'utf8')
          .split('\n')
          .map((line, i) => ({ f, i, line })),
      )
      .filter(({ line }) => byHand.some((re) => re.test(line)))
      .map(({ f, i, line }) => `${path.relative(root, f)}:${i + 1}: ${line.trim()}`);
    assert.deepEqual(found, []);
  });
});
