import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { listSpecialFiles, removeSpecialFiles } from '../../extension/core/git/special-files';
import { showPath } from '../../extension/core/fs/byte-names';
import { tempDir } from '../helpers/fixtures';
import { IN_PROCESS_ENTRIES } from '../../extension/core/fs/bounded-walk';

// git/special-files.ts: what git cannot record (FIFOs, sockets, device files) is found and removed by the exact bytes of
// its name, before any git reads the tree.

/** A Unix socket file at `file` (the server is closed at once; the file stays). */
async function socketAt(file: string): Promise<void> {
  const server = net.createServer();
  server.listen(file);
  await once(server, 'listening');
  // Closing a listening server unlinks its file; a copy of the inode under the name is what a careless worker leaves.
  fs.linkSync(file, `${file}.left`);
  server.close();
  await once(server, 'close');
  fs.renameSync(`${file}.left`, file);
}

describe('special files', () => {
  it('removes FIFOs, sockets and devices anywhere (a nested .git, a folder whose name is not UTF-8), never what a symlink names, and names them by their bytes', async () => {
    const dir = tempDir();
    const outside = tempDir();
    const oddDir = Buffer.concat([Buffer.from(`${dir}/odd`), Buffer.from([0x80]), Buffer.from('dir')]);
    fs.mkdirSync(oddDir);
    execFileSync('mkfifo', [path.join(dir, '.gitattributes'), path.join(outside, 'fifo')]);
    fs.mkdirSync(path.join(dir, 'sub/nested/.git'), { recursive: true });
    execFileSync('mkfifo', [path.join(dir, 'sub/nested/.git/HEAD')]);
    // mkfifo through bash: a name that is not UTF-8 cannot be one of our arguments.
    execFileSync('bash', ['-c', "mkfifo $'odd\\x80dir/.gitignore'"], { cwd: dir });
    await socketAt(path.join(dir, 'app.sock'));
    const root = process.getuid?.() === 0;
    if (root) execFileSync('mknod', [path.join(dir, 'null-dev'), 'c', '1', '3']);
    fs.writeFileSync(path.join(dir, 'keep.txt'), 'k\n');
    fs.symlinkSync(path.join(outside, 'fifo'), path.join(dir, 'link-to-fifo'));
    fs.symlinkSync(outside, path.join(dir, 'link-to-dir'));

    const removed = await removeSpecialFiles(dir);
    const want = ['.gitattributes', 'app.sock', ...(root ? ['null-dev'] : []), 'odd\x80dir/.gitignore', 'sub/nested/.git/HEAD'];
    assert.deepEqual(
      removed.map((f) => f.path.toString('latin1')),
      want,
    );
    assert.deepEqual(
      removed.map((f) => f.kind),
      ['FIFO', 'socket', ...(root ? ['character device'] : []), 'FIFO', 'FIFO'],
    );
    assert.equal(fs.existsSync(path.join(dir, '.gitattributes')), false);
    assert.equal(fs.existsSync(Buffer.concat([oddDir, Buffer.from('/.gitignore')])), false, 'removed by its exact name');
    assert.equal(fs.readFileSync(path.join(dir, 'keep.txt'), 'utf8'), 'k\n');
    assert.ok(fs.lstatSync(path.join(dir, 'link-to-fifo')).isSymbolicLink(), 'a symlink is a file git records: kept');
    assert.ok(fs.lstatSync(path.join(outside, 'fifo')).isFIFO(), 'what a symlink names is never touched');
    assert.match(listSpecialFiles(removed), /^FIFO \.gitattributes, socket app\.sock, .*FIFO "odd\\200dir\/\.gitignore", FIFO sub\/nested\/\.git\/HEAD$/);
    assert.deepEqual(await removeSpecialFiles(dir), [], 'nothing left');
  });

  it('a tree past the in-process budget is searched by find: the same files, by the same bytes; a symlink still not followed', async () => {
    const dir = tempDir();
    const outside = tempDir();
    fs.mkdirSync(path.join(dir, 'many'));
    for (let i = 0; i <= IN_PROCESS_ENTRIES; i++) fs.writeFileSync(path.join(dir, 'many', `f${i}`), '');
    fs.mkdirSync(path.join(dir, 'sub/nested/.git'), { recursive: true });
    execFileSync('mkfifo', [path.join(dir, 'sub/nested/.git/HEAD'), path.join(outside, 'fifo')]);
    execFileSync('bash', ['-c', "mkfifo $'odd\\x80name'"], { cwd: dir });
    await socketAt(path.join(dir, 'many', 'app.sock'));
    fs.symlinkSync(path.join(outside, 'fifo'), path.join(dir, 'link-to-fifo'));
    const removed = await removeSpecialFiles(dir);
    assert.deepEqual(
      removed.map((f) => `${f.kind} ${f.path.toString('latin1')}`),
      ['socket many/app.sock', 'FIFO odd\x80name', 'FIFO sub/nested/.git/HEAD'],
    );
    assert.ok(fs.lstatSync(path.join(outside, 'fifo')).isFIFO(), 'what a symlink names is never touched');
    assert.equal(fs.readdirSync(path.join(dir, 'many')).length, IN_PROCESS_ENTRIES + 1);
  });

  it('an overlay: only the upper layer is searched, and a whiteout (a deletion) is left alone', async () => {
    const merged = tempDir();
    const upper = tempDir();
    // What the upper layer holds: a FIFO the worker made (also seen in the merged view), and an entry that is not in
    // the merged view (a whiteout is a character device 0/0 there; a FIFO stands in for it without root).
    execFileSync('mkfifo', [path.join(upper, 'pipe'), path.join(merged, 'pipe'), path.join(upper, 'gone')]);
    execFileSync('mkfifo', [path.join(merged, 'only-in-lower-view')]);
    const removed = await removeSpecialFiles(merged, { upper });
    assert.deepEqual(
      removed.map((f) => f.path.toString()),
      ['pipe'],
    );
    assert.ok(fs.lstatSync(path.join(upper, 'gone')).isFIFO(), 'an upper entry the merged view does not show is not touched');
    assert.ok(fs.lstatSync(path.join(merged, 'only-in-lower-view')).isFIFO(), 'the lower layer is not searched');
  });

  it('showPath quotes a name as git does when it is not plain UTF-8 text', () => {
    assert.equal(showPath(Buffer.from('src/café.txt')), 'src/café.txt');
    assert.equal(showPath(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x74])), '"caf\\351.t"');
    assert.equal(showPath(Buffer.from('a\tb\n"c"\\')), '"a\\tb\\n\\"c\\"\\\\"');
    assert.equal(showPath(Buffer.concat([Buffer.from('é'), Buffer.from([0xc3])])), '"é\\303"', 'a cut sequence at the end');
  });
});
