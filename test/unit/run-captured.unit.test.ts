import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runCaptured, runCapturedBytes, runQuiet } from '../../extension/core/process/run-captured';
import { runForked } from '../../extension/core/process/run-forked';
import { spawnHelperPid } from '../../extension/core/process/spawner';
import { tempDir } from '../helpers/fixtures';
import { describeEachHelper } from '../helpers/spawn-helpers';

const PATH_ONLY = { PATH: process.env.PATH };

/** The process state letter of `pid` ('gone' when there is none). */
function state(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? 'gone';
  } catch {
    return 'gone';
  }
}

async function deadOrZombie(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && !['gone', 'Z'].includes(state(pid)); i++) await new Promise((r) => setTimeout(r, 20));
  return ['gone', 'Z'].includes(state(pid));
}

// A short command whose output is parsed (git plumbing), started by the spawn helper with its stdout and stderr in
// files of a private folder (a fork from the orchestrator costs more the more memory it holds: docs/spawning.md). Every way it can end is
// said; none throws.
describeEachHelper('runCaptured: a command started by the spawn helper, stdout and stderr apart', function () {
  this.timeout(60000);

  it('exit code, stdout and stderr as printed and apart; stdin /dev/null or its input; only the given environment', async () => {
    const r = await runCaptured('sh', ['-c', 'printf "out\\n"; printf "err $ONLY ${HOME:-nohome}" >&2; cat; exit 3'], { env: { ...PATH_ONLY, ONLY: 'given' } });
    assert.deepEqual({ ...r }, { exitCode: 3, signal: null, stdout: 'out\n', stderr: 'err given nohome', timedOut: false, error: null });
    const fed = await runCaptured('sh', ['-c', 'tr a-z A-Z; echo done >&2'], { env: PATH_ONLY, input: 'abc\ndef\n' });
    assert.deepEqual([fed.exitCode, fed.stdout, fed.stderr], [0, 'ABC\nDEF\n', 'done\n']);
    // Bytes come back as written (not decoded), however large.
    const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 256));
    const same = await runCapturedBytes('cat', [], { env: PATH_ONLY, input: bytes });
    assert.equal(same.exitCode, 0);
    assert.ok(same.stdout.equals(bytes), 'binary stdin reaches stdout unchanged');
  });

  it('runs as a child of the helper, in its own process group, its files in a 0700 folder that is gone afterwards', async () => {
    const r = await runCaptured(
      'sh',
      ['-c', 'echo "$PPID $(ps -o pgid= -p $$) $$"; p=$(readlink /proc/$$/fd/1); stat -c %a "${p%/*}"; echo "$p"; readlink /proc/$$/fd/0'],
      { env: PATH_ONLY, input: 'x' },
    );
    const [ids, mode, out, input] = r.stdout.trim().split('\n') as [string, string, string, string];
    const [ppid, pgid, pid] = ids.trim().split(/\s+/).map(Number) as [number, number, number];
    assert.equal(ppid, spawnHelperPid(), 'started by the spawn helper, not forked from this process');
    assert.equal(pgid, pid, 'its own process group');
    assert.equal(mode, '700', r.stdout);
    assert.match(out, /verdict-run-[^/]+\/\d+\.out$/);
    assert.match(input, /verdict-run-[^/]+\/\d+\.in$/);
    assert.equal(fs.existsSync(out), false, "the command's files are removed once it has ended");
    for (let i = 0; i < 150 && fs.existsSync(path.dirname(out)); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(fs.existsSync(path.dirname(out)), false, 'the folder is removed once no command has run for a second');
  });

  it('one that cannot start, one past its time limit (with what it started), one killed by a signal, one past maxBuffer', async () => {
    const missing = await runCaptured('/no/such/binary', [], { env: {} });
    assert.equal(missing.exitCode, null);
    assert.match(String(missing.error?.message), /ENOENT/);
    const held = await runCaptured('bash', ['-c', 'sleep 60 & echo $!; wait'], { env: PATH_ONLY, timeoutMs: 300 });
    assert.deepEqual([held.timedOut, held.signal], [true, 'SIGKILL']);
    const child = Number(held.stdout.trim());
    assert.ok(child > 0, held.stdout);
    assert.ok(await deadOrZombie(child), `the command's own child ${child} was killed with its group (state ${state(child)})`);
    const killed = await runCaptured('sh', ['-c', 'kill -TERM $$'], { env: PATH_ONLY });
    assert.deepEqual([killed.exitCode, killed.signal, killed.error], [null, 'SIGTERM', null]);
    // Output past maxBuffer stops the command (it would otherwise run 30 s), and what is kept is cut there.
    const loud = await runCaptured('sh', ['-c', 'yes | head -c 100000; sleep 30'], { env: PATH_ONLY, maxBuffer: 1000 });
    assert.match(String(loud.error?.message), /printed more than 1000 bytes/);
    assert.equal(loud.signal, 'SIGKILL');
    assert.equal(loud.stdout.length, 1000);
  });
});

describe('runCaptured without a writable temporary folder', () => {
  it('forks the command from this process instead, with the same result', async function () {
    this.timeout(20000);
    // The folder of the commands before is kept for a second after them: wait until it is gone.
    const probe = await runCaptured('sh', ['-c', 'readlink /proc/$$/fd/1'], { env: PATH_ONLY });
    const folder = path.dirname(probe.stdout.trim());
    for (let i = 0; i < 150 && fs.existsSync(folder); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(fs.existsSync(folder), false);
    const saved = process.env.TMPDIR;
    const dir = tempDir();
    process.env.TMPDIR = path.join(dir, 'missing', 'tmp'); // os.tmpdir() follows TMPDIR; nothing can be made there
    try {
      const r = await runCaptured('sh', ['-c', 'echo "$PPID"; cat; echo e >&2; exit 2'], { env: PATH_ONLY, input: 'in\n' });
      assert.deepEqual([r.exitCode, r.stdout, r.stderr, r.error], [2, `${process.pid}\nin\n`, 'e\n', null]);
      // runQuiet too: the output joined, long output cut but the command not stopped for it.
      const quiet = await runQuiet('sh', ['-c', 'echo "$PPID"; yes | head -c 3000; exit 4'], { env: PATH_ONLY, maxBuffer: 1000 });
      assert.deepEqual([quiet.exitCode, quiet.stdout, quiet.stderr.length, quiet.stderr.split('\n')[0]], [4, '', 1000, String(process.pid)]);
      assert.match(String(quiet.error?.message), /printed more than 1000 bytes/);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });
});

describe('runForked', () => {
  it('exit code, stdout and stderr as bytes; input; a time limit that does not wait for what the command started', async () => {
    const r = await runForked('sh', ['-c', 'printf out; cat >&2; exit 4'], { env: process.env, input: 'in' });
    assert.deepEqual([r.exitCode, r.stdout.toString(), r.stderr.toString(), r.error], [4, 'out', 'in', null]);
    const held = await runForked('bash', ['-c', 'sleep 60 & echo $!; wait'], { env: process.env, timeoutMs: 300 });
    assert.deepEqual([held.timedOut, held.signal], [true, 'SIGKILL']);
    const pid = Number(held.stdout.toString().trim());
    assert.ok(pid > 0);
    process.kill(pid, 'SIGKILL'); // the left child, which the test owns: a fork kills only its own child
    const loud = await runForked('sh', ['-c', 'yes | head -c 100000; sleep 30'], { env: process.env, maxBuffer: 1000 });
    assert.match(String(loud.error?.message), /printed more than 1000 bytes/);
    assert.equal(loud.signal, 'SIGKILL');
  });
});

describe('runCaptured output folders left by killed processes', () => {
  it('the first command of a process removes those of gone pids unchanged for a minute, and no other', function () {
    this.timeout(60000);
    const tmp = tempDir();
    const dead = spawnSync('true').pid as number; // ended and reaped: its pid names no process
    const old = new Date(Date.now() - 5 * 60_000);
    const make = (name: string, mtime: Date | null) => {
      const dir = path.join(tmp, name);
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, '7.out'), 'left');
      if (mtime) fs.utimesSync(dir, mtime, mtime);
      return dir;
    };
    const orphan = make(`verdict-run-${dead}-aaaaaa`, old);
    const recent = make(`verdict-run-${dead}-bbbbbb`, null); // could be a live process's of another PID namespace
    const alive = make(`verdict-run-${process.pid}-cccccc`, old); // this test's own pid is alive
    const other = make('verdict-runner-1-x', old);
    const script = `import { runCaptured } from ${JSON.stringify(path.resolve('extension/core/process/run-captured.ts'))};\nconst r = await runCaptured('true', [], { env: { PATH: process.env.PATH } });\nif (r.exitCode !== 0) throw new Error(String(r.error));`;
    const r = spawnSync(process.execPath, ['--import=tsx', '--input-type=module', '-e', script], { env: { ...process.env, TMPDIR: tmp }, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(
      [orphan, recent, alive, other].map((d) => fs.existsSync(d)),
      [false, true, true, true],
    );
  });
});
