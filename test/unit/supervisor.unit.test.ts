import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { supervise } from '../../extension/core/process/supervisor';
import { requireSandbox } from '../helpers/sandbox-env';
import { RingBuffer } from '../../extension/core/process/ring-buffer';
import { alive, tempDir } from '../helpers/fixtures';
import { describeEachHelper } from '../helpers/spawn-helpers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeEachHelper('supervisor', function () {
  this.timeout(20000);
  let dir: string;
  beforeEach(() => {
    dir = tempDir();
  });

  it('logs stdout and stderr interleaved, records the exit code, gives stdin /dev/null', async () => {
    const log = path.join(dir, 'w.log');
    const { receipt, tail } = await supervise({
      file: 'bash',
      args: ['-c', 'echo out; echo err >&2; read -r x && echo "read:$x"; exit 3'],
      cwd: dir,
      logFile: log,
      timeoutMs: 5000,
    });
    assert.equal(receipt.exitCode, 3);
    assert.equal(receipt.timedOut, false);
    assert.equal(receipt.signal, null);
    assert.equal(tail, 'out\nerr\n');
    assert.equal(fs.readFileSync(log, 'utf8'), 'out\nerr\n');
  });

  it("runs in cwd with PWD set to it (CLIs that read $PWD must not see the orchestrator's folder)", async () => {
    const { tail } = await supervise({ file: 'bash', args: ['-c', 'echo "$PWD"; /bin/pwd'], cwd: dir, logFile: path.join(dir, 'l'), timeoutMs: 5000 });
    assert.equal(tail, `${dir}\n${dir}\n`);
  });

  it("never passes Verdict's Postgres URLs (eval mirror, worker pool) on to a step: a worker could forge rows with them", async () => {
    const saved = { pg: process.env.VERDICT_PG_URL, pool: process.env.VERDICT_POOL_URL };
    process.env.VERDICT_PG_URL = 'postgres://verdict:secret@127.0.0.1:5/evals';
    process.env.VERDICT_POOL_URL = 'postgres://verdict:secret@127.0.0.1:5/pool';
    try {
      const { tail } = await supervise({
        file: 'bash',
        args: ['-c', 'echo "pg=${VERDICT_PG_URL-unset} pool=${VERDICT_POOL_URL-unset} home=${HOME:+set}"; env | grep -c secret || true'],
        cwd: dir,
        logFile: path.join(dir, 'l'),
        timeoutMs: 5000,
      });
      assert.equal(tail, 'pg=unset pool=unset home=set\n0\n');
    } finally {
      for (const [name, value] of [
        ['VERDICT_PG_URL', saved.pg],
        ['VERDICT_POOL_URL', saved.pool],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('puts the process in its own process group', async () => {
    const { tail } = await supervise({ file: 'bash', args: ['-c', 'ps -o pgid= -p $$; echo $$'], cwd: dir, logFile: path.join(dir, 'l'), timeoutMs: 5000 });
    const [pgid, pid] = tail.trim().split(/\s+/);
    assert.equal(pgid, pid);
    assert.notEqual(Number(pgid), process.pid);
  });

  it('on timeout kills the whole group: no grandchild survives, even one that ignores SIGTERM', async () => {
    const pidFile = path.join(dir, 'pids');
    const script = `trap '' TERM; (trap '' TERM; sleep 300) & echo $! > ${pidFile}; bash -c 'trap "" TERM; sleep 300' & echo $! >> ${pidFile}; sleep 300`;
    const { receipt } = await supervise({ file: 'bash', args: ['-c', script], cwd: dir, logFile: path.join(dir, 'l'), timeoutMs: 500, killGraceMs: 300 });
    assert.equal(receipt.timedOut, true);
    assert.equal(receipt.signal, 'SIGKILL');
    const pids = fs.readFileSync(pidFile, 'utf8').trim().split('\n').map(Number);
    assert.equal(pids.length, 2);
    await sleep(100);
    for (const p of pids) assert.equal(alive(p), false, `grandchild ${p} survived`);
    assert.ok(receipt.durationMs < 5000);
  });

  it('kills what the leader left running in its group when it exits normally', async () => {
    const pidFile = path.join(dir, 'pid');
    const { receipt } = await supervise({
      file: 'bash',
      args: ['-c', `sleep 300 & echo $! > ${pidFile}; echo bye`],
      cwd: dir,
      logFile: path.join(dir, 'l'),
      timeoutMs: 10000,
    });
    assert.equal(receipt.exitCode, 0);
    await sleep(100);
    assert.equal(alive(Number(fs.readFileSync(pidFile, 'utf8'))), false);
  });

  it('reports a missing binary as a spawn error, not a crash', async () => {
    const { receipt } = await supervise({ file: 'verdict-no-such-binary', args: [], cwd: dir, logFile: path.join(dir, 'l'), timeoutMs: 1000 });
    assert.match(receipt.spawnError ?? '', /ENOENT/);
    assert.equal(receipt.exitCode, null);
  });

  it('stops the group on abort and records it as cancelled', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const { receipt } = await supervise({
      file: 'bash',
      args: ['-c', 'sleep 300'],
      cwd: dir,
      logFile: path.join(dir, 'l'),
      timeoutMs: 60000,
      signal: ac.signal,
      killGraceMs: 200,
    });
    assert.equal(receipt.cancelled, true);
    assert.equal(receipt.timedOut, false);
    assert.equal(receipt.signal, 'SIGTERM');
  });

  it('keeps a bounded tail while the log keeps everything', async () => {
    const log = path.join(dir, 'l');
    const { tail, receipt } = await supervise({
      file: 'bash',
      args: ['-c', 'for i in $(seq 1 20000); do echo "line $i"; done'],
      cwd: dir,
      logFile: log,
      timeoutMs: 10000,
      tailBytes: 1024,
    });
    assert.ok(Buffer.byteLength(tail) <= 1024);
    assert.ok(tail.endsWith('line 20000\n'));
    assert.equal(fs.statSync(log).size, receipt.outputBytes);
    assert.ok(receipt.outputBytes > 100000);
  });
});

describeEachHelper('supervisor: escaped descendants', function () {
  this.timeout(30000);
  let dir: string;
  beforeEach(() => {
    dir = tempDir();
  });

  it('unsandboxed: a setsid grandchild holding the pipe is killed by its cookie and the pipes are not waited on', async () => {
    const pidFile = path.join(dir, 'pid');
    const t0 = Date.now();
    const { receipt } = await supervise({
      file: 'bash',
      args: ['-c', `setsid bash -c 'echo $$ > ${pidFile}; sleep 300' & sleep 0.3; exit 0`],
      cwd: dir,
      logFile: path.join(dir, 'l'),
      timeoutMs: 20000,
    });
    assert.equal(receipt.exitCode, 0);
    assert.ok(Date.now() - t0 < 10000, 'the run waited for the escaped child');
    await sleep(100);
    assert.equal(alive(Number(fs.readFileSync(pidFile, 'utf8'))), false, 'the setsid grandchild survived');
  });

  it('unsandboxed: a child that scrubbed its environment still cannot hold the run past the pipe grace', async () => {
    const t0 = Date.now();
    const { receipt } = await supervise({
      file: 'bash',
      args: ['-c', `env -i setsid sleep 5 & exit 0`],
      cwd: dir,
      logFile: path.join(dir, 'l'),
      timeoutMs: 20000,
      pipeGraceMs: 500,
    });
    assert.equal(receipt.exitCode, 0);
    assert.ok(Date.now() - t0 < 4000, `waited ${Date.now() - t0} ms`);
  });

  it('sandboxed: a missing command is a spawn error, as it is unsandboxed', async function () {
    const probe = await requireSandbox(this);
    const { receipt } = await supervise({
      file: 'verdict-no-such-binary',
      args: [],
      cwd: dir,
      logFile: path.join(dir, 'l'),
      timeoutMs: 1000,
      sandbox: { binary: probe.binary, writable: [dir], network: true },
    });
    assert.match(receipt.spawnError ?? '', /spawn verdict-no-such-binary ENOENT/);
  });

  it('sandboxed: the task dir is writable, everything else read-only, and nothing outlives the step', async function () {
    const probe = await requireSandbox(this);
    const task = path.join(dir, 'task');
    fs.mkdirSync(task);
    const { receipt, tail } = await supervise({
      file: 'bash',
      args: ['-c', `echo ok > out.txt; echo no > ${dir}/outside.txt; setsid sleep 300 & echo "pid:$$"`],
      cwd: task,
      logFile: path.join(dir, 'l'),
      timeoutMs: 10000,
      sandbox: { binary: probe.binary, writable: [task], network: true },
    });
    assert.equal(receipt.exitCode, 0);
    assert.equal(fs.readFileSync(path.join(task, 'out.txt'), 'utf8'), 'ok\n');
    assert.equal(fs.existsSync(path.join(dir, 'outside.txt')), false);
    assert.match(tail, /Read-only file system/);
    // bwrap is PID 1 of the step's own PID namespace and the command PID 2: nothing else of the machine is visible.
    assert.ok(Number(/pid:(\d+)/.exec(tail)?.[1]) <= 2, tail);
  });
});

describe('ring buffer', () => {
  it('keeps only the last capacity bytes', () => {
    const r = new RingBuffer(10);
    for (let i = 0; i < 100; i++) r.push(Buffer.from(`${i % 10}`));
    assert.equal(r.text(), '0123456789');
    assert.equal(r.totalBytes, 100);
  });
});
