import fs from 'node:fs';
import path from 'node:path';

/**
 * The manifest templates shipped under templates/ for `verdict init`, "Verdict:
 * New Manifest" and the MCP resources. Two shapes are read:
 * - a folder `templates/<id>/` holding one `*.swarm.json` / `*.swarm.jsonc` manifest, a README.md (its `# ` heading is
 *   the title, the paragraph after it the one-line description) and any support files (check scripts…);
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
      if (manifests.length !== 1) continue;
      const manifest = manifests[0] as string;
      const readme = fs.existsSync(path.join(full, 'README.md')) ? path.join(full, 'README.md') : undefined;
      const summary = readme ? readmeSummary(fs.readFileSync(readme, 'utf8')) : { description: commentSummary(fs.readFileSync(path.join(full, manifest), 'utf8')) };
      out.push({ id: e.name, title: summary.title ?? e.name, description: summary.description, manifest: path.join(full, manifest), readme, files: [manifest, ...files.filter((f) => f !== manifest)], root: full });
    } else if (e.isFile() && MANIFEST.test(e.name)) {
      const id = e.name.replace(MANIFEST, '');
      if (entries.some((o) => o.isDirectory() && o.name === id)) continue;
      out.push({ id, title: id, description: commentSummary(fs.readFileSync(full, 'utf8')), manifest: full, files: [e.name], root: dir });
    }
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
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
  if (plan.conflicts.length) throw new Error(`${plan.conflicts.map((c) => path.join(target, c)).join(', ')} already exist(s) with other contents; nothing was written`);
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
