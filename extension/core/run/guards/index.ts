/**
 * The built-in guards over one attempt's changes (see types.ts): secrets and stubs in added lines, new dependencies
 * outside `allow_deps`, changes outside `allow_paths`. Pure: the caller collects the changes (changes.ts).
 */
import type { TaskSpec } from '../../manifest/types';
import { findNewDependencies } from './deps';
import { findPathViolations } from './paths';
import { findSecrets } from './secrets';
import { findStubs } from './stubs';
import { addedLines, formatFinding, type Change, type GuardFinding, type GuardSwitches } from './types';

export { formatFinding, type Change, type GuardFinding, type GuardSwitches } from './types';

/** What one task's guards need from its manifest. */
export interface GuardSettings {
  switches: GuardSwitches;
  /** `allow_deps`: true allows any; else names (globs) allowed. */
  allowDeps: true | readonly string[];
  /** `allow_paths`: null when the task gives none (the paths guard then has nothing to judge). */
  allowPaths: readonly string[] | null;
}

/** Every finding of the enabled guards over `changes`, in file order then line order. */
export function runGuards(changes: readonly Change[], s: GuardSettings): GuardFinding[] {
  const out: GuardFinding[] = [];
  if (s.switches.paths && s.allowPaths) out.push(...findPathViolations(changes, s.allowPaths));
  if (s.switches.deps && s.allowDeps !== true) out.push(...findNewDependencies(changes, s.allowDeps));
  if (s.switches.secrets || s.switches.stubs) {
    for (const c of changes) {
      if (c.status === 'deleted' || c.after === null || c.kind !== 'file') continue;
      const lines = addedLines(c.before, c.after);
      if (s.switches.secrets) out.push(...findSecrets(c.path, lines));
      if (s.switches.stubs) out.push(...findStubs(c.path, lines));
    }
  }
  return out.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : (a.line ?? 0) - (b.line ?? 0)));
}

/** Findings shown in a reason at most; the rest are counted. */
export const GUARD_REASON_FINDINGS = 20;

/** The attempt's FAIL reason for `findings` (non-empty): one line per finding, file:line first. */
export function guardReason(findings: readonly GuardFinding[]): string {
  const shown = findings.slice(0, GUARD_REASON_FINDINGS).map(formatFinding);
  const more = findings.length > shown.length ? `; and ${findings.length - shown.length} more` : '';
  const guards = [...new Set(findings.map((f) => f.guard))].join(', ');
  return `the guard refused the work (${guards}): ${shown.join('; ')}${more}`;
}

/** A task's guard settings, from its spec. */
export function guardSettings(spec: TaskSpec): GuardSettings {
  return { switches: spec.guard, allowDeps: spec.allowDeps, allowPaths: spec.allowPaths };
}

/** Whether any guard of `spec` has something to judge (paths only with allow_paths, deps unless any are allowed). */
export function guardsOn(spec: TaskSpec): boolean {
  const g = spec.guard;
  return g.secrets || g.stubs || (g.deps && spec.allowDeps !== true) || (g.paths && spec.allowPaths !== null);
}
