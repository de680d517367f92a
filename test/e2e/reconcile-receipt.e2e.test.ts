import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { withLock } from '../../extension/core/fs/lock';
import type { RunState } from '../../extension/core/live/state';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the orchestrator is SIGKILLed between an attempt's receipt and its eval row", function () {
  this.timeout(180000);
  it("the next start writes the passed attempt's row from its receipt: the scoreboard keeps the PASS", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const manifest = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('a', 'echo ok > out.txt', 'test -s out.txt')] });
    const log = path.join(home, 'runs.jsonl');
    fs.mkdirSync(home, { recursive: true });
    let runId = '';
    // This process holds the eval log's lock: the run's appendEvalRow waits for it, right after the receipt is written.
    await withLock(log, async () => {
      const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard', '--no-sandbox'], { reject: false, stdin: 'ignore' });
      let receipt = '';
      for (let i = 0; i < 1200 && !receipt; i++) {
        await sleep(50);
        const runs = fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : [];
        runId = runs[0] ?? '';
        const file = runId ? path.join(home, 'runs', runId, 'tasks', 'a', 'attempt-1', 'receipt.json') : '';
        if (file && fs.existsSync(file)) receipt = file;
      }
      assert.ok(receipt, 'the attempt never settled');
      await sleep(300); // the receipt is whole (writeFileSync) and the row waits for the lock
      child.kill('SIGKILL');
      await child;
    });
    assert.deepEqual(readRows(home), [], 'the row was not written before the kill');

    const r = await cli(['resume', runId, '--home', home, '--no-dashboard', '--no-sandbox']);
    assert.match(r.stderr, new RegExp(`reconciled run ${runId}`), r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((x) => [x.task_key, x.attempt, x.verdict]),
      [['a', 1, 'PASS']],
      r.all,
    );
    // The attempt ended the task (its receipt says so): the task passed, and the resume runs nothing again.
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;
    assert.deepEqual(
      state.tasks.map((t) => [t.status, t.attempts.map((a) => a.verdict)]),
      [['PASS', ['PASS']]],
    );
    assert.match(r.stdout, /every task of run .* passed; nothing to resume/, r.all);
    const verify = await cli(['verify-log', '--home', home]);
    assert.equal(verify.exitCode, 0, verify.all);
  });
});
