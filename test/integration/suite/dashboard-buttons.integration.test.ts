import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { RunState } from '../../../extension/core/live/state';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => T | undefined | false, timeoutMs = 60000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

let n = 200;
/** Asks the workbench-side probe (test/integration/webview-probe.mjs) to find text in, or click an element of, the webview. */
async function probe(dir: string, request: { text?: string; click?: string }): Promise<{ found: boolean; error: string | null }> {
  const i = n++;
  fs.writeFileSync(path.join(dir, `request-${i}.json`), JSON.stringify(request));
  const response = path.join(dir, `response-${i}.json`);
  for (let k = 0; k < 200 && !fs.existsSync(response); k++) await sleep(200);
  assert.ok(fs.existsSync(response), 'the webview probe did not answer in 40 s');
  return JSON.parse(fs.readFileSync(response, 'utf8')) as { found: boolean; error: string | null };
}

describe('dashboard buttons in the VS Code webview: the webview asks the extension', function () {
  this.timeout(120000);

  it('pauses and resumes a run the CLI started with its Pause and Resume buttons, stops its task with its Stop button: each acknowledged in state.json, the answer shown in the page; Live log opens its log', async function () {
    const probeDir = path.join(process.env.VERDICT_TEST_TMP as string, 'webview-probe');
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
      assert.ok((await probe(probeDir, { click: `.run-row[data-run-id="${info.state.runId}"] .run-open` })).found, 'the run opens in the webview');
      // The run's own buttons run the extension's Pause Run and Resume Run (the runs tree's commands).
      const paused = await probe(probeDir, { click: 'vscode-button[data-run-action="pause"]' });
      assert.ok(paused.found, `the Pause button: ${paused.error}`);
      const pauseAck = await until('the pause acknowledged', () => state().control?.find((c) => c.verb === 'pause'));
      assert.equal(pauseAck.result, 'done', pauseAck.reason);
      assert.equal(state().paused, true);
      assert.ok((await probe(probeDir, { text: 'PAUSED: no new attempt starts' })).found, 'the page says PAUSED');
      const resumed = await probe(probeDir, { click: 'vscode-button[data-run-action="resume"]' });
      assert.ok(resumed.found, `the Resume button, shown once paused: ${resumed.error}`);
      const resumeAck = await until('the resume acknowledged', () => state().control?.find((c) => c.verb === 'resume'));
      assert.equal(resumeAck.result, 'done', resumeAck.reason);
      assert.equal(state().paused, false);
      assert.ok((await probe(probeDir, { text: 'resume: done — resumed: attempts start again' })).found, 'the answer shows in the page');
      const clicked = await probe(probeDir, { click: 'vscode-button[data-action="stop"][data-key="sleeper"]' });
      assert.ok(clicked.found, `the Stop button: ${clicked.error}`);
      const ack = await until('the stop acknowledged', () => state().control?.find((c) => c.verb === 'stop' && c.task === 'sleeper'));
      assert.equal(ack.result, 'done', ack.reason);
      await until('the task CANCELLED', () => state().tasks[0]?.status === 'CANCELLED');
      const shown = await probe(probeDir, { text: 'stop sleeper: done' });
      assert.ok(shown.found, `the answer shows in the page: ${shown.error}`);
      // Live log: the task's worker output in a read-only editor that follows it (Follow Task Log).
      const logClicked = await probe(probeDir, { click: 'vscode-button[data-action="open-log"][data-key="sleeper"]' });
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
