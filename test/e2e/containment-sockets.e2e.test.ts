import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { uncoveredDir } from '../helpers/uncovered';

// No unix socket of the host is reachable from a step (core/process/sandbox-view.ts). A read-only bind does
// not stop connect(): a worker reached sockets a host service had under /run, /var/tmp and $HOME. Here a test service
// listens in each place a host's sockets live — /run (as root; /run/user/<uid> too), /var/tmp, a home outside the
// temporary folders, an ssh-agent's socket in ~/.ssh, and a folder the step names (the clone's own, bound back) — and
// a worker, its check and a reviewer each try every one. Two sockets the user's config declares (`sockets`) are the
// control: every step reaches them, so "refused" is the sandbox's doing. As the unprivileged user /run cannot be
// written: the /run places go in the folder under /run that VERDICT_TEST_RUN_DIR names (the unprivileged CI pass,
// .ci/unprivileged, makes one the user owns, as a service's folder would be), else they are left out (said in the
// test's output); the others are the same.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A unix socket server that counts the connections it accepts. */
class Service {
  hits = 0;
  private readonly server = net.createServer((c) => {
    this.hits++;
    c.on('error', () => undefined);
    c.end('hello\n');
  });
  constructor(
    readonly label: string,
    readonly path: string,
  ) {}
  listen(): Promise<void> {
    fs.mkdirSync(path.dirname(this.path), { recursive: true });
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.path, resolve);
    });
  }
  close(): void {
    this.server.close();
  }
}

/** A probe: tries each socket given, one line each: `<path> REACHED` or `<path> refused <error>`. */
const PROBE = `import socket, sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(p)
        print(p, 'REACHED', s.recv(10))
    except Exception as e:
        print(p, 'refused', type(e).__name__)
    finally:
        s.close()
`;

/** Makes `dir` and returns it, or null when this user may not make it (as the unprivileged user, under /run). */
function tryMkdir(dir: string): string | null {
  try {
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  } catch {
    return null;
  }
}

// Taken out of the environment the runs inherit: a step is shown a folder under /run that its environment names
// (core/process/sandbox-view.ts), which would show the very folder the test's services are in.
const GIVEN_RUN_DIR = process.env.VERDICT_TEST_RUN_DIR;
delete process.env.VERDICT_TEST_RUN_DIR;

/**
 * A new folder `/run/<name>`, or, where this user cannot make one, `<VERDICT_TEST_RUN_DIR>/<name>` when that names a
 * folder under /run this user can write; null when neither can be made.
 */
function runFolder(name: string): string | null {
  const given = GIVEN_RUN_DIR;
  return tryMkdir(`/run/${name}`) ?? (given && path.resolve(given).startsWith('/run/') ? tryMkdir(path.join(given, name)) : null);
}

describe('containment: no unix socket of the host is reachable from a step (worker, check, reviewer)', function () {
  this.timeout(180000);
  const services: Service[] = [];
  const cleanup: string[] = [];
  after(() => {
    for (const s of services) s.close();
    for (const d of cleanup.reverse()) fs.rmSync(d, { recursive: true, force: true });
  });

  before(async function () {
    await requireSandbox(this);
  });

  /** The places a host's sockets live, each with a listening test service; `declared` ones are in the config's `sockets`. */
  async function hostServices(dir: string, userHome: string): Promise<{ hostile: Service[]; declared: Service[] }> {
    const tag = `${process.pid}-${path.basename(dir)}`;
    const varTmp = fs.mkdtempSync('/var/tmp/verdict-sock-');
    cleanup.push(varTmp);
    const hostile = [
      new Service('/var/tmp', path.join(varTmp, 'svc.sock')),
      new Service('$HOME', path.join(userHome, 'svc', 'svc.sock')),
      new Service('~/.ssh agent', path.join(userHome, '.ssh', 'agent.sock')),
      // In a folder the step names (its run's own temporary folder, bound back over the empty /tmp).
      new Service('a named folder', path.join(dir, 'app.sock')),
    ];
    const run = runFolder(`verdict-test-${tag}`);
    if (run) {
      cleanup.push(run);
      hostile.push(new Service('/run', path.join(run, 'svc.sock')));
    }
    const uid = process.getuid?.() ?? 0;
    const runUserMade = !fs.existsSync(`/run/user/${uid}`);
    const runUser = tryMkdir(`/run/user/${uid}/verdict-test-${tag}`);
    if (runUser) {
      cleanup.push(runUserMade ? `/run/user/${uid}` : runUser);
      hostile.push(new Service('/run/user/<uid>', path.join(runUser, 'bus')));
    }
    if (!run || !runUser) console.log(`      (this user cannot write /run: the /run${runUser ? '' : ' and /run/user/<uid>'} places are left out here)`);
    const declared = [
      new Service('declared, absolute', path.join(varTmp, 'declared.sock')),
      new Service('declared, ~/', path.join(userHome, 'declared', 'agent.sock')),
    ];
    for (const s of [...hostile, ...declared]) {
      await s.listen();
      services.push(s);
    }
    return { hostile, declared };
  }

  it('a socket under /run, /run/user/<uid>, /var/tmp, $HOME, ~/.ssh or a named folder: refused to all three; declared ones reached', async () => {
    const dir = tempDir();
    const userHome = uncoveredDir('user-home-');
    const { hostile, declared } = await hostServices(dir, userHome);
    const probe = path.join(dir, 'probe.py');
    fs.writeFileSync(probe, PROBE);
    const targets = [...hostile, ...declared].map((s) => s.path).join(' ');
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'review-probe'), `#!/bin/bash\npython3 ${probe} ${targets} >&2\necho '{"verdict": "approve", "concerns": []}'\n`, {
      mode: 0o755,
    });
    const config = path.join(dir, 'config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        engines: { probe: { binary: 'review-probe', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'probe-1' } },
        sockets: [declared[0]?.path, '~/declared/agent.sock'],
      }),
    );
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        scriptTask(
          'probe',
          `python3 ${probe} ${targets} > worker-probe.txt 2>&1; echo ok > out.txt`,
          `cat worker-probe.txt; python3 ${probe} ${targets}; test -s out.txt`,
          { max_attempts: 1, review: { engines: ['probe'] } },
        ),
      ],
    });
    const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--config', config, '--no-dashboard'], {
      env: { HOME: userHome, SSH_AUTH_SOCK: path.join(userHome, '.ssh', 'agent.sock'), PATH: `${bin}:${process.env.PATH}` },
    });
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      readRows(path.join(dir, 'home')).map((row) => `${row.step}:${row.verdict}`),
      ['work:PASS', 'review:PASS'],
    );
    const worker = fs.readFileSync(path.join(dir, 'w', 'probe', 'worker-probe.txt'), 'utf8');
    const reached = hostile.filter((s) => s.hits > 0).map((s) => `${s.label} (${s.hits})`);
    assert.deepEqual(reached, [], `host sockets reached:\n${worker}`);
    for (const s of hostile) assert.match(worker, new RegExp(`${s.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} refused`), worker);
    // The control: the worker, the check and the reviewer each reached both declared sockets.
    assert.deepEqual(
      declared.map((s) => s.hits),
      [3, 3],
      `declared sockets not reached by every step:\n${worker}`,
    );
  });

  it('a socket bound after the step started, under /run or /var/tmp: not there either', async () => {
    const dir = tempDir();
    const userHome = uncoveredDir('user-home-');
    // Straight in /var/tmp (an entry of a temporary folder that the step names is shown whole, with what is made in it).
    const lateVarTmp = `/var/tmp/verdict-late-${process.pid}-${path.basename(dir)}.sock`;
    cleanup.push(lateVarTmp);
    const late = [new Service('/var/tmp, late', lateVarTmp)];
    const run = runFolder(`verdict-test-late-${process.pid}-${path.basename(dir)}`);
    if (run) {
      cleanup.push(run);
      late.push(new Service('/run, late', path.join(run, 'late.sock')));
    } else console.log('      (this user cannot write /run: only /var/tmp here)');
    const probe = path.join(dir, 'probe.py');
    fs.writeFileSync(probe, PROBE);
    const spec = ['touch started', 'while [ ! -e go ]; do sleep 0.1; done', `python3 ${probe} ${late.map((s) => s.path).join(' ')} > probe.txt 2>&1`].join(
      '\n',
    );
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('late', spec, 'cat probe.txt; ! grep -q REACHED probe.txt', { max_attempts: 1 })] });
    const taskDir = path.join(dir, 'w', 'late');
    const running = cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard'], { env: { HOME: userHome } });
    while (!fs.existsSync(path.join(taskDir, 'started'))) await sleep(100);
    for (const s of late) {
      await s.listen();
      services.push(s);
    }
    fs.writeFileSync(path.join(taskDir, 'go'), '');
    const r = await running;
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(
      late.map((s) => s.hits),
      late.map(() => 0),
      fs.readFileSync(path.join(taskDir, 'probe.txt'), 'utf8'),
    );
  });
});
