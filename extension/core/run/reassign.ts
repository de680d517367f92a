import type { EngineChoice, TaskSpec } from '../manifest/types';
import { attemptEngine } from './decide';

/** What reassign needs of a task: its spec and where it stands on its engine chain. */
export interface Reassignable {
  spec: Pick<TaskSpec, 'key' | 'engine' | 'model' | 'fallback' | 'onQuota'>;
  /** Attempts that counted against max_attempts. */
  used: number;
  /** Steps along the chain taken by reassign. */
  moved?: number;
  /** The engine the next attempt was moved off. */
  reassignedFrom?: string | null;
}

/**
 * The engine and model of a task's next attempt: the entry of its chain (`engine`, then each `fallback`; past the end
 * the last goes on: decide.ts attemptEngine) at its attempts used plus the steps reassign took.
 */
export function nextChoice(task: Reassignable, defaultModel: (engine: string) => string | null): EngineChoice {
  return attemptEngine(task.used + 1 + (task.moved ?? 0), { engine: task.spec.engine, model: task.spec.model }, task.spec.fallback, defaultModel);
}

/**
 * Moves a task's next attempt off an engine that is rate-limited or waiting for its quota: one step along its chain to
 * the next entry on another engine, spending no attempt (the task's `on_quota: "fallback"`, the default). Returns the
 * note to show (naming the engine, why, and where the attempt goes), or null when it stays: `on_quota: "wait"`, no
 * later chain entry on another engine, or its next attempt is not on `from` (nothing to move off).
 * @param why what happened to `from`, for the note ("was rate-limited", "waits for its quota until …")
 */
export function reassign(task: Reassignable, from: string, why: string, defaultModel: (engine: string) => string | null): string | null {
  if (task.spec.onQuota === 'wait' || !task.spec.fallback.length) return null;
  if (nextChoice(task, defaultModel).engine !== from) return null;
  // Chain positions still ahead, past the one the next attempt would take; the last entry repeats, so stop there.
  const here = Math.min(task.used + (task.moved ?? 0), task.spec.fallback.length);
  for (let step = 1; here + step <= task.spec.fallback.length; step++) {
    const next = attemptEngine(here + step + 1, { engine: task.spec.engine, model: task.spec.model }, task.spec.fallback, defaultModel);
    if (next.engine === from) continue;
    task.moved = (task.moved ?? 0) + step;
    task.reassignedFrom = from;
    return `engine ${from} ${why}: ${task.spec.key}'s next attempt runs on ${next.engine}${next.model ? `/${next.model}` : ''} at once (its fallback; no attempt spent on the wait; on_quota: "wait" would keep it waiting)`;
  }
  return null;
}
