import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { reconcileDeadRuns } from '../../extension/core/run/reconcile';
import { takeRun } from '../../extension/core/run/resume';
import { WORKFLOW_SECTIONS, workflowRerunRules } from '../../extension/core/run/workflows';
import { appendWorker, openWorkerJournal, workerJournalFile } from '../../extension/core/live/worker-journal';
import { attemptDir, evalLogPath } from '../../extension/core/config/home';
import type { AttemptState, RunState } from '../../extension/core/live/state';
import { appendEvalRow } from '../../extension/core/store/eval-log';
import { verifyEvalLog } from '../../extension/core/store/verify-log';
import { sampleRow } from '../helpers/fixtures';

function view(dir: string, attempt: number, over: Partial<AttemptState> = {}): AttemptState {
  // A pid that is never a live process of this test's (pid_max is far below it), so reconcile has nothing to kill.
  return {
    attempt,
    phase: 'running',
    verdict: null,
    startedAt: 1,
    endedAt: null,
    workerPid: 2 ** 30,
    workerStartTime: '1',
    tokensIn: null,
    tokensOut: null,
    costMicroUsd: null,
    checkExitCode: null,
    dir,
    notes: '',
    engine: 'script',
    model: null,
    host: 'elsewhere',
    retry: false,
    sandbox: 'none',
    step: 'work',
    ...over,
  };
}

/** A run of another host with a stale heartbeat: the registry calls its orchestrator dead. */
function deadRun(home: string, attempts: (dir: (n: number) => string) => AttemptState[]): string {
  const runId = 'r1';
  const dir = (n: number) => attemptDir(home, runId, 't', n);
  const state = {
    version: 1,
    runId,
    runName: 'n',
    manifestFile: path.join(home, 'm.json'),
    identity: 'i',
    host: 'elsewhere',
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
    tasks: [
      {
        key: 't',
        engine: 'script',
        model: null,
        taskType: null,
        verified: null,
        status: 'running',
        dir: path.join(home, 'w'),
        branch: null,
        commit: null,
        port: null,
        attempts: attempts(dir),
      },
    ],
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

    const [report] = await reconcileDeadRuns(home, new Map(), WORKFLOW_SECTIONS);
    assert.deepEqual(report?.interrupted, ['t']);
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState;
    assert.deepEqual(
      state.tasks[0]!.attempts.map((a) => [a.attempt, a.phase, a.verdict]),
      [
        [1, 'done', 'PASS'],
        [2, 'done', 'INTERRUPTED'],
      ],
    );
    assert.equal(state.tasks[0]!.status, 'INTERRUPTED');
    const rows = fs
      .readFileSync(evalLogPath(home), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { attempt: number; verdict: string });
    assert.deepEqual(
      rows.map((r) => [r.attempt, r.verdict]),
      [[2, 'INTERRUPTED']],
    );
  });

  it('a receipt without a known verdict does not count as settled: the attempt is INTERRUPTED', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
    const stateFile = deadRun(home, (dir) => [view(dir(1), 1)]);
    fs.mkdirSync(attemptDir(home, 'r1', 't', 1), { recursive: true });
    fs.writeFileSync(path.join(attemptDir(home, 'r1', 't', 1), 'receipt.json'), JSON.stringify({ verdict: 'PASSED' }));
    await reconcileDeadRuns(home, new Map(), WORKFLOW_SECTIONS);
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState;
    assert.deepEqual(
      state.tasks[0]!.attempts.map((a) => [a.attempt, a.verdict]),
      [[1, 'INTERRUPTED']],
    );
  });

  it('a settled attempt whose rows never reached the log (killed between its receipt and its rows) gets them from its receipt, each once', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
    const stateFile = deadRun(home, (dir) => [view(dir(1), 1, { phase: 'checking' })]);
    const dir1 = attemptDir(home, 'r1', 't', 1);
    fs.mkdirSync(dir1, { recursive: true });
    const work = sampleRow({ run_id: 'r1', task_key: 't', attempt: 1, verdict: 'PASS', step: 'work', prev_hash: null });
    const review = sampleRow({ run_id: 'r1', task_key: 't', attempt: 1, verdict: 'PASS', step: 'review', worker_engine: 'claude', prev_hash: null });
    // The review row made it to the log before the kill; the work row did not.
    await appendEvalRow(evalLogPath(home), sampleRow({ run_id: 'other', task_key: 'x', attempt: 1 }));
    await appendEvalRow(evalLogPath(home), review);
    fs.writeFileSync(path.join(dir1, 'receipt.json'), JSON.stringify({ verdict: 'PASS', reason: 'check passed', rows: [work, review] }));

    await reconcileDeadRuns(home, new Map(), WORKFLOW_SECTIONS);
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState;
    assert.deepEqual(
      state.tasks[0]!.attempts.map((a) => [a.attempt, a.verdict]),
      [[1, 'PASS']],
    );
    const rows = fs
      .readFileSync(evalLogPath(home), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { run_id: string; attempt: number; verdict: string; step: string });
    assert.deepEqual(
      rows.map((r) => [r.run_id, r.attempt, r.step, r.verdict]),
      [
        ['other', 1, 'work', 'PASS'],
        ['r1', 1, 'review', 'PASS'],
        ['r1', 1, 'work', 'PASS'],
      ],
    );
    assert.deepEqual({ ...rows[2], prev_hash: null }, { ...work, prev_hash: null }, 'the row is the one the receipt kept');
    const v = await verifyEvalLog(evalLogPath(home));
    assert.equal(v.intact, true, JSON.stringify(v.findings));
  });

  it("a receipt older than the attempt (its folder reused after a crash and a resume) is not that attempt's: it is INTERRUPTED", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
    const startedAt = Date.now();
    const stateFile = deadRun(home, (dir) => [view(dir(1), 1, { startedAt }), view(dir(2), 2, { startedAt })]);
    const receipt = path.join(attemptDir(home, 'r1', 't', 1), 'receipt.json');
    fs.mkdirSync(path.dirname(receipt), { recursive: true });
    fs.writeFileSync(
      receipt,
      JSON.stringify({ verdict: 'PASS', reason: 'check passed', rows: [sampleRow({ run_id: 'r1', task_key: 't', attempt: 1, prev_hash: null })] }),
    );
    const before = new Date(startedAt - 60_000);
    fs.utimesSync(receipt, before, before);
    // And one that names its attempt's start: another's, though written after this attempt began.
    const receipt2 = path.join(attemptDir(home, 'r1', 't', 2), 'receipt.json');
    fs.mkdirSync(path.dirname(receipt2), { recursive: true });
    fs.writeFileSync(receipt2, JSON.stringify({ startedAt: startedAt - 1, verdict: 'PASS', reason: 'check passed' }));
    await reconcileDeadRuns(home, new Map(), WORKFLOW_SECTIONS);
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState;
    assert.deepEqual(
      state.tasks[0]!.attempts.map((a) => [a.attempt, a.verdict]),
      [
        [1, 'INTERRUPTED'],
        [2, 'INTERRUPTED'],
      ],
    );
    const rows = fs
      .readFileSync(evalLogPath(home), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { verdict: string });
    assert.deepEqual(
      rows.map((r) => r.verdict),
      ['INTERRUPTED', 'INTERRUPTED'],
    );
  });

  it("a run of another host: no pid its journal or state names is signalled here (they are that host's pids), even one with a matching start time", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
    // A process of this host whose pid and start time the other host's records happen to name.
    const local = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const stat = fs.readFileSync(`/proc/${local.pid}/stat`, 'utf8');
      const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string;
      const stateFile = deadRun(home, (dir) => [view(dir(1), 1, { workerPid: local.pid!, workerStartTime: start })]);
      const fd = openWorkerJournal(workerJournalFile(stateFile));
      appendWorker(fd, { init: { pid: local.pid!, startTime: start } });
      fs.closeSync(fd);
      const [report] = await reconcileDeadRuns(home, new Map(), WORKFLOW_SECTIONS);
      assert.deepEqual([report?.killed, report?.killedInits, report?.interrupted], [[], [], ['t']]);
      assert.equal(local.exitCode ?? local.signalCode, null, "a process of this host was killed for another host's run");
    } finally {
      local.kill('SIGKILL');
    }
  });

  it("a settled PASS that ended its task (the receipt's taskStatus) makes the task PASS with its commit; one followed by a retry or revision does not", async () => {
    for (const [taskStatus, expected] of [
      ['PASS', ['PASS', 'c0ffee']],
      ['retry_queued', ['INTERRUPTED', null]],
      [null, ['INTERRUPTED', null]],
    ] as const) {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
      const stateFile = deadRun(home, (dir) => [view(dir(1), 1, { phase: 'checking' })]);
      fs.mkdirSync(attemptDir(home, 'r1', 't', 1), { recursive: true });
      const row = sampleRow({ run_id: 'r1', task_key: 't', attempt: 1, verdict: 'PASS', commit: 'c0ffee', prev_hash: null });
      fs.writeFileSync(
        path.join(attemptDir(home, 'r1', 't', 1), 'receipt.json'),
        JSON.stringify({ startedAt: 1, taskStatus, verdict: 'PASS', reason: 'check passed', rows: [row] }),
      );
      const [report] = await reconcileDeadRuns(home, new Map(), WORKFLOW_SECTIONS);
      const task = (JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState).tasks[0]!;
      assert.deepEqual([task.status, task.commit], expected, String(taskStatus));
      assert.deepEqual(report?.interrupted, expected[0] === 'PASS' ? [] : ['t']);
    }
  });
});

describe('takeRun reconciles once: only its own run, only when no one has yet', () => {
  /** A dead run `runId` of another host with one task `t` whose attempt 1 was running. */
  function dead(home: string, runId: string): string {
    const state = {
      version: 1,
      runId,
      runName: 'n',
      manifestFile: path.join(home, 'm.json'),
      identity: 'i',
      host: 'elsewhere',
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
      tasks: [
        {
          key: 't',
          engine: 'script',
          model: null,
          taskType: null,
          verified: null,
          status: 'running',
          dir: path.join(home, 'w'),
          branch: null,
          commit: null,
          port: null,
          attempts: [view(attemptDir(home, runId, 't', 1), 1)],
        },
      ],
    } as unknown as RunState;
    const stateFile = path.join(home, 'runs', runId, 'state.json');
    fs.mkdirSync(path.dirname(stateFile), { recursive: true });
    fs.writeFileSync(stateFile, JSON.stringify(state));
    return stateFile;
  }
  const statusOf = (stateFile: string) => (JSON.parse(fs.readFileSync(stateFile, 'utf8')) as RunState).status;

  it('a dead run taken over without an earlier reconcile is reconciled by takeRun (its task runs again); another dead run is left to its own command', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
    const [mine, other] = [dead(home, 'r1'), dead(home, 'r2')];
    const cont = await takeRun(home, { runId: 'r1', verb: 'resume' }, 'i', new Map(), workflowRerunRules, WORKFLOW_SECTIONS);
    await cont.release();
    assert.equal(cont.state.tasks[0]!.attempts[0]!.verdict, 'INTERRUPTED');
    assert.deepEqual([...cont.again], ['t']);
    assert.equal(statusOf(mine), 'interrupted');
    assert.equal(statusOf(other), 'running', "not this command's run");
    const rows = fs.readFileSync(evalLogPath(home), 'utf8').trim().split('\n');
    assert.equal(rows.length, 1, 'one INTERRUPTED row, for r1 alone');
  });

  it('a run its command already reconciled is not reconciled again: no second INTERRUPTED row', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-reconcile-'));
    dead(home, 'r1');
    await reconcileDeadRuns(home, new Map(), WORKFLOW_SECTIONS);
    const cont = await takeRun(home, { runId: 'r1', verb: 'resume' }, 'i', new Map(), workflowRerunRules, WORKFLOW_SECTIONS);
    await cont.release();
    assert.equal(fs.readFileSync(evalLogPath(home), 'utf8').trim().split('\n').length, 1);
    assert.deepEqual([...cont.again], ['t']);
  });
});
