import assert from 'node:assert/strict';
import { runContextKeys } from '../../extension/core/live/run-context';
import type { RunInfo } from '../../extension/core/live/registry';

/** A run as the registry lists it, with only what the context keys read. */
function run(liveness: RunInfo['liveness'], tasks: { status: string; commit?: string }[], extra: { paused?: boolean; worktrees?: boolean } = {}): RunInfo {
  return {
    liveness,
    state: { worktrees: extra.worktrees ?? true, paused: extra.paused, tasks: tasks.map((t) => ({ status: t.status, commit: t.commit ?? null })) },
  } as unknown as RunInfo;
}

describe('which run commands apply (context keys, unit)', () => {
  it('none with no run; Cancel, Pause and Drain only with a live run; Resume for a paused one', () => {
    assert.deepEqual(runContextKeys([]), {
      'verdict.hasLiveRun': false,
      'verdict.hasActiveRun': false,
      'verdict.hasResumableRun': false,
      'verdict.hasPassedWork': false,
    });
    assert.deepEqual(runContextKeys([run('running', [{ status: 'running' }])]), {
      'verdict.hasLiveRun': true,
      'verdict.hasActiveRun': true,
      'verdict.hasResumableRun': false,
      'verdict.hasPassedWork': false,
    });
    assert.deepEqual(runContextKeys([run('running', [{ status: 'queued' }], { paused: true })]), {
      'verdict.hasLiveRun': true,
      'verdict.hasActiveRun': false,
      'verdict.hasResumableRun': true,
      'verdict.hasPassedWork': false,
    });
  });

  it('Resume for a run that ended with a task that did not pass (or whose orchestrator died); Merge All only for committed passed work in worktree mode', () => {
    assert.equal(runContextKeys([run('finished', [{ status: 'PASS', commit: 'abc' }])])['verdict.hasResumableRun'], false);
    assert.equal(runContextKeys([run('finished', [{ status: 'PASS', commit: 'abc' }, { status: 'FAIL' }])])['verdict.hasResumableRun'], true);
    assert.equal(runContextKeys([run('orchestrator-died', [{ status: 'running' }])])['verdict.hasResumableRun'], true);
    assert.equal(runContextKeys([run('finished', [{ status: 'PASS', commit: 'abc' }])])['verdict.hasPassedWork'], true);
    assert.equal(runContextKeys([run('finished', [{ status: 'PASS', commit: 'abc' }], { worktrees: false })])['verdict.hasPassedWork'], false);
    assert.equal(runContextKeys([run('finished', [{ status: 'FAIL', commit: 'abc' }])])['verdict.hasPassedWork'], false);
  });
});
