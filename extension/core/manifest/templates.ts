import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'jsonc-parser';
import { DEFAULT_ENGINE } from './load';

/**
 * The manifest templates shipped under templates/ for `verdict init`, "Verdict:
 * New Manifest" and the MCP resources. Two shapes are read:
 * - a folder `templates/<id>/` holding its manifest (`<id>.swarm.json(c)`, or the folder's only `*.swarm.json(c)`), a
 *   README.md (its `# ` heading is the title, the paragraph after it the one-line description) and any support files
 *   (check scripts, another manifest to pick instead: model-bakeoff's model-auto.swarm.json…);
 * - a single file `templates/<id>.swarm.jsonc` whose leading `//` comment is its description.
 */
export interface Template {
  /** The folder or file name without `.swarm.json(c)`: what `verdict init --template` takes. */
  id: string;
  /** The README's heading, else the id. */
  title: string;
  /** One line for a picker: the README's first paragraph, or the first sentence of the file's leading comment. */
  description: string;
  /** Absolute path of the manifest. */
  manifest: string;
  /** Absolute path of the README, when there is one (never copied into a project). */
  readme?: string;
  /** Every file the template writes, relative to its folder (the manifest first), `/`-separated. */
  files: string[];
  /** The folder the relative paths start from. */
  root: string;
  /**
   * Every engine the manifest names (task engines, the default engine for a task naming none, candidates, fallbacks,
   * reviewers, ranking reviewers, inputs engines, critics, validators, council members and chairs, phases), sorted: what it needs
   * installed as written. `['script']` alone: it runs with no model.
   */
  engines: string[];
}

/** The engines a manifest's text names (see Template.engines); empty when the text does not parse to an object. */
export function manifestEngines(text: string): string[] {
  const m = parse(text, [], { allowTrailingComma: true }) as unknown;
  const out = new Set<string>();
  const obj = (v: unknown): Record<string, unknown> | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null);
  const name = (v: unknown) => {
    const e = typeof v === 'string' ? v : obj(v)?.engine;
    if (typeof e === 'string' && e) out.add(e);
  };
  const list = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(name);
  };
  const root = obj(m);
  if (!root) return [];
  list(obj(root.review)?.engines);
  // engine "auto" names no engine itself: its candidates are what must be installed.
  const from = obj(root.route)?.from;
  if (Array.isArray(from)) for (const c of from) if (typeof c === 'string' && c) out.add(c.split(':')[0] as string);
  for (const t of Array.isArray(root.tasks) ? root.tasks : []) {
    const task = obj(t);
    if (!task) continue;
    const engine = typeof task.engine === 'string' ? task.engine : typeof root.engine === 'string' ? root.engine : DEFAULT_ENGINE;
    if (engine !== 'auto') name(engine);
    list(task.fallback);
    list(task.candidates);
    list(obj(task.review)?.engines);
    list(obj(task.rank)?.engines);
    // An inputs engine (a command is a string: no engine).
    const inputs = obj(obj(task.distinguish)?.inputs);
    if (inputs) name(inputs);
    list(obj(task.critique)?.critics);
    const validate = obj(task.validate);
    if (validate) {
      name(validate.engine);
      list(validate.engines);
    }
    const council = obj(task.council);
    if (council) {
      list(council.members);
      name(council.chair);
    }
    const phases = obj(task.phases);
    if (phases) {
      name(phases.implement);
      name(phases.test);
      list(obj(phases.review)?.engines);
    }
  }
  return [...out].sort();
}

const MANIFEST = /\.swarm\.jsonc?$/;

/** Every file under `dir`, relative, `/`-separated, sorted; symlinks and other non-files are skipped. */
function filesUnder(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.isDirectory()) out.push(...filesUnder(path.join(dir, e.name), `${prefix}${e.name}/`));
    else if (e.isFile()) out.push(`${prefix}${e.name}`);
  }
  return out;
}

/** The README's `# ` heading and the paragraph after it, joined into one line. */
function readmeSummary(text: string): { title?: string; description: string } {
  const lines = text.split(/\r?\n/);
  const h = lines.findIndex((l) => l.startsWith('# '));
  const title = h >= 0 ? (lines[h] as string).slice(2).trim() : undefined;
  const para: string[] = [];
  for (const l of lines.slice(h + 1)) {
    if (l.trim() === '') {
      if (para.length) break;
      continue;
    }
    para.push(l.trim());
  }
  return { title, description: para.join(' ') };
}

/** The first sentence of a manifest's leading `//` comment lines. */
function commentSummary(text: string): string {
  const comment: string[] = [];
  for (const l of text.split(/\r?\n/)) {
    const m = /^\s*\/\/\s?(.*)$/.exec(l);
    if (!m) break;
    comment.push((m[1] as string).trim());
  }
  const joined = comment.join(' ');
  const end = joined.search(/\.(\s|$)/);
  return end >= 0 ? joined.slice(0, end + 1) : joined;
}

/**
 * Reads the templates under `dir` (normally `<package root>/templates`), sorted by id. A folder without exactly one
 * manifest is skipped (it is not a template); a missing `dir` gives an empty list.
 */
export function listTemplates(dir: string): Template[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const out: Template[] = [];
  for (const e of entries) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) {
      const files = filesUnder(full).filter((f) => f !== 'README.md');
      const manifests = files.filter((f) => !f.includes('/') && MANIFEST.test(f));
      const manifest = manifests.find((f) => f.replace(MANIFEST, '') === e.name) ?? (manifests.length === 1 ? manifests[0] : undefined);
      if (manifest === undefined) continue;
      const readme = fs.existsSync(path.join(full, 'README.md')) ? path.join(full, 'README.md') : undefined;
      const summary = readme
        ? readmeSummary(fs.readFileSync(readme, 'utf8'))
        : { description: commentSummary(fs.readFileSync(path.join(full, manifest), 'utf8')) };
      const engines = manifestEngines(fs.readFileSync(path.join(full, manifest), 'utf8'));
      out.push({
        id: e.name,
        title: summary.title ?? e.name,
        description: summary.description,
        manifest: path.join(full, manifest),
        readme,
        files: [manifest, ...files.filter((f) => f !== manifest)],
        root: full,
        engines,
      });
    } else if (e.isFile() && MANIFEST.test(e.name)) {
      const id = e.name.replace(MANIFEST, '');
      if (entries.some((o) => o.isDirectory() && o.name === id)) continue;
      const text = fs.readFileSync(full, 'utf8');
      out.push({ id, title: id, description: commentSummary(text), manifest: full, files: [e.name], root: dir, engines: manifestEngines(text) });
    }
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * What a picker says of a template's engines: `runs with no model (script engine)` for a template that names only
 * `script`, else `needs codex, claude`; with `installed` (engine name → whether its binary is on PATH), the ones
 * missing here are marked `(not installed)`.
 */
export function templateEnginesLine(t: Template, installed?: (engine: string) => boolean): string {
  if (t.engines.length === 1 && t.engines[0] === 'script') return 'runs with no model (script engine)';
  const models = t.engines.filter((e) => e !== 'script');
  return `needs ${models.map((e) => (installed && !installed(e) ? `${e} (not installed)` : e)).join(', ')}`;
}

/** What writing a template into a folder would do. Paths are relative to the target folder, `/`-separated. */
export interface TemplatePlan {
  /** Files to create: template file (relative to its root) → destination (relative to the target). */
  writes: { from: string; to: string }[];
  /** Support files already there with the same bytes: left as they are. */
  same: string[];
  /** Files already there with other contents: nothing may be written while any is listed. */
  conflicts: string[];
}

/**
 * Plans writing `t` into `target`. The manifest goes to `manifestName` (default: its name in the template); support
 * files keep their relative paths, because the manifest's checks name them. Nothing existing is ever overwritten:
 * a file already there is `same` when its bytes match, else a conflict.
 */
export function planTemplate(t: Template, target: string, manifestName?: string): TemplatePlan {
  const plan: TemplatePlan = { writes: [], same: [], conflicts: [] };
  t.files.forEach((from, i) => {
    const to = i === 0 && manifestName ? manifestName : from;
    const dest = path.join(target, to);
    if (!fs.existsSync(dest) && !isSymlink(dest)) plan.writes.push({ from, to });
    else if (i > 0 && sameBytes(path.join(t.root, from), dest)) plan.same.push(to);
    else plan.conflicts.push(to);
  });
  return plan;
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

function sameBytes(a: string, b: string): boolean {
  try {
    return fs.lstatSync(b).isFile() && fs.readFileSync(a).equals(fs.readFileSync(b));
  } catch {
    return false;
  }
}

/**
 * The first manifest name in `target` that is free: the template's own, else `<base>-2.swarm.json`, `-3`….
 * Used when the user chooses "write under a new name" instead of overwriting.
 */
export function freeManifestName(t: Template, target: string): string {
  const name = t.files[0] as string;
  const ext = (MANIFEST.exec(name) as RegExpExecArray)[0];
  const base = name.slice(0, -ext.length);
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? name : `${base}-${n}${ext}`;
    if (!fs.existsSync(path.join(target, candidate)) && !isSymlink(path.join(target, candidate))) return candidate;
  }
}

/**
 * Writes the plan: each file created exclusively (`wx`, so a file that appeared meanwhile is never overwritten),
 * scripts keep their executable bit. Returns the absolute paths written, the manifest first.
 * @throws Error naming the files when the plan has conflicts (nothing is written), or the first file that could not
 *   be created (EEXIST: it appeared after planning); files written before it stay.
 */
export function writeTemplate(t: Template, target: string, plan: TemplatePlan): string[] {
  if (plan.conflicts.length)
    throw new Error(`${plan.conflicts.map((c) => path.join(target, c)).join(', ')} already exist(s) with other contents; nothing was written`);
  const written: string[] = [];
  for (const { from, to } of plan.writes) {
    const src = path.join(t.root, from);
    const dest = path.join(target, to);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.writeFileSync(dest, fs.readFileSync(src), { flag: 'wx', mode: fs.statSync(src).mode & 0o777 });
    written.push(dest);
  }
  return written;
}
