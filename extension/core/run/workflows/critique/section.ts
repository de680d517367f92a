/**
 * Workflow `critique`'s section of a task (docs/workflows.md "Critique loop"): critics read each proposal that passed
 * its check, and their verified criticisms ask a revision. rule.ts says what is wrong with it; its critics are readers
 * (the loader refuses unknown ones and the script engine). It compiles into nothing: its run-time part is the plugin
 * run/workflows/critique/.
 */
import type { WorkflowSection } from '../../../manifest/sections/section';
import { critiqueProblems } from './rule';

export const critiqueSection: WorkflowSection = {
  name: 'critique',
  code: 'critique',
  problems: (tasks) => critiqueProblems(tasks),
  engines: (t) =>
    isObject(t.critique)
      ? [{ kind: 'readers', at: ['critique'], entries: t.critique.critics, verb: 'criticise', list: 'critics', lint: { who: 'a critic', order: 5 } }]
      : [],
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
