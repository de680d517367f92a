/**
 * Step `guard`: built-in checks of the worker's output that need no user script, run on the sealed tree before the
 * check, so the commonest ways to fake a pass fail without a script of the user's. First the protected check inputs (run/protect.ts) — a worker
 * that changed or deleted one FAILs, naming it, whatever the check would say ("ran 0 tests" is not a pass). Then the
 * guards of run/guards over what the worker changed — in worktree mode the sealed commit against the task's start
 * point, in plain mode the task dir against its record after setup: secrets and stubs in added lines, new
 * dependencies outside `allow_deps`, changes outside `allow_paths`. Any finding FAILs the attempt with a reason that
 * names file and line, injected into the retry like a failed check's output.
 */
import { protectedChanges } from '../protect';
import { commitChanges, dirChanges } from '../guards/changes';
import { guardReason, guardSettings, guardsOn, runGuards } from '../guards';
import type { Step } from './context';

export const guardStep: Step = {
  name: 'guard',
  when: (rec) => rec.verdict === null,
  async run(_ctx, task, rec) {
    if (task.protected && (task.protected.files.size > 0 || task.protected.forbidNew?.length)) {
      const changed = protectedChanges(task.state.dir, task.protected);
      if (changed.length) {
        return {
          verdict: 'FAIL',
          reason: `the worker changed protected check inputs: ${changed.join(', ')}; the check relies on them, so they may not change (the task's "protect" setting says what is protected)`,
        };
      }
    }
    if (!guardsOn(task.spec)) return null;
    let changes;
    if (task.links && rec.seal) {
      const from = task.links.baseSha ?? rec.seal.parent;
      changes = from === rec.seal.sha ? [] : await commitChanges(task.links.commonDir, from, rec.seal.sha);
    } else if (task.guardBase) {
      // The plain seal of this attempt (step seal, just before: nothing ran since) already walked and hashed the dir.
      const sealed = rec.sealed !== null && !rec.seal && task.sealedState?.kind === 'dir' ? task.sealedState.snapshot : undefined;
      changes = dirChanges(task.guardBase, task.state.dir, sealed);
    }
    else return null;
    const findings = runGuards(changes, guardSettings(task.spec));
    return findings.length ? { verdict: 'FAIL', reason: guardReason(findings) } : null;
  },
};
