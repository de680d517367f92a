/**
 * The cone of a `tree: "sparse"` task (docs/manifest.md "Trees"): the folders its `sparse` entries name, in git's cone
 * mode (git-sparse-checkout(1) "INTERNALS — CONE PATTERN SET"). Checked out are every file under a cone folder, plus
 * the files directly in the root and directly in each ancestor of a cone folder; the worker may write only under the
 * cone folders, and the seal commits only changes there. Pure: no file system, no git.
 */
import path from 'node:path';
import picomatch from 'picomatch';

/**
 * The cone folders of `entries` (paths or globs relative to the repository root, `/`-separated): a glob's folder is
 * the part before its first wildcard (`src/a/**` and `src/a/*.ts` → `src/a`; `*.md` → the root), a plain path is a
 * folder. Returns the smallest sorted set (a folder inside another is dropped); `['']` means the whole tree.
 * @throws Error naming the entry when it is absolute, leaves the root (`..`), or holds a backslash or a line break
 *   (git's pattern file could not say it)
 */
export function sparseCone(entries: readonly string[]): string[] {
  const dirs = new Set<string>();
  for (const entry of entries) {
    if (path.posix.isAbsolute(entry) || /^[A-Za-z]:/.test(entry)) throw new Error(`sparse entry "${entry}" must be relative to the repository root`);
    if (/[\\\n\r]/.test(entry)) throw new Error(`sparse entry "${entry}" holds a backslash or a line break, which git's sparse-checkout patterns cannot say`);
    const clean = entry.replace(/^\.\//, '').replace(/\/+$/, '');
    const scan = picomatch.scan(clean);
    const base = scan.isGlob ? scan.base : clean;
    const norm = path.posix.normalize(base || '.');
    if (norm === '..' || norm.startsWith('../')) throw new Error(`sparse entry "${entry}" leaves the repository (..)`);
    dirs.add(norm === '.' ? '' : norm);
  }
  if (dirs.has('')) return [''];
  const sorted = [...dirs].sort();
  return sorted.filter((d) => !sorted.some((o) => o !== d && d.startsWith(`${o}/`)));
}

/** The whole tree: sparse is then the same as a full checkout. */
export function coneIsWhole(cone: readonly string[]): boolean {
  return cone.length === 0 || cone.includes('');
}

/**
 * The `info/sparse-checkout` file git reads in cone mode for `cone` (git-sparse-checkout(1): `/*` and `!/*\/` keep the
 * root's files only; each ancestor A of a cone folder adds `/A/` and `!/A/*\/`; each cone folder D adds `/D/`). Glob
 * characters in folder names are escaped with a backslash, as git writes them.
 */
export function conePatterns(cone: readonly string[]): string {
  if (coneIsWhole(cone)) return '/*\n';
  const esc = (p: string) => p.replace(/[*?[\]]/g, (c) => `\\${c}`);
  const lines = ['/*', '!/*/'];
  const parents = new Set<string>();
  for (const d of cone) {
    const parts = d.split('/');
    for (let i = 1; i < parts.length; i++) parents.add(parts.slice(0, i).join('/'));
  }
  for (const p of [...parents].sort()) if (!cone.includes(p)) lines.push(`/${esc(p)}/`, `!/${esc(p)}/*/`);
  for (const d of cone) lines.push(`/${esc(d)}/`);
  return `${lines.join('\n')}\n`;
}

/** Whether `rel` (relative to the task dir, `/`-separated) lies under a cone folder: the worker may write it and the seal commits it. */
export function inCone(cone: readonly string[], rel: string): boolean {
  if (coneIsWhole(cone)) return true;
  const p = path.posix.normalize(rel.replace(/^\.\//, ''));
  return cone.some((d) => p === d || p.startsWith(`${d}/`));
}

/** Whether `rel` is checked out in a sparse tree of `cone`: under a cone folder, or a file directly in the root or in an ancestor of one. */
export function visibleInCone(cone: readonly string[], rel: string): boolean {
  if (inCone(cone, rel)) return true;
  const parent = path.posix.dirname(path.posix.normalize(rel.replace(/^\.\//, '')));
  if (parent === '.') return true;
  return cone.some((d) => d.startsWith(`${parent}/`));
}

/** Pathspecs limiting git to the cone folders (`:(literal)src/a`); empty for the whole tree. */
export function conePathspecs(cone: readonly string[]): string[] {
  return coneIsWhole(cone) ? [] : cone.map((d) => `:(literal)${d}`);
}
