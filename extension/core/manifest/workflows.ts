/**
 * Every workflow section of a manifest's tasks compiled into ordinary tasks (docs/workflows.md), task by task, order
 * kept: `validate` (manifest/validate.ts), `council` (manifest/council.ts), `phases` (manifest/phases.ts), else best-of-N (manifest/repeat.ts; a task
 * without `repeat`/`candidates` comes back as it is). Lint refuses a task with two of them. Pure.
 */
import { compileCouncil } from './council';
import { compilePhases } from './phases';
import { compileRepeat } from './repeat';
import type { TaskSpec } from './types';
import { compileValidate } from './validate';

/** `raw` is the manifest's `tasks` array as written, index for index with `tasks`; `opts.worktrees`: the run's mode. */
export function compileWorkflows(tasks: readonly TaskSpec[], raw: readonly Record<string, unknown>[], opts: { worktrees: boolean } = { worktrees: false }): TaskSpec[] {
  return tasks.flatMap((spec, i) => {
    const t = raw[i] ?? {};
    if (isObject(t.validate)) return compileValidate(spec, t.validate);
    if (isObject(t.council)) return compileCouncil(spec, t.council);
    if (isObject(t.phases)) return compilePhases(spec, t.phases, opts.worktrees);
    return compileRepeat([spec], [t]);
  });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
