import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

/** Every .ts/.svelte file under `dir`. */
function sources(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts|svelte)$/.test(e.name))
    .map((e) => path.join(e.parentPath, e.name));
}

/** What `file` imports: `from '…'` (imports and re-exports), side-effect `import '…'`, `import('…')`, `require('…')`. */
const importsOf = (file: string) =>
  [...fs.readFileSync(file, 'utf8').matchAll(/(?:from\s+|import\s*\(\s*|import\s+|require\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1] as string);

/** The project files `file` imports (relative imports resolved from the repository root); packages left out. */
const projectImportsOf = (file: string) =>
  importsOf(file)
    .filter((i) => i.startsWith('.'))
    .map((i) => path.normalize(path.join(path.dirname(file), i)));

/**
 * The layer of a file: `core/<folder>` for extension/core/<folder>/**, `schemas`, `engines`, `webview`,
 * `extension/cli`, `extension/vscode`, `test`; `core` for a file directly in extension/core.
 */
function layerOf(file: string): string {
  const parts = file.split(path.sep);
  if (parts[0] === 'extension' && parts[1] === 'core') return parts.length > 3 ? `core/${parts[2]}` : 'core';
  if (parts[0] === 'extension') return `extension/${parts[1]}`;
  return parts[0] as string;
}

/** Files under `dirs` that import a project file whose layer is one of `forbidden`, as "file -> import". */
function strayImports(dirs: string[], forbidden: (layer: string) => boolean): string[] {
  return dirs.flatMap(sources).flatMap((f) =>
    projectImportsOf(f)
      .filter((i) => forbidden(layerOf(i)))
      .map((i) => `${f} -> ${i}`),
  );
}

/**
 * The layers of docs/architecture.md, top row first: a folder imports only folders in rows below its own (never
 * one in its own row), so a picture of the imports has no arrow running back up.
 */
const LAYERS: string[][] = [
  ['core/dashboard', 'core/pool'],
  ['core/run'],
  ['core/scoreboard'],
  ['core/config'],
  ['core/manifest', 'core/cost'],
  ['core/git', 'core/store', 'core/catalog', 'core/live'],
  ['core/process'],
  ['core/host', 'engines'],
  ['core/fs'],
  ['schemas'],
];

/** Every folder-to-folder import of extension/core, schemas and engines, as a map from layer to the layers it imports. */
function layerGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const f of ['extension/core', 'schemas', 'engines'].flatMap(sources)) {
    const from = layerOf(f);
    for (const to of projectImportsOf(f).map(layerOf)) {
      if (to === from) continue;
      if (!graph.has(from)) graph.set(from, new Set());
      graph.get(from)!.add(to);
    }
  }
  return graph;
}

/**
 * The project file an import names, resolved the way the bundler and tsx do for this repository: the path as written,
 * then with `.ts`, `.mts` or `/index.ts`, and a `.js` ending read as the `.ts` beside it; null for a package or a file
 * outside `known` (generated JavaScript, assets).
 */
function resolveImport(from: string, spec: string, known: ReadonlySet<string>): string | null {
  if (!spec.startsWith('.')) return null;
  const base = path.normalize(path.join(path.dirname(from), spec));
  for (const candidate of [base, `${base}.ts`, `${base}.mts`, path.join(base, 'index.ts'), base.replace(/\.js$/, '.ts')]) {
    if (known.has(candidate)) return candidate;
  }
  return null;
}

/** The file import graph of `dirs` (type-only imports and re-exports included): each file → the project files it imports. */
function fileGraph(dirs: string[]): Map<string, string[]> {
  const files = dirs.flatMap(sources);
  const known = new Set(files);
  return new Map(
    files.map((f) => [
      f,
      importsOf(f)
        .map((i) => resolveImport(f, i, known))
        .filter((i): i is string => i !== null),
    ]),
  );
}

/**
 * The import cycles of `graph`: its strongly connected components of more than one file, or of one file importing
 * itself (Tarjan's algorithm), each sorted, largest first.
 */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles.sort((a, b) => b.length - a.length);
}

/** The layout rules of docs/architecture.md "Layers and import rules": `vscode` only in extension/vscode and test/integration; core and engines stay pure; the layers import only downwards. */
describe('layout: import rules', () => {
  it('imports vscode only in extension/vscode/** (and test/integration/**)', () => {
    const offenders = ['extension', 'engines', 'schemas', 'webview']
      .flatMap(sources)
      .filter((f) => !f.startsWith(path.join('extension', 'vscode') + path.sep))
      .filter((f) => importsOf(f).includes('vscode'));
    assert.deepEqual(offenders, []);
  });

  it('keeps extension/core and engines free of the adapter, the CLI and the DOM', () => {
    const offenders = [...sources('extension/core'), ...sources('engines')].filter((f) =>
      importsOf(f).some((i) => /(^|\/)(vscode|cli)(\/|$)/.test(i) || i === 'svelte'),
    );
    assert.deepEqual(offenders, []);
  });

  it('keeps Svelte and the DOM in webview/**, and webview/** free of Node, vscode and the extension (types from schemas/ only)', () => {
    const svelteOutside = ['extension', 'engines', 'schemas']
      .flatMap(sources)
      .filter((f) => importsOf(f).some((i) => i === 'svelte' || i.startsWith('svelte/') || i.endsWith('.svelte')));
    assert.deepEqual(svelteOutside, []);
    const domOutside = ['extension', 'engines', 'schemas']
      .flatMap(sources)
      .filter((f) => /(?<![\w.])(document|window)\.[a-zA-Z]/.test(fs.readFileSync(f, 'utf8')));
    assert.deepEqual(domOutside, []);
    const webview = sources('webview');
    assert.ok(webview.length > 5);
    const offenders = webview.filter((f) => importsOf(f).some((i) => i.startsWith('node:') || i === 'vscode' || /(^|\/)extension\//.test(i)));
    assert.deepEqual(offenders, []);
  });

  it('keeps git/ and store/ below run/ and live/: neither imports them', () => {
    assert.deepEqual(
      strayImports(['extension/core/git', 'extension/core/store'], (l) => l === 'core/run' || l === 'core/live'),
      [],
    );
  });

  it("keeps each workflow plugin's folder its own: outside run/workflows/ only the table (run/workflows/index.ts) is imported", () => {
    const plugins = path.join('extension', 'core', 'run', 'workflows');
    const inPlugin = (f: string) => f.startsWith(plugins + path.sep) && path.dirname(f) !== plugins;
    const stray = ['extension', 'engines', 'schemas']
      .flatMap(sources)
      .filter((f) => !f.startsWith(plugins + path.sep))
      .flatMap((f) => projectImportsOf(f).map((i) => ({ f, i })))
      .filter(({ i }) => inPlugin(i) || (path.dirname(i) === plugins && path.basename(i) !== 'index' && path.basename(i) !== 'workflow'))
      .map(({ f, i }) => `${f} -> ${i}`);
    assert.deepEqual(stray, []);
  });

  it('keeps live/ (state files, registry, watch) below run/ and dashboard/', () => {
    assert.deepEqual(
      strayImports(['extension/core/live'], (l) => l === 'core/run' || l === 'core/dashboard'),
      [],
    );
  });

  it('keeps schemas/ self-contained: it imports nothing from extension/ (or engines/)', () => {
    assert.deepEqual(
      strayImports(['schemas'], (l) => l !== 'schemas'),
      [],
    );
  });

  it('keeps core/fs and core/host at the bottom: they import nothing of the project but each other', () => {
    assert.deepEqual(
      strayImports(['extension/core/fs'], (l) => l !== 'core/fs'),
      [],
    );
    assert.deepEqual(
      strayImports(['extension/core/host'], (l) => l !== 'core/host' && l !== 'core/fs'),
      [],
    );
  });

  it('follows the layer table of docs/architecture.md: each folder imports only rows below its own', () => {
    const rank = new Map(LAYERS.flatMap((row, i) => row.map((layer) => [layer, LAYERS.length - i] as const)));
    const unknown = [...layerGraph().keys()].filter((l) => !rank.has(l));
    assert.deepEqual(unknown, [], 'a folder with no row in LAYERS (add it there and in docs/architecture.md)');
    const upward = [...layerGraph()].flatMap(([from, tos]) =>
      [...tos].filter((to) => (rank.get(to) ?? Infinity) >= rank.get(from)!).map((to) => `${from} -> ${to}`),
    );
    assert.deepEqual(upward, []);
  });

  it('has no arrow running back up: the folder import graph of core, schemas and engines has no cycle', () => {
    const graph = layerGraph();
    const cycles: string[] = [];
    const walk = (node: string, pathSoFar: string[]) => {
      for (const next of graph.get(node) ?? []) {
        if (next === pathSoFar[0]) cycles.push([...pathSoFar, next].join(' -> '));
        else if (!pathSoFar.includes(next) && next > pathSoFar[0]!) walk(next, [...pathSoFar, next]);
      }
    };
    for (const node of [...graph.keys()].sort()) walk(node, [node]);
    assert.deepEqual(cycles, []);
  });

  it('has no import cycle between files anywhere in the source, type imports included', () => {
    const graph = fileGraph(['extension', 'engines', 'schemas', 'webview']);
    // The graph sees real edges, type-only and .js-suffixed ones included, so a cycle cannot hide behind resolution.
    assert.ok(graph.get(path.join('extension/core/run/runner.ts'))?.includes(path.join('extension/core/run/run-types.ts')));
    assert.ok(graph.get(path.join('extension/core/run/steps/context.ts'))?.includes(path.join('extension/core/run/run-types.ts')));
    assert.ok([...graph.values()].some((tos) => tos.some((t) => t.endsWith('.svelte'))));
    assert.deepEqual(importCycles(graph), []);
  });

  it('finds a cycle when there is one: direct, through a third file, and a file importing itself', () => {
    assert.deepEqual(
      importCycles(
        new Map([
          ['a', ['b']],
          ['b', ['a']],
          ['c', ['a']],
        ]),
      ),
      [['a', 'b']],
    );
    assert.deepEqual(
      importCycles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
      [['a', 'b', 'c']],
    );
    assert.deepEqual(importCycles(new Map([['a', ['a']]])), [['a']]);
    assert.deepEqual(
      importCycles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
      [],
    );
  });

  it('keeps the adapters apart: extension/vscode and extension/cli never import each other', () => {
    assert.deepEqual(
      strayImports(['extension/vscode'], (l) => l === 'extension/cli'),
      [],
    );
    assert.deepEqual(
      strayImports(['extension/cli'], (l) => l === 'extension/vscode'),
      [],
    );
  });

  it('keeps the runs listing light: cli/runs-command.ts reaches no git, manifest, spawning or process-library code', () => {
    // `verdict runs RUN` on a run of 1,000 tasks is mostly Node's start; each of these pulled in 100-400 KB of chunks.
    // What loads with it: static imports that are not `import type` (those are erased); `import()` loads later.
    const known = new Set(['extension', 'schemas', 'engines'].flatMap(sources));
    const loaded = (f: string) =>
      [...fs.readFileSync(f, 'utf8').matchAll(/^(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)].map((m) => m[1] as string);
    const reached = new Set<string>();
    const walk = (f: string): void => {
      if (reached.has(f)) return;
      reached.add(f);
      for (const i of loaded(f)) {
        const g = resolveImport(f, i, known);
        if (g) walk(g);
      }
    };
    walk(path.join('extension', 'cli', 'runs-command.ts'));
    assert.ok(reached.has(path.join('extension', 'core', 'live', 'registry.ts')), 'the walk follows the imports');
    const heavy = [...reached].filter(
      (f) =>
        /^extension\/core\/(git|manifest)\//.test(f) ||
        /process\/(supervisor|spawner)\.ts$/.test(f) ||
        loaded(f).some((i) => ['execa', 'simple-git'].includes(i)),
    );
    assert.deepEqual(heavy, []);
  });

  it('finds the sources it checks (the rule cannot pass vacuously)', () => {
    assert.ok(sources('extension/core/git').length > 3 && sources('extension/core/store').length > 3 && sources('schemas').length > 2);
    assert.ok(sources('extension/core/fs').length > 0 && sources('extension/core/host').length > 0);
    // The checker sees a real edge (run/ imports live/), so an import it should catch is not resolved away.
    assert.ok(layerGraph().get('core/run')?.has('core/live'));
    assert.ok(sources('extension/core').length > 10);
    assert.ok(sources('extension/vscode').some((f) => importsOf(f).includes('vscode')));
  });
});
