/**
 * Workflow `validate`'s section of a task (docs/workflows.md "Validated"): N workers, then a validator judging their
 * work from its inputs. compile.ts compiles it, rule.ts says what is wrong with it.
 */
import type { EngineRef, WorkflowSection } from '../../../manifest/sections/section';
import { compileValidate } from './compile';
import { validateProblems } from './rule';

export const validateSection: WorkflowSection = {
  name: 'validate',
  code: 'validate',
  problems: (tasks, ctx) => validateProblems(tasks, ctx.existingKeys),
  engines(t) {
    if (!isObject(t.validate)) return [];
    const v = t.validate;
    const refs: EngineRef[] = [{ kind: 'writer', at: ['validate', 'engine'], name: v.engine, who: 'the validator', lint: { who: 'the validator', order: 10 } }];
    if (Array.isArray(v.engines))
      v.engines.forEach((e, j) =>
        refs.push({
          kind: 'writer',
          at: ['validate', 'engines', j, 'engine'],
          name: isObject(e) ? e.engine : undefined,
          who: `worker ${j + 1}`,
          lint: { who: 'a worker', order: 7 },
        }),
      );
    return refs;
  },
  count(raw) {
    if (!isObject(raw.validate)) return null;
    const v = raw.validate;
    const workers = Array.isArray(v.engines) ? v.engines.length : typeof v.workers === 'number' ? v.workers : 2;
    return { tasks: workers + 1, what: 'workers and validator' };
  },
  compile: (spec, raw) => (isObject(raw.validate) ? compileValidate(spec, raw.validate) : null),
};

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
