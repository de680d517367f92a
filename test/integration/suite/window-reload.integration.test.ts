import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';
import type { ControlAck } from '../../../extension/core/live/control';
import type { RunsNode } from '../../../extension/vscode/runs-tree';
import type { RunState } from '../../../extension/core/live/state';

// Two extension-host sessions in sequence over one VERDICT_HOME (test/integration/run.mjs): the trusted session
// starts a run through Run Manifest and ends while it runs (as a window reload or a closed editor does: run.mjs kills
// code-server); the next session (the untrusted-workspace one) finds the run live in the tree, stops one task from the
// tree through the control channel, lets the other finish, and checks the orchestrator is gone. The hand-over file
// says which run; run.mjs kills its orchestrator's process group at the end, whatever happened.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const handover = () => path.join(process.env.VERDICT_TEST_TMP as string, 'outlive.json');

interface Handover {
  runId: string;
  pid: number;
  stateFile: string;
  workdir: string;
}

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Field 5 of /proc/<pid>/stat: the process group. */
function processGroup(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

const readState = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as RunState;

describe('a run outlives the window that started it', function () {
  this.timeout(90000);

  it('Run Manifest starts `verdict run` detached: another process in its own group, which this window does not own', async () => {
    const api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    const dir = path.join(process.env.VERDICT_TEST_TMP as string, 'outlive');
    fs.mkdirSync(dir, { recursive: true });
    const manifest = path.join(dir, 'outlive.swarm.json');
    const script = (key: string, spec: string, check: string) => ({
      key,
      engine: 'script',
      task_type: 'script',
      verified: `${key} works`,
      spec,
      check,
      max_attempts: 1,
    });
    fs.writeFileSync(
      manifest,
      JSON.stringify(
        {
          run_name: 'outlives-the-window',
          workdir: 'work',
          max_parallel: 2,
          tasks: [
            script('stop-me', 'sleep 600; echo late > out.txt', 'test -s out.txt || { echo out.txt missing; exit 1; }'),
            script('finish-me', 'until [ -f release ]; do sleep 0.2; done; echo ok > done.txt', 'test -s done.txt || { echo done.txt missing; exit 1; }'),
          ],
        },
        null,
        2,
      ),
    );
    const before = new Set(api.runs().map((r) => r.state.runId));
    // Not awaited: the command follows the run until it ends, which happens in the next session.
    void vscode.commands.executeCommand('verdict.runManifest', vscode.Uri.file(manifest));
    const live = await until('the run, live, with both workers running', () =>
      api
        .runs()
        .find(
          (r) =>
            !before.has(r.state.runId) &&
            r.state.runName === 'outlives-the-window' &&
            r.liveness === 'running' &&
            r.state.tasks.every((t) => t.status === 'running'),
        ),
    );
    const pid = live.state.pid;
    assert.notEqual(pid, process.pid, 'the orchestrator is not the extension host');
    assert.equal(processGroup(pid), pid, 'the orchestrator leads its own process group (detached)');
    assert.notEqual(processGroup(pid), processGroup(process.pid));
    const logFile = path.join(process.env.VERDICT_HOME as string, 'launches', `${live.state.runId}.log`);
    await until(
      'its output in a log under VERDICT_HOME, named after the run',
      () => fs.existsSync(logFile) && /▶ stop-me/.test(fs.readFileSync(logFile, 'utf8')),
    );
    const h: Handover = { runId: live.state.runId, pid, stateFile: live.stateFile, workdir: path.join(dir, 'work') };
    fs.writeFileSync(handover(), JSON.stringify(h));
    // This session now ends with the run going on: run.mjs closes the browser and kills code-server.
  });

  describe('the next window (an untrusted workspace here) finds the run live and controls it', () => {
    let h: Handover | undefined;
    after(() => {
      if (h && alive(h.pid)) {
        try {
          process.kill(-h.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    });

    it('shows the run live in the tree, stops one task from the tree (acknowledged in state.json), and the other finishes', async function () {
      if (!fs.existsSync(handover())) this.skip();
      h = JSON.parse(fs.readFileSync(handover(), 'utf8')) as Handover;
      const api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
      assert.notEqual(h.pid, process.pid);
      assert.ok(alive(h.pid), `the orchestrator (pid ${h.pid}) survived the end of the session that started it`);
      const runNode = await until('the run live in the tree', async () => {
        const roots = await api.runsView.getChildren();
        const node = roots.find((n) => n.runId === h?.runId);
        return node && / · running · /.test(String(api.runsView.getTreeItem(node).description)) ? node : undefined;
      });
      // Pause and resume from the tree: acknowledged in state.json, shown on the run's row.
      const paused = await vscode.commands.executeCommand<ControlAck | undefined>('verdict.pauseRun', runNode);
      assert.equal(paused?.result, 'done', `pause acknowledged: ${JSON.stringify(paused)}`);
      assert.equal(readState(h.stateFile).paused, true);
      const pausedRow = await until('the paused run in the tree', async () => {
        const node = (await api.runsView.getChildren()).find((n) => n.runId === h?.runId);
        const item = node && api.runsView.getTreeItem(node);
        return item && /^PAUSED · /.test(String(item.description)) ? item : undefined;
      });
      assert.match(String(pausedRow.contextValue), /^run\.running\.paused\.resumable/, 'Resume Run is offered on it');
      const resumed = await vscode.commands.executeCommand<ControlAck | undefined>('verdict.resumeRun', runNode);
      assert.equal(resumed?.result, 'done', `resume acknowledged: ${JSON.stringify(resumed)}`);
      assert.equal(readState(h.stateFile).paused, false);

      const tasks = await api.runsView.getChildren(runNode);
      const stopMe = tasks.find((t) => t.kind === 'task' && t.key === 'stop-me') as RunsNode;
      assert.ok(stopMe);
      const ack = await vscode.commands.executeCommand<ControlAck | undefined>('verdict.stopTask', stopMe);
      assert.equal(ack?.result, 'done', `stop acknowledged: ${JSON.stringify(ack)}`);
      const state = readState(h.stateFile);
      const recorded = state.control?.find((c) => c.id === ack?.id);
      assert.deepEqual([recorded?.verb, recorded?.task, recorded?.result], ['stop', 'stop-me', 'done']);
      assert.ok(recorded && recorded.ackAt >= recorded.at);
      assert.equal(state.tasks.find((t) => t.key === 'stop-me')?.status, 'CANCELLED');
      assert.ok(alive(h.pid), 'stopping one task leaves the run going');

      fs.writeFileSync(path.join(h.workdir, 'finish-me', 'release'), '');
      const end = await until('the run, finished', () => api.runs().find((r) => r.state.runId === h?.runId && r.liveness === 'finished'), 60000);
      assert.deepEqual(
        end.state.tasks.map((t) => [t.key, t.status]),
        [
          ['stop-me', 'CANCELLED'],
          ['finish-me', 'PASS'],
        ],
      );
      await until('the orchestrator to exit', () => !alive(h?.pid as number), 15000);
    });
  });
});
