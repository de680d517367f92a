import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { LEASE_MS, poolMachine, poolSuite, repoAndRemote, until, type PoolWorker } from '../helpers/pool-workers';
import { childrenOf, processesWith } from '../helpers/procs';
import { initTracingUnavailable } from '../helpers/gdb-attack';

// The init-tracing attack (test/e2e/sandbox-init.e2e.test.ts) on a pool worker: the worker and its spawn helper
// SIGKILLed together while a step's traced init lives. Its init is in the journal beside the attempt's state file, which
// no run's reconcile reads; the next pool worker started on that home kills it (pool/orphans.ts).
describe('pool: a sandbox that outlived its pool worker and spawn helper is killed by the next worker on that home', function () {
  this.timeout(300_000);
  const { url: poolUrl, workers } = poolSuite();
  before(async function () {
    await requireSandbox(this);
    const without = initTracingUnavailable();
    if (without) {
      if (without.kind === 'missing' && process.env.CI)
        throw new Error(`${without.reason}: the init-tracing attack cannot be tested (CI requires it: apt-get install gdb)`);
      console.log(`[verdict tests] the init-tracing attack on a pool worker skips: ${without.reason}`);
      this.skip();
    }
  });

  it('gdb frees the init, worker and helper are SIGKILLed: the daemon lives until a worker starts on that home again', async () => {
    const url = poolUrl();
    const dir = tempDir();
    const { repo, remote } = repoAndRemote(dir);
    const m = `verdict-pool-orphan-${process.pid}-${Date.now()}`;
    const spec = [
      'if [ "$VERDICT_ATTEMPT" != 1 ]; then echo ok > out.txt; exit 0; fi',
      `gdb -p 1 -batch -ex 'call (int)prctl(1,0,0,0,0)' -ex 'call (int)setsid()' > attack.txt 2>&1`,
      `setsid bash -c 'for i in $(seq 1 600); do sleep 1; done' ${m} </dev/null >/dev/null 2>&1 &`,
      'sleep 300',
    ].join('\n');
    const machineDir = tempDir('verdict-pool-orphans-');
    const { config, env } = poolMachine(machineDir, 'bash');
    const home = path.join(machineDir, 'home');
    const start = (): PoolWorker => {
      let out = '';
      const proc = execa(
        'node',
        [CLI, 'pool', 'worker', '--db', url, '--home', home, '--config', config, '--host', 'm1', '--slots', '1', '--engines', 'script'],
        { env: { ...env, HOME: machineDir }, reject: false, all: true, stdin: 'ignore' },
      );
      proc.all?.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const w = { proc, home, out: () => out };
      workers.push(w);
      return w;
    };
    const first = start();
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      remote,
      tasks: [scriptTask('tracer', spec, 'test -s out.txt', { max_attempts: 1, timeout_s: 600 })],
    });
    const run = cli(['run', file, '--home', path.join(dir, 'home'), '--pool', url, '--no-dashboard'], { env: { VERDICT_POOL_LEASE_MS: LEASE_MS } });
    // gdb's answers are in attack.txt once the init is traced (the worker's own command line names the marker too).
    const attack = (): string => {
      const runs = fs.existsSync(path.join(home, 'worktrees')) ? fs.readdirSync(path.join(home, 'worktrees')) : [];
      const f = runs.map((r) => path.join(home, 'worktrees', r, 'tracer', 'attack.txt')).find((x) => fs.existsSync(x));
      return f ? fs.readFileSync(f, 'utf8') : '';
    };
    await until('gdb to free the init', () => /^\$2 = [1-9]/m.test(attack()));
    await new Promise((r) => setTimeout(r, 1000));
    assert.match(attack(), /^\$1 = 0$/m, "gdb did not clear the init's parent-death signal");
    const journal = fs
      .readdirSync(path.join(home, 'runs'))
      .map((r) => path.join(home, 'runs', r, 'tasks', 'tracer', 'workers.jsonl'))
      .find((f) => fs.existsSync(f));
    assert.ok(journal && /^\{"init":/m.test(fs.readFileSync(journal, 'utf8')), 'the pool worker journals its sandbox inits');
    for (const p of [first.proc.pid!, ...childrenOf(first.proc.pid!)]) process.kill(p, 'SIGKILL');
    await first.proc;
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(processesWith(m).length > 0, 'the daemon died with the worker: this test no longer shows the escape');

    const second = start();
    await until('the second worker up', () => /slot/.test(second.out()));
    const left = processesWith(m);
    for (const p of left) process.kill(p, 'SIGKILL');
    assert.deepEqual(left, [], `a process of the dead worker's step outlived the next worker's start:\n${second.out()}`);
    assert.match(second.out(), /killed 1 sandbox\(es\) that outlived a pool worker of this home/);
    const r = await run;
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      readRows(path.join(dir, 'home')).map((x) => [x.attempt, x.verdict]),
      [
        [1, 'INTERRUPTED'],
        [2, 'PASS'],
      ],
    );
  });
});
