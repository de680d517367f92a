import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from '../helpers/fixtures';
import { requireSandbox } from '../helpers/sandbox-env';
import { awaitSandboxSetups, isolateRunRoot, mountOverlay, overlayIdentity, readMountInfo, writableCopies } from '../../extension/core/git/overlay';
import { releaseOverlays, removeOverlayTree } from '../../extension/core/git/overlay-tree';
import { bwrapCommand } from '../../extension/core/process/sandbox';
import { requireOverlay } from '../helpers/overlay';

// Overlay trees come and go while other steps' sandboxes start (docs/trees.md). Every sandbox copies
// the host's mounts (`--ro-bind / /`), other tasks' overlays included, then remounts each copy read-only from the list
// it parsed; removing an overlay's mount point on the host (the task dir, at the end of its run) detaches those copies
// in every namespace, and a sandbox caught between its parse and its remount failed to start ("Unable to apply mount
// flags: remount …: No such file or directory"), spending an attempt of a task that did nothing wrong.

/** Mounts an overlay tree at `<runRoot>/<key>` laid out as prepare lays one out (git/worktree.ts checkOut). */
async function mountTree(runRoot: string, lower: string, key: string): Promise<string> {
  const dir = path.join(runRoot, key);
  const root = path.join(runRoot, '.overlay', key);
  const layers = { lower, upper: path.join(root, 'upper'), work: path.join(root, 'work') };
  for (const d of [dir, layers.upper, layers.work]) fs.mkdirSync(d, { recursive: true });
  await mountOverlay(layers, dir);
  return dir;
}

/** Runs argv; resolves with its exit code and stderr. */
function runSandbox(file: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** Whether process `pid` is `ancestor` or one of its descendants (its parent chain in /proc). */
function descendsFrom(pid: number, ancestor: number): boolean {
  for (let p = pid, hops = 0; p > 1 && hops < 100; hops++) {
    if (p === ancestor) return true;
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      p = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return false;
    }
  }
  return false;
}

/** The mountinfo lines of mounts at `dir` exactly. */
function mountsAt(dir: string): string[] {
  const real = fs.realpathSync(dir);
  return readMountInfo()
    .split('\n')
    .filter((l) => l.split(' ')[4] === real);
}

describe('overlay trees and starting sandboxes', function () {
  this.timeout(600000);

  /**
   * Starts 400 sandboxes (two at a time) while 40 trees stand and three lanes mount and remove trees under
   * `<home>/worktrees/run-race`, as prepare and the end of a run do. Returns bubblewrap's message of each that failed.
   */
  async function race(binary: string, home: string): Promise<string[]> {
    const runRoot = path.join(home, 'worktrees', 'run-race');
    const lower = path.join(runRoot, '.lower', 'c0');
    fs.mkdirSync(lower, { recursive: true });
    fs.writeFileSync(path.join(lower, 'f.txt'), 'lower\n');
    // As lowerLayer does before the run's first mount.
    await isolateRunRoot(runRoot);
    const own = path.join(home, 'own-task');
    fs.mkdirSync(own, { recursive: true });
    // Standing trees (tasks still working) lengthen each sandbox's remount list; churning ones end and start again.
    for (let i = 0; i < 40; i++) await mountTree(runRoot, lower, `stand-${i}`);
    let stop = false;
    let churned = 0;
    const churn = async (lane: number) => {
      for (let i = 0; !stop; i++) {
        const dir = await mountTree(runRoot, lower, `churn-${lane}-${i % 3}`);
        await removeOverlayTree(null, null, dir);
        churned++;
      }
    };
    const lanes = [0, 1, 2].map(churn);
    const failures: string[] = [];
    const SANDBOXES = 400;
    try {
      // A step's sandbox as the worker's is made: its own folder writable, VERDICT_HOME hidden.
      const cmd = bwrapCommand({ binary, writable: [own], network: false, hidden: [home] }, own, '/bin/true', []);
      for (let n = 0; n < SANDBOXES; n += 2) {
        for (const r of await Promise.all([runSandbox(cmd.file, cmd.args), runSandbox(cmd.file, cmd.args)])) {
          if (r.code !== 0) failures.push(r.stderr.trim() || `exit ${r.code}`);
        }
      }
    } finally {
      stop = true;
      await Promise.allSettled(lanes);
      await releaseOverlays(runRoot);
    }
    console.log(`      ${SANDBOXES} sandboxes while ${churned} overlay trees ended: ${failures.length} failed to start`);
    assert.ok(churned > 10, `the trees churned (${churned})`);
    assert.equal(mountsAt(runRoot).length, 0, 'nothing stays mounted at the run folder');
    return failures;
  }

  it("no sandbox fails to start while other tasks' overlay trees are mounted and removed", async function () {
    const { binary } = await requireSandbox(this);
    await requireOverlay(this);
    const dir = tempDir();
    try {
      const failures = await race(binary, path.join(dir, 'home'));
      assert.deepEqual(failures, [], `sandboxes that failed to start:\n${failures.slice(0, 5).join('\n')}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the same where the host's mounts are shared (systemd): the run folder is made private, unmounts reach no sandbox", async function () {
    const { binary } = await requireSandbox(this);
    await requireOverlay(this);
    // A folder with peers, as / is under systemd: bwrap's copies become its slaves, so unmounts below it reach them.
    const dir = tempDir();
    execFileSync('mount', ['--bind', dir, dir]);
    execFileSync('mount', ['--make-shared', dir]);
    try {
      assert.match(readMountInfo(), new RegExp(`${dir} [^\n]* shared:`), 'the folder has peers');
      const failures = await race(binary, path.join(dir, 'home'));
      assert.deepEqual(failures, [], `sandboxes that failed to start:\n${failures.slice(0, 5).join('\n')}`);
    } finally {
      execFileSync('umount', ['-R', dir]);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the run folder is made private once, only where it has peers, never through a symlink, unseen by sandboxes started before; the run's end undoes it", async function () {
    await requireOverlay(this);
    const dir = tempDir();
    try {
      // Private already (no peers): nothing is mounted.
      const plain = path.join(dir, 'plain', 'worktrees', 'r1');
      fs.mkdirSync(plain, { recursive: true });
      if (
        !/ shared:/.test(
          readMountInfo()
            .split('\n')
            .find((l) => l.split(' ')[4] === '/') ?? '',
        )
      ) {
        await isolateRunRoot(plain);
        assert.deepEqual(mountsAt(plain), [], 'no bind where the holding mount has no peers');
      }
      const shared = path.join(dir, 'shared');
      fs.mkdirSync(shared);
      execFileSync('mount', ['--bind', shared, shared]);
      execFileSync('mount', ['--make-shared', shared]);
      const runRoot = path.join(shared, 'worktrees', 'r1');
      fs.mkdirSync(runRoot, { recursive: true });
      fs.writeFileSync(path.join(runRoot, 'kept.txt'), 'kept\n');
      // Hostile: a sandbox that started before (and hides no VERDICT_HOME of this run) receives what propagates.
      const { binary } = await requireSandbox(this);
      const early = path.join(dir, 'early');
      fs.mkdirSync(early);
      const cmd = bwrapCommand({ binary, writable: [early], network: false }, early, '/bin/sh', [
        '-c',
        `while [ ! -e ${early}/go ]; do sleep 0.05; done; ls -A ${runRoot} > ${early}/seen.txt; { echo evil > ${runRoot}/evil.txt; } 2> ${early}/err.txt; touch ${early}/done; sleep 600`,
      ]);
      const step = spawn(cmd.file, cmd.args, { stdio: 'ignore' });
      try {
        await Promise.all([isolateRunRoot(runRoot), isolateRunRoot(runRoot), isolateRunRoot(runRoot)]);
        const at = mountsAt(runRoot);
        assert.equal(at.length, 2, 'one tmpfs and the folder on it, however many tasks asked');
        assert.ok(
          at.every((l) => !/ shared:/.test(l)),
          'private',
        );
        assert.equal(fs.readFileSync(path.join(runRoot, 'kept.txt'), 'utf8'), 'kept\n', 'the folder shows what it held');
        fs.writeFileSync(path.join(runRoot, 'later.txt'), 'later\n');
        fs.writeFileSync(path.join(early, 'go'), '');
        while (!fs.existsSync(path.join(early, 'done'))) await sleep(20);
        assert.equal(fs.readFileSync(path.join(early, 'seen.txt'), 'utf8'), '', 'the earlier sandbox sees an empty folder');
        assert.match(fs.readFileSync(path.join(early, 'err.txt'), 'utf8'), /Read-only file system/);
        assert.equal(fs.existsSync(path.join(runRoot, 'evil.txt')), false);
      } finally {
        step.kill('SIGKILL');
      }
      await releaseOverlays(runRoot);
      assert.equal(fs.readFileSync(path.join(runRoot, 'later.txt'), 'utf8'), 'later\n', 'what was written through it is in the folder');
      assert.deepEqual(mountsAt(runRoot), [], 'the end of the run unmounts it');
      // Hostile: the run folder replaced by a symlink to elsewhere; the bind must not follow it.
      const elsewhere = path.join(shared, 'elsewhere');
      fs.mkdirSync(elsewhere);
      fs.rmSync(runRoot, { recursive: true });
      fs.symlinkSync(elsewhere, runRoot);
      await assert.rejects(isolateRunRoot(runRoot), /is a symlink/);
      assert.deepEqual(mountsAt(elsewhere), [], "nothing is mounted at the symlink's target");
    } finally {
      for (const p of [path.join(dir, 'shared', 'worktrees', 'r1'), path.join(dir, 'shared')]) {
        try {
          execFileSync('umount', ['-R', p], { stdio: 'ignore' });
        } catch {
          // not mounted
        }
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a namespace that keeps a writable copy for good only delays the removal; then the tree is gone', async function () {
    await requireOverlay(this);
    const home = path.join(tempDir(), 'home');
    const runRoot = path.join(home, 'worktrees', 'run-hold');
    const lower = path.join(runRoot, '.lower', 'c0');
    fs.mkdirSync(lower, { recursive: true });
    const dir = await mountTree(runRoot, lower, 'a');
    const identity = overlayIdentity(readMountInfo(), dir);
    assert.ok(identity, 'the tree is mounted');
    // Not a sandbox: a mount namespace of its own (a copy of the host's, private), alive until killed.
    const holder = spawn('unshare', ['--mount', '--propagation', 'private', 'sleep', '600'], { stdio: 'ignore' });
    try {
      while (writableCopies(identity).length === 0) await sleep(20);
      assert.equal(await awaitSandboxSetups(identity, 200), false, 'the wait ends when its time runs out');
      assert.equal(await removeOverlayTree(null, null, dir), 'unmounted');
      assert.equal(fs.existsSync(dir), false, 'the task dir is removed');
      assert.equal(fs.existsSync(path.join(runRoot, '.overlay', 'a')), false, 'its upper layer is removed');
      // Removing the mount point detached the holder's copy too.
      assert.deepEqual(writableCopies(identity), []);
    } finally {
      holder.kill('SIGKILL');
      await releaseOverlays(runRoot);
      fs.rmSync(path.dirname(home), { recursive: true, force: true });
    }
  });

  it("hostile: a step can neither reach another task's tree nor hold a writable copy of it (which would stall its removal)", async function () {
    const { binary } = await requireSandbox(this);
    await requireOverlay(this);
    const home = path.join(tempDir(), 'home');
    const runRoot = path.join(home, 'worktrees', 'run-hostile');
    const lower = path.join(runRoot, '.lower', 'c0');
    fs.mkdirSync(lower, { recursive: true });
    fs.writeFileSync(path.join(lower, 'f.txt'), 'lower\n');
    const other = await mountTree(runRoot, lower, 'victim');
    const identity = overlayIdentity(readMountInfo(), other);
    assert.ok(identity);
    const own = path.join(home, 'own-task');
    fs.mkdirSync(own, { recursive: true });
    const script = [
      `ls -A ${other} > ${own}/seen.txt 2>&1`,
      `echo evil > ${other}/f.txt 2>> ${own}/err.txt`,
      // Its own user and mount namespace: root there, over copies the sandbox locked (the tmpfs that hides VERDICT_HOME
      // cannot be taken off, nor a read-only copy made writable).
      `unshare --user --map-root-user --mount sh -c 'umount -l ${home}; umount ${home}; mount -o remount,bind,rw ${other}; mount -o remount,bind,rw /; echo evil > ${other}/f.txt; sleep 600' 2>> ${own}/err.txt &`,
      `mount -o remount,bind,rw ${other} 2>> ${own}/err.txt`,
      `sleep 1; touch ${own}/ready; wait`,
    ].join('\n');
    const cmd = bwrapCommand({ binary, writable: [own], network: false, hidden: [home] }, own, '/bin/sh', ['-c', script]);
    const step = spawn(cmd.file, cmd.args, { stdio: 'ignore' });
    try {
      while (!fs.existsSync(path.join(own, 'ready'))) await sleep(20);
      assert.doesNotMatch(fs.readFileSync(path.join(own, 'seen.txt'), 'utf8'), /f\.txt/, "the other task's dir shows nothing");
      assert.equal(fs.readFileSync(path.join(other, 'f.txt'), 'utf8'), 'lower\n', "nothing reached the other task's tree");
      assert.equal(fs.readdirSync(path.join(runRoot, '.overlay', 'victim', 'upper')).length, 0, 'its upper layer is empty');
      // Only the step's own namespaces count: other programs on this machine may copy the host's mounts meanwhile.
      const holders = writableCopies(identity).filter((p) => descendsFrom(p, step.pid as number));
      assert.deepEqual(
        holders,
        [],
        `no namespace of the step holds a writable copy: ${holders.map((p) => fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ')).join('; ')}`,
      );
      // Refused either way: as root the step has no capability, so it cannot even map itself into a nested user
      // namespace (--cap-drop ALL); as another user it can, and the locked mounts refuse the umount there.
      assert.match(
        fs.readFileSync(path.join(own, 'err.txt'), 'utf8'),
        /umount: .*(not permitted|Invalid argument|not mounted)|unshare: .*uid_map: Operation not permitted/i,
      );
    } finally {
      step.kill('SIGKILL');
      await releaseOverlays(runRoot);
      fs.rmSync(path.dirname(home), { recursive: true, force: true });
    }
  });
});
