'use strict';
/*
 * The spawn helper (see spawner.ts and docs/architecture.md "Spawning"): a small Node process started once per
 * orchestrator that starts every step's process for it, so the orchestrator's event loop never forks its own large
 * address space. Plain JavaScript with no dependencies, run as `node spawn-helper.cjs`: nothing to build at install.
 *
 * Protocol: one JSON object per line on stdin (requests) and stdout (replies).
 *   → {"id", "file", "args", "cwd", "env", "log", "files"?, "cookie"?, "sweepAgainMs"?, "dieWithHelper"?}
 *   ← {"id", "pid", "startTime"}            the process exists (its own session and process group, stdin /dev/null,
 *                                            stdout and stderr appended to `log`, `files` opened read-only as fds 3…)
 *   ← {"id", "error"}                        it could not be started (the OS error, as Node words it)
 *   ← {"id", "exit", "signal"}               it ended; what it left in its group is killed first, and unsandboxed
 *                                            (`cookie` given) every process carrying the step's cookie too
 * When stdin ends (the orchestrator exited or was killed) the helper exits at once; sandboxed steps (bubblewrap with
 * --die-with-parent, whose parent is this helper) die with it.
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');

const COOKIE_VAR = 'VERDICT_STEP_COOKIE';

/** Process groups of running sandboxed steps (`dieWithHelper`): they end with the helper. */
const boxed = new Set();

function send(msg) {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

function startTime(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] || null;
  } catch {
    return null;
  }
}

/**
 * SIGKILL to every process whose environment holds one of `cookies` (the supervisor's killByCookie, off its loop): one
 * pass over /proc for all of them.
 */
function killByCookies(cookies) {
  const needles = cookies.map((c) => Buffer.from(`${COOKIE_VAR}=${c}\0`));
  let entries = [];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const environ = fs.readFileSync(`/proc/${entry}/environ`);
      if (needles.some((n) => environ.indexOf(n) !== -1)) process.kill(Number(entry), 'SIGKILL');
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

function start(req) {
  const fds = [];
  try {
    fds.push(fs.openSync(req.log, 'a'));
    for (const f of req.files || []) fds.push(fs.openSync(f, 'r'));
  } catch (e) {
    closeAll(fds);
    send({ id: req.id, error: e.message });
    return;
  }
  let child;
  try {
    child = spawn(req.file, req.args, { cwd: req.cwd, env: req.env, stdio: ['ignore', fds[0], fds[0], ...fds.slice(1)], detached: true });
  } catch (e) {
    closeAll(fds);
    send({ id: req.id, error: e.message });
    return;
  }
  closeAll(fds);
  const pid = child.pid;
  if (pid === undefined) {
    child.once('error', (e) => send({ id: req.id, error: e.message }));
    return;
  }
  send({ id: req.id, pid, startTime: startTime(pid) });
  if (req.dieWithHelper) boxed.add(pid);
  child.once('exit', (code, signal) => {
    boxed.delete(pid);
    killGroup(pid);
    const report = () => send({ id: req.id, exit: code, signal });
    if (!req.cookie) return report();
    sweep(req.cookie, report);
    // A descendant forked while the first sweep ran is caught by the second.
    if (req.sweepAgainMs) setTimeout(() => sweep(req.cookie, () => undefined), req.sweepAgainMs).unref();
  });
}

let pending = '';
process.stdin.on('data', (chunk) => {
  pending += chunk.toString('utf8');
  let nl;
  while ((nl = pending.indexOf('\n')) !== -1) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    if (!line) continue;
    let req;
    try {
      req = JSON.parse(line);
    } catch {
      process.stderr.write(`verdict spawn helper: a request that is not JSON: ${line.slice(0, 200)}\n`);
      continue;
    }
    start(req);
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
  process.exit(0);
}
process.stdin.on('end', orphaned);
process.stdin.on('error', orphaned);
process.stdout.on('error', orphaned);
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) orphaned();
}, 1000).unref();
