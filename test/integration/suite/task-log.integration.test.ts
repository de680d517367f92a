import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import { sleep, until } from './until';

/** The README's pictures: out/screenshots on every run, docs/images with VERDICT_UPDATE_SCREENSHOTS=1. */
const IMAGES = path.resolve(__dirname, '../..', process.env.VERDICT_UPDATE_SCREENSHOTS === '1' ? 'docs/images' : 'out/screenshots');

/** A picture of the workbench through the probe (test/integration/webview-probe.mjs); nothing on the electron route. */
async function screenshot(name: string): Promise<void> {
  const dir = path.join(process.env.VERDICT_TEST_TMP as string, 'webview-probe');
  if (!fs.existsSync(dir)) return;
  fs.writeFileSync(path.join(dir, 'request-800.json'), JSON.stringify({ screenshot: path.join(IMAGES, name) }));
  for (let k = 0; k < 200 && !fs.existsSync(path.join(dir, 'response-800.json')); k++) await sleep(200);
}

/**
 * Follow Task Log: a task's worker output as it arrives, in a read-only document that follows it, from the runs view
 * (a run the CLI started: the editor reads its files like any other process's).
 */
describe('Follow Task Log: a live log of one task', function () {
  this.timeout(120000);
  let api: VerdictApi;
  let child: ChildProcess;
  let runId: string;

  before(async () => {
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    const dir = path.join(process.env.VERDICT_TEST_TMP as string, 'task-log');
    fs.mkdirSync(dir, { recursive: true });
    const manifest = path.join(dir, 'ticks.swarm.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        run_name: 'ticks',
        workdir: 'work',
        tasks: [
          {
            key: 'ticker',
            engine: 'script',
            task_type: 'script',
            verified: 'the ticker wrote out.txt',
            network: false,
            spec: 'for i in $(seq 1 60); do echo "tick-$i"; sleep 0.2; done; echo done > out.txt',
            check: 'test -s out.txt || { echo out.txt missing; exit 1; }',
            expect_files: ['out.txt'],
          },
        ],
      }),
    );
    const cli = path.resolve(__dirname, '../../dist/cli.js');
    child = spawn(process.execPath, [cli, 'run', manifest, '--home', process.env.VERDICT_HOME as string, '--no-dashboard'], { stdio: 'ignore' });
    runId = (await until('the ticks run, live', () => api.runs().find((r) => r.state.runName === 'ticks' && r.liveness === 'running'))).state.runId;
  });

  after(async () => {
    if (child.exitCode === null) await until('the run ended', () => child.exitCode !== null, 60000).catch(() => child.kill('SIGKILL'));
  });

  it('opens a read-only document that grows as the worker writes, then says how the attempt ended', async () => {
    await until('ticker at work', () => api.runs().find((r) => r.state.runId === runId)?.state.tasks[0]?.attempts.length);
    await vscode.commands.executeCommand('workbench.view.extension.verdict');
    const editor = await vscode.commands.executeCommand<vscode.TextEditor>('verdict.followTaskLog', { runId, key: 'ticker' });
    assert.ok(editor, 'the command resolves with the editor');
    const doc = editor.document;
    assert.equal(doc.uri.scheme, 'verdict-task-log');
    // The document reads the run's state itself: it may still say "queued" for a moment after the extension's run list
    // has the attempt, then names the attempt once it reads it.
    await until('the header names attempt 1', () => /^# ticks \| ticker \| attempt 1 \| /.test(doc.getText()));
    await until('tick-3 in the document', () => /tick-3\n/.test(doc.getText()));
    const early = doc.getText().length;
    await until('tick-20 in the document, with no command from us', () => /tick-20\n/.test(doc.getText()), 60000);
    assert.ok(doc.getText().length > early, 'the document grew');
    await screenshot('task-live-log.png');
    // A content provider's document: read-only in the editor, never untitled or dirty (closing it asks nothing).
    assert.equal(doc.isUntitled, false);
    assert.equal(doc.isDirty, false);
    await until('the attempt ended PASS, said in the header', () => /^# ticks \| ticker \| attempt 1 \| PASS/.test(doc.getText()), 60000);
    assert.match(doc.getText(), /tick-60\n/);
  });

  it('refuses without a task, naming where to pick one', async () => {
    assert.equal(await vscode.commands.executeCommand('verdict.followTaskLog', { runId, key: 'nope' }), undefined);
  });
});
