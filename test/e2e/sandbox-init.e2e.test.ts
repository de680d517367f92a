import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { describeEachHelper } from '../helpers/spawn-helpers';
import { initTracingUnavailable } from '../helpers/gdb-attack';
import { childrenOf, processesWith } from '../helpers/procs';

// A hostile worker against bubblewrap's init (docs/containment.md): the init, PID 1 of the sandbox's
// PID namespace, runs as the worker's user and is dumpable, so the worker traces it with gdb, clears its parent-death
// signal (prctl(PR_SET_PDEATHSIG, 0)) and moves it out of bwrap's process group (setsid), then leaves a setsid daemon
// behind and exits. bwrap reports the exit; before the spawn helper killed the init itself, the init and the daemon
// lived on with the task dir writable, and the daemon rewrote the deliverable while the check ran.

/**
 * The task fields these tests add: none, except with the Node spawn helper as a user other than root, where no step
 * can have a network of its own (Node cannot ask which user namespace owns the step's network namespace, so
 * slirp4netns cannot enter it: spawn-helper.cjs) and every such step is stopped; the attack needs no network, so
 * there the tasks run with `"network": false`, said in one line.
 */
function networkFields(): Record<string, unknown> {
  if (process.env.VERDICT_SPAWN_HELPER !== 'node' || process.getuid?.() === 0) return {};
  console.log('      (node helper, not root: no step can have a network of its own here, so these tasks run with "network": false)');
  return { network: false };
}

describeEachHelper("containment: a worker that traces bubblewrap's init cannot outlive its step", function () {
  this.timeout(180000);

  before(async function () {
    await requireSandbox(this);
    const without = initTracingUnavailable();
    if (without) {
      if (without.kind === 'missing' && process.env.CI)
        throw new Error(`${without.reason}: the init-tracing attack cannot be tested (CI requires it: apt-get install gdb)`);
      console.log(`[verdict tests] the init-tracing attack skips: ${without.reason}`);
      this.skip();
    }
  });

  it("gdb clears the init's parent-death signal and setsid()s it; its daemon appends to the deliverable during the check: the commit and the check hold the worker's own content, nothing of the step is left", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const m = `verdict-init-attack-${process.pid}-${Date.now()}`;
    // attack.txt keeps gdb's answers, so the test sees that the attack itself worked ($1 = 0 from prctl, $2 = a pid
    // from setsid): without it the test could pass because gdb failed.
    const spec = [
      'echo hello > out.txt',
      `gdb -p 1 -batch -ex 'call (int)prctl(1,0,0,0,0)' -ex 'call (int)setsid()' > attack.txt 2>&1`,
      `setsid bash -c 'for i in $(seq 1 40); do sleep 0.25; echo evil >> out.txt; done' ${m} </dev/null >/dev/null 2>&1 &`,
      'exit 0',
    ].join('\n');
    // The check takes 3 s: the daemon, were it alive, would append about a dozen times meanwhile.
    const check = 'sleep 3; echo "out.txt: $(cat out.txt | tr "\\n" " ")"; [ "$(cat out.txt)" = hello ]';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [scriptTask('tracer', spec, check, { max_attempts: 1, timeout_s: 60, ...networkFields() })],
    });
    const home = path.join(dir, 'home');
    fs.mkdirSync(path.join(dir, 'user-home'));
    const r = await cli(['run', file, '--home', home, '--no-dashboard'], { env: { HOME: path.join(dir, 'user-home') } });
    const alive = processesWith(m);
    const [row] = readRows(home);
    assert.ok(row, r.all);
    assert.deepEqual(alive, [], 'a process of the step outlived it (the init survived its bwrap)');
    assert.equal(row.verdict, 'PASS', `${String(row.check_output)}\n${r.all}`);
    assert.match(String(row.check_output), /out\.txt: hello \n?$/);
    assert.equal(git(repo, 'show', `${String(row.branch)}:out.txt`), 'hello');
    const attack = git(repo, 'show', `${String(row.branch)}:attack.txt`);
    assert.match(attack, /^\$1 = 0$/m, `gdb did not clear the init's parent-death signal:\n${attack}`);
    assert.match(attack, /^\$2 = [1-9][0-9]*$/m, `gdb did not move the init to a session of its own:\n${attack}`);
    assert.equal(r.exitCode, 0, r.all);
  });

  it('the orchestrator and the spawn helper SIGKILLed together (a kill of the tree, the OOM killer) while the traced init lives: the next start kills it from the worker journal, and the resumed attempt is judged on its own work', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const m = `verdict-helper-kill-${process.pid}-${Date.now()}`;
    // Attempt 1 traces its init and leaves a daemon that keeps writing `hello`, then hangs until the crash. The resumed
    // attempt writes `bad`: only the daemon, were it alive, could make the check see `hello` (a PASS on a commit
    // holding `bad`).
    const spec = [
      'if [ -f attack.txt ]; then echo bad > out.txt; exit 0; fi',
      'echo first > out.txt',
      `gdb -p 1 -batch -ex 'call (int)prctl(1,0,0,0,0)' -ex 'call (int)setsid()' > attack.txt 2>&1`,
      `setsid bash -c 'for i in $(seq 1 480); do sleep 0.25; echo hello > out.txt; done' ${m} </dev/null >/dev/null 2>&1 &`,
      'sleep 300',
    ].join('\n');
    const check = 'sleep 2; echo "out.txt: $(cat out.txt)"; [ "$(cat out.txt)" = hello ]';
    const file = writeManifest(dir, {
      worktrees: true,
      repo,
      tasks: [scriptTask('tracer', spec, check, { max_attempts: 1, timeout_s: 600, ...networkFields() })],
    });
    const home = path.join(dir, 'home');
    fs.mkdirSync(path.join(dir, 'user-home'));
    const env = { HOME: path.join(dir, 'user-home') };
    const child = execa('node', [CLI, 'run', file, '--home', home, '--no-dashboard'], { reject: false, stdin: 'ignore', env, all: true });
    // gdb's answers are in attack.txt once the init is traced; the daemon starts right after.
    const attackFile = () => {
      const runs = fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : [];
      return runs[0] ? path.join(home, 'worktrees', runs[0], 'tracer', 'attack.txt') : '';
    };
    for (let i = 0; i < 600 && !(attackFile() && fs.existsSync(attackFile()) && /^\$2 = /m.test(fs.readFileSync(attackFile(), 'utf8'))); i++) await sleep(100);
    await sleep(1000);
    assert.ok(processesWith(m).length > 0, 'the attack did not start');
    // The init is in the journal once the helper holds it, which is before the step runs.
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    const journal = fs.readFileSync(path.join(home, 'runs', runId, 'workers.jsonl'), 'utf8');
    assert.match(journal, /^\{"init":\{"pid":[0-9]+,"startTime":"[0-9]+"\}\}$/m, journal);
    const helper = childrenOf(child.pid!);
    assert.equal(helper.length, 1, `the orchestrator's children: ${helper.join(', ')}`);
    for (const p of [child.pid!, ...helper]) process.kill(p, 'SIGKILL');
    await child;
    await sleep(500);
    // Nothing is left to kill them until the next start: the init and its daemon live on.
    assert.ok(processesWith(m).length > 0, 'the daemon died with the helper: this test no longer shows the escape');

    const r = await cli(['resume', runId, '--home', home, '--no-dashboard'], { env });
    assert.match(r.all, /1 sandbox\(es\) that outlived it killed/, r.all);
    const alive = processesWith(m);
    for (const p of alive) process.kill(p, 'SIGKILL');
    assert.deepEqual(alive, [], 'a process of the step outlived the reconcile');
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((x) => [x.attempt, x.verdict]),
      [
        [1, 'INTERRUPTED'],
        [2, 'FAIL'],
      ],
      r.all,
    );
    assert.match(String(rows[1]!.check_output), /out\.txt: bad/);
    const attack = fs.readFileSync(path.join(home, 'worktrees', runId, 'tracer', 'attack.txt'), 'utf8');
    assert.match(attack, /^\$1 = 0$/m, `gdb did not clear the init's parent-death signal:\n${attack}`);
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
