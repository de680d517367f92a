import { findNodeAtLocation } from 'jsonc-parser';
import { findBinary } from '../../../../engines/find-binary';
import { AUTO_ENGINE, parseRouteChoice } from '../route-spec';
import { rangeAt, taskAnchor, type Rule, type RuleFinding } from './document';

/**
 * route (engine "auto"; docs/scoreboard.md "Routing"). The block's own errors (an empty or unknown `from`, `explore`
 * outside [0, 1], …) are the loader's, at their positions (manifest/route-spec.ts). This rule adds, for a manifest
 * with a task on `engine: "auto"`:
 * - warning (as engine-not-installed: the machine's state, not the manifest's fault, and the preflight refuses the
 *   run itself): a `route.from` candidate whose engine's binary is not on PATH (`ctx.pathEnv`; skipped without it): auto
 *   would pick it and the run's preflight refuses to start. At the entry.
 * - info: a task type on which no candidate has any evidence in the eval log (`ctx.routeEvidence`; skipped without
 *   it): "auto will explore" — its first attempts are Thompson draws among untried candidates. At the first such
 *   task's engine (or key).
 */
export const routeRule: Rule = (doc, ctx) => {
  const auto = doc.tasks.filter((t) => t.engine === AUTO_ENGINE);
  if (!auto.length) return [];
  const out: RuleFinding[] = [];
  const from = findNodeAtLocation(doc.root, ['route', 'from']);
  const entries = from?.type === 'array' ? (from.children ?? []).filter((c) => c.type === 'string') : [];
  if (ctx.pathEnv !== undefined) {
    for (const n of entries) {
      const c = parseRouteChoice(String(n.value));
      const engine = ctx.engines.get(c.engine);
      if (!engine || findBinary(engine.binary, ctx.pathEnv) !== null) continue;
      out.push({
        rule: 'route',
        severity: 'warning',
        message: `route.from names "${c.id}", whose engine's command \`${engine.binary}\` is not on PATH: auto may pick it and the run would refuse to start. Install it (${engine.install}), or take it out of route.from.`,
        range: doc.index.range(n.offset, n.length),
        taskKey: null,
      });
    }
  }
  if (ctx.routeEvidence && entries.length) {
    const said = new Set<string>();
    for (const t of auto) {
      const type =
        typeof (t.node && findNodeAtLocation(t.node, ['task_type'])?.value) === 'string' ? String(findNodeAtLocation(t.node, ['task_type'])?.value) : null;
      const key = type ?? '';
      if (said.has(key)) continue;
      said.add(key);
      const known = entries.some((n) => {
        const c = parseRouteChoice(String(n.value));
        return c.model !== null && ctx.routeEvidence!(c.model, type);
      });
      if (known) continue;
      out.push({
        rule: 'route',
        severity: 'info',
        message: `auto will explore: no candidate of route.from has a judged task of task type ${type === null ? '(none)' : `"${type}"`} in the eval log, so its first attempts are Thompson draws among untried candidates (cheaper ones more often) until one is proven.`,
        range: rangeAt(doc, t.node, ['engine']) ?? taskAnchor(doc, t),
        taskKey: t.key,
      });
    }
  }
  return out;
};
