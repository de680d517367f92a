import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import type { RunState, TaskState } from '../../extension/core/live/state';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const env = { VERDICT_IDENTITY: 'tester' };

/** Starts `verdict run` on a plain-mode manifest as its own process; returns it, its home, id and a state reader. */
async function startRun(dir: string, tasks: Record<string, unknown>[], maxParallel: number) {
  const home = path.join(dir, 'home');
  const manifest = writeManifest(dir, { workdir: 'w', max_parallel: maxParallel, tasks });
  const child = execa('node', [CLI, 'run', manifest, '--home', home, '--no-dashboard'], { reject: false, all: true, stdin: 'ignore' });
  let runId = '';
  for (let i = 0; i < 400 && !runId; i++) {
    await sleep(50);
    const runs = path.join(home, 'runs');
    runId = fs.existsSync(runs) ? (fs.readdirSync(runs)[0] ?? '') : '';
    if (runId && !fs.existsSync(path.join(runs, runId, 'state.json'))) runId = '';
  }
  assert.ok(runId, 'the run started');
  const state = () => JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;
  return { child, home, runId, state, task: (key: string) => state().tasks.find((t) => t.key === key) as TaskState };
}

async function until(what: string, ok: () => boolean, ms = 60000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
    try {
      if (ok()) return;
    } catch {
      // the state file is being replaced: read it again
    }
  }
  assert.fail(`timed out waiting until ${what}`);
}

const running = (t: TaskState | undefined) => Boolean(t?.attempts.some((a) => a.phase === 'running'));

describe('workflows under control: stop and drain of a best-of-N task', function () {
  this.timeout(120000);

  it('stop of the task stops its candidates too; each says who stopped it, in state and in its row; its dependent is BLOCKED', async () => {
    const dir = tempDir();
    const run = await startRun(
      dir,
      [
        scriptTask('fix', 'while :; do sleep 0.2; done', 'test -s out.txt || exit 1', { repeat: 2, timeout_s: 120 }),
        scriptTask('next', 'echo n > n.txt', 'test -s n.txt || exit 1', { after: ['fix'] }),
      ],
      2,
    );
    await until('both candidates run', () => running(run.task('fix--c1')) && running(run.task('fix--c2')));
    const stop = await cli(['stop', run.runId, 'fix', '--home', run.home], { env });
    assert.equal(stop.exitCode, 0, stop.all);
    assert.match(stop.stdout, /^stop fix: done — fix ended CANCELLED/);
    const r = await run.child;
    assert.equal(r.exitCode, 1, r.all);
    const s = run.state();
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status, t.reason ?? null]),
      [
        ['fix', 'CANCELLED', 'stopped by tester'],
        ['fix--c1', 'CANCELLED', 'stopped by tester'],
        ['fix--c2', 'CANCELLED', 'stopped by tester'],
        ['next', 'BLOCKED', 'prerequisite fix ended CANCELLED, not PASS; this task did not start'],
      ],
    );
    assert.deepEqual(
      readRows(run.home)
        .map((row) => [row.task_key, row.verdict, row.notes])
        .sort(),
      [
        ['fix--c1', 'CANCELLED', 'stopped by tester'],
        ['fix--c2', 'CANCELLED', 'stopped by tester'],
      ],
    );
  });

  it('drain while a candidate runs: the queued one is drained, the running one still decides the task', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'go');
    const run = await startRun(
      dir,
      [
        scriptTask('fix', `until [ -f ${marker} ]; do sleep 0.1; done; echo "c$VERDICT_CANDIDATE" > out.txt`, 'test -s out.txt || exit 1', {
          repeat: 2,
          select: 'all',
          timeout_s: 120,
        }),
      ],
      1,
    );
    await until('candidate 1 runs', () => running(run.task('fix--c1')));
    const drain = await cli(['drain', run.runId, '--home', run.home], { env });
    assert.equal(drain.exitCode, 0, drain.all);
    assert.match(drain.stdout, /drain: done — draining: 1 waiting task\(s\) CANCELLED \(drained\)/);
    fs.writeFileSync(marker, '');
    const r = await run.child;
    const s = run.state();
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status]),
      [
        ['fix', 'PASS'],
        ['fix--c1', 'PASS'],
        ['fix--c2', 'CANCELLED'],
      ],
      r.all,
    );
    assert.equal(s.tasks[0]?.winner, 'fix--c1');
    assert.equal(s.tasks[2]?.reason, 'drained');
    assert.equal(r.exitCode, 0, r.all);
  });
});
