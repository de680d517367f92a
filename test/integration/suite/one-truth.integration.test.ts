import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { RunsNode } from '../../../extension/vscode/runs-tree';
import { runView } from '../../../extension/core/dashboard/run-view';
import { roundCounts, taskResult } from '../../../schemas/status';
import { sleep, until } from './until';

const task = (key: string, spec: string, check: string, extra: Record<string, unknown> = {}) => ({
  key,
  engine: 'script',
  task_type: 'script',
  verified: `${key} works`,
  spec,
  check,
  ...extra,
});

/** The result a runs-tree row shows, read from its icon's colour (the only thing a glance reads). */
function treeResult(item: vscode.TreeItem): string {
  const icon = item.iconPath as vscode.ThemeIcon;
  const colour = (icon.color as { id?: string } | undefined)?.id;
  if (colour === 'testing.iconPassed') return 'passed';
  if (colour === 'testing.iconFailed' || colour === 'testing.iconErrored' || colour === 'errorForeground') return 'failed';
  return icon.id.includes('spin') ? 'running' : 'skipped';
}

describe('one truth in every view: a task passed on its retry, one failed, one BLOCKED', function () {
  this.timeout(180000);
  let api: VerdictApi;
  let runId: string;
  let manifest: string;

  before(async () => {
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    // In the workspace, so the manifest is a suite of the Testing view too (its tasks must not read "Not yet run").
    const ws = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath as string;
    manifest = path.join(ws, 'one-truth.swarm.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        run_name: 'one-truth',
        workdir: 'one-truth-work',
        tasks: [
          // Fails its first attempt, passes its retry: the task passed.
          task('flaky', 'if [ "$VERDICT_ATTEMPT" = 2 ]; then echo ok > ok.txt; fi', 'test -s ok.txt || { echo "ok.txt missing"; exit 1; }', {
            max_attempts: 2,
          }),
          task('broken', 'echo nothing', 'echo "no artifact"; exit 1', { max_attempts: 2 }),
          // Never starts: its prerequisite failed. Skipped, not failed (the failure counts once, at broken).
          { ...task('after-broken', 'echo r > r.txt', 'test -s r.txt'), after: ['broken'] },
        ],
      }),
    );
    await vscode.commands.executeCommand('testing.refreshTests');
    await sleep(1500); // let the controller load the manifest's suite
    const cli = path.resolve(__dirname, '../../dist/cli.js');
    const child = spawn('node', [cli, 'run', manifest, '--home', process.env.VERDICT_HOME as string, '--no-dashboard'], { stdio: 'ignore' });
    const info = await until(
      'the CLI run, finished',
      () => api.runs().find((r) => r.state.runName === 'one-truth' && r.state.pid === child.pid && r.liveness === 'finished'),
      90000,
    );
    runId = info.state.runId;
  });

  it('the Testing view, the runs tree, the dashboard and the status table agree on each task and on the run', async () => {
    const expected = { flaky: 'passed', broken: 'failed', 'after-broken': 'skipped' } as Record<string, string>;
    const info = api.runs().find((r) => r.state.runId === runId);
    assert.ok(info);
    // The status table: the truth the views derive from.
    const table = Object.fromEntries(info.state.tasks.map((t) => [t.key, taskResult(t.status)]));
    assert.deepEqual(table, expected);
    assert.deepEqual(
      info.state.tasks.find((t) => t.key === 'flaky')?.attempts.map((a) => a.verdict),
      ['FAIL', 'PASS'],
      'flaky passed on its retry',
    );

    // The Testing view: exactly one result per task, the task's (flaky's failed attempt 1 is output, not a failure).
    await until(
      'every task result in the Test Explorer',
      () => {
        const mine = api.testExplorer.results().filter((r) => r.runId === runId && r.state !== 'started');
        return mine.length >= 3 ? mine : undefined;
      },
      90000,
    );
    await sleep(1000);
    const settled = api.testExplorer.results().filter((r) => r.runId === runId && r.state !== 'started');
    assert.deepEqual(settled.map((r) => [r.key, r.state]).sort(), Object.entries(expected).sort(), "one result per task, the task's own");
    // The manifest's own test items got the same results (a run from the CLI, not the Testing view).
    const suite = vscode.Uri.file(manifest).toString();
    assert.deepEqual(
      settled.map((r) => [r.key, r.manifestItem]).sort(),
      Object.keys(expected)
        .map((k) => [k, `${suite}#${k}`])
        .sort(),
    );
    const item = api.testExplorer.items().find((i) => i.id === `verdict-run:${runId}`);
    assert.match(item?.description ?? '', /1\/3 passed · 1 failed · 1 skipped$/);

    // The runs tree: each task's icon and the run's.
    const roots = await api.runsView.getChildren();
    const runNode = roots.find((n) => n.runId === runId) as RunsNode;
    const runItem = api.runsView.getTreeItem(runNode);
    assert.equal(treeResult(runItem), 'failed', 'a run with a failed task is red');
    assert.match(String(runItem.description), /^1\/3 passed · 1 failed · 1 skipped · finished/);
    const tasks = await api.runsView.getChildren(runNode);
    const tree = Object.fromEntries(tasks.map((t) => [t.kind === 'task' ? t.key : '?', treeResult(api.runsView.getTreeItem(t))]));
    assert.deepEqual(tree, expected);
    assert.match(String(api.runsView.getTreeItem(tasks.find((t) => t.kind === 'task' && t.key === 'flaky') as RunsNode).description), /^PASS · 2 attempts/);

    // The dashboard's data source (what the webview receives) and its bars: the run's bar draws nothing skipped as a
    // failure, and its counters say the same.
    const view = runView(info);
    assert.deepEqual(Object.fromEntries(view.tasks.map((t) => [t.key, taskResult(t.status)])), expected);
    const bar = roundCounts(view.tasks, null);
    assert.deepEqual(bar, { queued: 0, running: 0, passed: 1, failed: 1, skipped: 1 });
    assert.equal(view.counts.failed, bar.failed, 'the text\'s "N failed" is the bar\'s red');
    assert.equal(view.counts.passed, bar.passed);
    assert.deepEqual(
      roundCounts(view.tasks, 1),
      { queued: 0, running: 0, passed: 0, failed: 2, skipped: 1 },
      'round 1: both first attempts failed; after-broken never started and is skipped, not queued',
    );
    assert.deepEqual(roundCounts(view.tasks, 2), { queued: 0, running: 0, passed: 1, failed: 1, skipped: 0 });
  });
});
