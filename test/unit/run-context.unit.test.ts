import assert from 'node:assert/strict';
import fs from 'node:fs';
import { runContextKeys, runContextValue } from '../../extension/core/live/run-context';
import type { RunInfo } from '../../extension/core/live/registry';

/** A run as the registry lists it, with only what the context keys read. */
function run(
  liveness: RunInfo['liveness'],
  tasks: { status: string; commit?: string; merged?: object; discarded?: object }[],
  extra: { paused?: boolean; draining?: boolean; worktrees?: boolean } = {},
): RunInfo {
  return {
    liveness,
    state: {
      worktrees: extra.worktrees ?? true,
      paused: extra.paused,
      draining: extra.draining,
      tasks: tasks.map((t, i) => ({ key: `t${i}`, status: t.status, commit: t.commit ?? null, merged: t.merged, discarded: t.discarded })),
    },
  } as unknown as RunInfo;
}

/** The runs view's item menus (package.json view/item/context): command and group of each entry whose viewItem rule matches. */
function menusOn(contextValue: string): string[] {
  const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as {
    contributes: { menus: Record<string, { command: string; when?: string; group?: string }[]> };
  };
  return pkg.contributes.menus['view/item/context']!.filter((m) => {
    const re = /viewItem =~ \/(.*)\/$/.exec(m.when ?? '');
    return m.when?.includes('view == verdict.runs') && re && new RegExp(re[1]!).test(contextValue);
  }).map((m) => `${m.command}@${m.group ?? ''}`);
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

  it('a run row offers only what applies to it: no Merge All without passed work left to merge, no Pause while draining', () => {
    const runMenus = (r: RunInfo) => menusOn(runContextValue(r)).filter((m) => !m.startsWith('verdict.cancelRun'));
    assert.equal(runContextValue(run('running', [{ status: 'running' }])), 'run.running.active.worktrees');
    assert.deepEqual(runMenus(run('running', [{ status: 'running' }])), ['verdict.pauseRun@2_control', 'verdict.drainRun@2_control']);
    assert.deepEqual(runMenus(run('running', [{ status: 'queued' }], { paused: true })), ['verdict.resumeRun@2_control', 'verdict.drainRun@2_control']);
    // Draining: nothing more starts; neither pause nor drain nor resume applies (the orchestrator would refuse a pause).
    assert.equal(runContextValue(run('running', [{ status: 'running' }], { draining: true })), 'run.running.draining.worktrees');
    assert.deepEqual(runMenus(run('running', [{ status: 'running' }], { draining: true })), []);
    assert.equal(runContextKeys([run('running', [{ status: 'running' }], { draining: true })])['verdict.hasActiveRun'], false);
    // Merge All leads the menu only when a passed task's committed work waits: not for a run where nothing passed,
    // nor once everything that passed was merged or discarded.
    assert.deepEqual(runMenus(run('finished', [{ status: 'FAIL', commit: 'abc' }])), ['verdict.resumeRun@2_control']);
    assert.deepEqual(runMenus(run('finished', [{ status: 'PASS', commit: 'abc' }, { status: 'FAIL' }])), [
      'verdict.resumeRun@2_control',
      'verdict.mergeAllPassed@1_merge',
    ]);
    const merged = run('finished', [
      { status: 'PASS', commit: 'abc', merged: { commit: 'abc', into: 'main', at: 1 } },
      { status: 'PASS', commit: 'def', discarded: { commit: 'def', at: 1 } },
    ]);
    assert.equal(runContextValue(merged), 'run.finished.worktrees');
    assert.deepEqual(runMenus(merged), []);
    assert.equal(runContextKeys([merged])['verdict.hasPassedWork'], false);
  });

  it("a running task's context menu has Stop (not only its inline button); a finished one's has none", () => {
    assert.ok(menusOn('task.active.worktree').includes('verdict.stopTask@inline'));
    assert.ok(
      menusOn('task.active.worktree').some((m) => m.startsWith('verdict.stopTask@') && m !== 'verdict.stopTask@inline'),
      `Stop in the right-click menu: ${menusOn('task.active.worktree').join(', ')}`,
    );
    assert.ok(!menusOn('task.done.worktree').some((m) => m.startsWith('verdict.stopTask@')));
    assert.ok(!menusOn('task.passed.worktree').some((m) => m.startsWith('verdict.stopTask@')));
  });
});
