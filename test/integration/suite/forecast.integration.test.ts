import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { RunSummary } from '../../../extension/core/run/runner';

// The forecast in the editor (extension/vscode/forecast.ts, the same core as `verdict plan`): Run Manifest shows the
// total and asks above verdict.confirmAboveUsd; the manifest editor shows each task's expected cost in a CodeLens.
// The history is made here, by runs of an engine that reports its cost ($0.60 a task), in a home of this test's own.

const paid = (usd: number) =>
  `echo ok > out.txt; echo '{"type":"result","is_error":false,"total_cost_usd":${usd},"usage":{"input_tokens":10,"output_tokens":5}}'`;
const task = (key: string, engine: string) => ({
  key,
  engine,
  task_type: 'forecast-it',
  verified: `${key} works`,
  spec: paid(0.6),
  check: 'test -s out.txt || { echo "out.txt missing"; exit 1; }',
  expect_files: ['out.txt'],
});

describe('forecast in the editor: Run Manifest confirmation above verdict.confirmAboveUsd, CodeLens per task', function () {
  this.timeout(180000);
  let api: VerdictApi;
  let folder: string;
  let planned: vscode.Uri;
  const config = () => vscode.workspace.getConfiguration('verdict');
  const runsIn = (home: string) => (fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')).length : 0);
  let home: string;

  before(async function () {
    // Only a trusted window runs manifests (the untrusted session runs this file only when grepped for it).
    if (!vscode.workspace.isTrusted) this.skip();
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath as string;
    home = path.join(process.env.VERDICT_TEST_TMP as string, 'forecast-home');
    await config().update('home', home, vscode.ConfigurationTarget.Workspace);
    await config().update(
      'engines',
      { paid: { binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', model: 'acme/forecast-it', retry_context: 'file' } },
      vscode.ConfigurationTarget.Workspace,
    );
    // History: two tasks of acme/forecast-it at $0.60 each.
    const history = path.join(folder, 'forecast-history.swarm.json');
    fs.writeFileSync(
      history,
      JSON.stringify(
        { run_name: 'forecast-history', max_parallel: 2, workdir: '.work-forecast-history', tasks: [task('h1', 'paid'), task('h2', 'paid')] },
        null,
        2,
      ),
    );
    const summary = await api.runManifest(history);
    assert.deepEqual(
      summary.tasks.map((t) => t.verdict),
      ['PASS', 'PASS'],
    );
    // To plan: two tasks with that history ($1.20 expected), one on an engine without any.
    planned = vscode.Uri.file(path.join(folder, 'forecast-planned.swarm.json'));
    fs.writeFileSync(
      planned.fsPath,
      JSON.stringify(
        {
          run_name: 'forecast-planned',
          max_parallel: 3,
          workdir: '.work-forecast-planned',
          tasks: [task('a', 'paid'), task('b', 'paid'), { ...task('c', 'script'), task_type: 'never-seen' }],
        },
        null,
        2,
      ) + '\n',
    );
  });

  after(async () => {
    if (!vscode.workspace.isTrusted) return;
    await config().update('home', undefined, vscode.ConfigurationTarget.Workspace);
    await config().update('engines', undefined, vscode.ConfigurationTarget.Workspace);
    await config().update('confirmAboveUsd', undefined, vscode.ConfigurationTarget.Workspace);
  });

  it('the manifest editor shows each task\'s expected cost in a CodeLens over its key, "no history" where there is none', async () => {
    const doc = await vscode.workspace.openTextDocument(planned);
    await vscode.window.showTextDocument(doc);
    const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', planned)).filter((l) =>
      l.command?.title.startsWith('Verdict forecast'),
    );
    const byLine = lenses.map((l) => [doc.lineAt(l.range.start.line).text.trim(), l.command?.title]);
    console.log(`      ${byLine.map(([line, title]) => `${line} → ${title}`).join('\n      ')}`);
    assert.equal(lenses.length, 3, JSON.stringify(byLine));
    assert.deepEqual(
      byLine.map(([line]) => line),
      ['"key": "a",', '"key": "b",', '"key": "c",'],
    );
    assert.match(String(byLine[0]?.[1]), /^Verdict forecast: expected \$0\.60 \(p50\) · \$0\.60 at p90 · 1 attempt\(s\) · from 2 past task\(s\)$/);
    assert.equal(byLine[2]?.[1], 'Verdict forecast: no history');
  });

  it("Run Manifest: above verdict.confirmAboveUsd (default $1) it asks, and declined nothing runs; the total is the plan's", async () => {
    const plan = await api.forecast(planned.fsPath);
    console.log(`      ${plan.line}; threshold $${plan.thresholdUsd}; asks: ${plan.confirm}`);
    assert.equal(plan.thresholdUsd, 1, 'the default');
    assert.equal(plan.line, 'forecast: $1.20 expected (p50), $1.20 at p90; 1 of 3 task(s) without history (not counted)');
    assert.equal(plan.confirm, true);
    const before = runsIn(home);
    const declined = await vscode.commands.executeCommand<RunSummary | undefined>('verdict.runManifest', planned, { answer: 'Cancel' });
    assert.equal(declined, undefined);
    assert.equal(runsIn(home), before, 'nothing ran');
  });

  it('Run Manifest: at or below the threshold it runs without asking (a question here would never be answered)', async () => {
    await config().update('confirmAboveUsd', 5, vscode.ConfigurationTarget.Workspace);
    const plan = await api.forecast(planned.fsPath);
    assert.deepEqual([plan.thresholdUsd, plan.confirm], [5, false]);
    const summary = await vscode.commands.executeCommand<RunSummary | undefined>('verdict.runManifest', planned);
    assert.deepEqual(
      summary?.tasks.map((t) => t.verdict),
      ['PASS', 'PASS', 'PASS'],
    );
    // The run's two paid tasks join the history the lenses read: four past tasks now.
    const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', planned);
    assert.match(String(lenses.find((l) => l.command?.title.startsWith('Verdict forecast'))?.command?.title), /from 4 past task\(s\)$/);
  });
});
