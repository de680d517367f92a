import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';

// No set-id bits leave a step (core/process/set-id.ts). Run as root (CI, containers), a worker's
// `cp /bin/bash x; chmod 4755 x` left a set-uid root shell in the worktree or plain workdir after the run: any local
// user who could reach the folder became root. As another user it is that user's shell, for anyone.

/** Every regular file under `dir` (links not followed) with its set-uid or set-gid bit, relative, sorted. */
function setIdFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string) => {
    for (const e of fs.readdirSync(at, { withFileTypes: true })) {
      const abs = path.join(at, e.name);
      if (e.isDirectory()) walk(abs);
      else if (e.isFile() && fs.lstatSync(abs).mode & 0o6000) out.push(path.relative(dir, abs));
    }
  };
  walk(dir);
  return out.sort();
}

/** The worker's plants: a set-uid bash, a set-gid and a set-uid+gid copy of true, one in its scratch dir. */
const PLANT = [
  'cp /bin/bash x && chmod 4755 x',
  'cp /bin/true y && chmod 2755 y',
  'mkdir -p sub && cp /bin/true sub/z && chmod 6755 sub/z',
  'cp /bin/true "$TMPDIR/t" && chmod 4755 "$TMPDIR/t" || true',
  'ls -l x y sub/z > modes.txt',
  'echo ok > out.txt',
].join('\n');
/** The check plants one too, and must have seen the worker's bits still set (they are cleared after the step). */
const CHECK = 'cp /bin/true c && chmod 4755 c && test -s out.txt && grep -q "^-rwsr-xr-x" modes.txt';

describe('containment: no set-uid or set-gid file is left by a step (plain workdir and worktree)', function () {
  this.timeout(180000);

  before(async function () {
    await requireSandbox(this);
    if (process.getuid?.() !== 0) console.log("      (not root: the planted files are this user's, the bits still count)");
  });

  it("plain mode: the worker's and the check's set-id files are cleared after their steps, and a note names them", async () => {
    const dir = tempDir();
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('suid', PLANT, CHECK, { max_attempts: 1 })] });
    const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard'], { env: { HOME: path.join(dir, 'user-home') } });
    assert.equal(r.exitCode, 0, r.all);
    const taskDir = path.join(dir, 'w', 'suid');
    assert.deepEqual(setIdFiles(taskDir), [], `set-id files left in ${taskDir}`);
    assert.equal(fs.statSync(path.join(taskDir, 'x')).mode & 0o777, 0o755, 'only the set-id bits were cleared');
    assert.match(
      r.all ?? '',
      new RegExp(`the worker left set-uid/set-gid files; their set-id bits were cleared: .*${taskDir}/sub/z.*${taskDir}/x, ${taskDir}/y`),
    );
    assert.match(r.all ?? '', new RegExp(`the check left set-uid/set-gid files; their set-id bits were cleared: ${taskDir}/c`));
  });

  it("worktree mode: none in the worktree (nor the worker's object dir) after the run; the commit holds plain executables", async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const plant = `${PLANT}\ncp /bin/true "$GIT_OBJECT_DIRECTORY/planted" && chmod 4755 "$GIT_OBJECT_DIRECTORY/planted"`;
    const file = writeManifest(repo, { worktrees: true, tasks: [scriptTask('suid', plant, CHECK, { max_attempts: 1 })] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard'], { env: { HOME: path.join(dir, 'user-home') } });
    assert.equal(r.exitCode, 0, r.all);
    const row = readRows(home)[0];
    assert.equal(row?.verdict, 'PASS', r.all);
    const worktrees = path.join(home, 'worktrees');
    assert.deepEqual(setIdFiles(worktrees), [], 'set-id files left under VERDICT_HOME/worktrees (the worktree, the object dir)');
    assert.match(git(repo, 'ls-tree', String(row?.branch), 'x'), /^100755 blob /);
  });

  it('--no-sandbox: the seal clears them in the task dir', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('suid', PLANT, 'test -s out.txt', { max_attempts: 1 })] });
    const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard', '--no-sandbox'], { env: { HOME: path.join(dir, 'user-home') } });
    assert.equal(r.exitCode, 0, r.all);
    assert.deepEqual(setIdFiles(path.join(dir, 'w', 'suid')), []);
    assert.match(r.all ?? '', /the worker left set-uid\/set-gid files; their set-id bits were cleared: /);
  });
});
