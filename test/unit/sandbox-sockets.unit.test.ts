import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import { bwrapCommand } from '../../extension/core/process/sandbox';
import { coveredRoots, mountPoints, namedBacks, socketsToCover, unixSocketPaths, viewOf, type ViewMount } from '../../extension/core/process/sandbox-view';
import { requireSandbox } from '../helpers/sandbox-env';
import { uncoveredDir } from '../helpers/uncovered';

// What a sandbox shows of the host's sockets (core/process/sandbox-view.ts): the folders where sockets are made are
// empty tmpfs showing back only what the step names, and every socket bound on the host that would still show is
// covered where it lies.
describe("sandbox: no host socket shows in a step's view", () => {
  const made: string[] = [];
  const servers: net.Server[] = [];
  after(() => {
    for (const s of servers) s.close();
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });
  const listen = async (sock: string) => {
    fs.mkdirSync(path.dirname(sock), { recursive: true });
    const server = net.createServer((c) => {
      c.on('error', () => undefined);
      c.end('hello\n');
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    return sock;
  };

  it('unixSocketPaths: the absolute paths of /proc/net/unix, once; abstract, unnamed and relative ones left out', () => {
    const table = [
      'Num       RefCount Protocol Flags    Type St Inode Path',
      '0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/dbus/system_bus_socket',
      '0000000000000000: 00000003 00000000 00000000 0001 03 12346 /run/dbus/system_bus_socket',
      '0000000000000000: 00000002 00000000 00010000 0001 01 12347 @/tmp/.X11-unix/X0',
      '0000000000000000: 00000003 00000000 00000000 0001 03 12348',
      '0000000000000000: 00000002 00000000 00010000 0005 01 12349 /home/me/a b/with space.sock',
      '0000000000000000: 00000002 00000000 00010000 0001 01 12350 relative.sock',
      'ffff8881: 00000002 00000000 00000000 0002 01 12351 /run/systemd/notify',
    ].join('\n');
    assert.deepEqual(unixSocketPaths(table), ['/run/dbus/system_bus_socket', '/home/me/a b/with space.sock', '/run/systemd/notify']);
  });

  it('mountPoints: field 5 of the mounts that can be one file (root not /), octal escapes undone; /proc, /sys, /dev left out', () => {
    const info = [
      '21 26 0:20 / /proc rw,relatime - proc proc rw',
      '26 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw',
      '30 26 0:25 /docker.sock /var/run/docker.sock rw - tmpfs tmpfs rw',
      '31 26 0:26 /agent\\040dir/s /mnt/my\\040sock rw - ext4 /dev/sdb1 rw',
      '32 26 0:27 / /mnt/disk rw - ext4 /dev/sdc1 rw',
      '33 23 0:28 /x /dev/shm/y rw - tmpfs tmpfs rw',
    ].join('\n');
    assert.deepEqual(mountPoints(info), ['/var/run/docker.sock', '/mnt/my sock']);
  });

  it('viewOf: the deepest mount at or above a path decides, the later of two at one place; none: shown', () => {
    const mounts: ViewMount[] = [
      { dest: '/tmp', view: 'hidden' },
      { dest: '/tmp/clone', view: 'shown' },
      { dest: '/tmp/clone/task', view: 'own' },
      { dest: '/x', view: 'shown' },
      { dest: '/x', view: 'hidden' },
    ];
    assert.equal(viewOf(mounts, '/tmp/other/s.sock'), 'hidden');
    assert.equal(viewOf(mounts, '/tmp/clone/s.sock'), 'shown');
    assert.equal(viewOf(mounts, '/tmp/clone/task/s.sock'), 'own');
    assert.equal(viewOf(mounts, '/tmp/clone-sibling/s.sock'), 'hidden');
    assert.equal(viewOf(mounts, '/x/s.sock'), 'hidden');
    assert.equal(viewOf(mounts, '/home/me/s.sock'), 'shown');
  });

  it('socketsToCover: sockets left shown, at their real paths; not hidden, own, declared, missing or a plain file', async () => {
    const root = uncoveredDir('verdict-unit-socks-');
    made.push(root);
    const shown = await listen(path.join(root, 'shown', 's.sock'));
    const viaLink = await listen(path.join(root, 'real', 'l.sock'));
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'link'));
    const hidden = await listen(path.join(root, 'hidden', 's.sock'));
    const own = await listen(path.join(root, 'own', 's.sock'));
    const declared = await listen(path.join(root, 'declared', 's.sock'));
    const inDeclared = await listen(path.join(root, 'decl-dir', 's.sock'));
    fs.writeFileSync(path.join(root, 'file.sock'), 'not a socket');
    const mounts: ViewMount[] = [
      { dest: path.join(root, 'hidden'), view: 'hidden' },
      { dest: path.join(root, 'own'), view: 'own' },
    ];
    const candidates = [
      shown,
      shown,
      path.join(root, 'link', 'l.sock'),
      hidden,
      own,
      declared,
      inDeclared,
      path.join(root, 'file.sock'),
      path.join(root, 'gone.sock'),
      'relative.sock',
      '/',
    ];
    assert.deepEqual(socketsToCover(candidates, mounts, [declared, path.join(root, 'decl-dir')]).sort(), [shown, viaLink].sort());
  });

  it("socketsToCover: a socket no capability-less step could reach (another user's 0700 folder, a socket it may not write) is left uncovered", async function () {
    if (process.getuid?.() !== 0) this.skip(); // making files of another user needs root
    const root = uncoveredDir('verdict-unit-socks-');
    made.push(root);
    const open = await listen(path.join(root, 'open', 's.sock'));
    const closed = await listen(path.join(root, 'closed', 's.sock'));
    const readOnly = await listen(path.join(root, 'ro', 's.sock'));
    fs.chownSync(path.join(root, 'closed'), 65534, 65534);
    fs.chmodSync(path.join(root, 'closed'), 0o700);
    fs.chownSync(readOnly, 65534, 65534);
    fs.chmodSync(readOnly, 0o755);
    assert.deepEqual(socketsToCover([open, closed, readOnly], []), [open]);
    fs.chmodSync(path.join(root, 'closed'), 0o711);
    assert.deepEqual(socketsToCover([open, closed, readOnly], []).sort(), [open, closed].sort(), 'searchable again: covered again');
  });

  it('namedBacks: /run shows only the exact paths named (never /run/user, a socket or a missing one); /var/tmp the named entry', () => {
    const run = coveredRoots().find((r) => r.names.includes('/run/'));
    const varTmp = coveredRoots().find((r) => r.names.includes('/var/tmp/'));
    if (!run || !varTmp) throw new Error('this machine has no /run or /var/tmp folder');
    const entry = fs.mkdtempSync('/var/tmp/verdict-unit-named-');
    made.push(entry);
    fs.mkdirSync(path.join(entry, 'deep'));
    const backs = namedBacks(coveredRoots(), [
      `cat ${entry}/deep/x`,
      `PATH=/usr/bin:/run/user/0/bin:/var/run/definitely-missing-${process.pid}`,
      `/run/../etc/passwd ${fs.existsSync('/run/lock') ? '/var/run/lock/x /run/lock' : ''}`,
    ]);
    assert.deepEqual(backs.get(varTmp.root), [{ path: entry, link: null }]);
    assert.deepEqual(
      backs.get(run.root),
      fs.existsSync('/run/lock') && fs.realpathSync('/run/lock') === path.join(run.root, 'lock') ? [{ path: path.join(run.root, 'lock'), link: null }] : [],
    );
  });

  it("inside bubblewrap: a host socket in a shown folder or in a named /tmp folder is refused; the step's own and a declared one reached", async function () {
    // One sandbox and four python3 starts: seconds each on a loaded machine, more than the unit tier's 30 s default.
    this.timeout(120000);
    const probe = await requireSandbox(this);
    const root = uncoveredDir('verdict-unit-socks-');
    made.push(root);
    const tmp = fs.mkdtempSync('/tmp/verdict-unit-socks-');
    made.push(tmp);
    const targets = [
      await listen(path.join(root, 'svc', 's.sock')),
      await listen(path.join(tmp, 'named.sock')),
      await listen(path.join(root, 'task', 'own.sock')),
    ];
    const declared = await listen(path.join(root, 'declared', 'd.sock'));
    const connect = `for p in ${[...targets, declared].join(' ')}; do python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(sys.argv[1], 'REACHED')" "$p" 2>/dev/null || echo "$p refused"; done`;
    const { file, args } = bwrapCommand(
      { binary: probe.binary, network: true, writable: [path.join(root, 'task')], sockets: [declared] },
      path.join(root, 'task'),
      '/bin/bash',
      ['-c', connect],
    );
    const r = await execa(file, args, { reject: false, all: true, stdin: 'ignore' });
    assert.equal(r.exitCode, 0, r.all);
    const out = String(r.all);
    assert.ok(out.includes(`${targets[0]} refused`) && out.includes(`${targets[1]} refused`), out);
    // The step's own writable folder is its own (a socket a step of the task made there is its own), and a declared one
    // is the user's choice: both reached — the probe works, so "refused" above is the sandbox's doing.
    assert.ok(out.includes(`${targets[2]} REACHED`) && out.includes(`${declared} REACHED`), out);
    assert.ok(args.includes(targets[0] as string) && args[args.indexOf(targets[0] as string) - 1] === '/dev/null', args.join(' '));
  });
});
