// Mocha root hook (package.json: --require test/helpers/sandbox-env.ts): where no sandbox can run and none is required
// (a laptop without bubblewrap, macOS), the suites that run workers go on unsandboxed — said once, in one line, through
// the user-level switch a person would use (`"sandbox": false` in a config file named by VERDICT_CONFIG) — and the
// tests about the sandbox itself skip with the reason. With CI or VERDICT_REQUIRE_SANDBOX set nothing is relaxed: the
// sandbox tests fail there instead.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { probeSandbox } from '../../extension/core/process/sandbox';

/** True where the sandbox must run (CI): its tests fail instead of skipping. */
export const SANDBOX_REQUIRED = Boolean(process.env.CI || process.env.VERDICT_REQUIRE_SANDBOX);

export const mochaHooks = {
  async beforeAll(): Promise<void> {
    const probe = await probeSandbox();
    if (probe.kind === 'bwrap' || SANDBOX_REQUIRED || process.env.VERDICT_CONFIG) return;
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-test-config-')), 'config.json');
    fs.writeFileSync(file, JSON.stringify({ sandbox: false }));
    process.env.VERDICT_CONFIG = file;
    process.env.VERDICT_TEST_UNSANDBOXED = probe.reason;
    console.log(`[verdict tests] no sandbox here (${probe.reason}): workers run unsandboxed; the sandbox tests skip`);
  },
};

/** The sandbox mode tests pass to runManifest: off where the root hook found none (see above), else the default. */
export function testSandboxMode(): 'auto' | 'off' {
  return process.env.VERDICT_TEST_UNSANDBOXED ? 'off' : 'auto';
}

/**
 * For a test about the sandbox itself: skips it, saying why, where no sandbox can run — unless the sandbox is required
 * here (CI), where the test fails instead.
 */
export async function requireSandbox(ctx: Mocha.Context): Promise<{ binary: string }> {
  const probe = await probeSandbox();
  if (probe.kind === 'bwrap' && !process.env.VERDICT_TEST_UNSANDBOXED) return probe;
  const why = probe.kind === 'none' ? probe.reason : 'the tests run unsandboxed';
  if (SANDBOX_REQUIRED) throw new Error(`the sandbox is required here (CI / VERDICT_REQUIRE_SANDBOX) but cannot run: ${why}`);
  ctx.skip();
  throw new Error(`skipped: ${why}`);
}
