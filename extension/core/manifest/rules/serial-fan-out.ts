import { findNodeAtLocation } from 'jsonc-parser';
import type { Rule } from './document';

/** From this many tasks, running them one at a time is worth a warning. */
export const SERIAL_FAN_OUT_TASKS = 3;

/**
 * serial-fan-out (warning): three or more tasks with `max_parallel: 1`. A swarm's tasks are independent (each
 * has its own dir or worktree), so running them one at a time takes the sum of their durations for nothing;
 * work that must happen in order belongs in one task. The range is the max_parallel value.
 */
export const serialFanOut: Rule = (doc) => {
  const node = findNodeAtLocation(doc.root, ['max_parallel']);
  if (doc.raw.max_parallel !== 1 || !node || doc.tasks.length < SERIAL_FAN_OUT_TASKS) return [];
  return [
    {
      rule: 'serial-fan-out',
      severity: 'warning',
      message: `max_parallel 1 runs these ${doc.tasks.length} tasks one after another, so the swarm takes as long as all of them together. Raise max_parallel (e.g. 4); if some tasks must wait for others, say so with \`after\` instead.`,
      range: doc.index.range(node.offset, node.length),
      taskKey: null,
    },
  ];
};
