import { findNodeAtLocation } from 'jsonc-parser';
import type { Rule, RuleFinding } from './document';

/**
 * full-access-not-enabled (warning): a task sets `full_access: true` while the user has not allowed full access
 * (`ctx.allowFullAccess`, from `allow_full_access` in the config or the `verdict.allowFullAccess` setting). Full
 * access runs the engine without any sandbox (neither Verdict's bubblewrap nor the engine's own, e.g. codex
 * --dangerously-bypass-approvals-and-sandbox), so a run with such a task is refused before it starts (see
 * core/run/full-access.ts); the editor shows a warning so the manifest can still be written first. The range is the
 * `true`.
 */
export const fullAccessNotEnabled: Rule = (doc, ctx) => {
  if (ctx.allowFullAccess === true) return [];
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const node = findNodeAtLocation(task.node, ['full_access']);
    if (!node || node.value !== true) continue;
    out.push({
      rule: 'full-access-not-enabled',
      severity: 'warning',
      message:
        'With full_access the engine runs without its sandbox or Verdict\'s, free to change anything on this machine, so the run will be refused until `"allow_full_access": true` is in the config file (or the `verdict.allowFullAccess` setting is on). Set it once you mean it, or remove full_access.',
      range: doc.index.range(node.offset, node.length),
      taskKey: task.key,
    });
  }
  return out;
};
