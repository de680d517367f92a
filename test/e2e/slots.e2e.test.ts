import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

// Machine-wide limits per engine and per login (docs/engines.md "Machine-wide limits"): every run on the machine shares
// the slots under VERDICT_HOME, and a dead run's slots are freed by the next run that looks.

const env = { ...process.env, VERDICT_PG_URL: '' } as Record<string, string>;
const CHECK = 'test -s out.txt || { echo "out.txt missing"; exit 1; }';
/** A worker that records when it ran (ns), holding its engine for `s` seconds. */
const timed = (s: number) => `date +%s%N > started; sleep ${s}; date +%s%N > ended; echo ok > out.txt`;

function config(dir: string, engines: Record<string, Record<string, unknown>>, extra: Record<string, unknown> = {}): string {
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      ...extra,
      engines: Object.fromEntries(
        Object.entries(engines).map(([name, extra]) => [
          name,
          { binary: 'bash', argv: ['-c', '{spec}'], install: 'a test fixture', retry_context: 'file', ...extra },
        ]),
      ),
    }),
  );
  return file;
}

/** The most tasks that ran at once, from the started/ended stamps their workers left in `dirs`. */
function peak(dirs: string[]): number {
  const events: [number, number][] = [];
  for (const d of dirs) {
    events.push([Number(BigInt(fs.readFileSync(path.join(d, 'started'), 'utf8').trim()) / 1000n), 1]);
    events.push([Number(BigInt(fs.readFileSync(path.join(d, 'ended'), 'utf8').trim()) / 1000n), -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of events) most = Math.max(most, (now += d));
  return most;
}

const taskDirs = (work: string, keys: string[]) => keys.map((k) => path.join(work, k));

describe('slots: machine-wide limits per engine and per login, across runs (e2e, built CLI)', () => {
  it('two concurrent runs sharing one engine limited to 2: never more than 2 of its attempts at once; `verdict runs` shows the slots in use', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const cfg = config(dir, { shared: { max_parallel: 2 } });
    const keys = ['a', 'b', 'c'];
    const manifests = [1, 2].map((n) =>
      writeManifest(
        dir,
        {
          run_name: `run${n}`,
          max_parallel: 3,
          workdir: path.join(dir, `work${n}`),
          tasks: keys.map((k) => scriptTask(k, timed(1.5), CHECK, { engine: 'shared', expect_files: ['out.txt'] })),
        },
        `run${n}.swarm.json`,
      ),
    );
    const runs = manifests.map((m) => cli(['run', m, '--home', home, '--config', cfg, '--no-dashboard'], { env }));
    let seen = '';
    const watch = (async () => {
      for (let i = 0; i < 100 && !/engine shared 2\/2/.test(seen); i++) {
        const r = await cli(['runs', '--home', home], { env });
        seen = r.stdout;
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    const [r1, r2] = await Promise.all(runs);
    await watch;
    const most = peak([...taskDirs(path.join(dir, 'work1'), keys), ...taskDirs(path.join(dir, 'work2'), keys)]);
    console.log(`      peak concurrency of engine shared across both runs: ${most} (limit 2; 6 tasks, each run's max_parallel 3)`);
    assert.equal(r1?.exitCode, 0, r1?.all);
    assert.equal(r2?.exitCode, 0, r2?.all);
    assert.equal(most, 2, `${most} attempts of engine shared ran at once`);
    assert.match(seen, /slots on this machine: engine shared 2\/2 \(\S+ [abc], \S+ [abc]\)/, seen);
    assert.match(`${r1?.all}${r2?.all}`, /engine shared: every one of engine shared's 2 slot\(s\) on this machine is in use/);
    const after = await cli(['runs', '--home', home], { env });
    assert.match(after.stdout, /engine shared 0\/2/, 'every slot released at the end');
  });

  it("a login shares one limit among its engines; a dead run's slots are freed at once", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const cfg = config(dir, { left: {}, right: {} });
    // A run killed with SIGKILL left both slots of login `sub` held: its pid is gone now.
    const dead = Number(execFileSync('bash', ['-c', 'bash -c "echo \\$\\$"'], { encoding: 'utf8' }).trim());
    fs.mkdirSync(path.join(home, 'slots'), { recursive: true });
    const holder = (n: number) => ({
      id: `dead.${n}`,
      runId: 'dead-run',
      pid: dead,
      startTime: '1',
      host: execFileSync('hostname', { encoding: 'utf8' }).trim().split('.')[0],
      task: `t${n}`,
      engine: 'left',
      since: Date.now() - 60_000,
    });
    fs.writeFileSync(path.join(home, 'slots', 'login-sub.json'), JSON.stringify({ limit: 1, holders: [holder(1), holder(2)] }));
    const keys = ['l1', 'r1', 'l2', 'r2'];
    const tasks = keys.map((k) => scriptTask(k, timed(0.8), CHECK, { engine: k.startsWith('l') ? 'left' : 'right', expect_files: ['out.txt'] }));
    const manifest = writeManifest(dir, {
      run_name: 'login',
      max_parallel: 4,
      logins: { sub: { engines: ['left', 'right'], max_parallel: 1 } },
      workdir: path.join(dir, 'work'),
      tasks,
    });
    const r = await cli(['run', manifest, '--home', home, '--config', cfg, '--no-dashboard'], { env });
    const most = peak(taskDirs(path.join(dir, 'work'), keys));
    console.log(`      peak concurrency of login sub (engines left and right): ${most} (limit 1; max_parallel 4)`);
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(most, 1);
    const table = JSON.parse(fs.readFileSync(path.join(home, 'slots', 'login-sub.json'), 'utf8')) as { holders: unknown[] };
    assert.deepEqual(table.holders, [], "the dead run's holders are gone");
  });

  it("a login in the user config limits every run that config starts, as a manifest's does", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const cfg = config(dir, { left: {}, right: {} }, { logins: { sub: { engines: ['left', 'right'], max_parallel: 1 } } });
    const keys = ['l1', 'r1', 'l2'];
    const tasks = keys.map((k) => scriptTask(k, timed(0.8), CHECK, { engine: k.startsWith('l') ? 'left' : 'right', expect_files: ['out.txt'] }));
    const manifest = writeManifest(dir, { run_name: 'config-login', max_parallel: 3, workdir: path.join(dir, 'work'), tasks });
    const r = await cli(['run', manifest, '--home', home, '--config', cfg, '--no-dashboard'], { env });
    const most = peak(taskDirs(path.join(dir, 'work'), keys));
    console.log(`      peak concurrency of the config's login sub: ${most} (limit 1; max_parallel 3)`);
    assert.equal(r.exitCode, 0, r.all);
    assert.equal(most, 1);
  });

  it('bad limits are load errors with positions: a login naming an unknown engine, max_parallel 0 in a login and in an engine entry', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const tasks = [scriptTask('a', 'echo ok > out.txt', CHECK, { expect_files: ['out.txt'] })];
    const bad = writeManifest(dir, {
      run_name: 'bad',
      logins: { sub: { engines: ['script', 'codx'], max_parallel: 0 } },
      workdir: path.join(dir, 'work'),
      tasks,
    });
    const r = await cli(['run', bad, '--home', home], { env });
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: logins\.sub\.engines\[1\]: unknown engine "codx" in login sub/);
    assert.match(r.all, /test\.swarm\.json:\d+:\d+: error: logins\.sub\.max_parallel: must be >= 1/);
    const cfg = config(dir, { shared: { max_parallel: 0 } });
    const ok = writeManifest(dir, { run_name: 'ok', workdir: path.join(dir, 'work'), tasks }, 'ok.swarm.json');
    const r2 = await cli(['run', ok, '--home', home, '--config', cfg], { env });
    assert.equal(r2.exitCode, 2, r2.all);
    // The engine entry's error names where it is in the config file (line:column of the value) and the field path.
    const at = fs.readFileSync(cfg, 'utf8').indexOf('"max_parallel":0') + '"max_parallel":'.length + 1;
    assert.ok(r2.all.includes(`${cfg}:1:${at}: engines.shared.max_parallel: must be >= 1, got 0`), r2.all);
    const cfg3 = config(dir, { shared: {} }, { logins: { sub: { engines: ['shared', 'codx'], max_parallel: 2 } } });
    const r3 = await cli(['run', ok, '--home', home, '--config', cfg3], { env });
    assert.equal(r3.exitCode, 2, r3.all);
    assert.match(r3.all, /config\.json:\d+:\d+: logins\.sub\.engines\[1\]: unknown engine "codx" in login sub/);
    const cfg4 = config(dir, { shared: {} }, { logins: { sub: { engines: ['shared'], max_parallel: 0 } } });
    const r4 = await cli(['run', ok, '--home', home, '--config', cfg4], { env });
    assert.equal(r4.exitCode, 2, r4.all);
    assert.match(r4.all, /config\.json:\d+:\d+: logins\.sub\.max_parallel: must be an integer from 1 to 256, got 0/);
    assert.equal(fs.existsSync(path.join(home, 'runs')), false, 'nothing ran');
  });
});
