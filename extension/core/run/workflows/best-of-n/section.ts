/**
 * Workflow best-of-N's section of a task (docs/workflows.md "Best-of-N", "Ranked", "Consensus"): `repeat`/`candidates`,
 * with `select`, a ranked group's `rank` reviewers and a consensus group's inputs engine. compile.ts compiles it into
 * a group and its candidates, rule.ts says what is wrong with it (reported under code `repeat`).
 */
import type { EngineRef, WorkflowSection } from '../../../manifest/sections/section';
import { isObject } from '../../../manifest/sections/shared';
import { compileRepeat } from './compile';
import { repeatProblems } from './rule';

export const bestOfNSection: WorkflowSection = {
  name: 'best-of-N',
  code: 'repeat',
  problems: (tasks, ctx) => repeatProblems(tasks, ctx.existingKeys),
  engines(t) {
    const refs: EngineRef[] = [];
    if (Array.isArray(t.candidates))
      t.candidates.forEach((entry, j) =>
        refs.push({
          kind: 'writer',
          at: ['candidates', j, 'engine'],
          name: isObject(entry) ? entry.engine : undefined,
          who: `candidate ${j + 1}`,
          lint: { who: 'a candidate', order: 2 },
        }),
      );
    if (isObject(t.rank)) refs.push({ kind: 'readers', at: ['rank'], entries: t.rank.engines, verb: 'rank', lint: { who: 'a ranking reviewer', order: 4 } });
    // A consensus group's inputs engine reads the passing candidates' work, as a ranking reviewer does.
    if (isObject(t.distinguish) && isObject(t.distinguish.inputs))
      refs.push({
        kind: 'reader',
        at: ['distinguish', 'inputs', 'engine'],
        name: t.distinguish.inputs.engine,
        verb: 'write inputs',
        lint: { who: 'the inputs engine', order: 6 },
      });
    return refs;
  },
  count: (raw) =>
    typeof raw.repeat === 'number'
      ? { tasks: raw.repeat, what: 'candidates' }
      : Array.isArray(raw.candidates)
        ? { tasks: raw.candidates.length, what: 'candidates' }
        : null,
  compile(spec, raw) {
    const out = compileRepeat([spec], [raw]);
    // compileRepeat hands a task that is not best-of-N back as it is.
    return out.length === 1 && out[0] === spec ? null : out;
  },
};
