import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { taskLogText, TASK_LOG_MAX_BYTES } from '../../extension/core/dashboard/task-log';
import { attemptDir } from '../../extension/core/config/home';
import type { RunInfo } from '../../extension/core/live/registry';
import type { AttemptState, TaskState } from '../../extension/core/live/state';
import { tempDir } from '../helpers/fixtures';

function attempt(n: number, over: Partial<AttemptState> = {}): AttemptState {
  return {
    attempt: n,
    phase: 'running',
    step: 'work',
    verdict: null,
    startedAt: 1,
    endedAt: null,
    workerPid: 1,
    tokensIn: null,
    tokensOut: null,
    costMicroUsd: null,
    checkExitCode: null,
    dir: '',
    notes: '',
    ...over,
  } as AttemptState;
}

function info(tasks: Partial<TaskState>[]): RunInfo {
  return {
    state: { runId: 'r1', runName: 'demo', tasks },
    liveness: 'running',
    stateFile: '',
    counts: {},
    tokens: 0,
    costMicroUsd: null,
  } as unknown as RunInfo;
}

/** A task's live log (core/dashboard/task-log.ts): the latest attempt's worker output, bounded, with a header. */
describe('taskLogText', () => {
  let home: string;
  const log = (key: string, n: number, text: string | Buffer) => {
    const dir = attemptDir(home, 'r1', key, n);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'worker.log'), text);
  };
  beforeEach(() => {
    home = tempDir();
  });

  it("shows the latest attempt's worker output under a header naming run, task, attempt and state; appended text shows on the next read", () => {
    const run = info([{ key: 'a', status: 'running', attempts: [attempt(1)] }]);
    log('a', 1, 'tick-1\n');
    const first = taskLogText(home, run, 'a');
    assert.match(first, /^# demo \| a \| attempt 1 \| running \(work\)\n# the worker's output as it arrives: .*attempt-1\/worker\.log\n\ntick-1\n$/);
    fs.appendFileSync(path.join(attemptDir(home, 'r1', 'a', 1), 'worker.log'), 'tick-2\n');
    assert.match(taskLogText(home, run, 'a'), /tick-1\ntick-2\n$/);
  });

  it("a retry's attempt replaces the first, and the header says how that one ended", () => {
    log('a', 1, 'first try\n');
    log('a', 2, 'second try\n');
    const text = taskLogText(
      home,
      info([
        {
          key: 'a',
          status: 'retry_queued',
          attempts: [attempt(1, { phase: 'done', verdict: 'FAIL', endedAt: 2, step: 'check' } as Partial<AttemptState>), attempt(2)],
        },
      ]),
      'a',
    );
    assert.match(text, /^# demo \| a \| attempt 2 \| running \(work\) \(attempt 1: FAIL at check\)/);
    assert.match(text, /second try\n$/);
    assert.doesNotMatch(text, /first try/);
  });

  it('is bounded: a worker that wrote megabytes shows its last 64 KiB and how much came before', () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 'x');
    big.write('THE-END', big.length - 7);
    log('a', 1, big);
    const text = taskLogText(home, info([{ key: 'a', status: 'running', attempts: [attempt(1)] }]), 'a');
    assert.ok(Buffer.byteLength(text) < TASK_LOG_MAX_BYTES + 1024, `${Buffer.byteLength(text)} bytes`);
    assert.match(text, new RegExp(`the first ${big.length - TASK_LOG_MAX_BYTES} bytes are not shown`));
    assert.ok(text.endsWith('THE-END'));
  });

  it('says so when there is no attempt, no log yet, or no such task', () => {
    assert.match(taskLogText(home, info([{ key: 'a', status: 'queued', attempts: [] }]), 'a'), /^# demo \| a \| queued: no attempt has started yet/);
    assert.match(
      taskLogText(home, info([{ key: 'a', status: 'running', attempts: [attempt(1, { phase: 'preparing' })] }]), 'a'),
      /# worker\.log not written yet/,
    );
    assert.match(taskLogText(home, info([]), 'b'), /^# run demo \(r1\) has no task b/);
  });
});
