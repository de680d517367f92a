import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { findBinary } from '../../engines/find-binary';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { describeEachHelper } from '../helpers/spawn-helpers';

// A hostile worker against bubblewrap's init (docs/architecture.md "Containment"): the init, PID 1 of the sandbox's
// PID namespace, runs as the worker's user and is dumpable, so the worker traces it with gdb, clears its parent-death
// signal (prctl(PR_SET_PDEATHSIG, 0)) and moves it out of bwrap's process group (setsid), then leaves a setsid daemon
// behind and exits. bwrap reports the exit; before the spawn helper killed the init itself, the init and the daemon
// lived on with the task dir writable, and the daemon rewrote the deliverable while the check ran.

/** Why this machine cannot run the attack (no gdb, Yama's ptrace_scope forbids attaching to a non-child), or null. */
function attackUnavailable(): string | null {
  if (!findBinary('gdb', process.env.PATH ?? '')) return 'no gdb on PATH';
  try {
    const scope = Number(fs.readFileSync('/proc/sys/kernel/yama/ptrace_scope', 'utf8').trim());
    if (scope >= 1) return `Yama ptrace_scope=${scope} forbids tracing the sandbox's init`;
  } catch {
    // no Yama: ptrace is open to the same user
  }
  return null;
}

/** Live (not zombie) processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (cmdline.includes(marker) && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z') found.push(Number(entry));
    } catch {
      // gone
    }
  }
  return found;
}

describeEachHelper("containment: a worker that traces bubblewrap's init cannot outlive its step", function () {
  this.timeout(180000);

  before(async function () {
    await requireSandbox(this);
    const without = attackUnavailable();
    if (without) {
      if (process.env.CI) throw new Error(`${without}: the init-tracing attack cannot be tested (CI requires it: apt-get install gdb)`);
      console.log(`[verdict tests] the init-tracing attack skips: ${without}`);
      this.skip();
    }
  });

  it('gdb clears the init\'s parent-death signal and setsid()s it; its daemon appends to the deliverable during the check: the commit and the check hold the worker\'s own content, nothing of the step is left', async () => {
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
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('tracer', spec, check, { max_attempts: 1, timeout_s: 60 })] });
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
});
