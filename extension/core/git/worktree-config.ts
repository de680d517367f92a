/**
 * Includes in a `config.worktree` that git resolves inside a task's admin dir.
 *
 * In a repository with extensions.worktreeConfig, `git worktree add` copies the current worktree's `config.worktree`
 * into the new worktree's admin dir (`<common dir>/worktrees/<name>/`), include lines and all, and git resolves a
 * relative `include.path` / `includeIf.<condition>.path` against the folder of the file that names it: for the copy,
 * the admin dir. A sandboxed worker can write the admin dir (git keeps HEAD and the index there), so it could put a
 * config file where such an include points, naming a filter or driver that the orchestrator's own git (the seal's
 * `add`, which keeps a trusted repository's filters) would run outside the sandbox. restoreWorktreeLinks writes the
 * copy back as git made it, but cannot know every file an include may name, so a copy with such an include is refused
 * instead (see docs/containment.md).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runGit } from './safe-git';

/** One include whose path git resolves against the folder of the config file that names it. */
export interface RelativeInclude {
  /** The key as git prints it (section and name lowercased): `include.path` or `includeif.<condition>.path`. */
  key: string;
  /** The path as written. */
  value: string;
}

/**
 * The includes of the config file `file` (its own lines only; the files they name are not read) whose path is
 * relative: not absolute, not `~` or `~user`, not `%(prefix)/`. Empty when the file does not exist or has none.
 * @throws Error naming the file when git cannot read it as config
 */
export function relativeIncludes(file: string): RelativeInclude[] {
  // No file, no include: no git process (most repositories have no config.worktree; this runs for every worktree made).
  if (!fs.existsSync(file)) return [];
  let out: string;
  try {
    out = execFileSync('git', ['config', '--file', file, '--null', '--get-regexp', '^include(if\\..*)?\\.path$'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: withoutGitDirs(process.env),
    });
  } catch (e) {
    const err = e as { status?: number | null; stderr?: string };
    // Exit 1: no key matched (or, with --file, no such file).
    if (err.status === 1) return [];
    throw new Error(`git cannot read ${file} as config: ${String(err.stderr ?? (e as Error).message).trim()}`);
  }
  return out
    .split('\0')
    .filter(Boolean)
    .map((entry) => {
      const nl = entry.indexOf('\n');
      return nl < 0 ? { key: entry, value: '' } : { key: entry.slice(0, nl), value: entry.slice(nl + 1) };
    })
    .filter(({ value }) => value !== '' && !path.isAbsolute(value) && !value.startsWith('~') && !value.startsWith('%(prefix)/'));
}

/**
 * One problem line per relative include of `file` (a `config.worktree` that `git worktree add` copies into every
 * task's admin dir), saying where it would resolve and what to do; empty when there is none.
 * @throws Error naming the file when git cannot read it as config
 */
export function worktreeConfigIncludeProblems(file: string): string[] {
  return relativeIncludes(file).map(
    ({ key, value }) =>
      `${file} has ${key} = ${value}, a relative path: git worktree add copies this file into each task's git admin dir ` +
      `(<common git dir>/worktrees/<task>/), where the include then resolves, and a sandboxed worker can write there ` +
      `and name a program that Verdict's own git would run outside the sandbox. Give the include an absolute path ` +
      `(or one starting with ~/) or remove it to use worktree mode`,
  );
}

/**
 * {@link worktreeConfigIncludeProblems} for the `config.worktree` that `git worktree add` run in `root` (the
 * repository's top folder, where Verdict adds task worktrees) copies: that worktree's own, when the repository has
 * extensions.worktreeConfig (without it git neither copies nor reads the file). Empty when there is nothing to refuse.
 * @throws Error naming the file when git cannot read it as config
 */
export async function repoWorktreeConfigProblems(root: string): Promise<string[]> {
  const git = (args: string[]) =>
    runGit(root, args, { noDrivers: true }).then(
      (out) => out.trim(),
      () => '',
    );
  if ((await git(['config', '--bool', '--get', 'extensions.worktreeConfig'])) !== 'true') return [];
  const rel = await git(['rev-parse', '--git-path', 'config.worktree']);
  return rel ? worktreeConfigIncludeProblems(path.resolve(root, rel)) : [];
}

/** `env` without the variables that would point git at another repository. */
function withoutGitDirs(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!/^GIT_/.test(k)) out[k] = v;
  return out;
}
