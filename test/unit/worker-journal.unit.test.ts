import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  appendWorker,
  mergeWorkerJournal,
  openWorkerJournal,
  readSandboxInits,
  readWorkerJournal,
  workerJournalFile,
} from '../../extension/core/live/worker-journal';
import type { AttemptState, RunState, TaskState } from '../../extension/core/live/state';

function view(attempt: number, over: Partial<AttemptState> = {}): AttemptState {
  return {
    attempt,
    phase: 'running',
    verdict: null,
    startedAt: 1,
    endedAt: null,
    workerPid: 4242,
    workerStartTime: '99',
    tokensIn: null,
    tokensOut: null,
    costMicroUsd: null,
    checkExitCode: null,
    dir: `/d/${attempt}`,
    notes: '',
    ...over,
  };
}

function task(key: string, attempts: AttemptState[]): TaskState {
  return {
    key,
    engine: 'script',
    model: null,
    taskType: null,
    verified: null,
    status: 'running',
    dir: `/w/${key}`,
    branch: null,
    commit: null,
    port: null,
    attempts,
  };
}

function run(tasks: TaskState[]): RunState {
  return {
    version: 1,
    runId: 'r',
    runName: 'n',
    manifestFile: 'm',
    identity: 'i',
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
    containment: 'none',
    paused: false,
    draining: false,
    control: [],
    tasks,
  } as RunState;
}

describe('worker journal (live/worker-journal.ts)', () => {
  it('reads back what was appended, beside the state file, skipping a line cut short', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-journal-'));
    const file = workerJournalFile(path.join(dir, 'state.json'));
    assert.equal(file, path.join(dir, 'workers.jsonl'));
    assert.deepEqual(readWorkerJournal(file), []);
    const fd = openWorkerJournal(file);
    appendWorker(fd, { key: 'a', view: view(1) });
    appendWorker(fd, { key: 'b', view: view(2, { workerPid: 7 }) });
    appendWorker(fd, { init: { pid: 99, startTime: '1234' } });
    fs.closeSync(fd);
    fs.appendFileSync(file, '{"init":{"pid":1,"startTime":"5"}}\n{"init":{"pid":"7","startTime":"5"}}\n');
    fs.appendFileSync(file, '{"key":"c","view":{"attem');
    assert.deepEqual(
      readWorkerJournal(file).map((e) => [e.key, e.view.attempt, e.view.workerPid]),
      [
        ['a', 1, 4242],
        ['b', 2, 7],
      ],
    );
    // Init lines, without the workers' (and never PID 1 or a pid that is not a number).
    assert.deepEqual(readSandboxInits(file), [{ pid: 99, startTime: '1234' }]);
  });

  it('gives the state what it had not got yet, and never overrides a newer view', () => {
    const state = run([
      task('missing', [view(1, { phase: 'done', verdict: 'FAIL', workerPid: 11 })]),
      task('nopid', [view(1, { workerPid: null, workerStartTime: null, phase: 'preparing' })]),
      task('newer', [view(1, { workerPid: 33, phase: 'checking' })]),
      task('done', [view(1, { workerPid: null, phase: 'done', verdict: 'PASS' })]),
    ]);
    const changed = mergeWorkerJournal(state, [
      { key: 'missing', view: view(2, { workerPid: 12 }) },
      { key: 'nopid', view: view(1, { workerPid: 22 }) },
      { key: 'newer', view: view(1, { workerPid: 34, phase: 'running' }) },
      { key: 'done', view: view(1, { workerPid: 44 }) },
      { key: 'gone', view: view(1, { workerPid: 55 }) },
    ]);
    assert.equal(changed, 2);
    const [missing, nopid, newer, done] = state.tasks as [TaskState, TaskState, TaskState, TaskState];
    assert.deepEqual(
      missing.attempts.map((a) => [a.attempt, a.workerPid, a.phase]),
      [
        [1, 11, 'done'],
        [2, 12, 'running'],
      ],
    );
    assert.deepEqual([nopid.attempts[0]?.workerPid, nopid.attempts[0]?.workerStartTime, nopid.attempts[0]?.phase], [22, '99', 'running']);
    assert.deepEqual([newer.attempts[0]?.workerPid, newer.attempts[0]?.phase], [33, 'checking']);
    assert.deepEqual([done.attempts[0]?.workerPid, done.attempts[0]?.verdict], [null, 'PASS']);
    assert.equal(state.tasks.length, 4);
  });
});
