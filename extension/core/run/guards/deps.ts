/**
 * Guard `deps`: dependencies the worker declared that the task does not allow (`allow_deps`). Read from every
 * dependency manifest the worker added or changed, at any depth (a nested package.json counts as much as the root
 * one): a name declared now that the same file (or, for a new file, nothing) did not declare before is new.
 * - package.json: dependencies, devDependencies, peerDependencies, optionalDependencies, bundleDependencies /
 *   bundledDependencies (npm docs "package.json");
 * - requirements*.txt / requirements*.in and *.txt under a `requirements/` folder: one requirement per line (pip
 *   "Requirements File Format"; options, `-r`/`-c` includes and comments skipped; `#egg=` names URLs);
 * - pyproject.toml: [project] dependencies and optional-dependencies (PEP 621), [dependency-groups] (PEP 735),
 *   [build-system] requires (PEP 518), [tool.poetry.*dependencies] and its groups;
 * - go.mod: `require` module paths and `replace` targets (go.dev/ref/mod);
 * - Cargo.toml: [dependencies], [dev-dependencies], [build-dependencies], their [target.*] forms and
 *   [workspace.dependencies] (a renamed entry counts by its `package`).
 * Names compare normalized (lower case, runs of `-`, `_`, `.` as one `-`: PEP 503, and Cargo treats `-`/`_` alike).
 * What swaps the package behind a name counts as a declaration of its own: an npm alias (`npm:other`) or a git, URL,
 * file or GitHub source, an npm `overrides`/`resolutions` entry, Cargo's [patch.*] and [replace], a pip `-r`/`-c`
 * include or an extra package index. A section written twice in one package.json is read both times.
 * A manifest that no longer parses is a finding too: its new dependencies could not be ruled out.
 */
import path from 'node:path';
import picomatch from 'picomatch';
import { parseTree, type Node } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import type { Change, GuardFinding } from './types';

/** Declared dependency names → the 1-based line that declares each (first one). */
export type Declared = Map<string, number>;

const NPM_SECTIONS = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'];
const BUNDLED = ['bundleDependencies', 'bundledDependencies'];
const OVERRIDES = ['overrides', 'resolutions'];

/** Which kind of dependency manifest `file` is, or null. */
export function manifestKind(file: string): 'npm' | 'pip' | 'pyproject' | 'go' | 'cargo' | null {
  const base = path.posix.basename(file);
  if (file.split('/').includes('node_modules')) return null;
  if (base === 'package.json') return 'npm';
  if (base === 'pyproject.toml') return 'pyproject';
  if (base === 'go.mod') return 'go';
  if (base === 'Cargo.toml') return 'cargo';
  if (/^requirements.*\.(txt|in)$/.test(base) || (path.posix.basename(path.posix.dirname(file)) === 'requirements' && base.endsWith('.txt'))) return 'pip';
  return null;
}

/**
 * A dependency name as compared: lower case, runs of `-`, `_` and `.` as one `-`. Declarations that are not plain
 * names (`lodash from github:x/y`, `override lodash`, `-r extra.txt`) keep their words apart.
 */
export function normalizeName(name: string): string {
  return name
    .trim()
    .toLowerCase()
    .replace(/[-_.]+/g, '-');
}

/**
 * The dependencies `text` declares, read as a manifest of `kind`.
 * @throws Error saying why the text is not a readable manifest (the message names the line where the parser does)
 */
export function declaredDependencies(kind: NonNullable<ReturnType<typeof manifestKind>>, text: string): Declared {
  switch (kind) {
    case 'npm':
      return npmDeps(text);
    case 'pip':
      return pipDeps(text);
    case 'go':
      return goDeps(text);
    case 'pyproject':
    case 'cargo':
      return tomlDeps(kind, text);
  }
}

/** New dependencies in the changed manifests, outside `allow` (globs over normalized names, e.g. `@types/*`). */
export function findNewDependencies(changes: readonly Change[], allow: readonly string[]): GuardFinding[] {
  const allowed = allow.length ? picomatch(allow.map(normalizeName)) : () => false;
  const out: GuardFinding[] = [];
  for (const c of changes) {
    const kind = manifestKind(c.path);
    if (!kind || c.status === 'deleted') continue;
    if (c.kind !== 'file') {
      // A manifest made a link (to a file of another name) would declare whatever that file holds, unread.
      out.push({
        guard: 'deps',
        file: c.path,
        line: null,
        message: `a dependency manifest that is ${c.kind === 'symlink' ? `a symlink (to ${c.target ?? '?'})` : 'not a regular file'}, so its new dependencies cannot be ruled out`,
      });
      continue;
    }
    if (c.after === null) {
      out.push({
        guard: 'deps',
        file: c.path,
        line: null,
        message: `a dependency manifest that is ${c.unreadable === 'large' ? 'too large' : 'not text'}, so its new dependencies cannot be ruled out`,
      });
      continue;
    }
    let now: Declared;
    try {
      now = declaredDependencies(kind, c.after);
    } catch (e) {
      out.push({
        guard: 'deps',
        file: c.path,
        line: null,
        message: `no longer parses (${(e as Error).message.split('\n')[0]}), so its new dependencies cannot be ruled out`,
      });
      continue;
    }
    let before: Declared = new Map();
    const beforeKind = c.status === 'renamed' && c.from ? manifestKind(c.from) : kind;
    if (c.before !== null && beforeKind === kind) {
      try {
        before = declaredDependencies(kind, c.before);
      } catch {
        // an unreadable base declares nothing we can trust: every dependency now is judged as new
      }
    }
    for (const [name, line] of now) {
      if (before.has(name) || allowed(name)) continue;
      out.push({
        guard: 'deps',
        file: c.path,
        line,
        message: `new dependency "${name}", not in the task's allow_deps${allow.length ? ` (${allow.join(', ')})` : ''}`,
      });
    }
  }
  return out;
}

function npmDeps(text: string): Declared {
  const errors: { offset: number }[] = [];
  const root = parseTree(text, errors as never, { allowTrailingComma: false, disallowComments: true });
  if (!root || errors.length || root.type !== 'object')
    throw new Error(`not a valid JSON object${errors[0] ? ` at line ${lineAt(text, errors[0].offset)}` : ''}`);
  const out: Declared = new Map();
  const add = (name: string, node: Node) => {
    const key = normalizeName(name);
    if (!out.has(key)) out.set(key, lineAt(text, node.offset));
  };
  // Every occurrence of a section: with a key written twice, JSON.parse (and npm) keep the last, so both are read.
  for (const prop of root.children ?? []) {
    const [nameNode, value] = prop.children ?? [];
    const section = nameNode?.value;
    if (!value || typeof section !== 'string') continue;
    if (NPM_SECTIONS.includes(section) && value.type === 'object') {
      for (const entry of value.children ?? []) {
        const [depName, spec] = entry.children ?? [];
        if (!depName || typeof depName.value !== 'string') continue;
        add(depName.value, depName);
        // The same name from somewhere else is another package: an npm alias, a git or URL or file source.
        const source = typeof spec?.value === 'string' ? spec.value.trim() : '';
        const alias = /^npm:((?:@[^/@]+\/)?[^@]+)/.exec(source);
        if (alias?.[1]) add(alias[1], depName);
        else if (/^(?:git\+|git:|https?:|file:|link:|github:|gitlab:|bitbucket:|[\w.-]+\/[\w.-]+(?:#.*)?$)/.test(source))
          add(`${depName.value} from ${source}`, depName);
      }
    } else if (BUNDLED.includes(section) && value.type === 'array') {
      for (const item of value.children ?? []) if (typeof item.value === 'string') add(item.value, item);
    } else if (OVERRIDES.includes(section) && value.type === 'object') {
      // An override changes what an existing dependency resolves to: a new one is judged like a new dependency.
      for (const entry of value.children ?? [])
        if (typeof entry.children?.[0]?.value === 'string') add(`override ${entry.children[0].value}`, entry.children[0]);
    }
  }
  return out;
}

/** One requirement line's project name (PEP 508 names; `#egg=` for a URL), or null for what declares none. */
function pipName(line: string): string | null {
  const egg = /#egg=([A-Za-z0-9._-]+)/.exec(line);
  if (egg) return egg[1] ?? null;
  const bare = line.replace(/\s+#.*$/, '').trim();
  if (!bare || bare.startsWith('#') || bare.startsWith('-')) return null;
  const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(bare);
  return m?.[1] ?? bare;
}

function pipDeps(text: string): Declared {
  const out: Declared = new Map();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    let name: string | null;
    if (/^(-e|--editable)\b/.test(line)) name = pipName(line.replace(/^(-e|--editable)\s*=?\s*/, ''));
    // Another requirements file, a constraints file or another package index brings in what this file does not name.
    else if (/^(-r|--requirement|-c|--constraint|-i|--index-url|--extra-index-url|-f|--find-links)\b/.test(line))
      name = line.replace(/\s+#.*$/, '').replace(/\s*=\s*|\s+/, ' ');
    else if (line.startsWith('-')) name = null;
    else name = pipName(line);
    if (!name) return;
    const key = name.startsWith('-') ? name : normalizeName(name);
    if (!out.has(key)) out.set(key, i + 1);
  });
  return out;
}

function goDeps(text: string): Declared {
  const out: Declared = new Map();
  let block: 'require' | 'replace' | null = null;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/\/\/.*$/, '').trim();
    if (!line) return;
    if (block && line === ')') {
      block = null;
      return;
    }
    const open = /^(require|replace)\s*\($/.exec(line);
    if (open) {
      block = open[1] as 'require' | 'replace';
      return;
    }
    const single = /^(require|replace)\s+(.+)$/.exec(line);
    const kind = single ? (single[1] as 'require' | 'replace') : block;
    const body = single ? (single[2] ?? '') : block ? line : '';
    if (!kind || !body) return;
    const name = kind === 'require' ? body.split(/\s+/)[0] : body.split('=>')[1]?.trim().split(/\s+/)[0];
    if (name && !out.has(normalizeName(name))) out.set(normalizeName(name), i + 1);
  });
  return out;
}

function tomlDeps(kind: 'pyproject' | 'cargo', text: string): Declared {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`not valid TOML: ${(e as Error).message.split('\n')[0]}`);
  }
  const names: string[] = [];
  const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
  const pep508 = (list: unknown) => {
    if (Array.isArray(list)) for (const s of list) if (typeof s === 'string') names.push(/^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(s)?.[1] ?? s);
  };
  const cargoTable = (t: unknown) => {
    for (const [key, v] of Object.entries(obj(t))) names.push(typeof obj(v).package === 'string' ? (obj(v).package as string) : key);
  };
  if (kind === 'pyproject') {
    const project = obj(doc.project);
    pep508(project.dependencies);
    for (const list of Object.values(obj(project['optional-dependencies']))) pep508(list);
    for (const list of Object.values(obj(doc['dependency-groups']))) pep508(list);
    pep508(obj(doc['build-system']).requires);
    const poetry = obj(obj(doc.tool).poetry);
    for (const t of [poetry.dependencies, poetry['dev-dependencies'], ...Object.values(obj(poetry.group)).map((g) => obj(g).dependencies)]) {
      for (const key of Object.keys(obj(t))) if (key !== 'python') names.push(key);
    }
  } else {
    const sections = ['dependencies', 'dev-dependencies', 'build-dependencies', 'dev_dependencies', 'build_dependencies'];
    for (const s of sections) cargoTable(doc[s]);
    for (const target of Object.values(obj(doc.target))) for (const s of sections) cargoTable(obj(target)[s]);
    cargoTable(obj(doc.workspace).dependencies);
    // [patch.<registry>] and [replace] swap what an existing dependency resolves to.
    for (const reg of Object.values(obj(doc.patch))) for (const key of Object.keys(obj(reg))) names.push(`patch ${key}`);
    for (const key of Object.keys(obj(doc.replace))) names.push(`replace ${key}`);
  }
  const out: Declared = new Map();
  for (const name of names) {
    const key = normalizeName(name);
    if (!out.has(key)) out.set(key, lineOfName(text, name.split(' ').pop() ?? name));
  }
  return out;
}

/** The first line that names `name` as a key or in a string (the TOML parser keeps no positions); 1 when none does. */
function lineOfName(text: string, name: string): number {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`(^|["'\\s.\\[])${escaped}(["'\\s=<>!~;\\[\\].]|$)`, 'i');
  const i = text.split(/\r?\n/).findIndex((l) => re.test(l));
  return i >= 0 ? i + 1 : 1;
}

function lineAt(text: string, offset: number): number {
  let n = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}
