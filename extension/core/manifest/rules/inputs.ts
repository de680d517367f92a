/**
 * inputs (error): a task's `inputs` (docs/workflows.md "Inputs") may name only tasks it comes `after` — their sealed
 * work exists only once they passed — never itself, and at most MAX_ANONYMOUS when anonymous. Pure, on the parsed
 * data, like rules/task-graph.ts: the loader reports these as problems of code `inputs` and lint shows them under rule
 * `inputs`, at the offending value.
 */
import { MAX_ANONYMOUS } from '../inputs-names';

/** One problem: the JSON path of the offending value and what is wrong. */
export interface InputsProblem {
  path: (string | number)[];
  message: string;
}

/** The keys an `inputs` value names, as written (array form or `from`); null when malformed (the schema reports it). */
export function inputKeysOf(v: unknown): { keys: string[]; at: (string | number)[]; anonymous: boolean } | null {
  if (Array.isArray(v)) return { keys: v.filter((k): k is string => typeof k === 'string'), at: [], anonymous: false };
  if (typeof v === 'object' && v !== null && Array.isArray((v as { from?: unknown }).from)) {
    const o = v as { from: unknown[]; anonymous?: unknown };
    return { keys: o.from.filter((k): k is string => typeof k === 'string'), at: ['from'], anonymous: o.anonymous === true };
  }
  return null;
}

/** The problems of every task's `inputs`; values of the wrong type are skipped (the schema reports them). */
export function inputsProblems(tasks: readonly unknown[]): InputsProblem[] {
  const out: InputsProblem[] = [];
  tasks.forEach((t, i) => {
    if (typeof t !== 'object' || t === null || Array.isArray(t)) return;
    const task = t as Record<string, unknown>;
    const inputs = inputKeysOf(task.inputs);
    if (!inputs) return;
    const after = Array.isArray(task.after) ? task.after : [];
    inputs.keys.forEach((k, j) => {
      const path = ['tasks', i, 'inputs', ...inputs.at, j];
      if (k === task.key) out.push({ path, message: `a task cannot read its own work as an input ("${k}")` });
      else if (!after.includes(k))
        out.push({
          path,
          message: `"${k}" is an input but not in "after": a task reads only the sealed work of prerequisites that passed before it starts; add "${k}" to "after"`,
        });
    });
    if (inputs.anonymous && inputs.keys.length > MAX_ANONYMOUS)
      out.push({ path: ['tasks', i, 'inputs', 'from'], message: `${inputs.keys.length} anonymous inputs: at most ${MAX_ANONYMOUS} (one letter each)` });
  });
  return out;
}
