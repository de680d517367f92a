import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { runDir } from '../../extension/core/config/home';
import { appendControl } from '../../extension/core/live/control';
import { priorTasks } from '../../extension/core/run/prior';
import { runManifest, type RunEvent } from '../../extension/core/run/runner';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { testSandboxMode } from '../helpers/sandbox-env';
import { loadManifest } from '../../extension/core/run/manifest';

describe('runner: the task graph while a run is live', function () {
  this.timeout(60000);

  it('max_parallel stays busy over the graph: independent tasks run beside a chain', async () => {
    const dir = tempDir();
    const tasks = [
      scriptTask('a', 'sleep 0.6; echo a > a.txt', 'test -s a.txt || exit 1'),
      scriptTask('b', 'echo b > b.txt', 'test -s b.txt || exit 1', { after: ['a'] }),
      scriptTask('x', 'sleep 0.6; echo x > x.txt', 'test -s x.txt || exit 1'),
      scriptTask('y', 'sleep 0.6; echo y > y.txt', 'test -s y.txt || exit 1'),
    ];
    const { manifest } = loadManifest(writeManifest(dir, { workdir: 'w', max_parallel: 3, tasks }));
    const order: string[] = [];
    const summary = await runManifest({
      manifest,
      home: path.join(dir, 'home'),
      identity: 't',
      engines: resolveEngines(),
      sandbox: testSandboxMode(),
      onEvent: (e) => {
        if (e.type === 'attempt-started') order.push(e.key);
      },
    });
    assert.deepEqual(
      summary.tasks.map((t) => t.verdict),
      ['PASS', 'PASS', 'PASS', 'PASS'],
    );
    assert.deepEqual(order.slice(0, 3).sort(), ['a', 'x', 'y']);
    assert.equal(order[3], 'b');
  });

  it('rerun of a BLOCKED task is refused naming its prerequisite; rerun of the prerequisite runs it and then its dependents', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'a-may-pass');
    const tasks = [
      scriptTask('a', `test -f ${marker} && echo a > a.txt; true`, 'test -s a.txt || exit 1', { max_attempts: 1 }),
      scriptTask('b', 'echo b > b.txt', 'test -s b.txt || exit 1', { after: ['a'] }),
      scriptTask('c', 'echo c > c.txt', 'test -s c.txt || exit 1', { after: ['b'] }),
      // keeps the run live while the test sends its commands
      scriptTask('hold', 'while [ ! -f release ]; do sleep 0.1; done; echo h > h.txt', 'test -s h.txt || exit 1'),
    ];
    const { manifest } = loadManifest(writeManifest(dir, { workdir: 'w', max_parallel: 4, tasks }));
    const home = path.join(dir, 'home');
    let runId = '';
    const blocked: string[] = [];
    const events: RunEvent[] = [];
    const done = runManifest({
      manifest,
      home,
      identity: 't',
      engines: resolveEngines(),
      sandbox: testSandboxMode(),
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'run-started') runId = e.runId;
        if (e.type === 'task-blocked') blocked.push(e.key);
      },
    });
    const until = async (ok: () => boolean) => {
      for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(ok());
    };
    await until(() => blocked.length === 2);
    assert.deepEqual(blocked, ['b', 'c']);
    const state = () =>
      JSON.parse(fs.readFileSync(path.join(runDir(home, runId), 'state.json'), 'utf8')) as {
        tasks: { key: string; status: string; reason?: string }[];
        control: { id: string; result: string; reason: string }[];
      };
    const c1 = await appendControl(runDir(home, runId), { verb: 'rerun', task: 'c', by: 't', host: 'h' });
    await until(() => (state().control ?? []).some((a) => a.id === c1.id));
    const ack1 = state().control.find((a) => a.id === c1.id);
    assert.equal(ack1?.result, 'refused');
    assert.match(ack1?.reason ?? '', /c is BLOCKED by b \(BLOCKED\): rerun b/);
    fs.writeFileSync(marker, '');
    const c2 = await appendControl(runDir(home, runId), { verb: 'rerun', task: 'a', by: 't', host: 'h' });
    await until(() => events.some((e) => e.type === 'attempt-finished' && e.key === 'c'));
    fs.writeFileSync(path.join(dir, 'w', 'hold', 'release'), ''); // inside its task dir: the sandbox hides the rest of the workdir
    const summary = await done;
    assert.deepEqual(
      summary.tasks.map((t) => [t.key, t.verdict]),
      [
        ['a', 'PASS'],
        ['b', 'PASS'],
        ['c', 'PASS'],
        ['hold', 'PASS'],
      ],
    );
    assert.match(state().control.find((a) => a.id === c2.id)?.reason ?? '', /a is queued again.*; then b, c/);
    assert.deepEqual(
      readRows(home)
        .filter((r) => r.task_key !== 'hold')
        .map((r) => [r.task_key, r.verdict]),
      [
        ['a', 'FAIL'],
        ['a', 'PASS'],
        ['b', 'PASS'],
        ['c', 'PASS'],
      ],
    );
  });

  it('stop of a waiting task cancels it and blocks its dependents; a cancel cancels waiting tasks (not BLOCKED)', async () => {
    const dir = tempDir();
    const tasks = [
      scriptTask('a', 'sleep 1.5; echo a > a.txt', 'test -s a.txt || exit 1'),
      scriptTask('b', 'echo b > b.txt', 'test -s b.txt || exit 1', { after: ['a'] }),
      scriptTask('c', 'echo c > c.txt', 'test -s c.txt || exit 1', { after: ['b'] }),
      scriptTask('d', 'echo d > d.txt', 'test -s d.txt || exit 1', { after: ['a'] }),
    ];
    const { manifest } = loadManifest(writeManifest(dir, { workdir: 'w', tasks }));
    const home = path.join(dir, 'home');
    const abort = new AbortController();
    let runId = '';
    const summary = await runManifest({
      manifest,
      home,
      identity: 't',
      engines: resolveEngines(),
      sandbox: testSandboxMode(),
      signal: abort.signal,
      killGraceMs: 200,
      onEvent: (e) => {
        if (e.type === 'run-started') runId = e.runId;
        if (e.type === 'attempt-started' && e.key === 'a') {
          void appendControl(runDir(home, runId), { verb: 'stop', task: 'b', by: 't', host: 'h' });
        }
        if (e.type === 'task-blocked' && e.key === 'c') abort.abort();
      },
    });
    assert.deepEqual(
      summary.tasks.map((t) => [t.key, t.verdict]),
      [
        ['a', 'CANCELLED'],
        ['b', 'CANCELLED'],
        ['c', 'BLOCKED'],
        ['d', 'CANCELLED'],
      ],
    );
    assert.match(summary.tasks[2]?.reason ?? '', /prerequisite b ended CANCELLED/);
  });

  it("priorTasks follows resumedFrom: each key's newest status and commit", () => {
    const home = tempDir();
    const write = (id: string, tasks: { key: string; status: string; commit: string | null }[], resumedFrom?: string) => {
      fs.mkdirSync(runDir(home, id), { recursive: true });
      fs.writeFileSync(path.join(runDir(home, id), 'state.json'), JSON.stringify({ version: 1, runId: id, tasks, ...(resumedFrom ? { resumedFrom } : {}) }));
    };
    write('r1', [
      { key: 'a', status: 'PASS', commit: 'c1' },
      { key: 'b', status: 'FAIL', commit: null },
      { key: 'c', status: 'BLOCKED', commit: null },
    ]);
    write(
      'r2',
      [
        { key: 'b', status: 'PASS', commit: 'c2' },
        { key: 'c', status: 'FAIL', commit: null },
      ],
      'r1',
    );
    const prior = priorTasks(home, 'r2');
    assert.deepEqual(Object.fromEntries(prior), {
      b: { status: 'PASS', runId: 'r2', commit: 'c2' },
      c: { status: 'FAIL', runId: 'r2', commit: null },
      a: { status: 'PASS', runId: 'r1', commit: 'c1' },
    });
  });
});
