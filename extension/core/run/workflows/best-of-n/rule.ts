/**
 * repeat (error): a best-of-N task (`repeat`, `candidates`, `select`) must compile into ordinary tasks
 * (compile.ts): `select` only with candidates, `ranked` with a `rank` section (and `rank` only with
 * `ranked` or `consensus`; its rubric and reviewers are the schema's to require), `consensus` with a `distinguish`
 * section (and `distinguish` only with `consensus`), `stop_after` only on a group that runs its candidates to their end
 * and at most N, `repeat` and `candidates` agreeing on N, and no candidate key (`<key>--c<N>`) taken by another task. Pure, on the parsed data: the loader reports these
 * as problems of code `repeat` (so it refuses the manifest) and the linter shows them under rule `repeat`, each at the
 * offending value.
 */
import { candidateKey } from './compile';

/** One problem: the JSON path of the offending value and what is wrong. */
export interface RepeatProblem {
  path: (string | number)[];
  message: string;
}

/**
 * The problems of every best-of-N task; values of the wrong type are skipped (the schema reports them). `external`:
 * keys of tasks outside `tasks` (the run's, for a generated file) that a candidate key must not take either.
 */
export function repeatProblems(tasks: readonly unknown[], external: ReadonlySet<string> = new Set()): RepeatProblem[] {
  const out: RepeatProblem[] = [];
  const keys = new Map<string, number>();
  tasks.forEach((t, i) => {
    if (isObject(t) && typeof t.key === 'string' && !keys.has(t.key)) keys.set(t.key, i);
  });
  tasks.forEach((t, i) => {
    if (!isObject(t)) return;
    const repeat = typeof t.repeat === 'number' && Number.isInteger(t.repeat) ? t.repeat : null;
    const candidates = Array.isArray(t.candidates) ? t.candidates.length : null;
    out.push(...selectProblems(t, i, repeat, candidates), ...stopAfterProblems(t, i, repeat, candidates));
    if (repeat !== null && candidates !== null && repeat !== candidates) {
      out.push({
        path: ['tasks', i, 'repeat'],
        message: `"repeat" is ${repeat} but "candidates" lists ${candidates} engine(s): candidate N runs on entry N, so the two must agree (or drop "repeat": N is then the list's length)`,
      });
    }
    out.push(...candidateKeyProblems(t, i, repeat, candidates, keys, external));
  });
  return out;
}

/**
 * The problems of task `t` (tasks[i]) with its choice and its choosers: "select" without candidates, "ranked" without
 * "rank", "consensus" without "distinguish", "rank" or "distinguish" where its "select" does not read it. `repeat` and
 * `candidates`: its N by each field, or null when the field is absent or not valid.
 */
function selectProblems(t: Record<string, unknown>, i: number, repeat: number | null, candidates: number | null): RepeatProblem[] {
  const out: RepeatProblem[] = [];
  if (t.select !== undefined && repeat === null && candidates === null) {
    out.push({
      path: ['tasks', i, 'select'],
      message: '"select" chooses among best-of-N candidates, but this task has neither "repeat" nor "candidates"; add "repeat": N, or remove "select"',
    });
  } else if (t.select === 'ranked' && t.rank === undefined) {
    out.push({
      path: ['tasks', i, 'select'],
      message:
        '"select": "ranked" needs a "rank" section saying who scores the passing candidates and against what: "rank": {"rubric": "…", "engines": ["claude"]}',
    });
  } else if (t.select === 'consensus' && t.distinguish === undefined) {
    out.push({
      path: ['tasks', i, 'select'],
      message:
        '"select": "consensus" needs a "distinguish" section saying how the passing candidates are told apart: "distinguish": {"inputs": "<command printing one input per line>", "probe": "<command run on each candidate with $VERDICT_CASE>"}',
    });
  }
  if (t.rank !== undefined && t.select !== 'ranked' && t.select !== 'consensus') {
    out.push({
      path: ['tasks', i, 'rank'],
      message:
        '"rank" is read only with "select": "ranked" (the reviewers score the candidates that passed) or "consensus" (they break a tie between groups); add one of them, or remove "rank"',
    });
  }
  if (t.distinguish !== undefined && t.select !== 'consensus') {
    out.push({
      path: ['tasks', i, 'distinguish'],
      message:
        '"distinguish" is read only with "select": "consensus" (it tells the passing candidates apart by what they do); add "select": "consensus", or remove "distinguish"',
    });
  }
  return out;
}

/**
 * The problems of task `t` (tasks[i]) with "stop_after": on a group that does not run its candidates to their end
 * ("first-pass"), over its N, or on a task that is not best-of-N. A value out of the schema's range is the schema's.
 */
function stopAfterProblems(t: Record<string, unknown>, i: number, repeat: number | null, candidates: number | null): RepeatProblem[] {
  const out: RepeatProblem[] = [];
  // Out of the schema's range (1–32) or not an integer: the schema reports it.
  const stopAfter = typeof t.stop_after === 'number' && Number.isInteger(t.stop_after) && t.stop_after >= 1 && t.stop_after <= 32 ? t.stop_after : null;
  if (stopAfter !== null && (repeat !== null || candidates !== null)) {
    const n = repeat ?? (candidates as number);
    if (t.select === undefined || t.select === 'first-pass') {
      out.push({
        path: ['tasks', i, 'stop_after'],
        message:
          '"stop_after" is read with "select" "all", "ranked" or "consensus": "first-pass" already stops the other candidates at the first PASS; set "select", or remove "stop_after"',
      });
    } else if (stopAfter > n) {
      out.push({
        path: ['tasks', i, 'stop_after'],
        message: `"stop_after" is ${stopAfter} but the task has ${n} candidate(s): that many can never pass; use at most ${n}`,
      });
    }
  } else if (stopAfter !== null) {
    out.push({
      path: ['tasks', i, 'stop_after'],
      message:
        '"stop_after" stops best-of-N candidates once that many passed, but this task has neither "repeat" nor "candidates"; add "repeat": N, or remove "stop_after"',
    });
  }
  return out;
}

/**
 * The problems of task `t` (tasks[i]) with its candidates' keys (`<key>--c<N>`): one taken by a task outside the list
 * (`external`) or by another task of it (`keys`: each key's first index).
 */
function candidateKeyProblems(
  t: Record<string, unknown>,
  i: number,
  repeat: number | null,
  candidates: number | null,
  keys: ReadonlyMap<string, number>,
  external: ReadonlySet<string>,
): RepeatProblem[] {
  const out: RepeatProblem[] = [];
  const n = repeat ?? candidates;
  if (n === null || typeof t.key !== 'string') return out;
  for (let c = 1; c <= n; c++) {
    const key = candidateKey(t.key, c);
    if (external.has(key)) {
      out.push({
        path: ['tasks', i, repeat !== null ? 'repeat' : 'candidates'],
        message: `candidate ${c} of "${t.key}" would be the task "${key}", but the run already has a task with that key; rename "${t.key}"`,
      });
      continue;
    }
    const other = keys.get(key);
    if (other === undefined) continue;
    out.push({
      path: ['tasks', i, repeat !== null ? 'repeat' : 'candidates'],
      message: `candidate ${c} of "${t.key}" would be the task "${key}", but tasks[${other}] already has that key; rename one of them`,
    });
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
