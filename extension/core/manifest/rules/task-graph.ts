/**
 * task-graph (error): the `after` lists of a manifest must name tasks of that manifest and must not go round in a
 * cycle (a task that waits, through others, for itself never starts). Pure, on the parsed data: the loader reports
 * these as problems of code `task-graph` (so it refuses the manifest) and the linter shows them under rule
 * `task-graph`, each at the `after` entry that is wrong (for a cycle: the entry that closes it, naming the whole loop).
 */

/** One problem: the JSON path of the offending `after` entry and what is wrong. */
export interface GraphProblem {
  path: (string | number)[];
  message: string;
}

/**
 * Unknown keys and cycles in the tasks' `after` lists; values of the wrong type are skipped (the schema reports them).
 * `external`: keys of tasks outside `tasks` that an `after` may name too (a generated file's tasks may wait for the
 * run's); none of those waits for a task of `tasks`, so no cycle runs through them.
 */
export function taskGraphProblems(tasks: readonly unknown[], external: ReadonlySet<string> = new Set()): GraphProblem[] {
  const out: GraphProblem[] = [];
  const keyOf = (t: unknown): string | null => (isObject(t) && typeof t.key === 'string' ? t.key : null);
  const keys = new Map<string, number>();
  tasks.forEach((t, i) => {
    const key = keyOf(t);
    if (key !== null && !keys.has(key)) keys.set(key, i);
  });
  /** key → [prerequisite key, its index in `after`] for the known prerequisites. */
  const edges = new Map<string, [string, number][]>();
  tasks.forEach((t, i) => {
    if (!isObject(t) || !Array.isArray(t.after)) return;
    const key = keyOf(t);
    const list: [string, number][] = [];
    t.after.forEach((dep, j) => {
      if (typeof dep !== 'string' || !dep) return;
      if (external.has(dep) && !keys.has(dep)) return;
      if (!keys.has(dep)) {
        const known = [...keys.keys(), ...external].filter((k) => k !== key);
        out.push({
          path: ['tasks', i, 'after', j],
          message: `no task has the key "${dep}"${known.length ? `; keys in this manifest: ${known.join(', ')}` : ''}`,
        });
      } else if (dep === key) {
        out.push({ path: ['tasks', i, 'after', j], message: `task "${key}" waits for itself, so it would never start; remove "${dep}" from its after` });
      } else list.push([dep, j]);
    });
    if (key !== null && keys.get(key) === i) edges.set(key, list);
  });

  // Depth-first over the known edges: reaching a task still on the stack closes a cycle, reported once per loop.
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const reported = new Set<string>();
  const visit = (key: string) => {
    state.set(key, 'open');
    stack.push(key);
    for (const [dep, j] of edges.get(key) ?? []) {
      if (state.get(dep) === 'open') {
        const loop = stack.slice(stack.indexOf(dep));
        const id = [...loop].sort().join('\0');
        if (!reported.has(id)) {
          reported.add(id);
          out.push({
            path: ['tasks', keys.get(key) as number, 'after', j],
            message: `cycle in after: ${[...loop, dep].join(' → ')} (each waits for the next, so none of them would ever start); remove one of these entries`,
          });
        }
      } else if (!state.has(dep)) visit(dep);
    }
    stack.pop();
    state.set(key, 'done');
  };
  for (const key of edges.keys()) if (!state.has(key)) visit(key);
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Whether one of two tasks waits for the other, directly or through others (`after`), on the raw task objects;
 * such tasks never run at the same time, and in worktree mode the later one starts from the earlier one's branch.
 */
export function ordered(tasks: readonly unknown[], a: string, b: string): boolean {
  const after = new Map<string, string[]>();
  for (const t of tasks) {
    if (isObject(t) && typeof t.key === 'string' && Array.isArray(t.after))
      after.set(
        t.key,
        t.after.filter((x): x is string => typeof x === 'string'),
      );
  }
  const reaches = (from: string, to: string): boolean => {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length) {
      const k = stack.pop() as string;
      for (const dep of after.get(k) ?? []) {
        if (dep === to) return true;
        if (!seen.has(dep)) {
          seen.add(dep);
          stack.push(dep);
        }
      }
    }
    return false;
  };
  return reaches(a, b) || reaches(b, a);
}
