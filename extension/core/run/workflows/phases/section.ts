/**
 * Workflow `phases`'s section of a task (docs/workflows.md "Phases"): one implementer per file, then a test phase on
 * another engine, red before green. compile.ts compiles it, rule.ts says what is wrong with it, red-off.ts is its lint
 * rule (phases-red-off); the red run itself is
 * a step of the attempt (run/workflows/phases/red-step.ts).
 */
import type { EngineRef, WorkflowSection } from '../../../manifest/sections/section';
import { compilePhases } from './compile';
import { phasesProblems } from './rule';
import { phasesRedOff } from './red-off';

export const phasesSection: WorkflowSection = {
  name: 'phases',
  code: 'phases',
  problems: (tasks, ctx) => phasesProblems(tasks, ctx.defaultEngine, ctx.existingKeys),
  engines(t) {
    if (!isObject(t.phases)) return [];
    const p = t.phases;
    const refs: EngineRef[] = [];
    if (isObject(p.review))
      refs.push({ kind: 'readers', at: ['phases', 'review'], entries: p.review.engines, verb: 'review', lint: { who: 'a reviewer', order: 9 } });
    for (const [field, who, order] of [
      ['implement', 'the implementer', 12],
      ['test', 'the test phase', 13],
    ] as const) {
      const entry = p[field];
      refs.push({ kind: 'writer', at: ['phases', field, 'engine'], name: isObject(entry) ? entry.engine : undefined, who, lint: { who, order } });
    }
    return refs;
  },
  count: (raw) => (isObject(raw.phases) && Array.isArray(raw.phases.files) ? { tasks: raw.phases.files.length + 1, what: 'implement and test tasks' } : null),
  compile: (spec, raw, opts) => (isObject(raw.phases) ? compilePhases(spec, raw.phases, opts.worktrees) : null),
  lintRules: [phasesRedOff],
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
