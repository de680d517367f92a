import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { RunsNode } from '../../../extension/vscode/runs-tree';
import type { MergeOutcome } from '../../../extension/core/git/merge';
import type { RunSummary } from '../../../extension/core/run/runner';
import type { RunInfo } from '../../../extension/core/live/registry';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', ...args], { cwd, encoding: 'utf8' }).trim();

async function until<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, timeoutMs = 20000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** Whether the runs view's context menu offers `command` on a row with this context value (package.json's `when`). */
function offers(command: string, contextValue: string): boolean {
  const menus = vscode.extensions.getExtension('verdict-dev.verdict')?.packageJSON.contributes.menus['view/item/context'] as {
    command: string;
    when: string;
  }[];
  const entry = menus.find((m) => m.command === command);
  const re = /viewItem =~ \/(.*)\/$/.exec(entry?.when ?? '');
  assert.ok(re, `${command} has a viewItem rule`);
  return new RegExp(re[1] as string).test(contextValue);
}

function task(key: string, spec: string, check: string): Record<string, unknown> {
  return { key, engine: 'script', task_type: 'script', verified: `${key} works`, spec, check };
}

describe('runs in VS Code: API, runs view, diff review, merge queue, Test Explorer', function () {
  this.timeout(120000);
  let api: VerdictApi;
  let repo: string;
  let manifest: string;
  let summary: RunSummary;

  before(async () => {
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    assert.ok(api?.runManifest, 'activate() returns the Verdict API');
    const tmp = process.env.VERDICT_TEST_TMP as string;
    repo = path.join(tmp, 'repo');
    fs.mkdirSync(repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(repo, 'README.md'), '# repo\n');
    fs.writeFileSync(path.join(repo, 'shared.txt'), 'original\n');
    fs.writeFileSync(path.join(repo, '.gitignore'), '*.swarm.json\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'base');
    manifest = path.join(repo, 'runs.swarm.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify(
        {
          run_name: 'integration-runs',
          worktrees: true,
          max_parallel: 3,
          tasks: [
            task('add-a', 'echo a > a.txt', 'test -s a.txt || { echo a.txt missing; exit 1; }'),
            task('edit-shared', 'echo from-task > shared.txt', 'grep -x from-task shared.txt || { echo shared.txt not edited; exit 1; }'),
            { ...task('fails', 'echo nothing', 'echo RAW: no proof here; exit 3'), max_attempts: 1 },
          ],
        },
        null,
        2,
      ),
    );
  });

  it('a run that cannot start says why on the first line of its error (what a notification shows): the engine not on PATH and its install command', async () => {
    const file = path.join(repo, 'no-engine.swarm.json');
    fs.writeFileSync(
      file,
      JSON.stringify(
        { run_name: 'no-engine', tasks: [{ ...task('x', 'echo x > x.txt', 'test -s x.txt || { echo x.txt missing; exit 1; }'), engine: 'grok' }] },
        null,
        2,
      ),
    );
    await assert.rejects(api.runManifest(file), (e: Error) => {
      assert.match(
        e.message.split('\n')[0] as string,
        /^verdict run could not start: .*engine "grok" needs the `grok` command, which is not on PATH\. Install it: npm i -g @vibe-kit\/grok-cli.*\(exit 2; log: /,
      );
      return true;
    });
  });

  it('runs a worktree-mode manifest through the API and returns each verdict', async () => {
    summary = await api.runManifest(manifest);
    assert.deepEqual(
      summary.tasks.map((t) => [t.key, t.verdict]),
      [
        ['add-a', 'PASS'],
        ['edit-shared', 'PASS'],
        ['fails', 'FAIL'],
      ],
    );
    assert.equal(summary.tasks[2]?.checkOutput, 'RAW: no proof here\n');
  });

  it('shows the run in the runs view: run → tasks with verdicts → attempts with logs and changed files', async () => {
    const roots = await until('the finished run in the view', async () => {
      const r = await api.runsView.getChildren();
      const mine = r.find((n) => n.runId === summary.runId);
      return mine && /finished/.test(String(api.runsView.getTreeItem(mine).description)) ? r : undefined;
    });
    const run = roots.find((n) => n.runId === summary.runId) as RunsNode;
    const runItem = api.runsView.getTreeItem(run);
    assert.equal(runItem.label, 'integration-runs');
    assert.match(String(runItem.description), /^2\/3 passed · 1 failed · finished · [^·]+ · \d\d:\d\d$/, 'verdicts, state, identity, start time');
    const tasks = await api.runsView.getChildren(run);
    assert.deepEqual(
      tasks.map((t) => [api.runsView.getTreeItem(t).label, String(api.runsView.getTreeItem(t).description).split(' · ')[0]]),
      [
        ['add-a', 'PASS'],
        ['edit-shared', 'PASS'],
        ['fails', 'FAIL at check'],
      ],
    );
    // What a screen reader says: the name and the verdict first (the tooltip was read before), no "0 tokens" for unknown usage.
    assert.match(String(runItem.accessibilityInformation?.label), /^run integration-runs: 2\/3 passed · 1 failed · finished/);
    assert.match(String(runItem.tooltip), /tokens: —$/, 'script attempts report no usage: unknown, not 0');
    assert.deepEqual(
      tasks.map((t) => String(api.runsView.getTreeItem(t).accessibilityInformation?.label).split(',')[0]),
      ['task add-a: PASS', 'task edit-shared: PASS', 'task fails: FAIL'],
    );
    const addA = tasks[0] as RunsNode;
    const children = await api.runsView.getChildren(addA);
    assert.deepEqual(
      children.map((c) => c.kind),
      ['attempt', 'changes'],
    );
    const logs = await api.runsView.getChildren(children[0] as RunsNode);
    assert.deepEqual(
      logs.map((l) => api.runsView.getTreeItem(l).label),
      ['prompt.md', 'worker.log', 'check.log'],
    );
    const files = await api.runsView.getChildren(children[1] as RunsNode);
    assert.deepEqual(
      files.map((f) => [api.runsView.getTreeItem(f).label, api.runsView.getTreeItem(f).description]),
      [['a.txt', 'A']],
    );
  });

  it('a CLI run of another process appears in the view too, and a state change shows within a second', async () => {
    const cli = path.resolve(__dirname, '../../dist/cli.js');
    const other = path.join(process.env.VERDICT_TEST_TMP as string, 'cli-run.swarm.json');
    fs.writeFileSync(
      other,
      JSON.stringify({ run_name: 'from-the-terminal', workdir: 'cli-work', tasks: [task('slow', 'sleep 2; echo done > d.txt', 'test -s d.txt || exit 1')] }),
    );
    const child = spawn('node', [cli, 'run', other, '--home', process.env.VERDICT_HOME as string], { stdio: 'ignore' });
    const live = await until('the CLI run, live', () => api.runs().find((r) => r.state.runName === 'from-the-terminal' && r.liveness === 'running'));
    assert.equal(live.state.pid, child.pid);
    await until('the CLI run, finished', () =>
      api.runs().find((r) => r.state.runName === 'from-the-terminal' && r.liveness === 'finished' && r.counts.passed === 1),
    );
  });

  it('opens a read-only diff of a changed file: base_ref against the task branch', async () => {
    const count = await vscode.commands.executeCommand<number>('verdict.reviewTask', { runId: summary.runId, key: 'edit-shared' });
    assert.equal(count, 1);
    const tab = await until('a diff tab', () => {
      const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
      return input instanceof vscode.TabInputTextDiff ? input : undefined;
    });
    assert.equal(tab.original.scheme, 'verdict-git');
    const left = await vscode.workspace.openTextDocument(tab.original);
    const right = await vscode.workspace.openTextDocument(tab.modified);
    assert.equal(left.getText(), 'original\n');
    assert.equal(right.getText(), 'from-task\n');
    assert.equal(tab.modified.scheme, 'verdict-git', 'both sides come from git objects through the read-only content provider');
  });

  it('merges the passed tasks one at a time; a conflicting task is BLOCKED with its file; a dirty tree is refused', async () => {
    fs.writeFileSync(path.join(repo, 'shared.txt'), 'changed on main meanwhile\n');
    const refused = await vscode.commands.executeCommand<MergeOutcome[] | undefined>('verdict.mergeAllPassed', { runId: summary.runId });
    assert.equal(refused, undefined, 'a dirty working tree is never touched');
    assert.equal(fs.readFileSync(path.join(repo, 'shared.txt'), 'utf8'), 'changed on main meanwhile\n');
    git(repo, 'commit', '-qam', 'main moves on');
    const outcomes = await vscode.commands.executeCommand<MergeOutcome[]>('verdict.mergeAllPassed', { runId: summary.runId });
    assert.deepEqual(
      outcomes.map((o) => [o.key, o.status]),
      [
        ['add-a', 'MERGED'],
        ['edit-shared', 'BLOCKED'],
      ],
    );
    const blocked = outcomes[1];
    assert.deepEqual(blocked?.status === 'BLOCKED' ? blocked.conflicts : [], ['shared.txt']);
    assert.match(git(repo, 'log', '-1', '--format=%s'), /^verdict: add-a/);
    assert.equal(fs.readFileSync(path.join(repo, 'a.txt'), 'utf8'), 'a\n');

    // Merged is a state the tree shows, with the commit, and the row's Merge action (its menu `when`) is gone.
    const head = git(repo, 'rev-parse', 'HEAD');
    const row = async (key: string) => {
      const run = (await api.runsView.getChildren()).find((n) => n.runId === summary.runId) as RunsNode;
      const t = (await api.runsView.getChildren(run)).find((n) => api.runsView.getTreeItem(n).label === key) as RunsNode;
      return api.runsView.getTreeItem(t);
    };
    const addA = await until('add-a shown merged', async () => {
      const item = await row('add-a');
      return String(item.description).startsWith('MERGED') ? item : undefined;
    });
    assert.equal(String(addA.description).split(' · ')[0], `MERGED ${head.slice(0, 10)}`);
    assert.equal(offers('verdict.mergeTask', String(addA.contextValue)), false, `no Merge on ${addA.contextValue}`);
    assert.equal(offers('verdict.reviewTask', String(addA.contextValue)), true, 'its changes can still be reviewed');
    assert.equal(offers('verdict.mergeTask', String((await row('edit-shared')).contextValue)), true, 'the blocked one can still be merged');
    // Merging it again changes nothing: refused (already merged), no new commit.
    assert.equal(await vscode.commands.executeCommand('verdict.mergeTask', { runId: summary.runId, key: 'add-a' }), undefined);
    assert.equal(git(repo, 'rev-parse', 'HEAD'), head);
    const again = await vscode.commands.executeCommand<MergeOutcome[]>('verdict.mergeAllPassed', { runId: summary.runId });
    assert.deepEqual(
      again.map((o) => o.key),
      ['edit-shared'],
      'Merge All leaves the merged task alone',
    );
    assert.equal(git(repo, 'rev-parse', 'HEAD'), head);
  });

  it('runs one task from the Test Explorer; the result is a new run of just that task', async () => {
    const [uri] = await vscode.workspace.findFiles('ok.swarm.json');
    assert.ok(uri);
    const before = new Set(api.runs().map((r) => r.state.runId));
    const doc = await vscode.workspace.openTextDocument(uri);
    const editor = await vscode.window.showTextDocument(doc);
    const at = doc.positionAt(doc.getText().indexOf('"hello"') + 2);
    editor.selection = new vscode.Selection(at, at);
    await sleep(1500); // let the controller discover the workspace's manifests
    await vscode.commands.executeCommand('testing.runAtCursor');
    const run = await until(
      'the Test Explorer run',
      () => api.runs().find((r) => !before.has(r.state.runId) && r.state.runName === 'integration-ok' && r.liveness === 'finished'),
      60000,
    );
    assert.deepEqual(
      run.state.tasks.map((t) => [t.key, t.status]),
      [['hello', 'PASS']],
    );
  });

  it('runs through the Run Manifest command as well', async () => {
    const [uri] = await vscode.workspace.findFiles('ok.swarm.json');
    const result = await vscode.commands.executeCommand<RunSummary>('verdict.runManifest', uri);
    assert.deepEqual(
      result.tasks.map((t) => t.verdict),
      ['PASS'],
    );
  });

  it('Resume Run of a run that ended starts a detached `verdict resume`: the same run runs its task that did not pass again', async () => {
    const info = await vscode.commands.executeCommand<RunInfo | undefined>('verdict.resumeRun', { runId: summary.runId });
    assert.ok(info, 'the run was taken over');
    assert.equal(info.state.runId, summary.runId, 'the same run id');
    assert.notEqual(info.state.pid, process.pid, 'its orchestrator is not the extension host');
    assert.deepEqual(
      info.state.resumes?.map((r) => [r.verb, r.tasks]),
      [['resume', ['fails']]],
    );
    const end = await until(
      'the resumed run, finished',
      () => api.runs().find((r) => r.state.runId === summary.runId && r.liveness === 'finished' && (r.state.resumes?.length ?? 0) > 0),
      30000,
    );
    assert.deepEqual(
      end.state.tasks.map((t) => [t.key, t.status, t.attempts.length]),
      [
        ['add-a', 'PASS', 1],
        ['edit-shared', 'PASS', 1],
        ['fails', 'FAIL', 2],
      ],
    );
  });

  it('discards a task: its worktree and branch go (after confirmation)', async () => {
    const failing = summary.tasks.find((t) => t.key === 'fails');
    assert.ok(failing?.branch);
    assert.ok(git(repo, 'branch', '--list', failing.branch));
    assert.equal(await vscode.commands.executeCommand('verdict.discardTask', { runId: summary.runId, key: 'fails' }, { confirmed: true }), true);
    assert.equal(git(repo, 'branch', '--list', failing.branch), '');
    const item = await until('fails shown discarded', async () => {
      const run = (await api.runsView.getChildren()).find((n) => n.runId === summary.runId) as RunsNode;
      const t = (await api.runsView.getChildren(run)).find((n) => api.runsView.getTreeItem(n).label === 'fails') as RunsNode;
      const it = api.runsView.getTreeItem(t);
      return /^DISCARDED [0-9a-f]{10}/.test(String(it.description)) ? it : undefined;
    });
    assert.equal(offers('verdict.discardTask', String(item.contextValue)), false, `no Discard on ${item.contextValue}`);
  });
});

describe('Resume Run of a run whose orchestrator died (kill -9 mid-attempt)', function () {
  this.timeout(180000);

  it('shows it "orchestrator died" with Resume on its menu; Resume Run takes it over detached: the interrupted task runs again and passes, nothing it did is lost', async () => {
    const api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    const dir = fs.mkdtempSync(path.join(process.env.VERDICT_TEST_TMP as string, 'died-'));
    const manifest = path.join(dir, 'died.swarm.json');
    // The first attempt leaves a mark in its task folder and sleeps; the attempt after the resume finds the mark
    // (plain mode keeps the folder) and finishes. `kept` has passed before the orchestrator dies.
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        run_name: 'orchestrator-dies',
        workdir: 'work',
        tasks: [
          task('kept', 'echo k > k.txt', 'test -s k.txt'),
          { ...task('slow', 'if [ -f mark ]; then echo s > s.txt; else echo started > mark; sleep 300; fi', 'test -s s.txt'), after: ['kept'] },
        ],
      }),
    );
    const cli = path.resolve(__dirname, '../../dist/cli.js');
    const child = spawn('node', [cli, 'run', manifest, '--home', process.env.VERDICT_HOME as string, '--no-dashboard'], { stdio: 'ignore', detached: true });
    const running = await until(
      'the slow task at work',
      () =>
        api.runs().find((r) => r.state.pid === child.pid && r.liveness === 'running' && r.state.tasks.find((t) => t.key === 'slow')?.status === 'running') &&
        fs.existsSync(path.join(dir, 'work', 'slow', 'mark'))
          ? api.runs().find((r) => r.state.pid === child.pid)
          : undefined,
      60000,
    );
    const runId = running.state.runId;
    process.kill(child.pid as number, 'SIGKILL');

    const died = await until(
      'the run shown with its orchestrator dead',
      () => api.runs().find((r) => r.state.runId === runId && r.liveness === 'orchestrator-died'),
      60000,
    );
    const row = (await api.runsView.getChildren()).find((n) => n.runId === runId) as RunsNode;
    const item = api.runsView.getTreeItem(row);
    assert.match(String(item.description), /orchestrator died/, String(item.description));
    assert.ok(offers('verdict.resumeRun', String(item.contextValue)), `Resume on ${item.contextValue}`);
    assert.equal(died.state.tasks.find((t) => t.key === 'kept')?.status, 'PASS');

    const info = await vscode.commands.executeCommand<RunInfo | undefined>('verdict.resumeRun', { runId });
    assert.ok(info, 'the run was taken over');
    assert.equal(info.state.runId, runId, 'the same run id');
    assert.notEqual(info.state.pid, child.pid, 'a new orchestrator');
    assert.notEqual(info.state.pid, process.pid, 'not the extension host');
    const end = await until(
      'the resumed run, finished',
      () => api.runs().find((r) => r.state.runId === runId && r.liveness === 'finished' && (r.state.resumes?.length ?? 0) > 0),
      90000,
    );
    const byKey = Object.fromEntries(end.state.tasks.map((t) => [t.key, t]));
    assert.deepEqual(
      [byKey.kept?.status, byKey.kept?.attempts.length, byKey.slow?.status],
      ['PASS', 1, 'PASS'],
      JSON.stringify(end.state.tasks.map((t) => [t.key, t.status, t.attempts.map((a) => a.verdict)])),
    );
    assert.deepEqual(
      byKey.slow?.attempts.map((a) => a.verdict),
      ['INTERRUPTED', 'PASS'],
      'the attempt the dead orchestrator left is INTERRUPTED, the next one passed',
    );
    assert.equal(fs.readFileSync(path.join(dir, 'work', 'slow', 's.txt'), 'utf8'), 's\n');
    assert.equal(fs.readFileSync(path.join(dir, 'work', 'kept', 'k.txt'), 'utf8'), 'k\n', 'the task that passed before is untouched');
  });
});
