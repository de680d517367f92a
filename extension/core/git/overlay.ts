/**
 * Overlay mounts for `tree: "overlay"` (docs/architecture.md "Trees"): a task's dir is an overlayfs whose lower layer
 * is one shared, read-only checkout of the start commit and whose upper layer holds only what the task changed
 * (Documentation/filesystems/overlayfs.rst in the Linux sources). bubblewrap 0.8 has no overlay option, and a mount
 * made inside a user namespace is seen only there, so the orchestrator mounts in the initial mount namespace, as root:
 * every process of the run (the seal, review, the check's sandbox, `verdict clean`) then sees the same tree.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCaptured, type Captured } from '../process/run-captured';

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
    if (/[,:\\\n]/.test(p)) throw new Error(`overlay tree: the path ${p} holds a comma, colon or backslash, which overlay mount options cannot say; use a VERDICT_HOME without them`);
  }
  const options = `lowerdir=${layers.lower},upperdir=${layers.upper},workdir=${layers.work},index=off,metacopy=off,xino=off`;
  const r = await runCaptured('mount', ['-t', 'overlay', 'overlay', '-o', options, target], { env: process.env, timeoutMs: 30_000 });
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
 * lazily (`umount -l`: gone from the tree at once, freed when the last user closes it). Returns what it did.
 * @throws Error with umount(8)'s message when neither works
 */
export async function unmountOverlay(target: string): Promise<'unmounted' | 'detached' | 'not-mounted'> {
  if (!overlayMountsUnder(readMountInfo(), target).includes(path.resolve(target))) return 'not-mounted';
  const r = await runCaptured('umount', [target], { env: process.env, timeoutMs: 30_000 });
  if (succeeded(r)) return 'unmounted';
  if (succeeded(await runCaptured('umount', ['-l', target], { env: process.env, timeoutMs: 30_000 }))) return 'detached';
  throw new Error(`overlay tree: unmounting ${target} failed: ${failure(r)}`);
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
  const out: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const fields = line.slice(0, sep).split(' ');
    const fstype = line.slice(sep + 3).split(' ')[0];
    if (fstype !== 'overlay' || fields.length < 5) continue;
    const point = (fields[4] ?? '').replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (point === base || point.startsWith(base + path.sep)) out.push(point);
  }
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
    return { ok: false, reason: `overlay trees need root (the mount must be seen by every process of the run: the seal, review, verdict clean); this is uid ${process.getuid()}` };
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
      if (fs.readFileSync(path.join(layers.lower, 'f'), 'utf8') !== 'lower') return { ok: false, reason: 'a write through the overlay reached its lower layer' };
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
