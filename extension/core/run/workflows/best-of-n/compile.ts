/**
 * Best-of-N compiled into ordinary tasks (docs/workflows.md "Best-of-N"): a task with `repeat: N` (or
 * `candidates`) becomes
 * - its own entry, the group: no worker runs for it; its `after` lists its candidates and its `select` says how the
 *   runner picks the winner (run/workflows/best-of-n/gate.ts; `ranked`: with its `rank` reviewers); it carries the task's
 *   check, so `verdict merge KEY` re-checks the winner with it;
 * - N candidates `<key>--c1` … `<key>--cN`: copies of the task (same spec, check and `after`), candidate N on entry N
 *   of `candidates` (else the task's own engine and model), each with its own task dir and branch.
 * The loader applies this to every manifest it loads, the frozen one included, so a run, its resume and its merge see
 * the same tasks. Pure.
 */
import type { EngineChoice, SelectMode, TaskSpec } from '../../../manifest/types';

/** The key of candidate `n` of task `key`: `<key>--c<n>` (git cannot hold both `…/<key>` and `…/<key>/c1`). */
export function candidateKey(key: string, n: number): string {
  return `${key}--c${n}`;
}

/**
 * The manifest's tasks with each best-of-N task replaced by its group entry followed by its candidates; other tasks
 * unchanged, order kept. `raw` is the manifest's `tasks` array as written, index for index with `tasks`. A candidate
 * entry without a model gets model null (its engine's default).
 */
export function compileRepeat(tasks: readonly TaskSpec[], raw: readonly Record<string, unknown>[]): TaskSpec[] {
  return tasks.flatMap((spec, i) => {
    const t = raw[i] ?? {};
    const choices = candidateChoices(spec, t);
    if (!choices) return [spec];
    const select: SelectMode = t.select === 'all' || t.select === 'ranked' || t.select === 'consensus' ? t.select : 'first-pass';
    const keys = choices.map((_, n) => candidateKey(spec.key, n + 1));
    const first = choices[0] as EngineChoice;
    const group: TaskSpec = { ...spec, engine: first.engine, model: first.model, group: spec.key, select, after: keys };
    // How the group is decided belongs to the group alone.
    const { rank: _rank, stopAfter: _stopAfter, distinguish: _distinguish, ...candidate } = spec;
    const candidates = choices.map((choice, n): TaskSpec => ({
      ...candidate,
      key: keys[n] as string,
      engine: choice.engine,
      model: choice.model,
      // engine_args belong to the task's own engine (as for fallback): a candidate on another engine runs without them.
      engineArgs: choice.engine === spec.engine ? spec.engineArgs : [],
      group: spec.key,
      candidate: n + 1,
    }));
    return [group, ...candidates];
  });
}

/** The engine of each candidate, or null when the task is not best-of-N. */
function candidateChoices(spec: TaskSpec, t: Record<string, unknown>): EngineChoice[] | null {
  if (Array.isArray(t.candidates)) {
    return t.candidates.map((c) => {
      const entry = c as { engine: string; model?: unknown };
      return { engine: entry.engine, model: typeof entry.model === 'string' ? entry.model : null };
    });
  }
  if (typeof t.repeat === 'number') return Array.from({ length: t.repeat }, () => ({ engine: spec.engine, model: spec.model }));
  return null;
}
