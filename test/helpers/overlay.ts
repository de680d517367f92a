// The overlay trees' tests need a kernel and user that can mount overlays (docs/manifest.md "Trees").
import { probeOverlay } from '../../extension/core/git/overlay';

/**
 * Overlay trees need root, whatever the machine (extension/core/git/overlay.ts probeOverlay: the mount must be seen by
 * every process of the run), so as any other user they are left out even where CI is set: a difference of the user,
 * not of the machine. As root with CI set a probe that fails is a failure: these machines can mount overlays.
 */
const notRoot = () => typeof process.getuid === 'function' && process.getuid() !== 0;

/**
 * True when overlay trees can be made here. False, said in one line, where this kernel or user cannot mount them;
 * @throws Error as root with CI set when they do not work (these machines can)
 */
export async function overlayHere(): Promise<boolean> {
  const probe = await probeOverlay();
  if (probe.ok) return true;
  if (process.env.CI && !notRoot()) throw new Error(`overlay mounts are required here (CI is set) but do not work: ${probe.reason}`);
  console.log(`      (overlay trees left out: ${probe.reason})`);
  return false;
}

/** The tree kinds a test can make here: `worktree` and `sparse` always, `overlay` where {@link overlayHere}. */
export async function treeKinds(): Promise<('worktree' | 'sparse' | 'overlay')[]> {
  return ['worktree', 'sparse', ...((await overlayHere()) ? (['overlay'] as const) : [])];
}

/**
 * Skips (saying why) where this kernel or user cannot mount overlays: always as a user other than root; with CI set
 * as root it fails instead (see {@link overlayHere}).
 */
export async function requireOverlay(ctx: Mocha.Context): Promise<void> {
  if (await overlayHere()) return;
  ctx.skip();
}
