import fs from 'node:fs';
import path from 'node:path';
import { listTemplates, planTemplate, templateEnginesLine, writeTemplate } from '../core/manifest/templates';
import { InputError, type Io } from './io';
import { packageRoot } from './package-root';

/** What `verdict init` takes: the template id (default `fan-out`), the target folder (default the current one). */
export interface InitOptions {
  template?: string;
  dir?: string;
  list: boolean;
  /** Where the templates are (tests); default `<package root>/templates`. */
  templatesDir?: string;
}

/**
 * `p` as one POSIX shell word, so the command `verdict init` prints runs as printed: unchanged when it holds only
 * characters no shell treats specially, else in single quotes (a `'` as `'\''`), or, when it holds a control
 * character (a newline would cut the printed line), as bash's `$'…'` with `\xHH` escapes. Pure.
 */
export function shellWord(p: string): string {
  if (/^[\w./:@%+=,-]+$/.test(p)) return p;
  if (/[\u0000-\u001f\u007f]/.test(p))
    return `$'${p.replace(/[\\']/g, (c) => `\\${c}`).replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)}'`;
  return `'${p.replace(/'/g, `'\\''`)}'`;
}

/** Whether `dir` or a folder above it has a `.git` entry (read from the file system only). */
function insideGitRepository(dir: string): boolean {
  for (let at = dir; ; at = path.dirname(at)) {
    if (fs.existsSync(path.join(at, '.git'))) return true;
    if (path.dirname(at) === at) return false;
  }
}

/** The template `verdict init` writes when none is named. */
export const DEFAULT_TEMPLATE = 'fan-out';

/**
 * `verdict init [--template T] [--dir D] [--list]`: writes template T's manifest and support files into D (created
 * when missing), never overwriting a file (identical support files are left as they are). Prints each file written
 * and the next commands. `--list` prints the templates (id and one-line description) and writes nothing.
 * Returns 0 written or listed, 1 refused because files exist (nothing written).
 * @throws InputError for an unknown template or a D that is not a folder
 */
export function initCommand(opts: InitOptions, io: Io): number {
  const templates = listTemplates(opts.templatesDir ?? path.join(packageRoot(), 'templates'));
  if (opts.list) {
    const width = Math.max(...templates.map((t) => t.id.length));
    for (const t of templates) io.out(`${t.id.padEnd(width)}  ${t.description} [${templateEnginesLine(t)}]`);
    return 0;
  }
  const id = opts.template ?? DEFAULT_TEMPLATE;
  const t = templates.find((x) => x.id === id);
  if (!t) throw new InputError(`--template: no template "${id}" (there are: ${templates.map((x) => x.id).join(', ')}; \`verdict init --list\` describes them)`);
  const dir = path.resolve(opts.dir ?? '.');
  if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) throw new InputError(`--dir: ${dir} is not a folder`);
  fs.mkdirSync(dir, { recursive: true });
  const plan = planTemplate(t, dir);
  if (plan.conflicts.length) {
    for (const c of plan.conflicts) io.err(`${path.join(dir, c)} already exists: not overwritten`);
    io.err(`nothing written; choose another folder with --dir, or move those files away`);
    return 1;
  }
  const written = writeTemplate(t, dir, plan);
  for (const f of written) io.out(`wrote ${f}`);
  for (const f of plan.same) io.out(`kept ${path.join(dir, f)} (already there, same contents)`);
  const full = written[0] ?? path.join(dir, t.files[0] as string);
  const rel = path.relative(process.cwd(), full);
  const manifest = rel.startsWith('..') || path.isAbsolute(rel) ? full : rel;
  io.out(`template ${t.id}: ${t.title}; ${templateEnginesLine(t)}`);
  if (/"worktrees"\s*:\s*true/.test(fs.readFileSync(t.manifest, 'utf8')) && !insideGitRepository(dir)) {
    io.out(`${dir} is not in a git repository, and this manifest's tasks run in worktrees of one; first:`);
    io.out(`  cd ${shellWord(dir)} && git init -q && git add -A && git commit -qm 'verdict init'`);
  }
  io.out(`next: adapt ${manifest} (tasks, checks, engines${t.readme ? `; how: ${t.readme}` : ''}), then`);
  io.out(`  verdict lint ${shellWord(manifest)} && verdict run ${shellWord(manifest)}`);
  return 0;
}
