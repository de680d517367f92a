/**
 * full_access as Ringer has it: a task with `full_access: true` runs its engine without any sandbox (Verdict's
 * bubblewrap off, the engine's own sandbox flags off), so the run refuses it unless the user allowed it in their
 * config (`"allow_full_access": true`) or the VS Code setting `verdict.allowFullAccess`. Called by preflight.
 */
import type { Manifest } from '../manifest/types';

/** The setting named in the refusal, beside the config file. */
export const FULL_ACCESS_SETTING = 'verdict.allowFullAccess';

/**
 * One line per task that sets `full_access: true` when full access is not allowed; empty when it is allowed or no
 * task asks for it.
 * @param configSource the config file that was read, or the default path it would be read from (where to add
 *   `"allow_full_access": true`; see core/config/config.ts loadUserConfig → `shown`)
 */
export function fullAccessProblems(manifest: Manifest, allowFullAccess: boolean, configSource: string): string[] {
  if (allowFullAccess) return [];
  return manifest.tasks
    .filter((t) => t.fullAccess)
    .map(
      (t) =>
        `task "${t.key}" sets full_access: true (run its engine without any sandbox); refused: set "allow_full_access": true in ${configSource} or the VS Code setting ${FULL_ACCESS_SETTING}`,
    );
}
