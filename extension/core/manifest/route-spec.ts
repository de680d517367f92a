/**
 * The `route` block of `engine: "auto"` (the manifest's, else the config's): its checks, each with the path of what is
 * wrong, and its parsed form. The block: `{"from": ["codex:gpt-5-mini", "claude:haiku", "opencode:openrouter/qwen/…"],
 * "prefer": "cost" | "time" | "pass_rate", "explore": 0.1, "min_tasks": 3, "seed": "…"}`.
 */
import type { RouteChoice, RouteSpec } from './types';

/** The engine name that routes by evidence instead of naming an engine. */
export const AUTO_ENGINE = 'auto';
/** Defaults of the block's optional fields. */
export const ROUTE_DEFAULTS = { prefer: 'cost' as const, explore: 0.1, minTasks: 3 };
const FIELDS = new Set(['from', 'prefer', 'explore', 'min_tasks', 'seed']);

/** One problem of a route block: the path below the block (e.g. `['from', 2]`) and what is wrong. */
export interface RouteProblem {
  at: (string | number)[];
  message: string;
}

/** `engine:model` → its engine and model (the model may hold `/` and `:`; `engine` alone: model null). */
export function parseRouteChoice(entry: string): RouteChoice {
  const colon = entry.indexOf(':');
  return colon < 0 ? { id: entry, engine: entry, model: null } : { id: entry, engine: entry.slice(0, colon), model: entry.slice(colon + 1) };
}

/**
 * Everything wrong with a route block: not an object, `from` missing, empty, not strings, an entry without an engine,
 * a blank model, a duplicate, `auto` itself, an engine not in `engines` (when given); `prefer` not one of the three;
 * `explore` not a number in [0, 1]; `min_tasks` not an integer ≥ 1; `seed` not a string; an unknown field.
 */
export function routeProblems(block: unknown, engines?: ReadonlySet<string>): RouteProblem[] {
  if (typeof block !== 'object' || block === null || Array.isArray(block))
    return [{ at: [], message: 'route must be an object: {"from": ["engine:model", …], "prefer": "cost", "explore": 0.1, "min_tasks": 3}' }];
  const b = block as Record<string, unknown>;
  const out: RouteProblem[] = [];
  for (const key of Object.keys(b))
    if (!FIELDS.has(key)) out.push({ at: [key], message: `route.${key} is not a known field (known: ${[...FIELDS].join(', ')})` });
  if (b.from === undefined)
    out.push({ at: [], message: 'route.from is missing: name the candidates auto picks from, e.g. ["codex:gpt-5-mini", "claude:haiku"]' });
  else if (!Array.isArray(b.from)) out.push({ at: ['from'], message: 'route.from must be a list of "engine:model" strings' });
  else if (!b.from.length) out.push({ at: ['from'], message: 'route.from is empty: auto has no candidate to pick; name at least one "engine:model"' });
  else {
    const seen = new Set<string>();
    b.from.forEach((entry, j) => {
      if (typeof entry !== 'string' || !entry.trim())
        return void out.push({ at: ['from', j], message: `route.from[${j}] must be a non-empty "engine:model" string` });
      const c = parseRouteChoice(entry);
      if (!c.engine) out.push({ at: ['from', j], message: `route.from[${j}] "${entry}" names no engine before the ":"` });
      else if (c.model !== null && !c.model.trim())
        out.push({
          at: ['from', j],
          message: `route.from[${j}] "${entry}" has an empty model after the ":" (write "${c.engine}" alone for its default model)`,
        });
      else if (c.engine === AUTO_ENGINE) out.push({ at: ['from', j], message: `route.from[${j}] cannot be "auto" itself` });
      else if (engines && !engines.has(c.engine))
        out.push({ at: ['from', j], message: `unknown engine "${c.engine}" in route.from[${j}]; known engines: ${[...engines].sort().join(', ')}` });
      else if (seen.has(entry)) out.push({ at: ['from', j], message: `route.from[${j}] "${entry}" is listed twice` });
      seen.add(entry);
    });
  }
  if (b.prefer !== undefined && b.prefer !== 'cost' && b.prefer !== 'time' && b.prefer !== 'pass_rate')
    out.push({ at: ['prefer'], message: `route.prefer must be "cost", "time" or "pass_rate", got ${JSON.stringify(b.prefer)}` });
  if (b.explore !== undefined && !(typeof b.explore === 'number' && b.explore >= 0 && b.explore <= 1))
    out.push({
      at: ['explore'],
      message: `route.explore is the share of decisions that explore and must be a number from 0 to 1, got ${JSON.stringify(b.explore)}`,
    });
  if (b.min_tasks !== undefined && !(Number.isInteger(b.min_tasks) && (b.min_tasks as number) >= 1 && (b.min_tasks as number) <= 1_000_000))
    out.push({ at: ['min_tasks'], message: `route.min_tasks must be an integer from 1 to 1000000, got ${JSON.stringify(b.min_tasks)}` });
  if (b.seed !== undefined && typeof b.seed !== 'string') out.push({ at: ['seed'], message: 'route.seed must be a string' });
  return out;
}

/** The parsed block (call only when routeProblems found nothing). */
export function toRouteSpec(block: Record<string, unknown>, source: RouteSpec['source']): RouteSpec {
  return {
    from: (block.from as string[]).map(parseRouteChoice),
    prefer: (block.prefer as RouteSpec['prefer'] | undefined) ?? ROUTE_DEFAULTS.prefer,
    explore: (block.explore as number | undefined) ?? ROUTE_DEFAULTS.explore,
    minTasks: (block.min_tasks as number | undefined) ?? ROUTE_DEFAULTS.minTasks,
    seed: typeof block.seed === 'string' ? block.seed : null,
    source,
  };
}
