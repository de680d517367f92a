import fs from 'node:fs';
import path from 'node:path';
import { gitFor } from '../../core/git/safe-git';
import { placeOf } from '../../core/manifest/rules/task-paths';
import type { Manifest } from '../../core/manifest/types';
import { Workspace } from './workspace';

/**
 * Why a manifest started through the MCP server may not run: every place it names must lie inside the server's
 * workspace once symbolic links are followed, so that a repository (or a prompt-injected model) cannot use a manifest
 * inside the workspace to make branches in, copy files out of, or write into a folder outside it.
 *
 * What is checked, by field (schemas/manifest.schema.json):
 * - `repo` and, in worktree mode, the git repository it belongs to: its top level (where `include` is read) and its
 *   common git dir (where the task branches are made), so a `repo` that is a subfolder of an outside repository, or
 *   a linked worktree of one, is refused too;
 * - `workdir` (in plain mode, where the task dirs are made, or when the manifest sets it): the default
 *   `.verdict-work` beside the manifest too, which a committed symbolic link could send elsewhere;
 * - `remote` when it is a local path (absolute, `.`-relative, `file://`, or a bare path git reads against the
 *   repository); a network URL names no path here;
 * - `include` entries: relative, no `..`, and inside the workspace from the repository's top level;
 * - the paths relative to a task dir (`expect_files`, `sparse`, `protect`, `allow_paths` at run and task level,
 *   `generate.file`, `validate.report`, `council.answer`, `council.review.file`, `council.chair.file`,
 *   `phases.files`, `phases.test.expect_files`): relative and never climbing out with `..`, since a task dir is a
 *   checkout of the workspace's repository or a folder of the workdir.
 * Not checked: `hide` (it only takes reach away from every step: hiding `~/.aws` must stay possible), `setup` and
 * `check` (shell commands; what they reach is the sandbox's to bound), `pool` (a Postgres URL).
 */

/** One refused place: the JSON path of the field (for positions) and a message that names the field first. */
export interface ConfinementProblem {
  /** JSON path of the value in the manifest, e.g. `['tasks', 2, 'expect_files', 0]`. */
  at: (string | number)[];
  message: string;
}

/** Task fields that are lists of paths relative to the task dir (run level too for the first three). */
const TASK_PATH_LISTS = ['expect_files', 'sparse', 'protect', 'allow_paths'] as const;
/** Task fields under a workflow object that are one path relative to the task dir. */
const TASK_PATH_FIELDS: (string | number)[][] = [
  ['generate', 'file'],
  ['validate', 'report'],
  ['council', 'answer'],
  ['council', 'review', 'file'],
  ['council', 'chair', 'file'],
];
/** Task fields under a workflow object that are lists of paths relative to the task dir. */
const TASK_PATH_FIELD_LISTS: (string | number)[][] = [
  ['phases', 'files'],
  ['phases', 'test', 'expect_files'],
];

/** The field's path as written in messages: `tasks[2].expect_files[0]`. */
export function fieldName(at: (string | number)[]): string {
  return at.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/** The value at a JSON path, or undefined. */
function valueAt(data: unknown, at: (string | number)[]): unknown {
  let v = data;
  for (const seg of at) v = typeof v === 'object' && v !== null ? (v as Record<string | number, unknown>)[seg] : undefined;
  return v;
}

/** The git top level and common git dir of `dir`, absolute; null when `dir` is not in a git repository. */
async function gitPlaces(dir: string): Promise<{ top: string; common: string } | null> {
  try {
    const out = (await gitFor(dir, { trusted: false }).raw(['rev-parse', '--show-toplevel', '--git-common-dir'])).trim().split('\n');
    const [top, common] = out;
    if (!top || !common) return null;
    return { top, common: path.resolve(dir, common) };
  } catch {
    return null;
  }
}

/**
 * True when git would read `remote` as a path on this machine rather than a URL: `file://…`, or no `scheme://` and
 * no scp-like `host:path` (a colon before the first slash), per git-clone(1) "GIT URLS".
 */
function isLocalRemote(remote: string): boolean {
  if (/^file:\/\//i.test(remote)) return true;
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(remote)) return false;
  const colon = remote.indexOf(':');
  const slash = remote.indexOf('/');
  return colon < 0 || (slash >= 0 && slash < colon);
}

/**
 * Every place `manifest` names outside `workspace` (see the module comment), in the order of the fields; empty when
 * it is confined. `manifest.raw` gives the fields as written, `manifest.repo`/`workdir`/`remote` as resolved.
 * Never throws: a repo that is not a git repository is left to the orchestrator's preflight to refuse.
 */
export async function confinementProblems(manifest: Manifest, workspace: Workspace): Promise<ConfinementProblem[]> {
  const problems: ConfinementProblem[] = [];
  const root = workspace.root;
  const raw = manifest.raw as Record<string, unknown>;
  const outside = (at: (string | number)[], what: string, abs: string) => {
    const real = Workspace.landing(abs);
    if (workspace.contains(real)) return false;
    problems.push({ at, message: `${fieldName(at)}: ${what} ${abs}${real !== abs ? ` (it resolves to ${real})` : ''} is outside the workspace ${root}` });
    return true;
  };

  let repoTop: string | null = null;
  const repoOut = outside(['repo'], raw.repo === undefined ? "the repository (default: the manifest's folder)" : 'the repository', manifest.repo);
  if (!repoOut && (manifest.worktrees || manifest.pool)) {
    const git = fs.existsSync(manifest.repo) ? await gitPlaces(manifest.repo) : null;
    if (git) {
      repoTop = git.top;
      if (!outside(['repo'], 'the top level of its git repository', git.top)) {
        outside(['repo'], 'the git dir where the task branches would be made (it belongs to a repository whose worktree this is)', git.common);
      }
    }
  }
  if (!manifest.worktrees || raw.workdir !== undefined) {
    outside(
      ['workdir'],
      raw.workdir === undefined ? "the task dirs' folder (default: .verdict-work beside the manifest)" : "the task dirs' folder",
      manifest.workdir,
    );
  }
  if (manifest.remote && isLocalRemote(manifest.remote)) {
    const local = manifest.remote.replace(/^file:\/\//i, '');
    outside(['remote'], "the pool's git remote", path.resolve(repoTop ?? manifest.repo, local));
  }
  manifest.include.forEach((rel, i) => {
    const at = ['include', i];
    const place = placeOf(rel);
    if (place !== 'inside')
      problems.push({
        at,
        message: `${fieldName(at)}: ${JSON.stringify(rel)} ${place === 'absolute' ? 'is an absolute path' : 'climbs out with ".."'}; an include is a path relative to the repository`,
      });
    else outside(at, 'the file', path.resolve(repoTop ?? manifest.repo, rel));
  });

  const relative = (at: (string | number)[], value: unknown) => {
    if (typeof value !== 'string') return;
    const p = value.startsWith('!') && at.includes('protect') ? value.slice(1) : value;
    const place = placeOf(p);
    if (place === 'inside') return;
    problems.push({
      at,
      message: `${fieldName(at)}: ${JSON.stringify(value)} ${place === 'absolute' ? 'is an absolute path' : 'climbs out with ".."'}; it must be a path relative to the task dir, inside it`,
    });
  };
  const relativeList = (at: (string | number)[], list: unknown) => {
    if (Array.isArray(list)) list.forEach((v, j) => relative([...at, j], v));
  };
  for (const field of ['sparse', 'protect', 'allow_paths'] as const) relativeList([field], raw[field]);
  const tasks = Array.isArray(raw.tasks) ? (raw.tasks as unknown[]) : [];
  tasks.forEach((t, i) => {
    for (const field of TASK_PATH_LISTS) relativeList(['tasks', i, field], valueAt(t, [field]));
    for (const at of TASK_PATH_FIELDS) relative(['tasks', i, ...at], valueAt(t, at));
    for (const at of TASK_PATH_FIELD_LISTS) relativeList(['tasks', i, ...at], valueAt(t, at));
  });
  return problems;
}
