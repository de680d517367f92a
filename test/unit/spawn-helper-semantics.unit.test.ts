import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  encodeRequest,
  parseReply,
  spawnHelperInfo,
  spawnHelperPid,
  spawnViaHelper,
  stopSpawnHelper,
  type SpawnRequest,
} from '../../extension/core/process/spawner';
import { STEP_COOKIE_VAR } from '../../extension/core/process/supervisor';
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

/** A request for `bash -c script` in `dir`, logging to `dir/log`, with the test's own environment. */
function bash(dir: string, script: string, more: Partial<SpawnRequest> = {}): SpawnRequest {
  return { file: '/bin/bash', args: ['-c', script], cwd: dir, env: { ...(process.env as Record<string, string>) }, log: path.join(dir, 'log'), ...more };
}

const HELPERS = {
  perl: path.resolve('extension/core/process/spawn-helper.pl'),
  node: path.resolve('extension/core/process/spawn-helper.cjs'),
};

describeEachHelper('spawn helper semantics', function () {
  this.timeout(30000);
  let dir: string;
  beforeEach(() => {
    dir = tempDir();
  });

  it('the helper in force is the one asked for, and says its version', async function () {
    const kind = process.env.VERDICT_SPAWN_HELPER;
    const info = await spawnHelperInfo();
    assert.equal(info?.kind, kind);
    assert.match(info?.version ?? '', /^v\d+\.\d+/);
    assert.ok(info?.binary && fs.existsSync(info.binary));
  });

  it('each child leads its own session and process group; stdin is /dev/null; stdout and stderr are the log, appended', async () => {
    fs.writeFileSync(path.join(dir, 'log'), 'before\n');
    const s = await spawnViaHelper(
      bash(dir, 'echo "sid=$(ps -o sid= -p $$ | tr -d " ") pgid=$(ps -o pgid= -p $$ | tr -d " ") pid=$$"; readlink /proc/self/fd/0; echo err >&2'),
    );
    const exit = await s.exited;
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), `before\nsid=${s.pid} pgid=${s.pid} pid=${s.pid}\n/dev/null\nerr\n`);
  });

  it('cgroupProcs: the child writes its own pid there before its command runs (the same pid runs it); refused, the command never runs', async function () {
    // A regular file stands in for a cgroup's cgroup.procs: what is written there is what the kernel would be told.
    const procs = path.join(dir, 'cgroup.procs');
    fs.writeFileSync(procs, '');
    const s = await spawnViaHelper(bash(dir, `echo "pid=$$"; cat ${procs}`, { cgroupProcs: procs }));
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), `pid=${s.pid}\n${s.pid}\n`);
    // A procs file that cannot be written (its folder is gone): the step's command never runs. The perl helper refuses
    // the spawn; the Node helper's shell exits 125 with the reason in the log (relayed: its stderr is the relay too).
    const gone = path.join(dir, 'no-such-cgroup', 'cgroup.procs');
    const ran = path.join(dir, 'ran');
    const refused = await spawnViaHelper(bash(dir, `touch ${ran}`, { cgroupProcs: gone, relay: true })).then(
      async (t) => ({ exit: await t.exited }),
      (e: Error) => ({ error: e.message }),
    );
    if (process.env.VERDICT_SPAWN_HELPER === 'perl') assert.deepEqual(refused, { error: `spawn /bin/bash: cannot join the memory cgroup (${gone}): ENOENT` });
    else {
      assert.deepEqual(refused, { exit: { code: 125, signal: null } });
      assert.match(
        fs.readFileSync(path.join(dir, 'log'), 'utf8'),
        new RegExp(`verdict: cannot join the memory cgroup \\(${gone.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)`),
      );
    }
    assert.equal(fs.existsSync(ran), false, 'the command ran outside its cgroup');
  });

  it("`files` are the child's fds 3, 4 … in order, read-only, and it holds no other descriptor of the helper", async () => {
    fs.writeFileSync(path.join(dir, 'a'), 'A');
    fs.writeFileSync(path.join(dir, 'b'), 'B');
    const s = await spawnViaHelper(
      bash(dir, 'cat <&3; cat <&4; echo; { echo x >&3; } 2>/dev/null || echo ro; exec ls -l /proc/self/fd/', {
        files: [path.join(dir, 'a'), path.join(dir, 'b')],
      }),
    );
    await s.exited;
    const [content, ro, ...listing] = fs.readFileSync(path.join(dir, 'log'), 'utf8').split('\n');
    assert.equal(content, 'AB');
    assert.equal(ro, 'ro');
    // Exactly stdin, the log twice and the two files — no descriptor the orchestrator itself inherited without
    // close-on-exec either — besides ls's own handle on the folder it lists.
    const fds = listing
      .map((l) => / (\d+) -> (.*)$/.exec(l))
      .filter((m) => m && !/^\/proc\/\d+\/fd$/.test(m[2] as string))
      .map((m) => `${m?.[1]} ${m?.[2]}`);
    assert.deepEqual(fds, ['0 /dev/null', `1 ${path.join(dir, 'log')}`, `2 ${path.join(dir, 'log')}`, `3 ${path.join(dir, 'a')}`, `4 ${path.join(dir, 'b')}`]);
  });

  it('relay: stdout and stderr are one socket, never the log; /proc/<pid>/fd/1 cannot be opened again (ENXIO); 3 MB in order, all in the log before the exit reply', async () => {
    fs.writeFileSync(path.join(dir, 'log'), 'before\n');
    // What a tool run by a reader's engine tries: append a forged line to the engine's stdout by its /proc path.
    const script =
      'readlink /proc/$$/fd/1 | sed "s/[0-9]//g"; readlink /proc/$$/fd/2 | sed "s/[0-9]//g"; (echo FORGED >> /proc/$$/fd/1) 2>&1 | grep -o "No such device or address"; echo err >&2; head -c 3000000 /dev/zero | tr "\\0" a; echo; echo end';
    const s = await spawnViaHelper(bash(dir, script, { relay: true }));
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    assert.equal(
      fs.readFileSync(path.join(dir, 'log'), 'utf8'),
      `before\nsocket:[]\nsocket:[]\nNo such device or address\nerr\n${'a'.repeat(3_000_000)}\nend\n`,
    );
    // The same step with the log as its stdout (no relay): the forged line lands, which is what relay is for.
    fs.writeFileSync(path.join(dir, 'log'), '');
    await (
      await spawnViaHelper(bash(dir, 'echo FORGED >> /proc/$$/fd/1'))
    ).exited;
    assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), 'FORGED\n');
  });

  it('relay: a descendant that outlived the step (its own session, no cookie) writes nothing into the log after the exit reply; a missing program is a spawn error', async () => {
    const pidFile = path.join(dir, 'pid');
    const tries = path.join(dir, 'tries');
    // It keeps writing to its inherited stdout (SIGPIPE ignored: each write fails with EPIPE once the helper closed
    // its end) and counts its tries in a file.
    const daemon = `setsid bash -c 'trap "" PIPE; echo $$ > ${pidFile}; while :; do echo late 2>/dev/null; echo x >> ${tries}; sleep 0.02; done' &`;
    const s = await spawnViaHelper(bash(dir, `${daemon} while [ ! -s ${pidFile} ]; do sleep 0.02; done; echo leader done`, { relay: true }));
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    try {
      const atExit = fs.readFileSync(path.join(dir, 'log'), 'utf8');
      const triesAtExit = fs.readFileSync(tries, 'utf8').length;
      await until(() => fs.readFileSync(tries, 'utf8').length >= triesAtExit + 6, 'the daemon tried three more writes');
      assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), atExit, 'nothing was added to the log after the exit reply');
      assert.match(atExit, /^leader done$/m);
    } finally {
      process.kill(pid, 'SIGKILL');
    }
    await assert.rejects(
      spawnViaHelper({ ...bash(dir, 'true', { relay: true }), file: path.join(dir, 'no-such-program') }),
      new RegExp(`^Error: spawn ${path.join(dir, 'no-such-program')} ENOENT$`),
    );
  });

  it("hold: nothing reaches the log from the held until the release (the step blocks on the full relay), an exit meanwhile is reported after it; relay 'pipe' lets the step open /dev/stdout and /dev/stderr again", async () => {
    const log = path.join(dir, 'log');
    // A flood larger than any relay (a 1 MiB pipe, a socket's buffer), the last lines after it.
    const script = `echo one; while [ ! -e go ]; do sleep 0.02; done; head -c 3000000 /dev/zero | tr "\\0" b; echo; (echo again > /proc/$$/fd/1) 2>&1 | grep -o "No such device or address"; echo warning > /dev/stderr; echo last`;
    const s = await spawnViaHelper(bash(dir, script, { relay: 'pipe' }));
    let reported = false;
    void s.exited.then(() => (reported = true));
    await until(() => fs.readFileSync(log, 'utf8') === 'one\n', 'the first line in the log');
    await s.hold();
    fs.writeFileSync(path.join(dir, 'go'), '');
    await sleep(500);
    assert.equal(fs.readFileSync(log, 'utf8'), 'one\n', 'nothing was written while held');
    assert.ok(alive(s.pid) && !reported, 'the step waits on its full relay');
    s.release();
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    // A pipe (the Node helper's is a FIFO, as Node has no pipe(2)): /proc/<pid>/fd/1 and /dev/stderr open it again, as
    // shell scripts do (`echo warning > /dev/stderr`); a socket would refuse (ENXIO). Nothing of the FIFO is left by the log.
    assert.equal(fs.readFileSync(log, 'utf8'), `one\n${'b'.repeat(3_000_000)}\nagain\nwarning\nlast\n`);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['go', 'log']);

    // A step that ends while held: its exit waits for the release, and its last line is written before it.
    fs.writeFileSync(log, '');
    const t = await spawnViaHelper(bash(dir, 'echo a; while [ ! -e go2 ]; do sleep 0.02; done; echo b', { relay: 'pipe' }));
    let ended = false;
    void t.exited.then(() => (ended = true));
    await until(() => fs.readFileSync(log, 'utf8') === 'a\n', 'the first line in the log');
    await t.hold();
    fs.writeFileSync(path.join(dir, 'go2'), '');
    await until(() => !alive(t.pid), 'the step ended');
    await sleep(300);
    assert.equal(ended, false, 'no exit is reported while held');
    assert.equal(fs.readFileSync(log, 'utf8'), 'a\n');
    t.release();
    assert.deepEqual(await t.exited, { code: 0, signal: null });
    assert.equal(fs.readFileSync(log, 'utf8'), 'a\nb\n');
    // A hold of a step already reported is answered at once (nothing writes its log).
    await t.hold();
    t.release();
  });

  it('relay: a step that fills its socket relay while held and ends keeps all of it once released (the kernel doubles the 4 MiB asked: 8 MiB)', async function () {
    // The socket's 8 MiB send buffer is root's (SO_SNDBUFFORCE); the Node helper relays through libuv's own buffers.
    if (process.env.VERDICT_SPAWN_HELPER === 'node' || process.getuid?.() !== 0) this.skip();
    const log = path.join(dir, 'log');
    // 6 MB in 64 KiB writes fits the buffer, so the step ends while held; a drain of 4 MiB at its exit lost the rest.
    const script = 'echo one; while [ ! -e go ]; do sleep 0.02; done; dd if=/dev/zero bs=65536 count=92 status=none | tr "\\0" c; echo; echo last; touch done';
    const s = await spawnViaHelper(bash(dir, script, { relay: true }));
    await until(() => fs.readFileSync(log, 'utf8') === 'one\n', 'the first line in the log');
    await s.hold();
    fs.writeFileSync(path.join(dir, 'go'), '');
    await until(() => fs.existsSync(path.join(dir, 'done')) && !alive(s.pid), 'the step ended while held');
    assert.equal(fs.readFileSync(log, 'utf8'), 'one\n', 'nothing was written while held');
    s.release();
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    const text = fs.readFileSync(log, 'utf8');
    assert.equal(text.length, 'one\n'.length + 92 * 65536 + '\nlast\n'.length, 'every byte the step wrote is in the log');
    assert.ok(text.endsWith('c\nlast\n'), 'the log ends with the last line');
  });

  it('relay: what a Node program prints just before process.exit() reaches the log (perl: a 1 MiB pipe; a 4 MiB socket send buffer as root; Node queues writes to a full one and drops them at exit)', async function () {
    if (process.env.VERDICT_SPAWN_HELPER === 'node') this.skip();
    // Unprivileged, a socket's send buffer stops at twice net.core.wmem_max (~416 KiB by default): the socket case is root's.
    const cases = [['pipe', 900_000], ...(process.getuid?.() === 0 ? [[true, 3_000_000] as const] : [])] as const;
    for (const [relay, bytes] of cases) {
      const log = path.join(dir, `log-${relay}`);
      const program = `process.stdout.write('a'.repeat(${bytes})); process.stdout.write('\\nlast\\n'); process.exit(0)`;
      const s = await spawnViaHelper({ file: process.execPath, args: ['-e', program], cwd: dir, env: { PATH: process.env.PATH ?? '' }, log, relay });
      assert.deepEqual(await s.exited, { code: 0, signal: null });
      const text = fs.readFileSync(log, 'latin1');
      assert.equal(text.length, bytes + 6, `relay ${relay}: ${text.length} bytes of ${bytes + 6} reached the log`);
      assert.ok(text.endsWith('a\nlast\n'));
    }
  });

  it('the pid reply carries the kernel start time; the exit reply the code, or the signal by name', async () => {
    const s = await spawnViaHelper(bash(dir, 'cut -d" " -f22 /proc/$$/stat; exit 7'));
    assert.deepEqual(await s.exited, { code: 7, signal: null });
    assert.equal(`${s.startTime}\n`, fs.readFileSync(path.join(dir, 'log'), 'utf8'));
    const k = await spawnViaHelper(bash(dir, 'kill -USR1 $$'));
    assert.deepEqual(await k.exited, { code: null, signal: 'SIGUSR1' });
  });

  it('a child that closes its stdout, stderr and stdin is still seen to exit, and its group is killed after it', async () => {
    const pidFile = path.join(dir, 'pid');
    const s = await spawnViaHelper(bash(dir, `sleep 300 & echo $! > ${pidFile}; exec 0<&- 1>&- 2>&-; sleep 0.2; exit 3`));
    assert.deepEqual(await s.exited, { code: 3, signal: null });
    await until(() => !alive(Number(fs.readFileSync(pidFile, 'utf8'))), 'the child left in the group is killed', 40);
  });

  it('a hostile child forking a setsid daemon: with a cookie the daemon is killed when the leader exits, the reply comes after', async () => {
    const pidFile = path.join(dir, 'pid');
    const cookie = `c${process.pid}x${Date.now()}`;
    const env = { ...(process.env as Record<string, string>), [STEP_COOKIE_VAR]: cookie };
    const s = await spawnViaHelper(
      bash(dir, `setsid bash -c 'echo $$ > ${pidFile}; exec sleep 300' & while [ ! -s ${pidFile} ]; do sleep 0.02; done; exit 0`, {
        env,
        cookie,
        sweepAgainMs: 500,
      }),
    );
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    // The exit reply is sent after the sweep; the daemon may be a zombie for a moment until its new parent reaps it.
    await until(() => !alive(pid), 'the setsid daemon is killed by its cookie', 20);
  });

  it('a cookie holder whose environment is larger than one read (300 KB before the cookie) is still found', async () => {
    const pidFile = path.join(dir, 'pid');
    const cookie = `big${process.pid}x${Date.now()}`;
    const big = 'x'.repeat(100_000);
    const env = { ...(process.env as Record<string, string>), B1: big, B2: big, B3: big, [STEP_COOKIE_VAR]: cookie };
    // env -i sets its arguments in order: the three big values first, the cookie after them.
    const daemon = `env -i B1="$B1" B2="$B2" B3="$B3" ${STEP_COOKIE_VAR}="$${STEP_COOKIE_VAR}" sh -c 'echo $$ > ${pidFile}; exec sleep 300'`;
    // The layout, seen on a copy the test starts itself: the cookie lies past 300 KB of the environment.
    const copy = spawn('/bin/bash', ['-c', `exec ${daemon}`], { env, stdio: 'ignore' });
    await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'), 'the copy started');
    await until(() => fs.readFileSync(`/proc/${copy.pid}/cmdline`, 'latin1').startsWith('sleep'), "the copy exec'd sleep");
    assert.ok(fs.readFileSync(`/proc/${copy.pid}/environ`, 'latin1').indexOf(`${STEP_COOKIE_VAR}=${cookie}`) > 300_000);
    copy.kill('SIGKILL');
    fs.rmSync(pidFile);
    const s = await spawnViaHelper(bash(dir, `setsid ${daemon} & while [ ! -s ${pidFile} ]; do sleep 0.02; done; exit 0`, { env, cookie }));
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    await until(() => !alive(pid), 'the daemon is killed by its cookie', 20);
  });

  it('the second sweep kills a cookie holder that appeared after the first', async () => {
    const cookie = `late${process.pid}x${Date.now()}`;
    const s = await spawnViaHelper(
      bash(dir, 'exit 0', { env: { ...(process.env as Record<string, string>), [STEP_COOKIE_VAR]: cookie }, cookie, sweepAgainMs: 700 }),
    );
    await s.exited;
    // Not a descendant of the step: started after the first sweep, carrying the step's cookie.
    const late = spawn('sleep', ['300'], { env: { ...process.env, [STEP_COOKIE_VAR]: cookie }, stdio: 'ignore' });
    const lateExit = new Promise<string | null>((r) => late.once('exit', (_c, sig) => r(sig)));
    assert.equal(await lateExit, 'SIGKILL');
  });

  it('steps ending together each get their exit, with one sweep for all (unsandboxed, 20 at once)', async () => {
    const steps = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        const cookie = `many${i}x${process.pid}`;
        return spawnViaHelper(
          bash(dir, `exit ${i}`, { env: { ...(process.env as Record<string, string>), [STEP_COOKIE_VAR]: cookie }, cookie, log: path.join(dir, `log${i}`) }),
        );
      }),
    );
    const exits = await Promise.all(steps.map((s) => s.exited));
    assert.deepEqual(
      exits.map((e) => e.code),
      Array.from({ length: 20 }, (_, i) => i),
    );
  });

  it('a log that cannot be opened, a file that does not exist, a missing cwd or program: an error naming it, and the helper goes on', async () => {
    await assert.rejects(
      spawnViaHelper(bash(dir, 'true', { log: path.join(dir, 'no', 'such', 'log') })),
      (e: Error) => e.message === `ENOENT: no such file or directory, open '${path.join(dir, 'no', 'such', 'log')}'`,
    );
    await assert.rejects(
      spawnViaHelper(bash(dir, 'true', { log: dir })),
      /^Error: EISDIR: illegal operation on a directory, open|^Error: EISDIR: is a directory, open/,
    );
    await assert.rejects(
      spawnViaHelper(bash(dir, 'true', { files: [path.join(dir, 'missing')] })),
      (e: Error) => e.message === `ENOENT: no such file or directory, open '${path.join(dir, 'missing')}'`,
    );
    await assert.rejects(spawnViaHelper(bash(path.join(dir, 'gone'), 'true', { log: path.join(dir, 'log') })), /^Error: spawn \/bin\/bash ENOENT$/);
    await assert.rejects(
      spawnViaHelper({ ...bash(dir, 'true'), file: path.join(dir, 'no-such-program') }),
      new RegExp(`^Error: spawn ${path.join(dir, 'no-such-program')} ENOENT$`),
    );
    await assert.rejects(
      spawnViaHelper(bash(dir, 'true', { log: path.join(dir, 'a\nb', 'log') })),
      (e: Error) => e.message.includes("open '") && !e.message.includes('\n'),
    );
    await assert.rejects(spawnViaHelper(bash(dir, 'echo a\0b')), /a NUL byte in args\[1\]/);
    const s = await spawnViaHelper(bash(dir, 'echo still here'));
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), 'still here\n');
  });

  it('an error reply longer than a pipe chunk, with 3-byte characters across the chunk boundary, is decoded whole', async () => {
    // 40,000 × "✓" (3 bytes): the reply spans several 64 KiB reads, and 65,536 is not a multiple of 3.
    const log = path.join(dir, `x${'✓'.repeat(40000)}`);
    await assert.rejects(spawnViaHelper(bash(dir, 'true', { log })), (e: Error) => !e.message.includes('\uFFFD') && e.message.endsWith(`open '${log}'`));
  });

  it('arguments and environment values with newlines, spaces and non-ASCII reach the child byte for byte', async () => {
    const odd = 'line one\nline two  é ✓ \t$HOME `x` \'q\' "dq"';
    const s = await spawnViaHelper({
      file: '/bin/bash',
      args: ['-c', 'printf %s "$1"; printf "|%s" "$ODD"', 'bash', odd],
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', ODD: odd, 'WITH=EQUALS': 'v' },
      log: path.join(dir, 'log'),
    });
    await s.exited;
    assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), `${odd}|${odd}`);
  });

  it("the orchestrator gone (the helper's stdin ends): dieWithHelper groups are killed, unsandboxed ones are left for reconcile", async () => {
    const boxedPid = path.join(dir, 'boxed');
    const freePid = path.join(dir, 'free');
    const boxed = await spawnViaHelper(bash(dir, `sleep 300 & echo $! > ${boxedPid}; wait`, { dieWithHelper: true }));
    const free = await spawnViaHelper(bash(dir, `sleep 300 & echo $! > ${freePid}; wait`, { log: path.join(dir, 'log2') }));
    await until(
      () =>
        fs.existsSync(boxedPid) &&
        fs.existsSync(freePid) &&
        fs.readFileSync(freePid, 'utf8').endsWith('\n') &&
        fs.readFileSync(boxedPid, 'utf8').endsWith('\n'),
      'both steps started their child',
    );
    const helper = spawnHelperPid() as number;
    stopSpawnHelper();
    await until(() => !alive(helper), 'the helper exits when its stdin ends', 60);
    await until(() => !alive(boxed.pid) && !alive(Number(fs.readFileSync(boxedPid, 'utf8'))), 'the dieWithHelper group is gone', 40);
    assert.ok(alive(free.pid) && alive(Number(fs.readFileSync(freePid, 'utf8'))), 'an unsandboxed step is left running');
    process.kill(-free.pid, 'SIGKILL');
  });

  /**
   * A stand-in for bubblewrap with `--info-fd 3` (sandboxInit): it starts `init` (a bash command whose pid it names),
   * writes bwrap's JSON to fd 3 naming `named` (default: that child), waits until the helper has read it all (the bytes
   * left in the pipe, FIONREAD, or unread on the Node helper's socket, TIOCOUTQ: no sleep decides), writes the pid
   * it named to `dir/init`, and exits 3.
   */
  function fakeBwrap(init: string, named = '$!', extra = ''): SpawnRequest {
    // One write (atomic, below PIPE_BUF), as bwrap writes the pid's part; then the wait until it was read.
    const write = `perl -e 'open(my $h, ">&=", 3) or die "fd 3: $!"; syswrite($h, "${extra}{\\n    \\"child-pid\\": $ARGV[0],\\n    \\"cgroup-namespace\\": 4026531835\\n}\\n") or die "write: $!"; my $req = -S $h ? 0x5411 : 0x541B; for (;;) { my $n = pack("i", 0); ioctl($h, $req, $n) or die "ioctl: $!"; last unless unpack("i", $n); select(undef, undef, undef, 0.01) }' "${named}"`;
    return bash(dir, `${init} & ${write}; echo "${named}" > ${path.join(dir, 'init')}; exit 3`, { dieWithHelper: true, sandboxInit: true });
  }

  it('sandboxInit: the init named on the info fd, out of the group (setsid), is reported (onInit: pid and start time) and killed before the exit is reported', async () => {
    const seen: { pid: number; startTime: string | null }[] = [];
    const s = await spawnViaHelper({ ...fakeBwrap('setsid sleep 300'), onInit: (init) => seen.push(init) });
    assert.deepEqual(await s.exited, { code: 3, signal: null });
    const init = Number(fs.readFileSync(path.join(dir, 'init'), 'utf8'));
    assert.ok(init > 1);
    assert.equal(alive(init), false, `the init ${init} outlived its bwrap`);
    assert.equal(seen.length, 1, JSON.stringify(seen));
    assert.equal(seen[0]!.pid, init);
    assert.match(String(seen[0]!.startTime), /^[0-9]+$/);
  });

  it("sandboxInit: a pid that is not the child's own child (a reused or foreign pid) is never killed", async () => {
    const foreign = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
    try {
      const seen: unknown[] = [];
      const s = await spawnViaHelper({ ...fakeBwrap('setsid sleep 0.1', String(foreign.pid)), onInit: (init) => seen.push(init) });
      assert.deepEqual(await s.exited, { code: 3, signal: null });
      assert.ok(alive(foreign.pid as number), "a process that is not the sandbox's init was killed");
      assert.deepEqual(seen, [], 'a pid that is not the init was reported as one (reconcile would kill it)');
    } finally {
      foreign.kill('SIGKILL');
    }
  });

  it('sandboxInit: garbage, an oversized write or nothing on the info fd: the exit is reported as it was, the helper goes on', async () => {
    const junk = 'x'.repeat(5000);
    const s1 = await spawnViaHelper(fakeBwrap('true', '$!', junk));
    assert.deepEqual(await s1.exited, { code: 3, signal: null });
    const s2 = await spawnViaHelper(bash(dir, 'exec 3>&-; exit 4', { dieWithHelper: true, sandboxInit: true }));
    assert.deepEqual(await s2.exited, { code: 4, signal: null });
    const s3 = await spawnViaHelper(
      bash(dir, 'printf "{ \\"child-pid\\": 1 }" >&3; printf "{ \\"child-pid\\": %s }" $$ >&3; exit 5', { dieWithHelper: true, sandboxInit: true }),
    );
    assert.deepEqual(await s3.exited, { code: 5, signal: null });
    const s4 = await spawnViaHelper(bash(dir, 'exit 6'));
    assert.deepEqual(await s4.exited, { code: 6, signal: null });
  });

  it('its parent gone while stdin stays open (the pipe inherited elsewhere): the helper sees the new parent and exits, killing dieWithHelper groups', async function () {
    const kind = process.env.VERDICT_SPAWN_HELPER as 'perl' | 'node';
    // The helper's parent is a `sleep 300` (sh's pid, exec'd), killed by this test once the step has started (not after
    // a fixed second: on a loaded machine the step may not have started by then); this test holds the helper's stdin
    // (given as fd 3: an asynchronous list's stdin is /dev/null) and reads its stdout.
    const sh = spawn('/bin/sh', ['-c', `exec 3<&0; "$0" "$1" <&3 3<&- & exec sleep 300`, kind === 'perl' ? 'perl' : process.execPath, HELPERS[kind]], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
    });
    let out = '';
    sh.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const pidFile = path.join(dir, 'pid');
    sh.stdin.write(encodeRequest(1, bash(dir, `sleep 300 & echo $! > ${pidFile}; wait`, { dieWithHelper: true })));
    await until(() => /^1 pid \d+/m.test(out) && fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'), 'the step started');
    const step = Number(/^1 pid (\d+)/m.exec(out)?.[1]);
    const grandchild = Number(fs.readFileSync(pidFile, 'utf8'));
    assert.ok(alive(step) && alive(grandchild));
    sh.kill('SIGKILL');
    await until(() => !alive(step) && !alive(grandchild), 'the helper noticed its parent is gone and killed the group', 100);
    sh.stdin.end();
  });
});

describe('spawn helper protocol (spawner.ts)', () => {
  it('encodes a request as its byte length and NUL-separated fields, and decodes every reply', () => {
    const line = encodeRequest(3, {
      file: 'f',
      args: ['a b', 'é'],
      cwd: '/c',
      env: { K: 'v=w' },
      log: '/l',
      files: ['/x'],
      cookie: 'ck',
      sweepAgainMs: 2000,
      dieWithHelper: true,
      sandboxInit: true,
      netstack: '/usr/bin/slirp4netns',
      cgroupProcs: '/sys/fs/cgroup/verdict/step-1/cgroup.procs',
    });
    const payload = [
      ...['3', 'f', '/c', '/l', 'ck', '2000', '1', '1', '', '', '', '/usr/bin/slirp4netns', '/sys/fs/cgroup/verdict/step-1/cgroup.procs'],
      ...['2', 'a b', 'é', '1', 'K=v=w', '1', '/x'],
    ].join('\0');
    assert.equal(line, `${Buffer.byteLength(payload)}\n${payload}`);
    assert.match(encodeRequest(4, { file: 'f', args: [], cwd: '/c', env: {}, log: '/l', relay: true }), /\0\0\0\x001\0\0\x000\x000\x000$/);
    assert.throws(
      () => encodeRequest(5, { file: 'f', args: [], cwd: '/c', env: {}, log: '/l', cgroupProcs: '/x\0y' }),
      /^Error: spawn f: a NUL byte in cgroupProcs$/,
    );
    assert.throws(
      () => encodeRequest(5, { file: 'f', args: [], cwd: '/c', env: {}, log: '/l', netstack: '/x\0y' }),
      /^Error: spawn f: a NUL byte in netstack$/,
    );
    assert.deepEqual(parseReply('ready perl v5.36.0'), { type: 'ready', kind: 'perl', version: 'v5.36.0' });
    assert.deepEqual(parseReply('unsupported pidfd_open: Function not implemented'), { type: 'unsupported', reason: 'pidfd_open: Function not implemented' });
    assert.deepEqual(parseReply('3 pid 42 12345'), { type: 'pid', id: 3, pid: 42, startTime: '12345' });
    assert.deepEqual(parseReply('3 pid 42 -'), { type: 'pid', id: 3, pid: 42, startTime: null });
    assert.deepEqual(parseReply('3 init 43 12346'), { type: 'init', id: 3, pid: 43, startTime: '12346' });
    assert.deepEqual(parseReply("3 error ENOENT: no such file or directory, open '/a b'"), {
      type: 'error',
      id: 3,
      message: "ENOENT: no such file or directory, open '/a b'",
    });
    assert.deepEqual(parseReply('3 exit 0 -'), { type: 'exit', id: 3, code: 0, signal: null });
    assert.deepEqual(parseReply('3 exit - 9'), { type: 'exit', id: 3, code: null, signal: 'SIGKILL' });
    assert.equal(parseReply('garbage'), null);
    const base = { file: 'f', args: ['a'], cwd: '/c', env: { K: 'v', L: 'w' }, log: '/l' };
    assert.throws(() => encodeRequest(1, { ...base, env: { K: 'v', L: 'w\0x' } }), /^Error: spawn f: a NUL byte in env\[1\]$/);
    assert.throws(() => encodeRequest(1, { ...base, cwd: '/c\0d' }), /^Error: spawn f: a NUL byte in cwd$/);
    assert.throws(() => encodeRequest(1, { ...base, files: ['/ok', '/x\0'] }), /^Error: spawn f: a NUL byte in files\[1\]$/);
  });

  for (const [what, script, fallback] of [
    ['no pidfd_open', 'echo "unsupported pidfd_open: Function not implemented"', 'perl: pidfd_open: Function not implemented'],
    ['a broken perl', 'exit 3', 'perl exited before it was ready (exit 3)'],
  ] as const) {
    it(`a perl that cannot run the perl helper (${what}) hands over to the Node helper, requests included`, async function () {
      this.timeout(30000);
      const dir = tempDir();
      const bin = path.join(dir, 'bin');
      fs.mkdirSync(bin);
      fs.writeFileSync(path.join(bin, 'perl'), `#!/bin/sh\n${script}\n`, { mode: 0o755 });
      const saved = { path: process.env.PATH, kind: process.env.VERDICT_SPAWN_HELPER };
      process.env.PATH = `${bin}:${process.env.PATH}`;
      delete process.env.VERDICT_SPAWN_HELPER;
      stopSpawnHelper();
      try {
        const s = await spawnViaHelper(bash(dir, 'echo handed over'));
        assert.deepEqual(await s.exited, { code: 0, signal: null });
        assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), 'handed over\n');
        const info = await spawnHelperInfo();
        assert.equal(info?.kind, 'node');
        assert.equal(info?.fallback, fallback);
      } finally {
        process.env.PATH = saved.path;
        if (saved.kind === undefined) delete process.env.VERDICT_SPAWN_HELPER;
        else process.env.VERDICT_SPAWN_HELPER = saved.kind;
        stopSpawnHelper();
      }
    });
  }

  it('no perl on PATH: the Node helper, saying why', async function () {
    this.timeout(30000);
    const dir = tempDir();
    const saved = { path: process.env.PATH, kind: process.env.VERDICT_SPAWN_HELPER };
    process.env.PATH = dir;
    delete process.env.VERDICT_SPAWN_HELPER;
    stopSpawnHelper();
    try {
      const info = await spawnHelperInfo();
      assert.deepEqual([info?.kind, info?.fallback], ['node', 'no perl on PATH']);
    } finally {
      process.env.PATH = saved.path;
      if (saved.kind === undefined) delete process.env.VERDICT_SPAWN_HELPER;
      else process.env.VERDICT_SPAWN_HELPER = saved.kind;
      stopSpawnHelper();
    }
  });
});
