import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { reconcileDeadRuns } from '../../extension/core/run/reconcile';
import { appendWorker, openWorkerJournal, workerJournalFile } from '../../extension/core/live/worker-journal';
import { attemptDir, evalLogPath } from '../../extension/core/config/home';
import type { AttemptState, RunState } from '../../extension/core/live/state';

function view(dir: string, attempt: number, over: Partial<AttemptState> = {}): AttemptState {
  // A pid that is never a live process of this test's (pid_max is far below it), so reconcile has nothing to kill.
  return { attempt, phase: 'running', verdict: null, startedAt: 1, endedAt: null, workerPid: 2 ** 30, workerStartTime: '1', tokensIn: null, tokensOut: null, costMicroUsd: null, checkExitCode: null, dir, notes: '', engine: 'script', model: null, host: 'elsewhere', retry: false, sandbox: 'none', step: 'work', ...over };
}

/** A run of another host with a stale heartbeat: the registry calls its orchestrator dead. */
function deadRun(home: string, attempts: (dir: (n: number) => string) => AttemptState[]): string {
  const runId = 'r1';
  const dir = (n: number) => attemptDir(home, runId, 't', n);
  const state = {
    version: 1, runId, runName: 'n', manifestFile: path.join(home, 'm.json'), identity: 'i', host: 'elsewhere', pid: 1, status: 'running',
    startedAt: 0, heartbeatAt: 0, endedAt: null, maxParallel: 1, worktrees: false, repo: null, baseRef: null, baseSha: null, containment: 'none',
    paused: false, draining: false, control: [],
    tasks: [{ key: 't', engine: 'script', model: null, taskType: null, verified: null, status: 'running', dir: path.join(home, 'w'), branch: null, commit: null, port: null, attempts: attempts(dir) }],
  } as unknown as RunState;
  const stateFile = path.join(home, 'runs', runId, 'state.json');
  fs.mkdirSync(path.dirname(stateFile), { recursive: true });
  fs.writeFileSync(stateFile, JSON.stringify(state));
  return stateFile;
}

describe('reconcile (run/reconcile.ts)', () => {
  it('an attempt that settled while the state still showed it running keeps its verdict (no INTERRUPTED row); the one the journal shows running is INTERRUPTED', async () => {
    // The state's last write came before attempt 1 settled; attempt 2 (a revision or a retry) is only in the journal.
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
    const stateFile = deadRun(home, (dir) => [view(dir(1), 1, { phase: 'checking' })]);
    for (const n of [1, 2]) fs.mkdirSync(attemptDir(home, 'r1', 't', n), { recursive: true });
    fs.writeFileSync(path.join(attemptDir(home, 'r1', 't', 1), 'receipt.json'), JSON.stringify({ verdict: 'PASS', reason: 'check passed' }));
    const fd = openWorkerJournal(workerJournalFile(stateFile));
    appendWorker(fd, { key: 't', view: view(attemptDir(home, 'r1', 't', 2), 2) });
    fs.closeSync(fd);

    const [report] = await reconcileDeadRuns(home, new Map());
    assert.deepEqual(report?.interrupted, ['t']);
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState;
    assert.deepEqual(state.tasks[0]!.attempts.map((a) => [a.attempt, a.phase, a.verdict]), [[1, 'done', 'PASS'], [2, 'done', 'INTERRUPTED']]);
    assert.equal(state.tasks[0]!.status, 'INTERRUPTED');
    const rows = fs.readFileSync(evalLogPath(home), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { attempt: number; verdict: string });
    assert.deepEqual(rows.map((r) => [r.attempt, r.verdict]), [[2, 'INTERRUPTED']]);
  });

  it('a receipt without a known verdict does not count as settled: the attempt is INTERRUPTED', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
    const stateFile = deadRun(home, (dir) => [view(dir(1), 1)]);
    fs.mkdirSync(attemptDir(home, 'r1', 't', 1), { recursive: true });
    fs.writeFileSync(path.join(attemptDir(home, 'r1', 't', 1), 'receipt.json'), JSON.stringify({ verdict: 'PASSED' }));
    await reconcileDeadRuns(home, new Map());
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState;
    assert.deepEqual(state.tasks[0]!.attempts.map((a) => [a.attempt, a.verdict]), [[1, 'INTERRUPTED']]);
  });
});
