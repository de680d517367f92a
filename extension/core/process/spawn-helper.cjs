'use strict';
/*
 * The spawn helper in Node (see spawner.ts and docs/spawning.md): the fallback of spawn-helper.pl, used
 * where there is no `perl` or no pidfd_open. A small process started once per orchestrator that starts every step's
 * process for it, so the orchestrator's event loop never forks its own large address space. Plain JavaScript with no
 * dependencies, run as `node spawn-helper.cjs`: nothing to build at install.
 *
 * It speaks the protocol described at the top of spawn-helper.pl (length-prefixed, NUL-separated requests; one reply
 * line each for the start, the error or the exit), with the same semantics: each child in its own session and process
 * group, stdin /dev/null (or the `stdin` file), stdout and stderr appended to the log (stderr to `errLog` when
 * given), `files` read-only as fds 3…, its group killed when it
 * exits, unsandboxed (a cookie given) every process carrying the cookie too, once at once and again `sweepAgainMs`
 * later (rounded up to a whole second of the clock). When stdin ends or the parent changes, the groups of the
 * `dieWithHelper` steps are killed and it exits.
 *
 * `relay` "1": the child's stdout is a 'pipe' (libuv makes it a unix socket pair) and its stderr the same socket (`sh -c
 * 'exec "$@" 2>&1'` in front of it: Node cannot give two stdio entries one new pipe; the exec keeps the pid). `relay`
 * "pipe": a pipe, as under the perl helper, so that the step may open its stdout again through /dev/stdout or
 * /dev/stderr (shell scripts do: `echo warning > /dev/stderr`, `tee /dev/stderr`). Node has no pipe(2): a FIFO made
 * next to the log (`mkfifo`, one short process), opened at both ends and removed at once, is one; where none can be
 * made the socket is used. Either way what arrives is appended to the log as it comes, and read to its end (every
 * writer gone; at most RELAY_END_MS after the exit, sweeps and init kill) before the exit is reported.
 *
 * `sandboxInit` (bubblewrap with `--info-fd`): the pipe after the files carries bwrap's init pid, taken while bwrap
 * runs (only when that pid is bwrap's child) with its /proc start time; when bwrap exits (and the pipe is read to its
 * end, or 20 ms later) the init is SIGKILLed if the
 * pid still has that start time (Node has no pidfd: this check is what keeps a reused pid safe), and the exit is
 * reported once it is gone (dead or a zombie: its PID namespace is then empty). Node cannot call prctl, so this helper
 * is no child subreaper: an init whose bwrap exited is reaped by whatever reaper the system gives it (PID 1), which
 * may leave zombies where PID 1 does not reap; the kill is what keeps the step from outliving its bwrap.
 *
 * `netstack` (with `sandboxInit`, spawn-helper.pl's header says the rest): the pipe after the info pipe is bwrap's
 * `--block-fd`; once the init is held, slirp4netns is started on its network namespace (its own session, its ready fd
 * and exit fd sockets of this helper's), and one byte on the block fd starts the step when it is ready. Node cannot
 * ask the kernel for the user namespace that owns a network namespace (an ioctl), so slirp4netns enters the init's
 * own user namespace: enough as root, where bwrap nests none; unprivileged, slirp4netns cannot enter the network
 * namespace and the step is stopped with a line in its log saying so (the perl helper has no such limit). Node cannot
 * set a parent-death signal either: the helper's death closes slirp4netns's exit fd, which ends it.
 */
const { spawn, execFileSync } = require('node:child_process');
/** Running slirp4netns processes: killed when the helper ends. */
const stacks = new Set();
const fs = require('node:fs');
const { Socket } = require('node:net');
const os = require('node:os');
const path = require('node:path');

const COOKIE_VAR = 'VERDICT_STEP_COOKIE';

/**
 * How long after a relayed step's exit (its sweeps and init kill done) the helper waits for the end of its output, ms:
 * once every writer is gone the end comes at once; a writer that outlived the step (unsandboxed, its cookie scrubbed)
 * must not hold the exit reply back longer.
 */
const RELAY_END_MS = 1000;

/**
 * Descriptors the orchestrator itself inherited without close-on-exec (from a terminal, a CI runner) would reach every
 * step through this process: they are closed once, at start (Node's own descriptors all have close-on-exec).
 */
function closeInherited() {
  let fds = [];
  try {
    fds = fs.readdirSync('/proc/self/fd');
  } catch {
    return;
  }
  for (const entry of fds) {
    const fd = Number(entry);
    if (!(fd > 2)) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1'));
      if (flags && !(parseInt(flags[1], 8) & 0o2000000)) fs.closeSync(fd);
    } catch {
      // gone already
    }
  }
}
closeInherited();

/** Process groups of running sandboxed steps (`dieWithHelper`): they end with the helper. */
const boxed = new Set();

function send(line) {
  process.stdout.write(`${line}\n`);
}

/** An error reply: one line whatever the message holds (a path may hold a newline). */
function fail(id, message) {
  send(`${id} error ${message.replace(/\n/g, '\\n')}`);
}

/** /proc/<pid>/stat's state, parent pid and start time (clock ticks since boot), or null when there is no such pid. */
function procStat(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: f[0], ppid: Number(f[1]), start: f[19] };
  } catch {
    return null;
  }
}

/**
 * Follows bwrap's `--info-fd` pipe: `w.pid` and `w.start` are set, and the `<id> init <pid> <startTime>` reply sent,
 * once the init's pid is read and found to be bwrap's (`parent`) child; `w.done` resolves at the pipe's end (bwrap
 * closed it, or exited).
 */
function watchInit(stream, parent, id, onInit) {
  const w = { pid: 0, start: '', done: null };
  let buf = '';
  let seen = false;
  // At the pipe's end; or, once bwrap has exited (`w.exited()`), after a short bound: what bwrap wrote before exiting
  // is in the socket already and read within a turn or two of the event loop, and a writer that kept the pipe open
  // (bwrap closes it in its child before the step runs: never the step) must not hold the exit reply back.
  let ended;
  w.done = new Promise((resolve) => {
    ended = resolve;
    stream.on('close', resolve);
    stream.on('error', () => undefined);
  });
  w.exited = () => {
    setTimeout(() => {
      ended();
      stream.destroy();
    }, 20).unref();
    return w.done;
  };
  stream.on('data', (chunk) => {
    if (seen) return;
    buf += chunk.toString('latin1');
    const m = /"child-pid"\s*:\s*([0-9]+)/.exec(buf);
    if (m) {
      seen = true;
      const n = Number(m[1]);
      const st = n > 1 && n !== process.pid ? procStat(n) : null;
      if (st && st.ppid === parent) {
        w.pid = n;
        w.start = st.start;
        send(`${id} init ${n} ${st.start}`);
      }
      if (onInit) onInit(w.pid);
    } else if (buf.length > 4096) seen = true;
  });
  return w;
}

/**
 * Starts slirp4netns on the network namespace of the sandbox init `pid` (0: the init could not be held: the step is
 * stopped) for the step `net` describes; the step starts once slirp4netns says it is ready.
 */
function startNet(net, pid, tries = 0) {
  if (net.ended) return;
  if (!pid) return netFailed(net, "its sandbox's init could not be held");
  // bwrap's child sets up the namespace's loopback (an address, then the link up) right after it starts; slirp4netns
  // --configure brings the loopback up too, and before bwrap's address is there the kernel adds 127.0.0.1 itself and
  // bwrap's own add fails (the step exits 1). Up, the routing table holds the loopback's broadcast route: polled
  // every ms, at most 3 s.
  let table = '';
  try {
    table = fs.readFileSync(`/proc/${pid}/net/fib_trie`, 'latin1');
  } catch {
    // not there yet, or gone
  }
  if (!table.includes('BROADCAST') && tries < 3000) {
    setTimeout(() => startNet(net, pid, tries + 1), 1);
    return;
  }
  let proc;
  try {
    proc = spawn(net.netstack, ['--configure', '--mtu=65520', '--ready-fd=3', '--exit-fd=4', String(pid), 'tap0'], {
      stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'],
      detached: true,
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
    });
  } catch (e) {
    return netFailed(net, e.message);
  }
  net.proc = proc;
  proc.once('error', (e) => netFailed(net, e.message));
  if (proc.pid) stacks.add(proc.pid);
  let ready = false;
  proc.stdio[4].on('error', () => undefined);
  proc.stdio[3].on('error', () => undefined);
  proc.stdio[3].once('data', () => {
    ready = true;
    net.block.end('1');
  });
  proc.once('exit', (code, signal) => {
    stacks.delete(proc.pid);
    if (!ready && !net.ended) netFailed(net, `slirp4netns exited before the network was up (${signal ? `signal ${signal}` : `exit ${code}`})`);
  });
}

/** The step `net` describes cannot get its network: its sandbox is killed before the step's command runs, and its log says why. */
function netFailed(net, why) {
  if (net.ended) return;
  killGroup(net.group);
  const st = net.init && net.init.pid ? procStat(net.init.pid) : null;
  try {
    if (st && st.start === net.init.start) process.kill(net.init.pid, 'SIGKILL');
  } catch {
    // gone
  }
  try {
    fs.appendFileSync(net.log, `verdict: the step's own network could not be set up: ${why}; the step was stopped\n`);
  } catch {
    // the log cannot take it
  }
  net.block.destroy();
}

/** The step `net` describes ended: its slirp4netns is ended (exit fd closed, SIGKILL). */
function endNet(net) {
  net.ended = true;
  net.block.destroy();
  const proc = net.proc;
  if (!proc) return;
  proc.stdio[3].destroy();
  proc.stdio[4].destroy();
  try {
    proc.kill('SIGKILL');
  } catch {
    // gone
  }
  stacks.delete(proc.pid);
}

/** SIGKILL to the init `w` names if its pid still has its start time; `then` once it is dead, a zombie or gone. */
function killInit(w, then) {
  const st = w.pid ? procStat(w.pid) : null;
  if (!st || st.start !== w.start) return then();
  try {
    process.kill(w.pid, 'SIGKILL');
  } catch {
    return then();
  }
  const poll = () => {
    const now = procStat(w.pid);
    if (!now || now.start !== w.start || now.state === 'Z' || now.state === 'X') then();
    else setTimeout(poll, 1);
  };
  poll();
}

/** Inits of running sandboxed steps (watchInit's records): killed too when the helper ends. */
const inits = new Set();

function startTime(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] || '-';
  } catch {
    return '-';
  }
}

/** One buffer for every /proc/<pid>/environ read (grown when an environment does not fit). */
let environBuf = Buffer.allocUnsafe(256 * 1024);

/** /proc/<pid>/environ's bytes (a view of environBuf, valid until the next call): open, one read when it fits, close. */
function readEnviron(entry) {
  const fd = fs.openSync(`/proc/${entry}/environ`, 'r');
  try {
    let n = 0;
    for (;;) {
      const got = fs.readSync(fd, environBuf, n, environBuf.length - n, null);
      n += got;
      if (n < environBuf.length) return environBuf.subarray(0, n);
      const bigger = Buffer.allocUnsafe(environBuf.length * 2);
      environBuf.copy(bigger);
      environBuf = bigger;
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** SIGKILL to every process whose environment holds one of `cookies`: one pass over /proc for all of them. */
function killByCookies(cookies) {
  const needles = cookies.map((c) => Buffer.from(`${COOKIE_VAR}=${c}\0`));
  let entries = [];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return;
  }
  for (const entry of entries) {
    const pid = Number(entry);
    if (!(pid > 0) || pid === process.pid) continue;
    try {
      const environ = readEnviron(entry);
      if (needles.some((n) => environ.indexOf(n) !== -1)) process.kill(pid, 'SIGKILL');
    } catch {
      // gone, or not ours
    }
  }
}

/**
 * Cookie sweeps wait for the end of the current turn of the event loop, so steps that end together (50 workers whose
 * `sleep 1` ends at once) cost one pass over /proc, not one each.
 */
let sweeps = [];
function sweep(cookie, then) {
  sweeps.push({ cookie, then });
  if (sweeps.length > 1) return;
  setImmediate(() => {
    const batch = sweeps;
    sweeps = [];
    killByCookies(batch.map((b) => b.cookie));
    for (const b of batch) b.then();
  });
}

function killGroup(pgid) {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // nothing left in it
  }
}

function closeAll(fds) {
  for (const fd of fds) {
    try {
      fs.closeSync(fd);
    } catch {
      // already closed
    }
  }
}

/** The shell that joins a cgroup ($0: its cgroup.procs) before it execs the command ("$@"). */
const CGROUP_JOIN = 'echo $$ > "$0" || { echo "verdict: cannot join the memory cgroup ($0)" >&2; exit 125; }; exec "$@"';

/** One request's fields (spawn-helper.pl's layout): starts the process and answers. */
function start(fields) {
  const [id, file, cwd, log, cookie, again, dieWithHelper, sandboxInit, errLog, stdin, relay, netstack, cgroup] = fields;
  let at = 13;
  const list = () => {
    const n = Number(fields[at]);
    const out = fields.slice(at + 1, at + 1 + n);
    at += 1 + n;
    return out;
  };
  const args = list();
  const envEntries = list();
  const files = list();
  const env = {};
  for (const e of envEntries) {
    const eq = e.indexOf('=');
    if (eq > 0) env[e.slice(0, eq)] = e.slice(eq + 1);
  }
  const fds = [];
  const streams = [];
  try {
    fds.push(fs.openSync(log, 'a'));
    for (const f of files) fds.push(fs.openSync(f, 'r'));
    if (errLog) streams.push(fs.openSync(errLog, 'a'));
    if (stdin) streams.unshift(fs.openSync(stdin, 'r'));
  } catch (e) {
    closeAll(fds);
    closeAll(streams);
    fail(id, e.message);
    return;
  }
  const fifo = relay === 'pipe' ? relayPipe(log, id) : null;
  const out = fifo ? fifo.w : relay ? 'pipe' : fds[0];
  const stdio = [
    stdin ? streams[0] : 'ignore',
    out,
    errLog ? streams[streams.length - 1] : out,
    ...fds.slice(1),
    ...(sandboxInit ? ['pipe'] : []),
    ...(sandboxInit && netstack ? ['pipe'] : []),
  ];
  // relay without errLog: stderr becomes the stdout socket in the child, through sh's exec (same pid); the file is
  // looked for first so that a missing one is a spawn error worded as Node words it.
  // cgroup: spawn cannot run code between fork and exec, so a shell joins the cgroup and execs (same pid); a refused
  // write stops the step before its command runs (exit 125, the reason on its stderr, so in its log): never outside it.
  let argv = cgroup ? ['/bin/sh', ['-c', CGROUP_JOIN, cgroup, file, ...args]] : [file, args];
  if (relay && !fifo && !errLog) {
    const missing = notExecutable(file, env.PATH);
    if (missing) {
      closeAll(fds);
      closeAll(streams);
      fail(id, `spawn ${file} ${missing}`);
      return;
    }
    argv = ['/bin/sh', ['-c', 'exec "$@" 2>&1', 'sh', argv[0], ...argv[1]]];
  }
  let child;
  try {
    child = spawn(argv[0], argv[1], { cwd, env, stdio, detached: true });
  } catch (e) {
    closeAll(fds);
    closeAll(streams);
    if (fifo) closeAll([fifo.r, fifo.w]);
    fail(id, e.message);
    return;
  }
  // The log stays open for the relay (written as output arrives), else it is the child's alone.
  const relayed = fifo ? relayTo(new Socket({ fd: fifo.r, readable: true, writable: false }), fds[0]) : relay ? relayTo(child.stdout, fds[0]) : null;
  if (relayed) relays.set(id, relayed);
  closeAll(relay ? fds.slice(1) : fds);
  if (fifo) closeAll([fifo.w]);
  closeAll(streams);
  const pid = child.pid;
  if (pid === undefined) {
    relayed?.close();
    child.once('error', (e) => fail(id, e.message));
    return;
  }
  send(`${id} pid ${pid} ${startTime(pid)}`);
  if (dieWithHelper) boxed.add(pid);
  const block = sandboxInit && netstack ? child.stdio[fds.length + 3] : null;
  const init = sandboxInit ? watchInit(child.stdio[fds.length + 2], pid, id, block ? (n) => startNet(net, n) : null) : null;
  if (init) inits.add(init);
  const net = block ? { netstack, block, log, group: pid, init, proc: null, ended: false } : null;
  child.once('exit', (code, signal) => {
    boxed.delete(pid);
    killGroup(pid);
    if (net) endNet(net);
    const exitLine = `${id} exit ${code === null ? '-' : code} ${signal ? os.constants.signals[signal] : '-'}`;
    // Relayed: the output is read to its end (or RELAY_END_MS) before the exit is reported.
    const report = () =>
      relayed
        ? relayed.finish().then(() => {
            relays.delete(id);
            send(exitLine);
          })
        : send(exitLine);
    if (init) {
      // What bwrap wrote is read to the pipe's end, then its init (and with it the PID namespace) is killed.
      init.exited().then(() =>
        killInit(init, () => {
          inits.delete(init);
          if (!cookie) report();
          else sweep(cookie, report);
        }),
      );
      return;
    }
    if (!cookie) return report();
    sweep(cookie, report);
    // A descendant forked while the first sweep ran is caught by the second, at a whole second of the clock: the
    // second sweeps of steps that ended within the same second are one pass.
    if (again) setTimeout(() => sweep(cookie, () => undefined), Math.ceil((Date.now() + Number(again)) / 1000) * 1000 - Date.now()).unref();
  });
}

/**
 * A pipe for relay "pipe" (Node has no pipe(2)): a FIFO made next to `log` (in VERDICT_HOME, which no sandboxed step
 * sees) by `mkfifo`, opened for reading (non-blocking) and for writing, and removed at once, so no other process can
 * open it by its name later. `r` and `w`: the two descriptors; null when no FIFO could be made (no mkfifo, the folder
 * not writable): the caller relays through a socket then.
 */
function relayPipe(log, id) {
  const name = path.join(path.dirname(log), `.${path.basename(log)}.relay-${process.pid}-${id}`);
  const opened = [];
  try {
    execFileSync('mkfifo', ['-m', '600', name], { stdio: 'ignore' });
    opened.push(fs.openSync(name, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK));
    opened.push(fs.openSync(name, fs.constants.O_WRONLY));
    return { r: opened[0], w: opened[1] };
  } catch {
    closeAll(opened);
    return null;
  } finally {
    try {
      fs.unlinkSync(name);
    } catch {
      // never made
    }
  }
}

/** id => the relay of a step whose exit is not yet reported: "hold" and "release" name it so. */
const relays = new Map();

/**
 * Appends what arrives on `stream` (a relayed step's stdout: a socket, or a pipe) to the log `fd` as it comes: one chunk at a time,
 * written before the next is read. `finish()` resolves at the stream's end, or RELAY_END_MS after it was called (and
 * after a release, while held), then closes both. A write that fails (a full disk) loses that chunk, as the step's own
 * write would have failed. `hold()` pauses the stream (nothing is written into the log) until `release()`.
 */
function relayTo(stream, fd) {
  let held = null;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    stream.destroy();
    closeAll([fd]);
  };
  const ended = new Promise((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', resolve);
  });
  const write = (chunk) => {
    try {
      for (let at = 0; at < chunk.length;) at += fs.writeSync(fd, chunk, at, chunk.length - at);
    } catch {
      // the log cannot take it (a full disk): this chunk is lost
    }
  };
  stream.on('data', (chunk) => {
    if (closed) return;
    // Held, and yet read: Node resumes a child's paused stdio when the child exits (child_process flushStdio). What
    // arrives so is kept (at most what the relay held at the exit) and written at the release.
    if (held) held.pending.push(chunk);
    else write(chunk);
  });
  return {
    close,
    hold() {
      if (held) return;
      stream.pause();
      let release;
      held = { released: new Promise((resolve) => (release = resolve)), release, pending: [] };
    },
    release() {
      if (!held) return;
      const h = held;
      held = null;
      if (!closed) {
        for (const chunk of h.pending) write(chunk);
        stream.resume();
      }
      h.release();
    },
    finish() {
      return (held ? held.released : Promise.resolve()).then(() => {
        let timer;
        const bound = new Promise((resolve) => (timer = setTimeout(resolve, RELAY_END_MS)));
        return Promise.race([ended, bound]).then(() => {
          clearTimeout(timer);
          close();
        });
      });
    },
  };
}

/** Why `file` cannot be started ('ENOENT', 'EACCES'), looked up on `pathVar` when it names no folder; null when it can. */
function notExecutable(file, pathVar) {
  const candidates = file.includes('/')
    ? [file]
    : String(pathVar ?? '')
        .split(':')
        .filter(Boolean)
        .map((d) => `${d}/${file}`);
  let why = 'ENOENT';
  for (const c of candidates) {
    try {
      fs.accessSync(c, fs.constants.X_OK);
      if (fs.statSync(c).isFile()) return null;
      why = 'EACCES';
    } catch (e) {
      if (e.code === 'EACCES') why = 'EACCES';
    }
  }
  return why;
}

let pending = Buffer.alloc(0);
process.stdin.on('data', (chunk) => {
  pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
  for (;;) {
    const nl = pending.indexOf(10);
    if (nl === -1) break;
    const control = /^(hold|release) (\d+)$/.exec(pending.latin1Slice(0, nl));
    if (control) {
      // spawn-helper.pl's header: a held relay writes nothing into its log until released; "held" says so.
      const relayed = relays.get(control[2]);
      if (control[1] === 'hold') {
        relayed?.hold();
        send(`${control[2]} held`);
      } else relayed?.release();
      pending = pending.subarray(nl + 1);
      continue;
    }
    const len = Number(pending.latin1Slice(0, nl));
    if (pending.length < nl + 1 + len) break;
    start(pending.toString('utf8', nl + 1, nl + 1 + len).split('\0'));
    pending = pending.subarray(nl + 1 + len);
  }
});
/**
 * The orchestrator is gone (exited, crashed, killed): so is the helper, and with it every sandboxed step. bubblewrap's
 * --die-with-parent would end them when the helper exits, but not one that was still starting (its parent-death signal
 * not yet armed): their groups are killed first. Unsandboxed steps are left as an orchestrator's crash always left
 * them, for the next start's reconcile (run/reconcile.ts).
 */
function orphaned() {
  for (const pgid of boxed) killGroup(pgid);
  for (const pid of stacks) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  for (const w of inits) {
    const st = w.pid ? procStat(w.pid) : null;
    try {
      if (st && st.start === w.start) process.kill(w.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  process.exit(0);
}
process.stdin.on('end', orphaned);
process.stdin.on('error', orphaned);
process.stdout.on('error', orphaned);
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) orphaned();
}, 1000).unref();
send(`ready node ${process.version}`);
