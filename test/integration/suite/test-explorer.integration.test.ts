import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { RunsNode } from '../../../extension/vscode/runs-tree';
import { askProbe } from './probe';
import { until } from './until';

const task = (key: string, spec: string, check: string, extra: Record<string, unknown> = {}) => ({
  key,
  engine: 'script',
  task_type: 'script',
  verified: `${key} works`,
  spec,
  check,
  ...extra,
});

describe('Test Explorer and runs tree: a run started by the CLI, with BLOCKED and steps', function () {
  this.timeout(120000);
  let api: VerdictApi;
  let runId: string;

  before(async () => {
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    const tmp = process.env.VERDICT_TEST_TMP as string;
    const manifest = path.join(tmp, 'test-explorer.swarm.json');
    // Listed dependent first: the views put it after its prerequisite.
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        run_name: 'from-the-cli',
        workdir: 'te-work',
        tasks: [
          { ...task('report', 'echo r > r.txt', 'test -s r.txt'), after: ['build'] },
          task('build', 'echo nothing', 'echo "RAW-CHECK: no artifact"; exit 1', { max_attempts: 2, after: ['fetch'] }),
          task('fetch', 'echo d > d.txt', 'test -s d.txt'),
        ],
      }),
    );
    // Another process, as a terminal would: this window starts nothing.
    const cli = path.resolve(__dirname, '../../dist/cli.js');
    const child = spawn('node', [cli, 'run', manifest, '--home', process.env.VERDICT_HOME as string, '--no-dashboard'], { stdio: 'ignore' });
    const info = await until('the CLI run, finished', () =>
      api.runs().find((r) => r.state.runName === 'from-the-cli' && r.state.pid === child.pid && r.liveness === 'finished'),
    );
    runId = info.state.runId;
  });

  it("shows the CLI run in the Test Explorer: tasks as items in graph order, each task's result, the check output as the failure message linked to check.log", async () => {
    const run = await until('the run in the Test Explorer', () =>
      api.testExplorer.items().find((i) => (i.id === `verdict-run:${runId}` && i.children.length === 3 && /finished/.test(i.description) ? i : undefined)),
    );
    assert.match(run.label, /^from-the-cli · .+ · \d\d:\d\d$/, 'name, identity and start time tell runs apart');
    assert.deepEqual(
      run.children.map((c) => c.label),
      ['fetch', 'build', 'report'],
    );
    assert.deepEqual(
      run.children.map((c) => c.description),
      ['PASS', 'FAIL at check · after fetch', 'BLOCKED · after build · prerequisite build ended FAIL, not PASS; this task did not start'],
    );
    const results = await until('every result', () => {
      // A live run's attempts are published as they start (started) and again as they end.
      const mine = api.testExplorer.results().filter((r) => r.runId === runId && r.state !== 'started');
      return mine.length >= 3 ? mine : undefined;
    });
    const of = (key: string) => results.filter((r) => r.key === key).map((r) => [r.attempt, r.state]);
    assert.deepEqual(of('fetch'), [[1, 'passed']]);
    // One result per task (its status's), its last attempt's failure the message; attempt 1 is output only.
    assert.deepEqual(of('build'), [[2, 'failed']]);
    assert.deepEqual(of('report'), [[null, 'skipped']]);
    const failure = results.find((r) => r.key === 'build' && r.attempt === 2);
    assert.match(failure?.message ?? '', /^attempt 2: FAIL at check — .*\n\nRAW-CHECK: no artifact\n$/);
    const log = failure?.log ?? '';
    assert.ok(log.endsWith(path.join(runId, 'tasks', 'build', 'attempt-2', 'check.log')), log);
    assert.equal(fs.readFileSync(log, 'utf8'), 'RAW-CHECK: no artifact\n', 'the message links to the real log');

    await vscode.commands.executeCommand('workbench.view.testing.focus');
    const seen = await askProbe({ text: 'Verdict runs', where: 'workbench' });
    if (seen) assert.ok(seen.found, `the Testing view shows the runs group: ${seen.error}`);
  });

  it('shows BLOCKED in the runs tree with its prerequisite, tasks in graph order, each failed attempt with its step', async () => {
    const roots = await api.runsView.getChildren();
    const run = roots.find((n) => n.runId === runId) as RunsNode;
    assert.ok(run);
    const tasks = await api.runsView.getChildren(run);
    const items = tasks.map((t) => api.runsView.getTreeItem(t));
    assert.deepEqual(
      items.map((i) => i.label),
      ['fetch', 'build', 'report'],
    );
    assert.match(String(items[2]?.description), /^BLOCKED · after build · 0 attempts · prerequisite build ended FAIL/);
    assert.match(String(items[2]?.tooltip), /prerequisite build ended FAIL/);
    assert.match(String(items[1]?.description), /^FAIL at check · after fetch · 2 attempts/);
    const attempts = await api.runsView.getChildren(tasks[1] as RunsNode);
    assert.deepEqual(
      attempts.map((a) => String(api.runsView.getTreeItem(a).description).split(' · ')[0]),
      ['FAIL at check', 'FAIL at check'],
    );
  });
});
