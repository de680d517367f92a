import fs from 'node:fs';
import path from 'node:path';
import { supervise } from '../process/supervisor';
import { gitFor, safeGitConfigArgs } from './safe-git';

/** Time limit for initialising one worktree's submodules, ms. */
export const SUBMODULE_TIMEOUT_MS = 300_000;

/** Options of {@link initSubmodules}. */
export interface SubmoduleOptions {
  /** Wall-clock limit for all submodules together, ms (default SUBMODULE_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Where git's output goes (appended); must lie outside the worktree. */
  logFile: string;
  /** Aborting stops git's process group. */
  signal?: AbortSignal;
}

/**
 * Initialises the submodules of a fresh worktree from the main repository's own checkouts, so nothing is fetched
 * that the main repository already has: for each submodule path in the worktree's `.gitmodules`,
 * `git submodule update --init --recursive --reference <root>/<path> -- <path>` (the reference only when that
 * checkout exists in the main working tree; otherwise git clones from the recorded URL). Each git runs supervised
 * in its own process group, with the repository's programs off except filters (safe-git.ts: the checkouts need
 * them; git passes the `-c` overrides on to the git processes it starts for each submodule); all of them share
 * `timeoutMs`. Returns the submodule paths initialised ([] when the repository has no `.gitmodules`).
 * @throws Error naming the submodule, the time limit or git's exit code, and the log file;
 *   UnsafeRepositoryConfigError (safe-git.ts) before any git runs
 */
export async function initSubmodules(root: string, worktree: string, opts: SubmoduleOptions): Promise<string[]> {
  if (!fs.existsSync(path.join(worktree, '.gitmodules'))) return [];
  const paths = await submodulePaths(worktree);
  const safe = safeGitConfigArgs({ trusted: true, repo: worktree });
  const deadline = Date.now() + (opts.timeoutMs ?? SUBMODULE_TIMEOUT_MS);
  fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
  for (const sub of paths) {
    const mainCheckout = path.join(root, sub);
    const reference = fs.existsSync(path.join(mainCheckout, '.git')) ? ['--reference', mainCheckout] : [];
    const args = ['submodule', 'update', '--init', '--recursive', ...reference, '--', sub];
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new Error(`submodules of ${worktree}: the time limit of ${limitText(opts)} ran out before ${sub}; see ${opts.logFile}`);
    const { receipt } = await supervise({
      file: 'git',
      args: [...safe, ...args],
      cwd: worktree,
      logFile: opts.logFile,
      timeoutMs: remaining,
      signal: opts.signal,
      killGraceMs: 1000,
    });
    if (receipt.spawnError) throw new Error(`git could not start to initialise submodule ${sub}: ${receipt.spawnError}`);
    if (receipt.timedOut)
      throw new Error(`submodule ${sub} in ${worktree} was not initialised within ${limitText(opts)} (git was stopped); see ${opts.logFile}`);
    if (receipt.cancelled) throw new Error(`initialising submodule ${sub} in ${worktree} was cancelled`);
    if (receipt.exitCode !== 0)
      throw new Error(
        `\`git ${args.join(' ')}\` in ${worktree} exited ${receipt.exitCode ?? receipt.signal}; see ${opts.logFile}${fileTransportHint(opts.logFile, sub)}`,
      );
  }
  return paths;
}

/** Submodule paths listed in `<dir>/.gitmodules`, in file order. */
async function submodulePaths(dir: string): Promise<string[]> {
  const out = await gitFor(dir, { trusted: true })
    .raw(['config', '--file', '.gitmodules', '--get-regexp', '^submodule\\..*\\.path$'])
    .catch(() => '');
  return out
    .split('\n')
    .map((line) => line.slice(line.indexOf(' ') + 1).trim())
    .filter(Boolean);
}

/**
 * The fix for git's "transport 'file' not allowed", when the log says it: since git 2.38.1 (`protocol.file.allow`
 * defaults to `user`) a submodule whose URL is a local path is not cloned by `git submodule update`, and a
 * repository's own config cannot allow it (the clone git starts for the submodule does not read it). '' otherwise.
 */
function fileTransportHint(logFile: string, sub: string): string {
  let log = '';
  try {
    const fd = fs.openSync(logFile, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(size, 64 * 1024));
      fs.readSync(fd, buf, 0, buf.length, size - buf.length);
      log = buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
  if (!log.includes("transport 'file' not allowed")) return '';
  return `. Submodule ${sub} has a local path as its URL, and git clones those only when allowed (protocol.file.allow, off for submodules since git 2.38.1): if you trust that repository, allow it for your user (\`git config --global protocol.file.allow always\`), or give the submodule a URL git clones by default (https or ssh)`;
}

function limitText(opts: SubmoduleOptions): string {
  return `${Math.round((opts.timeoutMs ?? SUBMODULE_TIMEOUT_MS) / 1000)} s`;
}
