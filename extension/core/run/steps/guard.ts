/**
 * Step `guard`: built-in checks of the worker's output that need no user script, run on the sealed tree before the
 * check, so the commonest ways to fake a pass fail without a script of the user's. First the protected check inputs (run/protect.ts) — a worker
 * that changed or deleted one FAILs, naming it, whatever the check would say ("ran 0 tests" is not a pass); so does one
 * that changed a package.json script the check or the suite runs (`npm test`: scripts.test). Then the
 * guards of run/guards over what the worker changed — in worktree mode the sealed commit against the task's start
 * point, in plain mode the task dir against its record after setup: secrets and stubs in added lines, new
 * dependencies outside `allow_deps`, changes outside `allow_paths`. Any finding FAILs the attempt with a reason that
 * names file and line, injected into the retry like a failed check's output.
 */
import { changedScripts, judgedCommands, protectedChanges, runnerScripts } from '../protect';
import type { Change } from '../guards/types';
import type { Judgement } from '../decide';
import { commitChanges, dirChanges } from '../guards/changes';
import { guardReason, guardSettings, guardsOn, runGuards } from '../guards';
import type { Step } from './context';

export const guardStep: Step = {
  name: 'guard',
  phase: 'running',
  when: (rec) => rec.verdict === null,
  async run(_ctx, task, rec) {
    const refuse = (changed: string[]): Judgement => ({
      verdict: 'FAIL',
      reason: `the worker changed protected check inputs: ${changed.join(', ')}; the check relies on them, so they may not change (the task's "protect" setting says what is protected)`,
    });
    if (task.protected && (task.protected.files.size > 0 || task.protected.forbidNew?.length)) {
      const changed = protectedChanges(task.state.dir, task.protected);
      if (changed.length) return refuse(changed);
    }
    let memo: Change[] | null | undefined;
    const changesOnce = async (): Promise<Change[] | null> => {
      if (memo !== undefined) return memo;
      if (task.links && rec.seal) {
        const from = task.links.baseSha ?? rec.seal.parent;
        memo = from === rec.seal.sha ? [] : await commitChanges(task.links.commonDir, from, rec.seal.sha);
      } else if (task.guardBase) {
        // The plain seal of this attempt (step seal, just before: nothing ran since) already walked and hashed the dir.
        const sealed = rec.sealed !== null && !rec.seal && task.sealedState?.kind === 'dir' ? task.sealedState.snapshot : undefined;
        memo = dirChanges(task.guardBase, task.state.dir, sealed);
      } else memo = null;
      return memo;
    };
    // The package.json scripts the check or the suite runs (`npm test`): protected entry by entry.
    const scripts = task.spec.protect !== null && task.spec.protect.length === 0 ? [] : runnerScripts(judgedCommands(task.spec));
    if (scripts.length) {
      const pkg = (await changesOnce())?.find((c) => c.path === 'package.json' || c.from === 'package.json');
      if (pkg) {
        const changed = pkg.unreadable
          ? [`package.json (${pkg.unreadable}: its scripts ${scripts.join(', ')} cannot be compared)`]
          : changedScripts(pkg.before, pkg.path === 'package.json' ? pkg.after : null, scripts);
        if (changed.length) return refuse(changed);
      }
    }
    if (!guardsOn(task.spec)) return null;
    const changes = await changesOnce();
    if (!changes) return null;
    const findings = runGuards(changes, guardSettings(task.spec));
    return findings.length ? { verdict: 'FAIL', reason: guardReason(findings) } : null;
  },
};
