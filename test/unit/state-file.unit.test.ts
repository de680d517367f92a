import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { StateFile, type RunState, type TaskState } from '../../extension/core/live/state';
import { tempDir } from '../helpers/fixtures';

function task(key: string, notes: string): TaskState {
  return {
    key,
    engine: 'script',
    model: null,
    taskType: null,
    verified: 'it says "$&" and $\' and $1',
    status: 'running',
    dir: `/w/${key}`,
    branch: null,
    commit: null,
    port: 4000,
    attempts: [
      {
        attempt: 1,
        phase: 'running',
        verdict: null,
        startedAt: 1,
        endedAt: null,
        workerPid: 7,
        tokensIn: null,
        tokensOut: null,
        costMicroUsd: null,
        checkExitCode: null,
        dir: '/d',
        notes,
      },
    ],
  };
}

describe('StateFile: each task serialised again only when it may have changed', () => {
  it('the file is always exactly JSON.stringify(state, null, 1), through saveTask and save', async () => {
    const file = path.join(tempDir(), 'state.json');
    const a = task('a', 'line one\nline two, ünïcode, \u0000 and "quotes"');
    const b = task('b', '');
    const state = { version: 1, runId: 'r', tasks: [a, b], control: [], note: "$& $` $'" } as unknown as RunState;
    const sf = new StateFile(file, state, 0);
    const same = () => assert.equal(fs.readFileSync(file, 'utf8'), JSON.stringify(state, null, 1));
    await sf.save();
    same();
    a.status = 'checking';
    (a.attempts[0] as { phase: string }).phase = 'checking';
    await sf.saveTask(a);
    same();
    // A task the runner adds or changes is written by its save() (every task may have changed).
    b.status = 'PASS';
    state.tasks.push(task('c', 'new'));
    await sf.save();
    same();
    state.tasks.length = 0;
    await sf.save();
    same();
  });

  it('a change saveTask did not name reaches the file with the next save()', async () => {
    const file = path.join(tempDir(), 'state.json');
    const a = task('a', '');
    const b = task('b', '');
    const state = { version: 1, runId: 'r', tasks: [a, b] } as unknown as RunState;
    const sf = new StateFile(file, state, 0);
    await sf.save();
    b.status = 'BLOCKED';
    a.status = 'checking';
    await sf.saveTask(a);
    const read = () => (JSON.parse(fs.readFileSync(file, 'utf8')) as RunState).tasks.map((t) => t.status);
    assert.equal(read()[0], 'checking');
    await sf.save();
    assert.deepEqual(read(), ['checking', 'BLOCKED']);
  });
});
