import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { bwrapCommand } from '../../extension/core/process/sandbox';

// What a sandboxed step sees of /tmp (core/process/sandbox.ts): an empty tmpfs, read-only once the mounts are made,
// showing only the /tmp entries the step names — never a socket, nor a user's socket folder, even when named.
describe('sandbox: /tmp shows only what the step names', () => {
  const made: string[] = [];
  const servers: net.Server[] = [];
  after(() => {
    for (const s of servers) s.close();
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });
  const mk = (prefix: string) => {
    const d = fs.mkdtempSync(path.join('/tmp', prefix));
    made.push(d);
    return d;
  };

  it('binds back the named entries read-only, skips sockets, socket folders and missing entries, then remounts /tmp read-only', async () => {
    const task = mk('verdict-unit-task-');
    const tool = mk('verdict-unit-tool-');
    const envDir = mk('verdict-unit-env-');
    const sshDir = mk('ssh-verdict-unit-');
    const link = `${tool}-link`;
    fs.symlinkSync(tool, link);
    made.push(link);
    const sock = `/tmp/verdict-unit-${process.pid}.sock`;
    made.push(sock);
    const server = net.createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    const { args } = bwrapCommand(
      { binary: '/usr/bin/bwrap', writable: [task], network: true },
      task,
      '/bin/bash',
      ['-c', `cat ${link}/x ${sock} ${sshDir}/agent /tmp/verdict-unit-missing-${process.pid}/y`],
      [],
      { PATH: `/usr/bin:${envDir}/bin`, SSH_AUTH_SOCK: `${sshDir}/agent` },
    );
    const line = args.join(' ');
    assert.ok(args.indexOf('/tmp') > args.indexOf('--proc'), line);
    assert.match(line, /--tmpfs \/tmp /);
    for (const shown of [task, tool, envDir]) assert.ok(line.includes(`--ro-bind ${shown} ${shown}`), `${shown} not shown: ${line}`);
    assert.ok(line.includes(`--symlink ${tool} ${link}`), line);
    for (const hidden of [sock, sshDir, 'verdict-unit-missing'])
      assert.ok(!line.includes(`--ro-bind ${hidden}`) && !line.includes(`--ro-bind /tmp/${hidden}`), `${hidden} shown: ${line}`);
    // The writable task dir is bound after its read-only entry, and /tmp is made read-only after every mount.
    assert.ok(line.indexOf(`--bind ${task} ${task}`) > line.indexOf(`--ro-bind ${task} ${task}`), line);
    const remounts = args.flatMap((a, i) => (a === '--remount-ro' ? [i] : []));
    assert.ok(remounts.length >= 1 && remounts.every((i, n) => i === args.indexOf('--chdir') - 2 * (remounts.length - n)), line);
    assert.ok(
      remounts.some((i) => args[i + 1] === '/tmp'),
      line,
    );
  });
});
