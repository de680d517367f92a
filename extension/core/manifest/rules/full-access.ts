import { findNodeAtLocation } from 'jsonc-parser';
import type { Rule, RuleFinding } from './document';

/**
 * full-access-not-enabled (warning): a task sets `full_access: true` while the user has not allowed full access
 * (`ctx.allowFullAccess`, from `allow_full_access` in the config or the `verdict.allowFullAccess` setting). Full
 * access runs the engine without its sandbox (e.g. codex --dangerously-bypass-approvals-and-sandbox), so it
 * must be a deliberate choice. The range is the `true`.
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
      message: 'With full_access the engine will run without its sandbox, free to change anything on this machine. Enable `allow_full_access` in the config (or the `verdict.allowFullAccess` setting) once you mean it, or remove full_access.',
      range: doc.index.range(node.offset, node.length),
      taskKey: task.key,
    });
  }
  return out;
};
