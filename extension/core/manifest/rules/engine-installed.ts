import { findNodeAtLocation, type JSONPath, type Node } from 'jsonc-parser';
import { findBinary } from '../../../../engines/find-binary';
import type { SourceRange } from '../positions';
import { namedEngines } from '../sections';
import { rangeAt, taskAnchor, type LintContext, type LintDocument, type LintTask, type Rule, type RuleFinding } from './document';

/** One place a task names an engine: the engine's name, who runs on it, and where the name is written. */
interface EngineUse {
  name: string;
  who: string;
  range: SourceRange;
}

/**
 * engine-not-installed (warning): an engine a task would run on whose binary is not on PATH (`ctx.pathEnv`), with
 * the engine's install command (EngineSpec.install). Every place a task names an engine counts, as the run's
 * preflight (core/run/preflight.ts) would refuse the run for each: `engine` (or the default engine, at the key),
 * `fallback`, `review`, every engine a workflow section names (LintContext.sectionEngines: a new
 * workflow's are linted without a change here), and the run's `review`. Unknown engines are left to unknown-engine. Skipped when `ctx.pathEnv` is absent (the start gate: the
 * preflight refuses a missing binary there by itself). Looking a name up on PATH only reads the file system
 * (engines/find-binary.ts): nothing runs.
 */
export const engineNotInstalled: Rule = (doc, ctx) => {
  if (ctx.pathEnv === undefined) return [];
  const pathEnv = ctx.pathEnv;
  const found = new Map<string, boolean>();
  const installed = (binary: string): boolean => {
    let hit = found.get(binary);
    if (hit === undefined) found.set(binary, (hit = findBinary(binary, pathEnv) !== null));
    return hit;
  };
  const out: RuleFinding[] = [];
  const report = (use: EngineUse, taskKey: string | null) => {
    const engine = ctx.engines.get(use.name);
    if (!engine || installed(engine.binary)) return;
    out.push({
      rule: 'engine-not-installed',
      severity: 'warning',
      message: `${use.who} runs on engine "${use.name}", whose command \`${engine.binary}\` is not on PATH: the run would refuse to start. Install it (${engine.install}), or name an engine you have (\`verdict doctor\` lists them).`,
      range: use.range,
      taskKey,
    });
  };
  for (const use of engineList(doc, doc.root, ['review'], 'engines', 'a reviewer')) report(use, null);
  for (const task of doc.tasks) {
    const seen = new Set<string>();
    for (const use of taskEngines(doc, task, ctx.sectionEngines)) {
      // One finding per engine and task: a reviewer on the task's own engine says nothing new.
      if (seen.has(use.name)) continue;
      seen.add(use.name);
      report(use, task.key);
    }
  }
  return out;
};

/**
 * Every engine a task names, in the order the rule reports them (one per engine: the first): its own (the default
 * engine at the key when it names none), its fallbacks, its reviewers, and every engine a workflow section names
 * (LintContext.sectionEngines, each placed by its EngineLint `order`; the first written first among
 * equals).
 */
function taskEngines(doc: LintDocument, task: LintTask, sectionEngines: LintContext['sectionEngines']): EngineUse[] {
  const node = task.node;
  const own = rangeAt(doc, node, ['engine']);
  const uses: (EngineUse & { order: number })[] = [
    { name: task.engine, who: 'This task', range: own ?? taskAnchor(doc, task), order: 0 },
    ...engineList(doc, node, [], 'fallback', 'a fallback attempt').map((u) => ({ ...u, order: 1 })),
    ...engineList(doc, node, ['review'], 'engines', 'a reviewer').map((u) => ({ ...u, order: 3 })),
  ];
  for (const ref of sectionEngines(task.raw)) {
    const lint = ref.lint ?? { who: ref.kind === 'writer' ? ref.who : 'a reader', order: 100 };
    for (const { at } of namedEngines(ref)) {
      const n = findNodeAtLocation(node, at);
      if (n?.type === 'string') uses.push({ name: String(n.value), who: capital(lint.who), range: doc.index.range(n.offset, n.length), order: lint.order });
    }
  }
  // A stable sort: uses of one order keep the order they were written in.
  return uses.sort((a, b) => a.order - b.order);
}

/** The engines of the array `list` under `at`: each entry a name, or an object with `engine`. */
function engineList(doc: LintDocument, node: Node, at: JSONPath, list: string, who: string): EngineUse[] {
  const arr = findNodeAtLocation(node, [...at, list]);
  if (arr?.type !== 'array') return [];
  const out: EngineUse[] = [];
  for (const entry of arr.children ?? []) {
    const n = entry.type === 'string' ? entry : entry.type === 'object' ? findNodeAtLocation(entry, ['engine']) : undefined;
    if (n?.type === 'string') out.push({ name: String(n.value), who: capital(who), range: doc.index.range(n.offset, n.length) });
  }
  return out;
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
