// The overlay trees' tests need a kernel and user that can mount overlays (docs/manifest.md "Trees").
import { probeOverlay } from '../../extension/core/git/overlay';

/** Skips (saying why) where this kernel or user cannot mount overlays; with CI set it fails instead: these machines can. */
export async function requireOverlay(ctx: Mocha.Context): Promise<void> {
  const probe = await probeOverlay();
  if (probe.ok) return;
  if (process.env.CI) throw new Error(`overlay mounts are required here (CI is set) but do not work: ${probe.reason}`);
  console.log(`      skipped: ${probe.reason}`);
  ctx.skip();
}
