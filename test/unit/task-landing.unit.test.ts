import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunState, TaskState } from '../../extension/core/live/state';
import { landedReason } from '../../extension/core/run/landed';
import { recordLanding } from '../../extension/core/run/task-landing';
import { lockRun, selfHolder } from '../../extension/core/run/workdir-lock';
import { reopenState, type RunContinuation } from '../../extension/core/run/resume';

// Merged and discarded as recorded states (extension/core/run/task-landing.ts): written into a finished run's
// state.json under its locks, never into a run an orchestrator holds; cleared when the task runs again.

function task(key: string, extra: Partial<TaskState> = {}): TaskState {
  return {
    key,
    engine: 'script',
    model: null,
    taskType: null,
    verified: null,
    status: 'PASS',
    dir: `/w/${key}`,
    branch: `verdict/r/${key}`,
    commit: 'c'.repeat(40),
    port: null,
    attempts: [],
    ...extra,
  };
}

function runState(runId: string, tasks: TaskState[]): RunState {
  return {
    version: 1,
    runId,
    runName: 'n',
    manifestFile: '/x.swarm.json',
    identity: 'me',
    host: 'h',
    pid: 0,
    status: 'finished',
    startedAt: 1,
    heartbeatAt: 1,
    endedAt: 2,
    maxParallel: 1,
    worktrees: true,
    repo: '/repo',
    baseRef: 'main',
    baseSha: 'b'.repeat(40),
    tasks,
  } as RunState;
}

describe('merged and discarded: recorded on the task', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-landing-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function write(runId: string, tasks: TaskState[]): string {
    const folder = path.join(dir, runId);
    fs.mkdirSync(folder, { recursive: true });
    const file = path.join(folder, 'state.json');
    fs.writeFileSync(file, JSON.stringify(runState(runId, tasks), null, 1));
    return file;
  }

  it("writes merged into a finished run's state.json, keeping the status (the verdict) and every other task", async () => {
    const file = write('r1', [task('a'), task('b')]);
    const merged = { commit: 'd'.repeat(40), into: 'main', at: 5 };
    assert.equal(await recordLanding(file, 'a', { merged }), null);
    const s = JSON.parse(fs.readFileSync(file, 'utf8')) as RunState;
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status, t.merged ?? null]),
      [
        ['a', 'PASS', merged],
        ['b', 'PASS', null],
      ],
    );
    assert.equal(landedReason(s.tasks[0] as TaskState), `already merged into main at ${'d'.repeat(10)}; nothing was changed`);
    assert.equal(landedReason(s.tasks[1] as TaskState), null);
  });

  it('writes nothing while an orchestrator holds the run (its folder lock): it owns state.json; the record goes to its control channel', async () => {
    const file = write('r2', [task('a')]);
    const before = fs.readFileSync(file, 'utf8');
    const release = await lockRun(path.dirname(file), { ...selfHolder('r2', 'orchestrator'), pid: process.ppid, startTime: null });
    try {
      const why = await recordLanding(file, 'a', { discarded: { commit: null, at: 5 } }, 300);
      assert.match(why ?? '', /run r2 is being orchestrated by pid \d+.*: sent to it \(control command [\w-]+\), but not acknowledged within 0\.3 s/);
      const sent = fs
        .readFileSync(path.join(path.dirname(file), 'control.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(
        sent.map((c) => [c.verb, c.task, c.landed]),
        [['record', 'a', { discarded: { commit: null, at: 5 } }]],
      );
    } finally {
      await release();
    }
    assert.equal(fs.readFileSync(file, 'utf8'), before);
  });

  it('a task run again (resume, rerun) loses its merged/discarded record: its new work is to merge', () => {
    const s = runState('r3', [
      task('a', { merged: { commit: 'd'.repeat(40), into: 'main', at: 1 } }),
      task('b', { discarded: { commit: null, at: 1 } }),
      task('c', { merged: { commit: 'e'.repeat(40), into: 'main', at: 1 } }),
    ]);
    const cont = {
      state: s,
      again: new Set(['a', 'b']),
      kept: new Map(),
      resume: { verb: 'rerun', by: 'me', host: 'h', pid: 1, at: 1, from: 'finished', tasks: ['a', 'b'] },
      release: async () => undefined,
    } as unknown as RunContinuation;
    reopenState(cont, 'none');
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status, t.merged !== undefined, t.discarded !== undefined]),
      [
        ['a', 'queued', false, false],
        ['b', 'queued', false, false],
        ['c', 'PASS', true, false],
      ],
    );
  });
});
