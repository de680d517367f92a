import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { RunState } from '../../../extension/core/live/state';

import { askProbe, probeDir as probeFolder, type ProbeAnswer, type ProbeRequest } from './probe';
import { until } from './until';

/** The probe's answer to `request` (this suite runs only where a probe serves). */
async function probe(request: ProbeRequest): Promise<ProbeAnswer> {
  const answer = await askProbe(request);
  assert.ok(answer, 'no workbench probe serves this window');
  return answer;
}

describe('dashboard buttons in the VS Code webview: the webview asks the extension', function () {
  this.timeout(120000);

  it('pauses and resumes a run the CLI started with its Pause and Resume buttons, stops its task with its Stop button: each acknowledged in state.json, the answer shown in the page; Live log opens its log', async function () {
    const probeDir = probeFolder();
    if (!fs.existsSync(probeDir)) this.skip(); // @vscode/test-electron route: nobody can click inside the webview
    const api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    const tmp = process.env.VERDICT_TEST_TMP as string;
    const manifest = path.join(tmp, 'buttons.swarm.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        run_name: 'webview-buttons',
        workdir: 'buttons-work',
        tasks: [{ key: 'sleeper', engine: 'script', spec: 'echo sleeping until stopped; sleep 600', check: 'true' }],
      }),
    );
    // --force: the check `true` is a lint error; the sleeper is stopped before it.
    const child = spawn(
      'node',
      [path.resolve(__dirname, '../../dist/cli.js'), 'run', manifest, '--home', process.env.VERDICT_HOME as string, '--no-dashboard', '--force'],
      { stdio: 'ignore' },
    );
    try {
      const info = await until('the sleeper running', () =>
        api.runs().find((r) => r.state.pid === child.pid && r.liveness === 'running' && r.state.tasks[0]?.status === 'running'),
      );
      const state = () => JSON.parse(fs.readFileSync(info.stateFile, 'utf8')) as RunState;
      await vscode.commands.executeCommand('verdict.openDashboard');
      assert.ok((await probe({ click: `.run-row[data-run-id="${info.state.runId}"] .run-open` })).found, 'the run opens in the webview');
      // The run's own buttons run the extension's Pause Run and Resume Run (the runs tree's commands).
      const paused = await probe({ click: 'vscode-button[data-run-action="pause"]' });
      assert.ok(paused.found, `the Pause button: ${paused.error}`);
      const pauseAck = await until('the pause acknowledged', () => state().control?.find((c) => c.verb === 'pause'));
      assert.equal(pauseAck.result, 'done', pauseAck.reason);
      assert.equal(state().paused, true);
      assert.ok((await probe({ text: 'PAUSED: no new attempt starts' })).found, 'the page says PAUSED');
      const resumed = await probe({ click: 'vscode-button[data-run-action="resume"]' });
      assert.ok(resumed.found, `the Resume button, shown once paused: ${resumed.error}`);
      const resumeAck = await until('the resume acknowledged', () => state().control?.find((c) => c.verb === 'resume'));
      assert.equal(resumeAck.result, 'done', resumeAck.reason);
      assert.equal(state().paused, false);
      assert.ok((await probe({ text: 'resume: done — resumed: attempts start again' })).found, 'the answer shows in the page');
      const clicked = await probe({ click: 'vscode-button[data-action="stop"][data-key="sleeper"]' });
      assert.ok(clicked.found, `the Stop button: ${clicked.error}`);
      const ack = await until('the stop acknowledged', () => state().control?.find((c) => c.verb === 'stop' && c.task === 'sleeper'));
      assert.equal(ack.result, 'done', ack.reason);
      await until('the task CANCELLED', () => state().tasks[0]?.status === 'CANCELLED');
      const shown = await probe({ text: 'stop sleeper: done' });
      assert.ok(shown.found, `the answer shows in the page: ${shown.error}`);
      // Live log: the task's worker output in a read-only editor that follows it (Follow Task Log).
      const logClicked = await probe({ click: 'vscode-button[data-action="open-log"][data-key="sleeper"]' });
      assert.ok(logClicked.found, `the Live log button: ${logClicked.error}`);
      const logDoc = await until('the live log open', () =>
        vscode.window.visibleTextEditors.map((e) => e.document).find((d) => d.uri.scheme === 'verdict-task-log'),
      );
      assert.match(logDoc.getText(), /^# webview-buttons \| sleeper \| attempt 1 \| [\s\S]*sleeping until stopped\n/);
    } finally {
      child.kill('SIGINT');
      // The next suite opens its own dashboard on the live list: close this one, which shows a run document.
      const tabs = vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .filter((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('verdict.dashboard'));
      await vscode.window.tabGroups.close(tabs);
    }
  });
});
