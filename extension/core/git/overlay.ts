/**
 * Overlay mounts for `tree: "overlay"` (docs/trees.md): a task's dir is an overlayfs whose lower layer
 * is one shared, read-only checkout of the start commit and whose upper layer holds only what the task changed
 * (Documentation/filesystems/overlayfs.rst in the Linux sources). bubblewrap 0.8 has no overlay option, and a mount
 * made inside a user namespace is seen only there, so the orchestrator mounts in the initial mount namespace, as root:
 * every process of the run (the seal, review, the check's sandbox, `verdict clean`) then sees the same tree.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCaptured, runQuiet, type Captured } from '../process/run-captured';
import { withLock } from '../fs/lock';
import { readDirOrEmpty } from '../fs/read-dir';

/** The folders of one overlay mount (absolute). */
export interface OverlayLayers {
  /** The shared read-only checkout. */
  lower: string;
  /** The task's own changes (new and copied-up files, whiteouts for deletions). */
  upper: string;
  /** overlayfs's work dir: empty, on the same file system as `upper`. */
  work: string;
}

/**
 * Mounts `layers` on `target` (an existing folder; what it held is hidden while mounted). `metacopy=off`: every
 * change copies the whole file up, so the upper layer alone says what changed; `index=off`, `xino=off`: no inode
 * index shared between mounts of one lower layer.
 * @throws Error naming the target and mount(8)'s message (not root, no overlay support, a path with `,` or `:`)
 */
export async function mountOverlay(layers: OverlayLayers, target: string): Promise<void> {
  for (const p of [layers.lower, layers.upper, layers.work]) {
    if (/[,:\\\n]/.test(p))
      throw new Error(`overlay tree: the path ${p} holds a comma, colon or backslash, which overlay mount options cannot say; use a VERDICT_HOME without them`);
  }
  const options = `lowerdir=${layers.lower},upperdir=${layers.upper},workdir=${layers.work},index=off,metacopy=off,xino=off`;
  // Through the spawn helper (process/run-captured.ts runQuiet): one per task, and mount(8) prints nothing when it succeeds.
  const r = await runQuiet('mount', ['-t', 'overlay', 'overlay', '-o', options, target], { env: process.env, timeoutMs: 30_000 });
  if (!succeeded(r)) throw new Error(`overlay tree: mounting ${target} failed: ${failure(r)}`);
}

function succeeded(r: Captured): boolean {
  return r.exitCode === 0 && !r.error;
}

/** What a failed mount(8) or umount(8) said, or how it ended. */
function failure(r: Captured): string {
  return r.stderr.trim() || r.error?.message || (r.timedOut ? 'timed out after 30 s' : r.signal ? `killed by ${r.signal}` : `exited ${r.exitCode}`);
}

/**
 * Unmounts `target` when it is a mount point; when it is busy (a process still has a file open there), detaches it
 * lazily (`umount -l`: gone from the tree at once, freed when the last user closes it). Then waits, at most
 * {@link SETUP_WAIT_MS}, until no sandbox that copied the mount is still starting ({@link awaitSandboxSetups}), so the
 * caller may remove the folder. Returns what it did.
 * @throws Error with umount(8)'s message when neither works
 */
export async function unmountOverlay(target: string): Promise<'unmounted' | 'detached' | 'not-mounted'> {
  const info = readMountInfo();
  if (!overlayMountsUnder(info, target).includes(path.resolve(target))) return 'not-mounted';
  const identity = overlayIdentity(info, target);
  const r = await runCaptured('umount', [target], { env: process.env, timeoutMs: 30_000 });
  let how: 'unmounted' | 'detached' = 'unmounted';
  if (!succeeded(r)) {
    if (!succeeded(await runCaptured('umount', ['-l', target], { env: process.env, timeoutMs: 30_000 })))
      throw new Error(`overlay tree: unmounting ${target} failed: ${failure(r)}`);
    how = 'detached';
  }
  if (identity) await awaitSandboxSetups(identity);
  return how;
}

/** How long {@link awaitSandboxSetups} waits at most for sandboxes to finish starting, ms. */
export const SETUP_WAIT_MS = 5_000;

/**
 * Waits until no other mount namespace holds a writable copy of the overlay `identity` (see {@link overlayIdentity}),
 * polling every 10 ms for at most `timeoutMs`. Called between unmounting an overlay and removing its mount point:
 * a sandbox starting (bubblewrap 0.8, `--ro-bind / /` and every other recursive bind) copies the host's mounts, then
 * remounts each copy read-only by the path it parsed from its own /proc/self/mountinfo; removing the mount point on
 * the host detaches those copies in every namespace (Linux ≥ 3.18, fs/namespace.c `__detach_mounts`), and a
 * bubblewrap between its parse and its remount then fails ("Unable to apply mount flags: remount …: No such file or
 * directory"). Until its setup ends bubblewrap keeps the host's tree, writable copies included, under /oldroot; a
 * started sandbox holds only read-only copies (or its own task's tree, never one being removed). So once no writable
 * copy is left outside this namespace, no sandbox that saw the overlay is still setting up, and every sandbox started
 * after the unmount never saw it. Returns false when the time ran out (a namespace that is no sandbox, e.g. an
 * `unshare -m` shell, may hold a writable copy for good; removing the folder then is no worse than before).
 */
export async function awaitSandboxSetups(identity: string, timeoutMs = SETUP_WAIT_MS): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (writableCopies(identity).length > 0) {
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/**
 * The identity of the overlay mounted at `target` in `mountinfo`: its device (major:minor, proc(5) field 3), root
 * (field 4) and super options (lowerdir, upperdir, workdir…, as the kernel prints them), the same text in every
 * namespace's copy. Null when no overlay is mounted there.
 */
export function overlayIdentity(mountinfo: string, target: string): string | null {
  return mountIdentity(mountinfo, target, 'overlay');
}

/** As {@link overlayIdentity}, for the topmost mount at `target` of any type (or of `fstype`). */
function mountIdentity(mountinfo: string, target: string, fstype?: string): string | null {
  const want = path.resolve(target);
  let found: string | null = null;
  for (const m of parseMountInfo(mountinfo)) if ((!fstype || m.fstype === fstype) && m.point === want) found = m.identity;
  return found;
}

/** Run folders being made private by this process (see isolateRunRoot). */
const isolating = new Map<string, Promise<void>>();

/**
 * Makes `runRoot` (a run's folder of trees, `<worktrees>/<run>`) a mount point of private propagation when the mount
 * holding it has peers (systemd makes / shared): an empty read-only tmpfs made private, with the folder bound on top. Overlays mounted
 * below it then reach no other namespace, and unmounting one reaches no sandbox: bubblewrap makes its copies of the
 * host's mounts slaves, and with a shared parent the unmount itself removed a copy between a sandbox's mountinfo
 * parse and its remount (the start failed as in {@link awaitSandboxSetups}). Where the holding mount has no peers
 * (no `shared:` tag in mountinfo; containers) nothing is done. Idempotent, safe from many tasks at once; undone by
 * {@link releaseRunRoot}.
 * @throws Error when `runRoot` is not a folder of its own (a symlink would move the bind elsewhere), or mount(8) fails
 */
export function isolateRunRoot(runRoot: string): Promise<void> {
  const key = path.resolve(runRoot);
  const known = isolating.get(key);
  if (known) return known;
  const made = withLock(`${key}.isolate`, async () => {
    const st = fs.lstatSync(key, { throwIfNoEntry: false });
    if (!st?.isDirectory())
      throw new Error(
        `overlay trees: ${key} is ${st ? (st.isSymbolicLink() ? 'a symlink' : 'not a folder') : 'missing'}; the run's trees are mounted only in a folder of its own`,
      );
    const real = fs.realpathSync(key);
    const mounts = parseMountInfo(readMountInfo());
    const holding = mounts.filter((m) => real === m.point || real.startsWith(m.point === '/' ? '/' : m.point + path.sep)).pop();
    if (!holding?.shared) return;
    if (holding.point === real) return mountOrThrow(['--make-private', real], real);
    // What the peers receive (the new mount propagates before it can be made private): an empty read-only tmpfs, not
    // a writable view of the folder (a sandbox that started earlier and hides no VERDICT_HOME of this run would get
    // one: mount(8) 2.38 makes a bind, then remounts it). Then the folder itself, bound from below that tmpfs
    // through an fd opened first, on top of it: a mount under a private one, which reaches no other namespace.
    const fd = fs.openSync(real, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    try {
      await mountOrThrow(['-t', 'tmpfs', '-o', 'ro,mode=0755,size=4k', 'verdict-run', real], real);
      await mountOrThrow(['--make-private', real], real);
      // --no-canonicalize: mount(8) would resolve the fd's link to the path, now the tmpfs. A bind joins its source's
      // peer group: made private too, before anything is mounted below it.
      await mountOrThrow(['--no-canonicalize', '--bind', `/proc/${process.pid}/fd/${fd}`, real], real);
      await mountOrThrow(['--make-private', real], real);
    } finally {
      fs.closeSync(fd);
    }
  });
  isolating.set(key, made);
  made.catch(() => isolating.delete(key));
  return made;
}

async function mountOrThrow(args: string[], target: string): Promise<void> {
  const r = await runCaptured('mount', args, { env: process.env, timeoutMs: 30_000 });
  if (!succeeded(r)) throw new Error(`overlay trees: mount ${args.join(' ')} failed for ${target}: ${failure(r)}`);
}

/**
 * Undoes {@link isolateRunRoot} once the run's overlays are unmounted: unmounts the bind and the tmpfs at `runRoot`
 * (private ones: the unmounts reach no sandbox), then waits as {@link unmountOverlay} does before the folder may be
 * removed. Returns whether there was anything.
 * @throws Error with umount(8)'s message
 */
export async function releaseRunRoot(runRoot: string): Promise<boolean> {
  isolating.delete(path.resolve(runRoot));
  if (!fs.existsSync(runRoot)) return false;
  const real = fs.realpathSync(runRoot);
  const released: string[] = [];
  for (let identity = mountIdentity(readMountInfo(), real); identity && !identity.includes('lowerdir='); identity = mountIdentity(readMountInfo(), real)) {
    const r = await runCaptured('umount', [real], { env: process.env, timeoutMs: 30_000 });
    if (!succeeded(r)) throw new Error(`overlay trees: unmounting ${real} failed: ${failure(r)}`);
    released.push(identity);
  }
  for (const identity of released) await awaitSandboxSetups(identity);
  return released.length > 0;
}

/**
 * The mount namespaces other than this process's that hold a copy of overlay `identity` mounted read-write, one pid
 * of each (a scan of /proc: ~1 ms of CPU per 100 processes).
 */
export function writableCopies(identity: string): number[] {
  const self = nsOf('self');
  const seen = new Set<string>([self ?? '']);
  const pids: number[] = [];
  for (const pid of readDirOrEmpty('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const ns = nsOf(pid);
    if (ns === null || seen.has(ns)) continue;
    seen.add(ns);
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/mountinfo`, 'utf8');
    } catch {
      continue;
    }
    if (!text.includes(identity.slice(identity.lastIndexOf(' ') + 1))) continue;
    if (parseMountInfo(text).some((m) => m.identity === identity && m.options.includes('rw'))) pids.push(Number(pid));
  }
  return pids;
}

function nsOf(pid: string): string | null {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/mnt`);
  } catch {
    return null;
  }
}

/** One line of /proc/<pid>/mountinfo (proc(5)). */
interface MountLine {
  /** The mount point, unescaped. */
  point: string;
  /** Per-mount options (field 6). */
  options: string[];
  fstype: string;
  /** `<major:minor> <root> <super options>`: the same mounted tree in any namespace. */
  identity: string;
  /** It has peers (a `shared:N` tag): mounts and unmounts below it reach them. */
  shared: boolean;
}

function parseMountInfo(mountinfo: string): MountLine[] {
  const out: MountLine[] = [];
  for (const line of mountinfo.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const fields = line.slice(0, sep).split(' ');
    const tail = line.slice(sep + 3).split(' ');
    if (fields.length < 6) continue;
    const point = (fields[4] ?? '').replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    out.push({
      point,
      options: (fields[5] ?? '').split(','),
      fstype: tail[0] ?? '',
      identity: `${fields[2]} ${fields[3]} ${tail[2] ?? ''}`,
      shared: fields.slice(6).some((f) => f.startsWith('shared:')),
    });
  }
  return out;
}

/** This process's `/proc/self/mountinfo` ('' where there is none). */
export function readMountInfo(): string {
  try {
    return fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}

/**
 * Mount points of overlay mounts at or under `root`, deepest first (the order to unmount them in), from the text of
 * `/proc/<pid>/mountinfo` (proc(5): field 5 is the mount point with space, tab, newline and backslash as `\ooo`
 * octal escapes; the file system type follows the ` - ` separator).
 */
export function overlayMountsUnder(mountinfo: string, root: string): string[] {
  const base = path.resolve(root);
  const out = parseMountInfo(mountinfo)
    .filter((m) => m.fstype === 'overlay' && (m.point === base || m.point.startsWith(base + path.sep)))
    .map((m) => m.point);
  return [...new Set(out)].sort((a, b) => b.length - a.length);
}

/** What {@link probeOverlay} found: whether this machine can make overlay trees, and why not. */
export type OverlayProbe = { ok: true } | { ok: false; reason: string };

/**
 * Tries a real overlay mount in a temporary folder under `scratchRoot` (default the OS temp dir): writes through it,
 * checks the lower layer is untouched, unmounts and removes everything.
 */
export async function probeOverlay(scratchRoot = os.tmpdir()): Promise<OverlayProbe> {
  if (process.platform !== 'linux') return { ok: false, reason: 'overlay trees need Linux' };
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return {
      ok: false,
      reason: `overlay trees need root (the mount must be seen by every process of the run: the seal, review, verdict clean); this is uid ${process.getuid()}`,
    };
  }
  const dir = fs.mkdtempSync(path.join(scratchRoot, 'verdict-overlay-probe-'));
  const layers = { lower: path.join(dir, 'lower'), upper: path.join(dir, 'upper'), work: path.join(dir, 'work') };
  const merged = path.join(dir, 'merged');
  for (const d of [...Object.values(layers), merged]) fs.mkdirSync(d);
  fs.writeFileSync(path.join(layers.lower, 'f'), 'lower');
  try {
    await mountOverlay(layers, merged);
    try {
      fs.writeFileSync(path.join(merged, 'f'), 'upper');
      if (fs.readFileSync(path.join(layers.lower, 'f'), 'utf8') !== 'lower')
        return { ok: false, reason: 'a write through the overlay reached its lower layer' };
    } finally {
      await unmountOverlay(merged);
    }
    return { ok: true };
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
