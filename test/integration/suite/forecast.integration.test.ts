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
      // User settings: a workspace's verdict.engines is not read (a cloned repository cannot define an engine).
      vscode.ConfigurationTarget.Global,
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
    await config().update('engines', undefined, vscode.ConfigurationTarget.Global);
    await config().update('confirmAboveUsd', undefined, vscode.ConfigurationTarget.Workspace);
  });

  it('the manifest editor shows each task\'s expected cost in a CodeLens over its key, $0 for a script (no model), "no history" where there is none', async () => {
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
    // c is a script (no model): it costs nothing, history or not.
    assert.equal(byLine[2]?.[1], 'Verdict forecast: expected $0.00 (p50) · $0.00 at p90 · runs no model');
    // A task of a model nobody ran: no history, never $0.
    const unknown = vscode.Uri.file(path.join(folder, 'forecast-unknown.swarm.json'));
    fs.writeFileSync(
      unknown.fsPath,
      JSON.stringify({ run_name: 'forecast-unknown', tasks: [{ ...task('u', 'paid'), model: 'acme/never-run' }] }, null, 2) + '\n',
    );
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(unknown));
    const unknownLenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', unknown);
    assert.deepEqual(
      unknownLenses.filter((l) => l.command?.title.startsWith('Verdict forecast')).map((l) => l.command?.title),
      ['Verdict forecast: no history'],
    );
  });

  it("Run Manifest: above verdict.confirmAboveUsd (default $1) it asks, and declined nothing runs; the total is the plan's", async () => {
    const plan = await api.forecast(planned.fsPath);
    console.log(`      ${plan.line}; threshold $${plan.thresholdUsd}; asks: ${plan.confirm}`);
    assert.equal(plan.thresholdUsd, 1, 'the default');
    assert.equal(plan.line, 'forecast: $1.20 expected (p50), $1.20 at p90');
    assert.equal(plan.confirm, true);
    assert.equal(plan.reason, 'above your $1 threshold (verdict.confirmAboveUsd)');
    const before = runsIn(home);
    const declined = await vscode.commands.executeCommand<RunSummary | undefined>('verdict.runManifest', planned, { answer: 'Cancel' });
    assert.equal(declined, undefined);
    assert.equal(runsIn(home), before, 'nothing ran');
  });

  it('Run Manifest: at or below the threshold it runs without asking (a question here would never be answered)', async () => {
    await config().update('confirmAboveUsd', 5, vscode.ConfigurationTarget.Workspace);
    const plan = await api.forecast(planned.fsPath);
    assert.deepEqual([plan.thresholdUsd, plan.confirm], [5, false]);
    // A task nobody ran before: its cost is unknown, which is never under the threshold, however high; only a
    // budget_usd at or below the threshold (which caps the run) lets it run unasked.
    const unknown = path.join(folder, 'forecast-unknown-run.swarm.json');
    const unknownManifest = (budget: number | null) =>
      JSON.stringify({
        run_name: 'forecast-unknown-run',
        ...(budget === null ? {} : { budget_usd: budget }),
        tasks: [{ ...task('u', 'paid'), model: 'acme/never-run' }],
      });
    fs.writeFileSync(unknown, unknownManifest(null));
    const cold = await api.forecast(unknown);
    console.log(`      ${cold.line}; asks: ${cold.confirm} (${cold.reason})`);
    assert.equal(cold.line, 'forecast: cost unknown — no history for any of its 1 task(s)');
    assert.deepEqual(
      [cold.confirm, cold.reason],
      [true, 'its cost is unknown and no budget_usd caps it: it may cost more than your $5 threshold (verdict.confirmAboveUsd)'],
    );
    fs.writeFileSync(unknown, unknownManifest(5));
    assert.equal((await api.forecast(unknown)).confirm, false, 'budget_usd $5 caps it at the threshold');
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
