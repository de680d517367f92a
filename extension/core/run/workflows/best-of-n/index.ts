/**
 * Workflow `best-of-N` (docs/workflows.md "Best-of-N", "Ranked"): a task with `repeat` runs as N candidate tasks and
 * one group task after them (compiled by its section: section.ts, compile.ts, rule.ts); per run, groups.ts decides each group from its
 * candidates (gate.ts), ranking the passing ones when the group says `select: "ranked"` (ranking.ts, rank.ts).
 */
import type { Workflow } from '../workflow';
import { BestOfN } from './groups';
import { bestOfNSection } from './section';

export const bestOfNWorkflow: Workflow = {
  name: 'best-of-N',
  section: bestOfNSection,
  open: (host) => new BestOfN(host),
  // A group runs no worker itself: its candidates are what runs again.
  refuseRerun: (task) =>
    task.select ? `${task.key} is a best-of-N task and runs no worker itself: rerun one of its candidates (${(task.after ?? []).join(', ')})` : null,
  // A candidate whose group passed (it or another candidate won) stays as it ended.
  keptOnResume: (task, run) =>
    task.candidate !== undefined && task.group !== undefined && run.tasks.some((g) => g.key === task.group && g.select !== undefined && g.status === 'PASS'),
  readerEngines: (spec) => {
    // The group's selection runs on the orchestrator, even on a pool run: its ranking reviewers (a ranked group's, or a
    // consensus group's tie-break) and its inputs engine read the candidates' sealed commits here.
    const selects = spec.select === 'ranked' || spec.select === 'consensus';
    const inputs = spec.distinguish && typeof spec.distinguish.inputs !== 'string' ? [{ engine: spec.distinguish.inputs.engine, here: true }] : [];
    return [...(spec.rank?.engines ?? []).map((r) => ({ engine: r.engine, here: selects })), ...inputs];
  },
};
