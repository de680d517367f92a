import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { requireSandbox } from '../helpers/sandbox-env';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, writeManifest } from '../helpers/fixtures';
import { uncoveredDir } from '../helpers/uncovered';

// The check's sandbox no longer binds the worktree's admin folder read-only when `--ro-bind / /` already shows it so
// (core/process/sandbox.ts shownReadOnlyByRoot: one re-read of the mount table less per check). A hostile check must
// still find it read-only. The repository lies outside /tmp, /var/tmp and /run (test/helpers/uncovered.ts): under those
// (each a tmpfs of its own in a sandbox) the bind is kept, and nothing would be tested. And `--dev`, kept for its devpts (sandbox.ts: what a sandbox costs), must show
// no device of the host.
describe('containment: what the sandbox leaves out stays out of reach (the repeated read-only bind, host devices)', function () {
  this.timeout(120000);
  const made: string[] = [];
  after(() => {
    for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  });

  it('HEAD, a new file, config.worktree, the folder itself: all refused (Read-only file system); no mount of its own', async function () {
    await requireSandbox(this);
    const dir = uncoveredDir('verdict-e2e-mounts-');
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': 'original\n' });
    const check = [
      'gd=$(git rev-parse --absolute-git-dir)',
      'echo "admin: $gd"',
      'echo "mounts at it: $(grep -c " $gd " /proc/self/mountinfo)"',
      'try() { if eval "$1" 2>>attempts.log; then echo "WROTE: $1"; else echo "refused: $1"; fi; }',
      'try \'echo "ref: refs/heads/evil" > "$gd/HEAD"\'',
      'try \'touch "$gd/planted"\'',
      'try \'printf "[core]\\n\\tfsmonitor = touch /var/tmp/pwned\\n" > "$gd/config.worktree"\'',
      'try \'mv "$gd" "$gd.moved"\'',
      'cat attempts.log',
      'test -s out.txt',
    ].join('\n');
    const file = writeManifest(dir, { worktrees: true, repo, tasks: [scriptTask('t1', 'echo ok > out.txt', check, { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const userHome = path.join(dir, 'user-home');
    fs.mkdirSync(userHome);
    const admin = path.join(repo, '.git', 'worktrees');
    const r = await cli(['run', file, '--home', home, '--no-dashboard'], { env: { HOME: userHome } });
    assert.equal(r.exitCode, 0, r.all);
    const row = readRows(home)[0];
    const out = String(row?.check_output);
    assert.equal(row?.verdict, 'PASS', out);
    assert.match(out, new RegExp(`admin: ${admin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/t1`), out);
    assert.match(out, /mounts at it: 0/, out);
    assert.doesNotMatch(out, /WROTE:/, out);
    assert.equal((out.match(/refused:/g) ?? []).length, 4, out);
    assert.match(out, /Read-only file system/, out);
    assert.equal(fs.existsSync(path.join(admin, 't1', 'planted')), false);
    assert.equal(fs.existsSync(path.join(admin, 't1', 'config.worktree')), false);
    assert.equal(fs.existsSync('/var/tmp/pwned'), false);
    assert.match(String(row?.branch), /t1$/);
    assert.equal(git(repo, 'show', `${String(row?.branch)}:out.txt`), 'ok');
  });

  it("/dev holds the usual nodes and nothing of the host: no disk, kvm, loop or host pty; /dev/shm is the step's own", async function () {
    await requireSandbox(this);
    const dir = fs.realpathSync(fs.mkdtempSync(path.join('/var/tmp', 'verdict-e2e-dev-')));
    made.push(dir);
    const leak = `verdict-e2e-leak-${process.pid}`;
    const spec = [
      'ls -A /dev | tr "\\n" " " > devlist.txt',
      'ls -A /dev/pts | tr "\\n" " " > ptslist.txt',
      'for d in /dev/kvm /dev/vda /dev/sda /dev/nvme0n1 /dev/loop0 /dev/loop-control /dev/tty0 /dev/console /dev/mem /dev/fuse /dev/pts/0 /dev/pts/1; do [ -e "$d" ] && echo "PRESENT $d"; done > present.txt',
      `echo secret > /dev/shm/${leak} && echo "shm written" > shm.txt`,
      'echo ok > out.txt',
    ].join('\n');
    const check = `cat devlist.txt; echo; cat ptslist.txt; echo; cat present.txt shm.txt; echo "check shm: [$(ls -A /dev/shm)]"; test -s out.txt`;
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('t1', spec, check, { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const userHome = path.join(dir, 'user-home');
    fs.mkdirSync(userHome);
    const r = await cli(['run', file, '--home', home, '--no-dashboard'], { env: { HOME: userHome } });
    assert.equal(r.exitCode, 0, r.all);
    const row = readRows(home)[0];
    const out = String(row?.check_output);
    assert.equal(row?.verdict, 'PASS', out);
    const lines = out.split('\n');
    assert.deepEqual(
      lines[0]?.trim().split(' ').sort(),
      ['core', 'fd', 'full', 'null', 'ptmx', 'pts', 'random', 'shm', 'stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero'],
      out,
    );
    assert.equal(lines[1]?.trim(), 'ptmx', out);
    assert.doesNotMatch(out, /PRESENT/, out);
    assert.match(out, /shm written/, out);
    assert.match(out, /check shm: \[\]/, out);
    assert.equal(fs.existsSync(`/dev/shm/${leak}`), false);
  });
});
