/**
 * Workflow `council`'s section of a task (docs/workflows.md "Council"): members answer, review each other's answers
 * anonymously, and a chair writes the synthesis. compile.ts compiles it, rule.ts says what is wrong with it.
 */
import type { EngineRef, WorkflowSection } from '../../../manifest/sections/section';
import { compileCouncil } from './compile';
import { councilProblems } from './rule';

export const councilSection: WorkflowSection = {
  name: 'council',
  code: 'council',
  problems: (tasks, ctx) => councilProblems(tasks, ctx.existingKeys),
  engines(t) {
    if (!isObject(t.council)) return [];
    const c = t.council;
    const refs: EngineRef[] = [];
    if (isObject(c.chair))
      refs.push({ kind: 'writer', at: ['council', 'chair', 'engine'], name: c.chair.engine, who: 'the chair', lint: { who: 'the chair', order: 11 } });
    if (Array.isArray(c.members))
      c.members.forEach((e, j) =>
        refs.push({
          kind: 'writer',
          at: ['council', 'members', j, 'engine'],
          name: isObject(e) ? e.engine : undefined,
          who: `member ${j + 1}`,
          lint: { who: 'a council member', order: 8 },
        }),
      );
    return refs;
  },
  // Each member answers and reviews; the chair writes the synthesis.
  count: (raw) =>
    isObject(raw.council) ? { tasks: 2 * (Array.isArray(raw.council.members) ? raw.council.members.length : 0) + 1, what: 'answers, reviews and chair' } : null,
  compile: (spec, raw) => (isObject(raw.council) ? compileCouncil(spec, raw.council) : null),
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
