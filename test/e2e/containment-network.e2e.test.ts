import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { execa } from 'execa';
import { CLI, cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { probeNetstack } from '../../extension/core/process/sandbox';

// Each sandboxed step with "network": true runs in a network namespace of its own, its outbound access through
// slirp4netns (core/process/sandbox.ts, spawn-helper.pl). Written as the hostile worker: a sibling task that takes the
// victim's $PORT on the host cannot answer the victim's check any more; a host service on an abstract unix socket or
// on the host's 127.0.0.1 is out of reach; the host's loopback is reachable only as $VERDICT_HOST_LOOPBACK (10.0.2.2),
// the way an engine reaches a model server on the host; "network": false still has no way out at all; "network":
// "host" (the control) reaches everything, so "refused" is the namespace's doing; and slirp4netns never outlives its
// step, even when the orchestrator and its spawn helper are killed.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(file: string, ms = 60000): Promise<void> {
  const until = Date.now() + ms;
  while (!fs.existsSync(file)) {
    if (Date.now() > until) throw new Error(`${file} did not appear within ${ms} ms`);
    await sleep(100);
  }
}

/** A server (TCP on 127.0.0.1, or an abstract unix socket) that counts connections and answers "hello". */
class Service {
  hits = 0;
  readonly server = net.createServer((c) => {
    this.hits++;
    c.on('error', () => undefined);
    c.end('hello\n');
  });
  listen(where: number | string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      const done = () => resolve(typeof where === 'string' ? 0 : (this.server.address() as net.AddressInfo).port);
      if (typeof where === 'string') this.server.listen(where, done);
      else this.server.listen(where, '127.0.0.1', done);
    });
  }
  close(): void {
    this.server.close();
  }
}

/**
 * A service on an abstract unix socket, in python (Node pads an abstract name to the whole sun_path, which no other
 * program would connect to): answers "hello" and prints one line per connection, which `hits` counts.
 */
class AbstractService {
  hits = 0;
  private child: ChildProcess | null = null;
  listen(name: string): Promise<void> {
    const code = `import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0' + sys.argv[1])\ns.listen()\nprint('ready', flush=True)\nwhile True:\n    c, _ = s.accept()\n    c.sendall(b'hello\\n')\n    c.close()\n    print('hit', flush=True)\n`;
    const child = spawn('python3', ['-c', code, name], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child = child;
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.stdout?.setEncoding('utf8').on('data', (d: string) => {
        if (d.includes('ready')) resolve();
        this.hits += (d.match(/hit/g) ?? []).length;
      });
    });
  }
  close(): void {
    this.child?.kill('SIGKILL');
  }
}

/** Tries each target (`tcp:HOST:PORT` or `abstract:NAME`), one line each: `<target> REACHED <reply>` or `<target> refused <error>`. */
const PROBE = `import socket, sys
for t in sys.argv[1:]:
    kind, rest = t.split(':', 1)
    if kind == 'tcp':
        host, port = rest.rsplit(':', 1)
        s = socket.socket(socket.AF_INET)
        addr = (host, int(port))
    else:
        s = socket.socket(socket.AF_UNIX)
        addr = '\\0' + rest
    s.settimeout(5)
    try:
        s.connect(addr)
        print(t, 'REACHED', s.recv(10))
    except Exception as e:
        print(t, 'refused', type(e).__name__)
    finally:
        s.close()
`;

/** The processes whose parent is `ppid` and whose command is `comm`. */
function childrenNamed(ppid: number, comm: string): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppidOf = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (name === comm && ppidOf === ppid) out.push(Number(entry));
    } catch {
      // gone
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '');
  } catch {
    return false;
  }
}

describe('containment: a network namespace per step (slirp4netns)', function () {
  this.timeout(240000);
  const services: { close(): void }[] = [];
  after(() => {
    for (const s of services) s.close();
  });

  before(async function () {
    await requireSandbox(this);
    const stack = await probeNetstack();
    if (stack.kind !== 'slirp4netns') throw new Error(`slirp4netns is required for these tests: ${stack.reason}`);
  });

  it("a sibling that squats the victim's $PORT cannot answer the victim's check: wrong work FAILs", async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // The victim's worker is wrong: its server answers "wrong". Its check wants "hello" from a server on $PORT.
    const server = `import socket, os\\ns = socket.socket()\\ns.bind(("127.0.0.1", int(os.environ["PORT"])))\\ns.listen()\\nwhile True:\\n    c, _ = s.accept()\\n    c.sendall(b"wrong\\\\n")\\n    c.close()\\n`;
    const victimSpec = ['echo "$PORT" > port', 'while [ ! -e go ]; do sleep 0.1; done', `printf '${server}' > server.py`, 'echo written'].join('\n');
    const victimCheck = `python3 server.py & sleep 1; python3 -c 'import socket, os; s = socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), 5); d = s.recv(10); print(d); assert d == b"hello\\n"'`;
    // The squatter learns the victim's port (here from the test; the hostile worker of the report bound every free
    // port instead) and answers "hello" on it until the victim's verdict is in.
    const squat = `import socket, os, time
p = int(open("target").read())
s = socket.socket()
s.bind(("127.0.0.1", p))
s.listen()
s.settimeout(0.2)
open("ready", "w").close()
end = time.time() + 120
while time.time() < end and not os.path.exists("done"):
    try:
        c, _ = s.accept()
        c.sendall(b"hello\\n")
        c.close()
    except socket.timeout:
        pass
`;
    fs.writeFileSync(path.join(dir, 'squat.py'), squat);
    const file = writeManifest(dir, {
      workdir: 'w',
      max_parallel: 2,
      tasks: [
        scriptTask('victim', victimSpec, victimCheck, { max_attempts: 1 }),
        scriptTask('squat', `while [ ! -e target ]; do sleep 0.1; done; python3 ${path.join(dir, 'squat.py')}`, 'test -e ready', { max_attempts: 1 }),
      ],
    });
    const running = cli(['run', file, '--home', home, '--no-dashboard']);
    const w = path.join(dir, 'w');
    await waitFor(path.join(w, 'victim', 'port'));
    fs.writeFileSync(path.join(w, 'squat', 'target'), fs.readFileSync(path.join(w, 'victim', 'port'), 'utf8').trim());
    await waitFor(path.join(w, 'squat', 'ready'));
    fs.writeFileSync(path.join(w, 'victim', 'go'), '');
    const until = Date.now() + 120000;
    while (!readRows(home).some((r) => r.task_key === 'victim') && Date.now() < until) await sleep(200);
    fs.writeFileSync(path.join(w, 'squat', 'done'), '');
    const r = await running;
    const rows = readRows(home);
    const victim = rows.find((row) => row.task_key === 'victim');
    assert.ok(victim, r.all);
    assert.equal(victim.verdict, 'FAIL', `the victim's wrong work PASSed: the squatter answered its check\n${r.all}`);
    assert.equal(rows.find((row) => row.task_key === 'squat')?.verdict, 'PASS', r.all);
  });

  it('a host service on an abstract unix socket or on 127.0.0.1 is out of reach; the host loopback as 10.0.2.2 is reached; "network": false reaches nothing', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const tcp = new Service();
    services.push(tcp);
    const port = await tcp.listen(0);
    const abstract = new AbstractService();
    services.push(abstract);
    const name = `verdict-test-${process.pid}-${path.basename(dir)}`;
    await abstract.listen(name);
    fs.writeFileSync(path.join(dir, 'probe.py'), PROBE);
    const probe = (out: string) =>
      `python3 ${path.join(dir, 'probe.py')} tcp:127.0.0.1:${port} tcp:\${VERDICT_HOST_LOOPBACK:-10.0.2.2}:${port} abstract:${name} > ${out} 2>&1; echo "VERDICT_HOST_LOOPBACK=\${VERDICT_HOST_LOOPBACK-unset}" >> ${out}; ip -o -4 addr | awk '{print "if", $2}' >> ${out}`;
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        // The check prints what it found: what it writes in a plain task dir is discarded once it passed.
        scriptTask('own', probe('worker.txt'), `${probe('check.txt')}; test -s check.txt && cat check.txt`, { max_attempts: 1 }),
        scriptTask('none', probe('worker.txt'), `${probe('check.txt')}; test -s check.txt && cat check.txt`, { max_attempts: 1, network: false }),
        scriptTask('host', probe('worker.txt'), `${probe('check.txt')}; test -s check.txt && cat check.txt`, { max_attempts: 1, network: 'host' }),
      ],
    });
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const read = (key: string, step: string) =>
      step === 'check'
        ? fs.readFileSync(String(readRows(home).find((row) => row.task_key === key)?.check_log), 'utf8')
        : fs.readFileSync(path.join(dir, 'w', key, `${step}.txt`), 'utf8');
    for (const step of ['worker', 'check']) {
      const own = read('own', step);
      assert.match(own, new RegExp(`tcp:127\\.0\\.0\\.1:${port} refused`), own);
      assert.match(own, new RegExp(`tcp:10\\.0\\.2\\.2:${port} REACHED b'hello\\\\n'`), own);
      assert.match(own, new RegExp(`abstract:${name} refused`), own);
      assert.match(own, /VERDICT_HOST_LOOPBACK=10\.0\.2\.2\n/, own);
      assert.match(own, /if tap0\n/, own);
      const none = read('none', step);
      assert.doesNotMatch(none, /REACHED/, none);
      assert.match(none, /VERDICT_HOST_LOOPBACK=unset\n/, none);
      assert.deepEqual(none.match(/^if .*$/gm), ['if lo'], none);
      // The control: sharing the host's namespace, every one of them answers.
      const host = read('host', step);
      assert.match(host, new RegExp(`tcp:127\\.0\\.0\\.1:${port} REACHED`), host);
      assert.match(host, new RegExp(`abstract:${name} REACHED`), host);
      assert.match(host, /VERDICT_HOST_LOOPBACK=127\.0\.0\.1\n/, host);
    }
    // Reached: own (10.0.2.2) and host (127.0.0.1 and VERDICT_HOST_LOOPBACK, also 127.0.0.1), worker and check each.
    assert.equal(tcp.hits, 2 + 4, `${read('own', 'worker')}${read('host', 'worker')}`);
    assert.equal(abstract.hits, 2, read('host', 'worker'));
    const rows = readRows(home);
    assert.deepEqual(rows.map((row) => `${row.task_key}:${row.network}`).sort(), ['host:host', 'none:none', 'own:netns']);
    // Six steps had a slirp4netns each; none is left once the run is over (an orphan would be reparented to PID 1).
    const orphans = childrenNamed(1, 'slirp4netns').filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--exit-fd=4');
      } catch {
        return false;
      }
    });
    assert.deepEqual(orphans, [], 'a slirp4netns outlived its step');
    // `verdict runs RUN` says what contained the steps, the network included; state.json keeps it per attempt.
    const runId = String(rows[0]?.run_id);
    const shown = await cli(['runs', runId, '--home', home]);
    assert.equal(shown.exitCode, 0, shown.all);
    assert.match(shown.stdout, /network: each step its own namespace through slirp4netns [^\n]* \(the host's loopback as 10\.0\.2\.2\)/, shown.stdout);
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as {
      tasks: { key: string; attempts: { network?: string }[] }[];
    };
    assert.deepEqual(state.tasks.map((t) => `${t.key}:${t.attempts[0]?.network}`).sort(), ['host:host', 'none:none', 'own:netns']);
  });

  it("a host whose resolver is on its own loopback (systemd-resolved's 127.0.0.53): a step with its own network is given slirp4netns's forwarder; one without keeps the host's file", async function () {
    // The orchestrator runs in a mount namespace of its own where /etc/resolv.conf names 127.0.0.53 (root only).
    if (process.getuid?.() !== 0) return this.skip();
    const dir = tempDir();
    const fake = path.join(dir, 'resolv.conf');
    fs.writeFileSync(fake, 'nameserver 127.0.0.53\noptions edns0 trust-ad\n');
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask(
          'own',
          'cat /etc/resolv.conf > seen.txt',
          "grep -qx 'nameserver 10.0.2.3' seen.txt && grep -qx 'options edns0 trust-ad' seen.txt && ! grep -q 127.0.0.53 seen.txt",
          { max_attempts: 1 },
        ),
        scriptTask('none', 'cat /etc/resolv.conf > seen.txt', "grep -qx 'nameserver 127.0.0.53' seen.txt", { max_attempts: 1, network: false }),
      ],
    });
    const r = await execa(
      'unshare',
      ['-m', 'sh', '-c', 'mount --bind "$0" /etc/resolv.conf && exec "$@"', fake, 'node', CLI, 'run', file, '--home', path.join(dir, 'home'), '--no-dashboard'],
      { reject: false, all: true, stdin: 'ignore' },
    );
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      readRows(path.join(dir, 'home'))
        .map((row) => `${row.task_key}:${row.verdict}`)
        .sort(),
      ['none:PASS', 'own:PASS'],
    );
  });

  it('slirp4netns never outlives its step: not when the step ends, nor when the orchestrator and its spawn helper are SIGKILLed', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [scriptTask('sleeper', 'touch started; sleep 300', 'test -e started', { max_attempts: 1, timeout_s: 600 })],
    });
    const running = cli(['run', file, '--home', home, '--no-dashboard']);
    const orchestrator = running.pid as number;
    await waitFor(path.join(dir, 'w', 'sleeper', 'started'));
    // The spawn helper is the orchestrator's child running perl or node; slirp4netns is the helper's child.
    let helper = 0;
    let stacks: number[] = [];
    for (let i = 0; i < 50 && stacks.length === 0; i++) {
      for (const comm of ['perl', 'node']) {
        for (const h of childrenNamed(orchestrator, comm)) {
          const s = childrenNamed(h, 'slirp4netns');
          if (s.length) [helper, stacks] = [h, s];
        }
      }
      if (!stacks.length) await sleep(100);
    }
    assert.equal(stacks.length, 1, 'no slirp4netns under the spawn helper while the step ran');
    process.kill(orchestrator, 'SIGKILL');
    process.kill(helper, 'SIGKILL');
    await running;
    const until = Date.now() + 10000;
    while (stacks.some(alive) && Date.now() < until) await sleep(100);
    assert.deepEqual(stacks.filter(alive), [], 'slirp4netns outlived the orchestrator and its spawn helper');
    // What reconcile does at the next start is not this test's: the stale run is left as a crash leaves it.
  });
});
