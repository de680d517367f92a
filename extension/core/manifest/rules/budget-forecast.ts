import { findNodeAtLocation } from 'jsonc-parser';
import type { Rule, RuleFinding } from './document';

/**
 * budget-forecast (warning): a `budget_usd` (the run's, or a task's own) below what the manifest's forecast expects it
 * to cost — the p50 total of the eval log's past tasks of the same models and task types (`verdict plan`), or with
 * tasks of unknown cost the p50 of the others, which it costs at least. The run would probably end BUDGET_EXCEEDED
 * with work undone. The message names both figures; the range is the `budget_usd` value. Only where the lint is given
 * the forecast (`ctx.budgetForecast`: `verdict lint`, `verdict run`, the MCP lint tool); a forecast with nothing known says nothing.
 */
export const budgetForecast: Rule = (doc, ctx) => {
  const check = ctx.budgetForecast;
  if (!check) return [];
  const out: RuleFinding[] = [];
  const say = (node: ReturnType<typeof findNodeAtLocation>, taskKey: string | null) => {
    if (!node || typeof node.value !== 'number' || !(node.value > 0)) return;
    const why = check(Math.round(node.value * 1_000_000), taskKey);
    if (why)
      out.push({
        rule: 'budget-forecast',
        severity: 'warning',
        message: `${taskKey === null ? '' : `task ${taskKey}'s `}${why}. Raise budget_usd, or see \`verdict plan\` for where the cost comes from.`,
        range: doc.index.range(node.offset, node.length),
        taskKey,
      });
  };
  say(findNodeAtLocation(doc.root, ['budget_usd']), null);
  for (const t of doc.tasks) if (t.key !== null) say(findNodeAtLocation(t.node, ['budget_usd']), t.key);
  return out;
};
