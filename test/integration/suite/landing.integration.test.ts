import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { RunsNode } from '../../../extension/vscode/runs-tree';
import type { MergeOutcome } from '../../../extension/core/git/merge';
import { askProbe } from './probe';
import { until } from './until';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@example.invalid', ...args], { cwd, encoding: 'utf8' }).trim();

/** The README's pictures: out/screenshots on every run, docs/images with VERDICT_UPDATE_SCREENSHOTS=1 (as the dashboard e2e). */
const IMAGES = path.resolve(__dirname, '../..', process.env.VERDICT_UPDATE_SCREENSHOTS === '1' ? 'docs/images' : 'out/screenshots');

/** A picture of the workbench into IMAGES/`name` (nothing on the electron route). */
async function screenshot(name: string): Promise<void> {
  await askProbe({ screenshot: path.join(IMAGES, name) });
}

/** Whether the runs view's context menu offers `command` on a row with this context value (package.json's `when`). */
function offers(command: string, contextValue: string): boolean {
  const menus = vscode.extensions.getExtension('verdict-dev.verdict')?.packageJSON.contributes.menus['view/item/context'] as {
    command: string;
    when: string;
  }[];
  const re = /viewItem =~ \/(.*)\/$/.exec(menus.find((m) => m.command === command)?.when ?? '');
  assert.ok(re, `${command} has a viewItem rule`);
  return new RegExp(re[1] as string).test(contextValue);
}

function task(key: string, spec: string, check: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { key, engine: 'script', task_type: 'script', verified: `${key} works`, spec, check, network: false, ...extra };
}

/**
 * Merged, discarded and paused as the runs view shows them on a run the CLI started and still runs: a passed task in
 * "Ready to merge"; merged from the editor, it shows MERGED with the commit at once (its orchestrator recorded it),
 * loses its Merge action and leaves "Ready to merge"; merging again changes nothing; a paused run says so first.
 */
describe('merged, ready to merge and paused in the runs view, on a live run', function () {
  this.timeout(180000);
  let api: VerdictApi;
  let repo: string;
  let child: ChildProcess;
  let runId: string;
  const home = process.env.VERDICT_HOME as string;

  before(async () => {
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    repo = path.join(process.env.VERDICT_TEST_TMP as string, 'landing-repo');
    fs.mkdirSync(repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(repo, 'README.md'), '# repo\n');
    fs.writeFileSync(path.join(repo, '.gitignore'), '*.swarm.json\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'base');
    const manifest = path.join(repo, 'landing.swarm.json');
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        run_name: 'landing',
        worktrees: true,
        max_parallel: 3,
        tasks: [
          task('add-a', 'echo a > a.txt', 'test -s a.txt || { echo a.txt missing; exit 1; }', { expect_files: ['a.txt'] }),
          task('fails', 'true', 'echo "b.txt missing"; exit 1', { max_attempts: 1 }),
          task('slow', 'sleep 120; echo s > s.txt', 'test -s s.txt || { echo s.txt missing; exit 1; }', { expect_files: ['s.txt'] }),
          task('later', 'echo l > l.txt', 'test -s l.txt || { echo l.txt missing; exit 1; }', { expect_files: ['l.txt'], after: ['slow'] }),
        ],
      }),
    );
    const cli = path.resolve(__dirname, '../../dist/cli.js');
    child = spawn(process.execPath, [cli, 'run', manifest, '--home', home, '--no-dashboard'], { stdio: 'ignore' });
    const info = await until(
      'add-a passed and fails failed while slow works',
      () =>
        api
          .runs()
          .find(
            (r) =>
              r.state.runName === 'landing' &&
              r.liveness === 'running' &&
              r.state.tasks.find((t) => t.key === 'add-a')?.status === 'PASS' &&
              r.state.tasks.find((t) => t.key === 'fails')?.status === 'FAIL',
          ),
      90000,
    );
    runId = info.state.runId;
    await vscode.commands.executeCommand('workbench.view.extension.verdict');
  });

  after(async () => {
    if (child.exitCode === null) {
      await vscode.commands.executeCommand('verdict.cancelRun', { runId });
      await until('the run ended', () => child.exitCode !== null, 60000).catch(() => child.kill('SIGKILL'));
    }
  });

  const readyRows = async (): Promise<RunsNode[]> => {
    const ready = (await api.runsView.getChildren()).find((node) => node.kind === 'ready');
    return ready ? api.runsView.getChildren(ready) : [];
  };
  const row = async (key: string): Promise<vscode.TreeItem> => {
    const run = (await api.runsView.getChildren()).find((node) => node.kind === 'run' && node.runId === runId) as RunsNode;
    return api.runsView.getTreeItem((await api.runsView.getChildren(run)).find((node) => node.kind === 'task' && node.key === key) as RunsNode);
  };

  it('"Ready to merge" lists the passed task, naming its run; not the failed one, nor the one at work', async () => {
    const root = await api.runsView.getChildren();
    const ready = root.find((node) => node.kind === 'ready');
    assert.ok(ready, 'a Ready to merge row');
    assert.equal(
      root.indexOf(ready),
      root.findIndex((node) => node.kind !== 'pool'),
      'above the runs',
    );
    assert.match(String(api.runsView.getTreeItem(ready).description), /^\d+ passed tasks? not merged$/);
    const mine = (await readyRows()).filter((node) => node.runId === runId);
    assert.deepEqual(
      mine.map((node) => (node.kind === 'task' ? node.key : node.kind)),
      ['add-a'],
    );
    const item = api.runsView.getTreeItem(mine[0] as RunsNode);
    assert.match(String(item.description), /^landing · PASS/);
    assert.equal(offers('verdict.mergeTask', String(item.contextValue)), true, 'Merge is offered on it');
    await screenshot('runs-ready-to-merge.png');
  });

  it('Merge on the live run: MERGED with the commit at once, no Merge action, gone from Ready to merge; merging again changes nothing', async () => {
    const outcomes = await vscode.commands.executeCommand<MergeOutcome[]>('verdict.mergeTask', { runId, key: 'add-a' });
    assert.deepEqual(
      outcomes?.map((o) => [o.key, o.status]),
      [['add-a', 'MERGED']],
    );
    const head = git(repo, 'rev-parse', 'HEAD');
    assert.match(git(repo, 'log', '-1', '--format=%s'), /^verdict: add-a/);
    // The run is still live: its orchestrator, not the editor, wrote the record (control verb record, acknowledged).
    const info = api.runs().find((r) => r.state.runId === runId);
    assert.equal(info?.liveness, 'running');
    assert.deepEqual(
      info?.state.control?.filter((c) => c.verb === 'record').map((c) => [c.task, c.result]),
      [['add-a', 'done']],
    );
    const merged = await until('add-a shown merged', async () => {
      const it = await row('add-a');
      return String(it.description).startsWith('MERGED') ? it : undefined;
    });
    assert.equal(String(merged.description).split(' · ')[0], `MERGED ${head.slice(0, 10)}`);
    assert.equal(offers('verdict.mergeTask', String(merged.contextValue)), false, `no Merge on ${merged.contextValue}`);
    assert.deepEqual(
      (await readyRows()).filter((node) => node.runId === runId),
      [],
      'nothing of this run is left to merge',
    );
    assert.equal(await vscode.commands.executeCommand('verdict.mergeTask', { runId, key: 'add-a' }), undefined, 'already merged: refused');
    assert.equal(git(repo, 'rev-parse', 'HEAD'), head, 'no new commit');
    // For the picture: the run's row opened, as a click on its twistie opens it.
    await askProbe({ click: '.monaco-list-row[aria-label^="run landing"] .monaco-tl-twistie', where: 'workbench' });
    await screenshot('runs-merged.png');
  });

  it('Pause: the run row shows PAUSED first and a pause icon (no spinner); Resume takes it back', async () => {
    await vscode.commands.executeCommand('verdict.pauseRun', { runId });
    const runRow = async () =>
      api.runsView.getTreeItem((await api.runsView.getChildren()).find((node) => node.kind === 'run' && node.runId === runId) as RunsNode);
    const paused = await until('the run row paused', async () => {
      const it = await runRow();
      return String(it.description).startsWith('PAUSED · ') ? it : undefined;
    });
    assert.equal((paused.iconPath as vscode.ThemeIcon).id, 'debug-pause');
    assert.match(String(paused.contextValue), /\.paused/);
    await screenshot('runs-paused.png');
    await vscode.commands.executeCommand('verdict.resumeRun', { runId });
    const resumed = await until('the run row active again', async () => {
      const it = await runRow();
      return !String(it.description).startsWith('PAUSED') ? it : undefined;
    });
    assert.equal((resumed.iconPath as vscode.ThemeIcon).id, 'sync~spin');
  });
});
