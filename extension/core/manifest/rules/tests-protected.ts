import { rangeAt, type Rule, type RuleFinding } from './document';
import type { SourceRange } from '../positions';

/** task_type values that name the job of changing tests. */
const TEST_TASK_TYPE = /^tests?[-_ ]?(hardening|writing|authoring)$/i;
/**
 * Words saying the worker is to change tests that exist: an editing verb, up to three words, then tests; or "the
 * existing tests". Adding new test files is allowed under the default protection, so "add tests" is not enough.
 */
const EDITS_TESTS =
  /\b(?:(?:edit|modify|update|change|extend|rewrite|harden|strengthen|improve|expand|fix up)(?:s|es|ed|ing)?\s+(?:[\w-]+\s+){0,3}?|existing\s+)(?:unit\s+|regression\s+|property\s+)?(?:test\s+(?:cases?|suites?|files?)|tests?)\b/i;
/** A negation just before the words ("do not edit the tests"). */
const NEGATED = /\b(?:not|never|don't|without|no)\s+(?:\w+\s+)?$/i;

/**
 * tests-protected (info): a task whose job is to change tests (`task_type` "test-hardening", or a spec that says it
 * edits existing tests: "update the tests", "extend the existing test suite") keeps the default protection (no `protect` on the task or the run). By default the existing
 * tests at conventional places (test/, tests/, spec/, __tests__/, *_test.*, *.test.*, *.spec.*) and the scripts its
 * check runs are read-only to its worker, and a change to one is a FAIL (extension/core/run/protect.ts): it can add
 * new test files but not change existing ones. Suggests `"protect": []`, or narrowing with `!glob`. Not for a spec
 * that only adds tests ("add tests/test_x.py": new files stay allowed; lint does not look at which files exist),
 * nor one that says not to touch them. The range is the task_type value, else the words in the spec.
 */
export const testsProtected: Rule = (doc) => {
  const out: RuleFinding[] = [];
  if (doc.raw.protect !== undefined) return out;
  for (const task of doc.tasks) {
    if (task.raw.protect !== undefined) continue;
    const type = task.raw.task_type;
    let trigger: string;
    let range: SourceRange | null;
    if (typeof type === 'string' && TEST_TASK_TYPE.test(type)) {
      trigger = `is a ${type} task`;
      range = rangeAt(doc, task.node, ['task_type']);
    } else {
      const spec = task.spec;
      const m = spec ? EDITS_TESTS.exec(spec.value) : null;
      if (!spec || !m || NEGATED.test(spec.value.slice(Math.max(0, m.index - 30), m.index))) continue;
      trigger = `says it will "${m[0]}"`;
      range = spec.rangeOf(m.index, m.index + m[0].length);
    }
    if (!range) continue;
    out.push({
      rule: 'tests-protected',
      severity: 'info',
      message: `This task ${trigger} but keeps the default protection: existing tests (test/, tests/, spec/, __tests__/, *_test.*, *.test.*, *.spec.*) and the scripts its check runs are read-only to its worker, so it can add new test files but changing an existing one is a FAIL. Set "protect": [] on the task, or narrow the default, e.g. "protect": ["!tests/**"].`,
      range,
      taskKey: task.key,
    });
  }
  return out;
};
