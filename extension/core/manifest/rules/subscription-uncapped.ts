import { findNodeAtLocation } from 'jsonc-parser';
import type { Rule, RuleFinding } from './document';

/**
 * subscription-uncapped (warning): the manifest caps its spend with `budget_usd` (run or task) but a task runs on an
 * engine of one of its subscription logins (`billing: "subscription"`) with no `budget_tokens` over it (its own or the
 * run's). Such an engine pays nothing per token, so budget_usd never counts it (run/spend.ts): the cap the author
 * wrote does not cap that task. The range is the task's `engine` value.
 */
export const subscriptionUncapped: Rule = (doc) => {
  const logins = doc.raw.logins;
  if (!logins || typeof logins !== 'object') return [];
  const flat = new Map<string, string>();
  for (const [name, l] of Object.entries(logins as Record<string, unknown>)) {
    const login = l as { engines?: unknown; billing?: unknown } | null;
    if (login?.billing !== 'subscription' || !Array.isArray(login.engines)) continue;
    for (const e of login.engines) if (typeof e === 'string' && !flat.has(e)) flat.set(e, name);
  }
  const runUsd = typeof doc.raw.budget_usd === 'number';
  const runTokens = typeof doc.raw.budget_tokens === 'number';
  if (!flat.size || runTokens) return [];
  const out: RuleFinding[] = [];
  for (const task of doc.tasks) {
    const login = flat.get(task.engine);
    const usd = runUsd || typeof task.raw.budget_usd === 'number';
    if (login === undefined || !usd || typeof task.raw.budget_tokens === 'number') continue;
    const node = findNodeAtLocation(task.node, ['engine']);
    if (!node) continue;
    out.push({
      rule: 'subscription-uncapped',
      severity: 'warning',
      message: `${task.engine} is on the subscription login "${login}" (billing "subscription"): it pays nothing per token, so budget_usd does not cap this task. Add budget_tokens (to the run or this task) to cap it.`,
      range: doc.index.range(node.offset, node.length),
      taskKey: task.key,
    });
  }
  return out;
};
