import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { supervise } from '../../extension/core/process/supervisor';
import { spawnHelperPid } from '../../extension/core/process/spawner';
import { LogTail } from '../../extension/core/dashboard/log-tail';
import { requireSandbox } from '../helpers/sandbox-env';
import { alive, tempDir } from '../helpers/fixtures';
import { describeEachHelper } from '../helpers/spawn-helpers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `cond` holds, polling; fails naming `what` after `tries` × 50 ms. */
async function until(cond: () => boolean, what: string, tries = 200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (cond()) return;
    await sleep(50);
  }
  assert.fail(`never happened: ${what}`);
}

/** The pid of a child of `parent` (bwrap's init, its only child), or 0. */
function childOf(parent: number): number {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) return Number(entry);
    } catch {
      // gone
    }
  }
  return 0;
}

describeEachHelper('spawn helper: steps started by a small helper process, output straight to the log', function (kind) {
  this.timeout(30000);
  let dir: string;
  beforeEach(() => {
    dir = tempDir();
  });

  it("a worker's output reaches the log, the live view (onOutput) and a dashboard tail of the log, in order, while it runs", async () => {
    const log = path.join(dir, 'worker.log');
    const go = path.join(dir, 'go');
    // stdout and stderr alternate; the worker waits after its first line until the test has seen that line live.
    const script = `echo first; while [ ! -e ${go} ]; do sleep 0.05; done; for i in $(seq 1 400); do echo "out $i"; echo "err $i" >&2; done; echo last`;
    let live = '';
    let dashboard = '';
    const tail = new LogTail(log, 1024 * 1024);
    const done = supervise({ file: 'bash', args: ['-c', script], cwd: dir, logFile: log, timeoutMs: 20000, onOutput: (c) => (live += c.toString('utf8')) });
    await until(() => live.includes('first\n'), 'the first line in the live view while the worker runs');
    dashboard += tail.read()?.text ?? '';
    assert.equal(dashboard, 'first\n', 'the dashboard tail reads the log while the worker runs');
    fs.writeFileSync(go, '');
    const { receipt, tail: kept } = await done;
    dashboard += tail.read()?.text ?? '';
    const expected = `first\n${Array.from({ length: 400 }, (_, i) => `out ${i + 1}\nerr ${i + 1}\n`).join('')}last\n`;
    assert.equal(receipt.exitCode, 0);
    assert.equal(fs.readFileSync(log, 'utf8'), expected, 'the log holds stdout and stderr in the order they were written');
    assert.equal(live, expected, 'the live view saw every byte once, in order');
    assert.equal(dashboard, expected, 'a dashboard tail of the log saw the same');
    assert.equal(kept, expected);
    assert.equal(receipt.outputBytes, Buffer.byteLength(expected));
  });

  it("appends to an existing log and counts only this step's bytes; the tail holds only this step's output", async () => {
    const log = path.join(dir, 'check.log');
    fs.writeFileSync(log, 'earlier\n');
    const { receipt, tail } = await supervise({ file: 'bash', args: ['-c', 'echo now'], cwd: dir, logFile: log, timeoutMs: 5000 });
    assert.equal(fs.readFileSync(log, 'utf8'), 'earlier\nnow\n');
    assert.equal(tail, 'now\n');
    assert.equal(receipt.outputBytes, 4);
  });

  it('the no-output watchdog goes by the log: silence after output is stalled, the output before it is kept', async () => {
    const { receipt, tail } = await supervise({
      file: 'bash',
      args: ['-c', 'echo working; sleep 30'],
      cwd: dir,
      logFile: path.join(dir, 'l'),
      timeoutMs: 20000,
      idleTimeoutMs: 600,
      killGraceMs: 200,
    });
    assert.equal(receipt.stalled, true);
    assert.equal(receipt.timedOut, false);
    assert.equal(tail, 'working\n');
  });

  it('the receipt has the pid, its start time as the kernel counts it, and the exit status', async () => {
    const { receipt, tail } = await supervise({
      file: 'bash',
      args: ['-c', 'cut -d" " -f22 /proc/$$/stat; echo $$; kill -TERM $$'],
      cwd: dir,
      logFile: path.join(dir, 'l'),
      timeoutMs: 5000,
    });
    const [startTime, pid] = tail.trim().split('\n');
    assert.equal(receipt.pid, Number(pid));
    assert.equal(receipt.startTime, startTime);
    assert.equal(receipt.exitCode, null);
    assert.equal(receipt.signal, 'SIGTERM');
  });

  it("one helper serves every step; it is not the orchestrator and holds no step's output", async () => {
    await supervise({ file: 'true', args: [], cwd: dir, logFile: path.join(dir, 'a'), timeoutMs: 5000 });
    const helper = spawnHelperPid();
    assert.ok(helper && helper !== process.pid && alive(helper));
    const { receipt } = await supervise({ file: 'bash', args: ['-c', 'echo $PPID'], cwd: dir, logFile: path.join(dir, 'b'), timeoutMs: 5000 });
    assert.equal(spawnHelperPid(), helper);
    assert.equal(fs.readFileSync(path.join(dir, 'b'), 'utf8').trim(), String(helper), "the step is the helper's child");
    assert.equal(receipt.exitCode, 0);
  });

  it('the helper killed under a running unsandboxed step: the step ends (SIGKILL, the receipt says why), its group is gone, the next step gets a new helper', async () => {
    await supervise({ file: 'true', args: [], cwd: dir, logFile: path.join(dir, 'a'), timeoutMs: 5000 });
    const helper = spawnHelperPid() as number;
    const pidFile = path.join(dir, 'pid');
    const done = supervise({ file: 'bash', args: ['-c', `sleep 300 & echo $! > ${pidFile}; wait`], cwd: dir, logFile: path.join(dir, 'l'), timeoutMs: 20000 });
    await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'), 'the step started its child');
    process.kill(helper, 'SIGKILL');
    const { receipt } = await done;
    assert.equal(receipt.signal, 'SIGKILL');
    assert.match(receipt.logError ?? '', /the spawn helper exited/);
    await until(() => !alive(Number(fs.readFileSync(pidFile, 'utf8'))), "the step's child is gone", 40);
    const next = await supervise({ file: 'bash', args: ['-c', 'echo again'], cwd: dir, logFile: path.join(dir, 'n'), timeoutMs: 5000 });
    assert.equal(next.tail, 'again\n');
    assert.notEqual(spawnHelperPid(), helper);
  });

  it('sandboxed: a worker sees neither the helper nor the orchestrator and cannot signal them', async function () {
    const probe = await requireSandbox(this);
    await supervise({ file: 'true', args: [], cwd: dir, logFile: path.join(dir, 'a'), timeoutMs: 5000 });
    const helper = spawnHelperPid() as number;
    const task = path.join(dir, 'task');
    fs.mkdirSync(task);
    const script = [
      // Node processes (the helper, the orchestrator) among those it can see: none.
      `for p in /proc/[0-9]*; do readlink $p/exe; done 2>/dev/null | grep -c -x -F ${fs.realpathSync(process.execPath)} | sed "s/^/seen:/"`,
      `kill -9 ${helper} 2>/dev/null; echo "kill-helper:$?"`,
      `kill -9 ${process.pid} 2>/dev/null; echo "kill-orchestrator:$?"`,
      'kill -9 $PPID 2>/dev/null; echo "kill-parent:$?"',
      'kill -9 -1 2>/dev/null; echo "kill-all:$?"',
    ].join('; ');
    const { receipt, tail } = await supervise({
      file: 'bash',
      args: ['-c', script],
      cwd: task,
      logFile: path.join(dir, 'l'),
      timeoutMs: 10000,
      sandbox: { binary: probe.binary, writable: [task], network: true },
    });
    assert.match(tail, /^seen:0\n/, tail);
    assert.match(tail, /kill-helper:1\n/, tail);
    assert.match(tail, /kill-orchestrator:1\n/, tail);
    assert.ok(alive(helper), 'the helper survived the worker');
    assert.equal(spawnHelperPid(), helper);
    assert.equal(receipt.spawnError, null);
  });

  it("sandboxed: bwrap's init is dead when each step's exit is reported; the perl helper (a subreaper) has reaped it, no zombie is left (8 steps)", async function () {
    const probe = await requireSandbox(this);
    const task = path.join(dir, 'task');
    fs.mkdirSync(task);
    for (let i = 0; i < 8; i++) {
      const fifo = path.join(task, `go${i}`);
      execFileSync('mkfifo', [fifo]);
      let bwrap = 0;
      const done = supervise({
        file: 'bash',
        args: ['-c', `cat ${fifo}`],
        cwd: task,
        logFile: path.join(dir, `l${i}`),
        timeoutMs: 20000,
        sandbox: { binary: probe.binary, writable: [task], network: true },
        onSpawn: (pid) => (bwrap = pid),
      });
      await until(() => bwrap > 0 && childOf(bwrap) > 0, 'bwrap started its init');
      const init = childOf(bwrap);
      fs.writeFileSync(fifo, 'go\n');
      const { receipt } = await done;
      assert.equal(receipt.exitCode, 0, receipt.spawnError ?? '');
      assert.equal(alive(init), false, `step ${i}: the init ${init} is alive after the exit was reported`);
      // A zombie still has its /proc entry: under the perl helper none may be left (the Node one cannot be a subreaper).
      if (kind === 'perl') assert.equal(fs.existsSync(`/proc/${init}`), false, `step ${i}: the init ${init} is a zombie nobody reaped`);
    }
  });
});
