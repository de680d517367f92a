import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { CLI } from '../helpers/cli';
import { alive, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { describeEachHelper } from '../helpers/spawn-helpers';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Live (not zombie) processes: pid, parent pid, command name and command line. */
function processes(): { pid: number; ppid: number; comm: string; cmdline: string }[] {
  const out: { pid: number; ppid: number; comm: string; cmdline: string }[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (rest[0] === 'Z') continue;
      out.push({
        pid: Number(entry),
        ppid: Number(rest[1]),
        comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
        cmdline: fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' '),
      });
    } catch {
      // gone
    }
  }
  return out;
}

describeEachHelper('the spawn helper between the orchestrator and its workers', function (kind) {
  this.timeout(120000);
  let cleanup: (() => void) | null = null;
  afterEach(() => {
    cleanup?.();
    cleanup = null;
  });

  it('kill -9 of the orchestrator: the helper and every hostile worker die with it (TERM ignored, double forks, attacks on the helper)', async function () {
    await requireSandbox(this);
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const marker = `3600.${process.pid}77`;
    const helperFile = path.join(dir, 'helper.pid');
    // The worker ignores SIGTERM; once told the helper's pid it reports what it can see and tries to kill the helper by
    // that pid, by its parent's pid and by `kill -9 -1`; then it double-forks a setsid daemon and a nohup one.
    const spec = [
      "trap '' TERM HUP",
      `for i in $(seq 1 200); do [ -s ${helperFile} ] && break; sleep 0.05; done`,
      `echo "node-seen:$(for p in /proc/[0-9]*; do readlink $p/exe; done 2>/dev/null | grep -c -x -F ${fs.realpathSync(process.execPath)})"`,
      `kill -9 "$(cat ${helperFile})" 2>/dev/null; echo "kill-helper:$?"`,
      'kill -9 $PPID 2>/dev/null; kill -9 -1 2>/dev/null',
      `(trap '' TERM HUP; setsid sleep ${marker} &) `,
      `nohup sleep ${marker} >/dev/null 2>&1 &`,
      `echo attacked; sleep ${marker}`,
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, max_parallel: 2, tasks: [scriptTask('a', spec, 'true'), scriptTask('b', spec, 'true')] });
    const home = path.join(dir, 'home');
    // --force: the check `true` is a lint error; the workers never reach it.
    const child = execa('node', [CLI, 'run', file, '--home', home, '--no-dashboard', '--force'], {
      reject: false,
      stdin: 'ignore',
      env: { HOME: path.join(dir, 'user-home') },
    });
    // A failed assertion must not leave the run behind (mocha would wait for it).
    cleanup = () => child.kill('SIGKILL');
    const orchestrator = child.pid as number;
    let helper: number | undefined;
    for (let i = 0; i < 200 && !helper; i++, await sleep(50))
      helper = processes().find((p) => p.ppid === orchestrator && p.cmdline.includes('spawn-helper'))?.pid;
    assert.ok(helper, 'the orchestrator started its spawn helper');
    assert.ok(
      processes()
        .find((p) => p.pid === helper)
        ?.cmdline.includes(`spawn-helper.${kind === 'perl' ? 'pl' : 'cjs'}`),
      `the ${kind} helper runs`,
    );
    fs.writeFileSync(helperFile, `${helper}\n`);
    const attacked = (): string[] => {
      const runs = fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : [];
      return runs
        .flatMap((id) => ['a', 'b'].map((k) => path.join(home, 'runs', id, 'tasks', k, 'attempt-1', 'worker.log')))
        .filter((f) => fs.existsSync(f) && fs.readFileSync(f, 'utf8').includes('attacked'));
    };
    for (let i = 0; i < 200 && attacked().length < 2; i++) await sleep(50);
    assert.equal(attacked().length, 2, 'both workers made their attacks');
    for (const log of attacked()) {
      const text = fs.readFileSync(log, 'utf8');
      assert.match(text, /node-seen:0\n/, `${log}: the worker saw a Node process (the helper or the orchestrator)`);
      assert.match(text, /kill-helper:1\n/, `${log}: the worker could signal the helper's pid`);
    }
    const sleeps = () =>
      processes()
        .filter((p) => p.comm === 'sleep' && p.cmdline.includes(marker))
        .map((p) => p.pid);
    for (let i = 0; i < 100 && sleeps().length < 6; i++) await sleep(50);
    assert.equal(sleeps().length, 6, 'each worker and its two daemons are running');
    assert.ok(alive(helper), 'the helper outlived the attacks');

    child.kill('SIGKILL');
    await child;
    const left = () =>
      processes()
        .filter((p) => p.cmdline.includes(marker) || p.pid === helper)
        .map((p) => `${p.pid} ${p.comm}`);
    for (let i = 0; i < 60 && left().length; i++) await sleep(50);
    assert.deepEqual(left(), [], 'a worker, a daemon or the helper outlived the orchestrator');
  });

  it("--no-sandbox: kill -9 of the orchestrator ends the helper; the workers are left for the next start's reconcile, as before", async () => {
    const dir = tempDir();
    const marker = `3600.${process.pid}78`;
    const file = writeManifest(dir, { workdir: 'w', max_parallel: 1, tasks: [scriptTask('a', `sleep ${marker}`, 'true')] });
    // --force: the check `true` is a lint error; the worker never reaches it.
    const child = execa('node', [CLI, 'run', file, '--home', path.join(dir, 'home'), '--no-dashboard', '--no-sandbox', '--force'], {
      reject: false,
      stdin: 'ignore',
    });
    cleanup = () => {
      child.kill('SIGKILL');
      for (const p of processes()) if (p.cmdline.includes(marker)) process.kill(p.pid, 'SIGKILL');
    };
    const orchestrator = child.pid as number;
    let helper: number | undefined;
    let worker: number | undefined;
    for (let i = 0; i < 200 && !(helper && worker); i++, await sleep(50)) {
      const all = processes();
      helper = all.find((p) => p.ppid === orchestrator && p.cmdline.includes('spawn-helper'))?.pid;
      worker = all.find((p) => p.comm === 'sleep' && p.cmdline.includes(marker))?.pid;
    }
    assert.ok(helper && worker);
    assert.ok(
      processes()
        .find((p) => p.pid === helper)
        ?.cmdline.includes(`spawn-helper.${kind === 'perl' ? 'pl' : 'cjs'}`),
      `the ${kind} helper runs`,
    );
    child.kill('SIGKILL');
    await child;
    for (let i = 0; i < 60 && alive(helper); i++) await sleep(50);
    assert.equal(alive(helper), false, 'the helper outlived its orchestrator');
    assert.equal(alive(worker), true, "unsandboxed, an orphaned worker is reconcile's to end (crash.e2e.test.ts)");
  });
});
