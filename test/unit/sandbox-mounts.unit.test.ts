import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import { bwrapCommand, hostSocketCovers, shownReadOnlyByRoot } from '../../extension/core/process/sandbox';
import { requireSandbox } from '../helpers/sandbox-env';
import { uncoveredDir } from '../helpers/uncovered';

// Fewer mounts for the same view (core/process/sandbox.ts): every bind costs bubblewrap a re-read of the mount table,
// so a read-only bind that only repeats `--ro-bind / /` is left out — and nothing else. Host socket places are covered
// at their real paths, once. Folders here are made outside /tmp, /var/tmp and /run, each a tmpfs of its own inside a
// sandbox (test/helpers/uncovered.ts).
describe('sandbox: mounts that repeat `--ro-bind / /` are left out, nothing else', () => {
  const made: string[] = [];
  const servers: net.Server[] = [];
  after(() => {
    for (const s of servers) s.close();
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });
  const mk = (prefix: string) => uncoveredDir(prefix);
  const roBinds = (args: string[]) => args.flatMap((a, i) => (a === '--ro-bind' ? [args[i + 2] as string] : []));

  it('a read-only path no other mount touches is not bound; one inside, above or around another mount, or via a link, is', () => {
    const root = mk('verdict-unit-mounts-');
    const dirs = ['plain', 'task', 'task/protected', 'outer', 'outer/writable', 'hidden', 'hidden/objects', 'real', 'sub-src', 'sub-at'];
    for (const d of dirs) fs.mkdirSync(path.join(root, d), { recursive: true });
    fs.symlinkSync(path.join(root, 'real'), path.join(root, 'link'));
    const at = (p: string) => path.join(root, p);
    const plan = {
      binary: '/usr/bin/bwrap',
      network: true,
      writable: [at('task'), at('outer/writable')],
      hidden: [at('hidden')],
      readOnly: [at('plain'), at('task/protected'), at('outer'), at('hidden/objects'), at('link'), at('sub-at')],
      substitute: [{ source: at('sub-src'), at: at('sub-at') }],
    };
    const { args } = bwrapCommand(plan, at('task'), '/bin/true', []);
    const bound = roBinds(args);
    assert.ok(!bound.includes(at('plain')), `plain is shown read-only by / already: ${args.join(' ')}`);
    // inside a writable folder (a protected check input), around a writable folder (the bind would cover it), under a
    // hidden tmpfs, through a symbolic link, or from another source: each keeps its bind.
    for (const kept of ['task/protected', 'outer', 'hidden/objects', 'link', 'sub-at'])
      assert.ok(bound.includes(at(kept)), `${kept} must stay bound: ${args.join(' ')}`);
    assert.equal(args[args.indexOf(at('sub-at')) - 1], at('sub-src'));
  });

  it('shownReadOnlyByRoot: the same path twice, /, /dev, /proc and what lies under a mount are never left out', () => {
    const root = mk('verdict-unit-mounts-');
    assert.equal(shownReadOnlyByRoot(root, [root]), true);
    assert.equal(shownReadOnlyByRoot(root, [root, root]), false);
    assert.equal(shownReadOnlyByRoot('/', ['/']), false);
    assert.equal(shownReadOnlyByRoot('/dev/shm', ['/dev/shm']), false);
    assert.equal(shownReadOnlyByRoot('/proc/sys', ['/proc/sys']), false);
    assert.equal(shownReadOnlyByRoot(path.join(root, 'missing'), [path.join(root, 'missing')]), false);
    assert.equal(shownReadOnlyByRoot(root, [root, path.dirname(root)]), false);
    assert.equal(shownReadOnlyByRoot(root, [root, path.join(root, 'x')]), false);
    assert.equal(shownReadOnlyByRoot(root, [root, `${root}-sibling`]), true);
  });

  it('inside bubblewrap, a path whose bind was left out is still read-only and is no mount of its own', async function () {
    const probe = await requireSandbox(this);
    const root = mk('verdict-unit-mounts-');
    fs.mkdirSync(path.join(root, 'admin'));
    fs.writeFileSync(path.join(root, 'admin', 'HEAD'), 'ref: refs/heads/main\n');
    fs.mkdirSync(path.join(root, 'task'));
    const script = [
      `grep -c " ${root}/admin " /proc/self/mountinfo`,
      `if echo x > ${root}/admin/HEAD; then echo WROTE-HEAD; fi`,
      `if touch ${root}/admin/planted; then echo WROTE-NEW; fi`,
      `if mv ${root}/admin ${root}/moved; then echo MOVED; fi`,
      'true',
    ].join('\n');
    const { file, args } = bwrapCommand(
      { binary: probe.binary, network: true, writable: [path.join(root, 'task')], readOnly: [path.join(root, 'admin')] },
      path.join(root, 'task'),
      '/bin/bash',
      ['-c', script],
    );
    assert.ok(!roBinds(args).includes(path.join(root, 'admin')));
    const r = await execa(file, args, { reject: false, all: true, stdin: 'ignore' });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(String(r.all), /^0$/m, 'no mount at the admin folder');
    assert.doesNotMatch(String(r.all), /WROTE|MOVED/, String(r.all));
    assert.match(String(r.all), /Read-only file system/);
    assert.equal(fs.readFileSync(path.join(root, 'admin', 'HEAD'), 'utf8'), 'ref: refs/heads/main\n');
    assert.equal(fs.existsSync(path.join(root, 'admin', 'planted')), false);
  });

  it('host sockets are covered at their real paths, once: a name through a linked folder (/var/run → /run) is resolved', async () => {
    const root = mk('verdict-unit-sockets-');
    fs.mkdirSync(path.join(root, 'run', 'user'), { recursive: true });
    fs.symlinkSync(path.join(root, 'run'), path.join(root, 'var-run'));
    const sock = path.join(root, 'run', 'docker.sock');
    const server = net.createServer((c) => c.end('root on the host\n'));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    fs.writeFileSync(path.join(root, 'run', 'user', 'bus'), '');
    const covers = hostSocketCovers(
      [path.join(root, 'run', 'user'), path.join(root, 'var-run', 'user'), path.join(root, 'missing')],
      [sock, path.join(root, 'var-run', 'docker.sock'), path.join(root, 'var-run', 'user', 'bus'), path.join(root, 'missing.sock')],
    );
    assert.deepEqual(covers, { dirs: [path.join(root, 'run', 'user')], files: [sock] });
  });

  it('inside bubblewrap, a socket covered at its real path cannot be reached through the linked name (the linked name made bwrap fail)', async function () {
    const probe = await requireSandbox(this);
    const root = mk('verdict-unit-sockets-');
    fs.mkdirSync(path.join(root, 'run'));
    fs.symlinkSync(path.join(root, 'run'), path.join(root, 'var-run'));
    const sock = path.join(root, 'run', 'docker.sock');
    const server = net.createServer((c) => c.end('root on the host\n'));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    const linked = path.join(root, 'var-run', 'docker.sock');
    const connect = `require("net").connect(${JSON.stringify(linked)}).on("data",(d)=>{console.log("REACHED",String(d));process.exit(0)}).on("error",(e)=>{console.log("refused",e.code);process.exit(0)})`;
    const base = ['--die-with-parent', '--unshare-user', '--unshare-pid', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc'];
    const covered = hostSocketCovers([], [linked]).files;
    assert.deepEqual(covered, [sock]);
    const r = await execa(probe.binary, [...base, ...covered.flatMap((f) => ['--ro-bind', '/dev/null', f]), '--', process.execPath, '-e', connect], {
      reject: false,
      all: true,
      stdin: 'ignore',
    });
    assert.equal(r.exitCode, 0, r.all);
    assert.match(String(r.all), /refused/);
    assert.doesNotMatch(String(r.all), /REACHED/);
    // What bwrapCommand asked before: the mount point through the link, which bubblewrap cannot make.
    const before = await execa(probe.binary, [...base, '--ro-bind', '/dev/null', linked, '--', 'true'], { reject: false, all: true, stdin: 'ignore' });
    assert.notEqual(before.exitCode, 0);
    assert.match(String(before.all), /Can't create file/);
  });
});
