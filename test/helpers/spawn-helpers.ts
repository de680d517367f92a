// Runs a suite once per spawn helper (extension/core/process/spawn-helper.pl and spawn-helper.cjs): both must keep the
// same semantics (docs/spawning.md). The perl one is skipped, saying why, only where no perl is on PATH
// or the system is not Linux; with CI set it is required.
import { findBinary } from '../../engines/find-binary';
import { stopSpawnHelper, type HelperKind } from '../../extension/core/process/spawner';

export const HELPER_KINDS: HelperKind[] = ['perl', 'node'];

/**
 * `describe(title + ' (perl helper)')` and `(node helper)`: each runs `body` with VERDICT_SPAWN_HELPER set to its kind
 * and a fresh helper (the one before it is stopped first and after).
 */
export function describeEachHelper(title: string, body: (this: Mocha.Suite, kind: HelperKind) => void): void {
  for (const kind of HELPER_KINDS) {
    describe(`${title} (${kind} helper)`, function () {
      let saved: string | undefined;
      before(function () {
        const without =
          kind !== 'perl'
            ? null
            : process.platform !== 'linux'
              ? `not Linux (${process.platform})`
              : findBinary('perl', process.env.PATH ?? '')
                ? null
                : 'no perl on PATH';
        if (without) {
          if (process.env.CI) throw new Error(`${without}: the perl spawn helper cannot be tested (CI requires it)`);
          console.log(`[verdict tests] the perl spawn helper's suites skip: ${without}`);
          this.skip();
        }
        saved = process.env.VERDICT_SPAWN_HELPER;
        process.env.VERDICT_SPAWN_HELPER = kind;
        stopSpawnHelper();
      });
      after(() => {
        if (saved === undefined) delete process.env.VERDICT_SPAWN_HELPER;
        else process.env.VERDICT_SPAWN_HELPER = saved;
        stopSpawnHelper();
      });
      body.call(this, kind);
    });
  }
}
