import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { listRuns, STALE_HEARTBEAT_MS } from '../../extension/core/live/registry';
import { shortHost } from '../../extension/core/host/hostname';
import type { RunState, TaskState } from '../../extension/core/live/state';
import { tempDir } from '../helpers/fixtures';

function task(key: string, status: TaskState['status']): TaskState {
  return {
    key,
    engine: 'script',
    model: null,
    taskType: null,
    verified: null,
    status,
    dir: `/w/${key}`,
    branch: null,
    commit: null,
    port: 1,
    attempts: [
      {
        attempt: 1,
        phase: 'done',
        verdict: null,
        startedAt: 0,
        endedAt: 0,
        workerPid: null,
        tokensIn: 10,
        tokensOut: 5,
        costMicroUsd: 7,
        checkExitCode: null,
        dir: '/x',
        notes: '',
      },
    ],
  };
}

function writeRun(home: string, id: string, over: Partial<RunState>): void {
  const state: RunState = {
    version: 1,
    runId: id,
    runName: id,
    manifestFile: '/m.json',
    identity: 'me',
    host: shortHost(),
    pid: process.pid,
    status: 'running',
    startedAt: 1000,
    heartbeatAt: Date.now(),
    endedAt: null,
    maxParallel: 2,
    worktrees: false,
    repo: null,
    baseRef: null,
    baseSha: null,
    tasks: [task('a', 'PASS'), task('b', 'running'), task('c', 'FAIL'), task('d', 'queued')],
    ...over,
  };
  fs.mkdirSync(path.join(home, 'runs', id), { recursive: true });
  fs.writeFileSync(path.join(home, 'runs', id, 'state.json'), JSON.stringify(state));
}

describe('run registry', () => {
  it('lists live runs first, marks a dead orchestrator, counts tasks, tokens and cost, skips corrupt files with a reason', () => {
    const home = tempDir();
    const stale = Date.now() - STALE_HEARTBEAT_MS - 1000;
    writeRun(home, 'old-finished', { status: 'finished', startedAt: 5000, endedAt: 6000 });
    writeRun(home, 'live', { startedAt: 2000 });
    writeRun(home, 'dead', { startedAt: 3000, heartbeatAt: stale, pid: 2 ** 22 + 12345 });
    writeRun(home, 'slow-but-alive', { startedAt: 4000, heartbeatAt: stale, pid: process.pid });
    fs.mkdirSync(path.join(home, 'runs', 'torn'));
    fs.writeFileSync(path.join(home, 'runs', 'torn', 'state.json'), '{"version": 1, "runId": "torn", "tas');
    fs.mkdirSync(path.join(home, 'runs', 'starting'));
    const { runs, skipped } = listRuns(home);
    assert.deepEqual(
      runs.map((r) => [r.state.runId, r.liveness]),
      [
        ['slow-but-alive', 'running'],
        ['live', 'running'],
        ['dead', 'orchestrator-died'],
        ['old-finished', 'finished'],
      ],
    );
    assert.deepEqual(runs[1]?.counts, { total: 4, queued: 1, active: 1, passed: 1, failed: 1, other: 0 });
    assert.equal(runs[1]?.tokens, 60);
    assert.equal(runs[1]?.costMicroUsd, 28);
    assert.equal(skipped.length, 1);
    assert.match(skipped[0]?.reason ?? '', /corrupt or half-written JSON/);
  });

  it('an absent home lists nothing', () => {
    assert.deepEqual(listRuns('/nonexistent/verdict-home'), { runs: [], skipped: [] });
  });
});
