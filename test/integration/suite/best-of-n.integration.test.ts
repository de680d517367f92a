import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { RunsNode } from '../../../extension/vscode/runs-tree';
import type { RunSummary } from '../../../extension/core/run/runner';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', ...args], { cwd, encoding: 'utf8' }).trim();
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

async function until<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, timeoutMs = 20000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('best-of-N in VS Code: candidates under their task in the runs view, Compare with Winner', function () {
  this.timeout(120000);
  let api: VerdictApi;
  let summary: RunSummary;

  before(async () => {
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    const repo = fs.mkdtempSync(path.join(process.env.VERDICT_TEST_TMP as string, 'best-of-n-repo-'));
    git(repo, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(repo, '.gitignore'), '*.swarm.json\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'base');
    const manifest = path.join(repo, 'pick.swarm.json');
    // Candidate 1 fails with a check output of markup, escapes and a line break; 2 and 3 pass (3 with a second file);
    // select all: 2, the lowest-numbered pass, wins.
    const hostile = "printf '<b>all good</b>\\033[2J\\nPASS\\033]52;c;Zm9v\\007'";
    fs.writeFileSync(
      manifest,
      JSON.stringify(
        {
          run_name: 'integration-best-of-n',
          worktrees: true,
          max_parallel: 1,
          tasks: [
            {
              key: 'pick',
              engine: 'script',
              task_type: 'script',
              verified: 'pick.txt names its candidate',
              repeat: 3,
              select: 'all',
              max_attempts: 1,
              spec: 'echo "candidate $VERDICT_CANDIDATE" > pick.txt; if [ "$VERDICT_CANDIDATE" = 3 ]; then echo three > extra.txt; fi',
              check: `if grep -q 'candidate 1' pick.txt; then ${hostile}; exit 1; fi; test -s pick.txt || { echo pick.txt missing; exit 1; }`,
            },
          ],
        },
        null,
        2,
      ),
    );
    summary = await api.runManifest(manifest);
  });

  // The suites after this one find one editor group, as they would without it.
  after(() => vscode.commands.executeCommand('workbench.action.closeAllGroups'));

  it('lists the task once, its candidates under it: number, engine, the winner starred; how it was decided; no control character', async () => {
    const run = await until('the run in the view', async () =>
      (await api.runsView.getChildren()).find((n) => n.runId === summary.runId && /finished/.test(String(api.runsView.getTreeItem(n).description))),
    );
    const tasks = await api.runsView.getChildren(run);
    assert.deepEqual(
      tasks.map((t) => api.runsView.getTreeItem(t).label),
      ['pick'],
      'the candidates are not rows of the run',
    );
    const pick = api.runsView.getTreeItem(tasks[0] as RunsNode);
    assert.equal(pick.description, 'PASS · 3 candidates · select all · winner: candidate 2 (pick--c2, script)');
    const children = await api.runsView.getChildren(tasks[0] as RunsNode);
    assert.deepEqual(
      children.map((c) => c.kind),
      ['task', 'task', 'task', 'changes'],
      "the candidates, then the winner's changed files",
    );
    const items = children.slice(0, 3).map((c) => api.runsView.getTreeItem(c));
    assert.deepEqual(
      items.map((i) => i.label),
      ['pick--c1', 'pick--c2', 'pick--c3'],
    );
    assert.match(String(items[0]?.description), /^FAIL at check · candidate 1 · script · 1 attempt/);
    assert.match(String(items[1]?.description), /^PASS · candidate 2 · winner · script · 1 attempt/);
    assert.match(String(items[2]?.description), /^PASS · candidate 3 · script · 1 attempt/);
    assert.equal((items[1]?.iconPath as vscode.ThemeIcon).id, 'star-full');
    assert.deepEqual(
      items.map((i) => /\.compare$/.test(String(i.contextValue))),
      [false, false, true],
      'Compare with Winner only on a passed candidate that did not win',
    );
    // The control: the hostile output is in the record; no label or description of the view carries a control character.
    const c1 = api
      .runs()
      .find((r) => r.state.runId === summary.runId)
      ?.state.tasks.find((t) => t.key === 'pick--c1');
    assert.match(`${c1?.reason ?? ''}${c1?.attempts[0]?.notes ?? ''}`, /\u001b/);
    for (const i of [pick, ...items]) assert.doesNotMatch(`${String(i.label)}${String(i.description)}`, CONTROL);
  });

  it("Compare with Winner: the winner's changes in the first editor group, the candidate's beside them; refused for the winner and a candidate without work", async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllGroups');
    const r = await vscode.commands.executeCommand<{ winner: string; winnerFiles: number; candidateFiles: number } | undefined>('verdict.compareWithWinner', {
      runId: summary.runId,
      key: 'pick--c3',
    });
    assert.deepEqual(r, { winner: 'pick--c2', winnerFiles: 1, candidateFiles: 2 });
    const groups = await until('two editor groups', () => (vscode.window.tabGroups.all.length >= 2 ? vscode.window.tabGroups.all : undefined));
    const first = groups[0]?.activeTab;
    assert.ok(first?.input instanceof vscode.TabInputTextDiff, `the winner's one file is a diff editor: ${first?.label}`);
    assert.equal((await vscode.workspace.openTextDocument(first.input.modified)).getText(), 'candidate 2\n');
    assert.match(first.label, /pick\.txt \(base ↔ pick--c2\)/);
    const second = groups[1]?.activeTab;
    assert.match(String(second?.label), /^pick--c3: changes/, "the candidate's two files, in the multi-file diff editor beside");
    assert.equal(
      await vscode.commands.executeCommand('verdict.compareWithWinner', { runId: summary.runId, key: 'pick--c2' }),
      undefined,
      'the winner is not compared with itself',
    );
    assert.equal(
      await vscode.commands.executeCommand('verdict.compareWithWinner', { runId: summary.runId, key: 'pick--c1' }),
      undefined,
      'a failed candidate has no committed work',
    );
    assert.equal(
      await vscode.commands.executeCommand('verdict.compareWithWinner', { runId: summary.runId, key: 'pick' }),
      undefined,
      'the task is not a candidate',
    );
  });
});
