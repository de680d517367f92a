import { findNodeAtLocation } from 'jsonc-parser';
import type { Rule, RuleFinding } from '../../../manifest/rules/document';

/**
 * Lint rule phases-red-off (warning), the phases section's own (registered through it: index.ts `lintRules`): a task
 * with `phases` sets `phases.test.red: false`, so its test phase may pass with tests that pass without the
 * implementation too (an `exit 0`, tests of a copy): red before green (docs/workflows.md "Phases",
 * run/workflows/phases/red-step.ts) is what shows that the tests depend on the code they judge. The range is the `false`.
 */
export const phasesRedOff: Rule = (doc) => {
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const node = findNodeAtLocation(task.node, ['phases', 'test', 'red']);
    if (!node || node.value !== false) continue;
    out.push({
      rule: 'phases-red-off',
      severity: 'warning',
      message:
        'With "red": false the test phase can pass with tests that pass without the implementation as well (an `exit 0`, or tests of their own copy of the code), and nothing says so. Leave red before green on (remove "red": false) unless the check cannot run without the files at all.',
      range: doc.index.range(node.offset, node.length),
      taskKey: task.key,
    });
  }
  return out;
};
