/**
 * Workflow `best-of-N` (docs/workflows.md "Best-of-N", "Ranked"): a task with `repeat` runs as N candidate tasks and
 * one group task after them (compiled by manifest/repeat.ts); per run, groups.ts decides each group from its
 * candidates (gate.ts), ranking the passing ones when the group says `select: "ranked"` (ranking.ts, rank.ts).
 */
import type { Workflow } from '../workflow';
import { BestOfN } from './groups';

export const bestOfNWorkflow: Workflow = {
  name: 'best-of-N',
  open: (host) => new BestOfN(host),
};
