/**
 * The one place Verdict decides which programs a repository may make git run. A repository's config (its
 * `.git/config`, files it includes, and the user's global config) can name programs that git starts during
 * ordinary local commands: an fsmonitor, hooks, diff and merge drivers, filters, a pager, an editor, a signing
 * program. Verdict needs none of them except clean/smudge filters in a trusted workspace (file contents depend on
 * them: git-lfs), so every git command Verdict runs on a user's repository switches the rest off with `-c`. Git's
 * `-c` outranks every config file (git-config(1) "FILES": the command line is read last), so a hostile
 * `.git/config` cannot undo it.
 *
 * Sources: git-config(1) (each key cited below), githooks(5), gitattributes(5) "Defining a custom merge driver" /
 * "filter" / "Performing text diffs of binary files", and simple-git's vulnerability categories
 * (@simple-git/argv-parser `VulnerabilityCategoryFlags`).
 */
import { execFileSync } from 'node:child_process';
import { simpleGit, type SimpleGit, type SimpleGitOptions } from 'simple-git';
import { timerDelay } from '../fs/timer';
import { runCaptured, runCapturedBytes, runQuiet } from '../process/run-captured';

/** Options of {@link gitFor} and {@link safeGitConfigArgs}. */
export interface SafeGitOptions {
  /**
   * The repository belongs to a trusted workspace (or the user ran the CLI on it); absent means true. Clean/smudge
   * filters (git-lfs) stay on only then, because file contents depend on them; every other repository-supplied
   * program is off always. Pass false from anything that can run in an untrusted workspace.
   */
  trusted?: boolean;
  /**
   * For {@link safeGitConfigArgs} (raw spawns): the folder git will run in, whose configured driver names
   * (merge, diff, filter, pager, submodule) are read and overridden one by one. Without it only the overrides that
   * need no name are returned. {@link gitFor} always reads its `baseDir`.
   */
  repo?: string;
  /**
   * Environment for git: only the keys in {@link GIT_ENV_KEYS} (a worktree sealed without trusting its `.git`
   * file). simple-git strips every other ambient `GIT_*` variable, and so does the config read here.
   */
  env?: Record<string, string>;
  /**
   * gitFor only: each git it runs is killed when it has printed nothing for this long, ms (simple-git's `timeout.block`):
   * a worker-made tree (a 30 GB sparse file) must not hold the orchestrator past every limit.
   */
  timeoutMs?: number;
}

/** The environment variables {@link SafeGitOptions.env} may set; simple-git's environment guard lets exactly these through. */
export const GIT_ENV_KEYS = ['GIT_DIR', 'GIT_COMMON_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE'] as const;

/**
 * Flags for every `git diff`, `git log -p` and `git show <commit>` whose output has file contents: no external
 * diff (`diff.external`, `diff.<driver>.command`) and no textconv. Calls that list names only (`--name-only`,
 * `--name-status`) and `git show <rev>:<path>` of a blob run neither. The config backstops below make a forgotten
 * flag fail (external diff) or convert nothing (textconv) instead of running a repository's program.
 */
export const NO_DIFF_PROGRAMS: readonly string[] = ['--no-ext-diff', '--no-textconv'];

/**
 * Overrides that need no driver name, always on. Each pair: key, value.
 * - core.fsmonitor=false: git-config(1) core.fsmonitor; the program runs on status, diff, add, check-ignore…
 * - core.hooksPath=/dev/null: githooks(5); every hook (post-checkout on `worktree add`, reference-transaction on any
 *   ref update, pre-commit/commit-msg/post-commit, post-rewrite/pre-rebase on rebase, post-merge,
 *   post-index-change, pre-auto-gc…) is looked up as `/dev/null/<hook>`, which never exists.
 * - diff.external=false: git-config(1) diff.external (used by `git diff` unless --no-ext-diff); an empty value does
 *   not disable it (git tries to run "" and fails), so a forgotten NO_DIFF_PROGRAMS fails visibly with `false`.
 * - core.pager=cat: git-config(1) core.pager; git starts a pager only on a terminal, which Verdict never gives git,
 *   so this is a backstop (pager.<cmd> below likewise).
 * - core.editor=: and sequence.editor=: — git-config(1) core.editor / sequence.editor; `:` is git's own "do not
 *   launch an editor" value (a commit without -m then aborts, an amend keeps its message).
 * - commit.gpgSign, tag.gpgSign, log.showSignature, merge.verifySignatures = false: git-config(1); each would run
 *   gpg.program (or gpg.<format>.program) on a commit, rebase, merge or log.
 * - gpg.program, gpg.openpgp.program, gpg.ssh.program, gpg.x509.program = false: a signing or verifying request that
 *   still comes (a caller's --gpg-sign) fails instead of running the repository's program.
 */
const ALWAYS: readonly (readonly [string, string])[] = [
  ['core.fsmonitor', 'false'],
  ['core.hooksPath', '/dev/null'],
  ['diff.external', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', ':'],
  ['sequence.editor', ':'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['log.showSignature', 'false'],
  ['merge.verifySignatures', 'false'],
  ['gpg.program', 'false'],
  ['gpg.openpgp.program', 'false'],
  ['gpg.ssh.program', 'false'],
  ['gpg.x509.program', 'false'],
];

/**
 * Untrusted only: submodule.recurse=false (git-config(1) submodule.recurse), so no command walks into a submodule,
 * whose own config was never read here.
 */
const UNTRUSTED: readonly (readonly [string, string])[] = [['submodule.recurse', 'false']];

/**
 * The builtin 3-way text merge as a merge driver (gitattributes(5) "Defining a custom merge driver": the result is
 * left in %A, exit 0 when clean, non-zero on conflicts). A file whose attributes name a configured driver merges as
 * it would with `merge=text`; the repository's driver never runs.
 */
const TEXT_MERGE_DRIVER = 'git merge-file --marker-size=%L %A %O %B';

/**
 * Thrown when a repository's config defines a driver whose name cannot be written on git's command line (a `=` in
 * the name: `-c` splits at the first `=`), so its program could not be switched off. Verdict then runs no git there.
 */
export class UnsafeRepositoryConfigError extends Error {
  constructor(
    readonly dir: string,
    readonly key: string,
  ) {
    super(
      `${dir}: the git config key ${JSON.stringify(key)} names a program Verdict cannot switch off (its name contains "="); Verdict runs no git in this repository until it is renamed`,
    );
    this.name = 'UnsafeRepositoryConfigError';
  }
}

/**
 * `-c key=value` argv pairs that switch off the programs a repository's config may name and that Verdict never
 * needs (see ALWAYS above), and, when `opts.repo` is given, every configured driver by name:
 * - merge.<driver>.driver → the builtin text merge (git-config(1) merge.<driver>.driver; an empty value makes the
 *   whole merge fail, measured on git 2.39);
 * - diff.<driver>.textconv → cat, diff.<driver>.cachetextconv → false (git-config(1) diff.<driver>.textconv; an
 *   empty value fails every content diff of such a file); diff.<driver>.command → false (as diff.external);
 * - pager.<cmd> → false; submodule.<name>.update of the `!command` form → checkout (git-config(1));
 * - untrusted only: filter.<driver>.clean/smudge/process → empty (git-config(1) filter.<driver>: an empty command is
 *   no filter, measured on git 2.39) and filter.<driver>.required → false (else the empty filter is fatal).
 * Pass them before the subcommand: `git [...safeGitConfigArgs({ repo })] <subcommand> …`.
 * @throws UnsafeRepositoryConfigError when a configured driver name contains `=`
 */
export function safeGitConfigArgs(opts: SafeGitOptions = {}): string[] {
  return configPairs(opts, opts.repo === undefined ? [] : configuredDriversSync(opts.repo, opts.env)).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
}

/**
 * The one way Verdict opens a git repository: simple-git in `baseDir` with {@link safeGitConfigArgs} for
 * `baseDir` (its driver names are read once, here, with `git config --get-regexp`: reading config runs nothing;
 * about 2 ms). simple-git refuses these `-c` options unless its matching `unsafe` allowances are set; they are set
 * here and nowhere else. They also lift simple-git's check on the caller's own argv, so callers never pass `-c` or
 * options before the subcommand taken from user input. `opts.env` goes to git through simple-git's environment
 * guard, which lets exactly GIT_ENV_KEYS through.
 * @throws Error when `opts.env` names a key outside GIT_ENV_KEYS; UnsafeRepositoryConfigError as safeGitConfigArgs
 */
export function gitFor(baseDir: string, opts: SafeGitOptions = {}): SimpleGit {
  const extra = Object.keys(opts.env ?? {}).filter((k) => !(GIT_ENV_KEYS as readonly string[]).includes(k));
  if (extra.length) throw new Error(`gitFor: environment ${extra.join(', ')} is not allowed; only ${GIT_ENV_KEYS.join(', ')}`);
  const pairs = configPairs({ ...opts, repo: baseDir }, configuredDriversSync(baseDir, opts.env));
  const options: Partial<SimpleGitOptions> = {
    baseDir,
    config: pairs.map(([k, v]) => `${k}=${v}`),
    allowEnvironment: GIT_ENV_KEYS,
    unsafe: {
      allowUnsafeFsMonitor: true, // core.fsmonitor
      allowUnsafeHooksPath: true, // core.hooksPath
      allowUnsafeDiffExternal: true, // diff.external, diff.<driver>.command
      allowUnsafeDiffTextConv: true, // diff.<driver>.textconv
      allowUnsafeMergeDriver: true, // merge.<driver>.driver
      allowUnsafeFilter: true, // filter.<driver>.clean/smudge/process (untrusted)
      allowUnsafePager: true, // core.pager, pager.<cmd>
      allowUnsafeEditor: true, // core.editor, sequence.editor
      allowUnsafeGpgProgram: true, // gpg.program, gpg.<format>.program
      allowUnsafeSubmodule: true, // submodule.<name>.update
    },
  };
  if (opts.timeoutMs) options.timeout = { block: timerDelay(opts.timeoutMs) };
  // simple-git counts a git that ended without an exit code (killed by a signal) and printed nothing on stderr as a
  // success with empty output; an empty object id must never pass for a result (see sealWorktree).
  options.errors = (error, result) => error ?? (result.exitCode === null ? new Error('git was killed by a signal before it finished') : undefined);
  const git = simpleGit(options);
  return opts.env ? git.env(gitEnv(opts.env)) : git;
}

/**
 * The driver names of one repository as git read them at one moment ({@link readDriverNames}), to be shared by the
 * runners of one phase instead of one read each. A phase here is a stretch of the orchestrator's own work in which no
 * untrusted process runs (no worker, check, setup or reviewer is alive between the read and the last command that
 * relies on it): the seal after the worker has exited, the record of a prepared tree before any worker starts. Never
 * keep one across a step that runs an untrusted process: such a process may have written a config file git reads (a
 * worktree's `config.worktree`, the repository's config when it is not sandboxed), and a driver it named after the read
 * would not be switched off. Made only by readDriverNames; a runner refuses one read for another folder or git dir.
 */
export interface DriverNames {
  /** The folder git ran in (the runners' `baseDir`), as given. */
  readonly dir: string;
  /** GIT_DIR and GIT_COMMON_DIR of the read ('' when unset): they decide which config files git reads. */
  readonly gitDir: string;
  readonly commonDir: string;
  /** `<key, value>` of every entry in the sections that can name a program (value null for a bare boolean key). */
  readonly entries: readonly (readonly [string, string | null])[];
}

/**
 * Reads the driver names git sees in `dir` with `env` now (`git config --get-regexp` through the spawn helper: reading
 * config runs nothing), for the runners of one phase (see DriverNames: when it may be read, and for how long it holds).
 * @param env as {@link SafeGitOptions.env}; GIT_INDEX_FILE and GIT_WORK_TREE do not change what is read
 * @throws Error when `env` names a key outside GIT_ENV_KEYS. A config git cannot read gives no names (the commands
 *   then fail on it too)
 */
export async function readDriverNames(dir: string, env: Record<string, string> = {}): Promise<DriverNames> {
  const extra = Object.keys(env).filter((k) => !(GIT_ENV_KEYS as readonly string[]).includes(k));
  if (extra.length) throw new Error(`readDriverNames: environment ${extra.join(', ')} is not allowed; only ${GIT_ENV_KEYS.join(', ')}`);
  return { dir, gitDir: env.GIT_DIR ?? '', commonDir: env.GIT_COMMON_DIR ?? '', entries: await configuredDrivers(dir, env) };
}

/** Options of {@link runGit}. */
export interface RunGitOptions extends SafeGitOptions {
  /**
   * The command runs nothing a repository's config names by driver (no checkout, diff, merge or filter: `branch`,
   * `update-ref`, `worktree add --no-checkout`): the driver names are not read (one git process less); the overrides
   * that need no name still apply.
   */
  noDrivers?: boolean;
  /**
   * The driver names of this phase, read once for all its runners ({@link readDriverNames}; see DriverNames for when
   * that is sound): used instead of a read of this runner's own. Must have been read in `baseDir` with this runner's
   * GIT_DIR and GIT_COMMON_DIR.
   */
  drivers?: DriverNames;
  /** Extra `-c key=value` pairs, after the overrides (never one of theirs: those stay in force). */
  config?: readonly string[];
  /**
   * The command's stdout is not wanted (it prints nothing when it succeeds: `branch`, `worktree add --quiet`,
   * `read-tree`): it is started by the spawn helper, not forked from this process (process/run-captured.ts runQuiet: a fork's cost
   * grows with the forking process's memory), and `raw` resolves to ''. Its error message is its whole output.
   */
  quiet?: boolean;
}

/** The one-method face of a git runner that the worktree code needs (simple-git's `raw` has this shape too). */
export interface RawGit {
  /** Runs `git <args>`; resolves to its stdout as printed. @throws Error with git's stderr */
  raw(args: readonly string[]): Promise<string>;
}

/**
 * A {@link RawGit} that also speaks bytes: what paths git prints or reads are taken as they are, so a name that is not
 * valid UTF-8 survives (decoded as UTF-8 it would name another file; git passes its bytes through with `-z`).
 */
export interface ByteGit extends RawGit {
  /**
   * Runs `git <args>` with `input` on its stdin (else /dev/null); resolves to its stdout as bytes.
   * @throws Error as {@link RawGit.raw}
   */
  rawBytes(args: readonly string[], input?: Buffer): Promise<Buffer>;
}

/**
 * A git runner for `baseDir` that behaves as {@link gitFor}'s git (the same `-c` overrides, read once here; the same
 * environment guard, GIT_ENV_KEYS only; abbreviated options refused as simple-git's guard does), but without
 * simple-git, whose completion plugin waits 50 ms after every command that printed nothing (simple-git 3-4,
 * `completionDetectionPlugin`: `deferClose`) — 50 ms for each `branch`, `update-ref`, `read-tree`, `add` — and
 * without execa (process/run-captured.ts).
 * Every command, and the read of the driver names before the first one, is started by the spawn helper
 * (process/run-captured.ts), not forked from this process. `opts.timeoutMs` limits each whole command (SIGKILL of its
 * process group when it runs out).
 * @throws Error as gitFor for a disallowed `opts.env` key. Its `raw` rejects with UnsafeRepositoryConfigError as
 *   safeGitConfigArgs throws it, or an Error with git's stderr, or how git ended ("timed out …" when the time limit
 *   ended it)
 */
export function gitRunner(baseDir: string, opts: RunGitOptions = {}): ByteGit {
  const extra = Object.keys(opts.env ?? {}).filter((k) => !(GIT_ENV_KEYS as readonly string[]).includes(k));
  if (extra.length) throw new Error(`gitRunner: environment ${extra.join(', ')} is not allowed; only ${GIT_ENV_KEYS.join(', ')}`);
  if (opts.drivers) sameRepository(opts.drivers, baseDir, opts.env ?? {});
  // The driver names are read (through the spawn helper, like the commands) before the first command, once; or the
  // phase's read is taken.
  let head: Promise<string[]> | null = null;
  const heads = async (): Promise<string[]> => {
    const pairs = opts.noDrivers
      ? configPairs({ ...opts, repo: undefined }, [])
      : configPairs({ ...opts, repo: baseDir }, opts.drivers?.entries ?? (await configuredDrivers(baseDir, opts.env)));
    return [...pairs.flatMap(([k, v]) => ['-c', `${k}=${v}`]), ...(opts.config ?? []).flatMap((c) => ['-c', c])];
  };
  const env = { ...gitEnv(opts.env ?? {}), GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS: 'true' };
  const ended = <T extends string | Buffer>(
    args: readonly string[],
    r: { timedOut: boolean; error: Error | null; exitCode: number | null; signal: NodeJS.Signals | null; stdout: T; stderr: string },
  ): T => {
    // Named by its subcommand, past any leading `-c key=value` pairs.
    let sub = 0;
    while (args[sub] === '-c') sub += 2;
    const what = `git ${args[sub] ?? ''}`;
    if (r.timedOut) throw new Error(`${what} timed out after ${opts.timeoutMs} ms and was stopped`);
    if (r.error && r.exitCode === null && !r.signal) throw new Error(`${what} could not start: ${r.error.message}`);
    if (r.exitCode === 0 && !r.error) return r.stdout;
    const stderr = r.stderr.trim();
    if (stderr) throw new Error(stderr);
    throw new Error(r.error ? `${what}: ${r.error.message}` : r.signal ? `${what} was killed by ${r.signal}` : `${what} exited ${r.exitCode}`);
  };
  return {
    async raw(args) {
      return ended(
        args,
        await (opts.quiet ? runQuiet : runCaptured)('git', [...(await (head ??= heads())), ...args], { cwd: baseDir, env, timeoutMs: opts.timeoutMs }),
      );
    },
    async rawBytes(args, input) {
      const r = await runCapturedBytes('git', [...(await (head ??= heads())), ...args], {
        cwd: baseDir,
        env,
        timeoutMs: opts.timeoutMs,
        ...(input ? { input } : {}),
      });
      return ended(args, { ...r, stderr: r.stderr.toString('utf8') });
    },
  };
}

/**
 * Checks that `drivers` were read where a runner in `baseDir` with `env` reads its config.
 * @throws Error naming both when the folder, GIT_DIR or GIT_COMMON_DIR differ
 */
function sameRepository(drivers: DriverNames, baseDir: string, env: Record<string, string>): void {
  const want = [baseDir, env.GIT_DIR ?? '', env.GIT_COMMON_DIR ?? ''];
  const got = [drivers.dir, drivers.gitDir, drivers.commonDir];
  if (want.some((w, i) => w !== got[i]))
    throw new Error(`gitRunner: driver names read for ${JSON.stringify(got)} (folder, GIT_DIR, GIT_COMMON_DIR) given to a runner for ${JSON.stringify(want)}`);
}

/** Runs one git command through {@link gitRunner}. */
export async function runGit(baseDir: string, args: readonly string[], opts: RunGitOptions = {}): Promise<string> {
  return gitRunner(baseDir, opts).raw(args);
}

/**
 * The `-c` pairs for `opts`: ALWAYS (and UNTRUSTED), then the overrides of `drivers` (configuredDrivers' entries of
 * `opts.repo`; ignored without a repo). Pure.
 * @throws UnsafeRepositoryConfigError when a driver name contains `=`
 */
function configPairs(opts: SafeGitOptions, drivers: readonly (readonly [string, string | null])[]): [string, string][] {
  const trusted = opts.trusted !== false;
  const pairs: [string, string][] = [...ALWAYS, ...(trusted ? [] : UNTRUSTED)].map(([k, v]) => [k, v]);
  if (opts.repo === undefined) return pairs;
  for (const [key, value] of drivers) {
    const m = /^(diff|merge|filter|pager|submodule)\.(.+)$/.exec(key);
    if (!m) continue;
    const [, section, rest] = m as unknown as [string, string, string];
    if (section === 'pager') {
      pairs.push([key, 'false']); // pager.<cmd>: only ever started on a terminal; a backstop
      continue;
    }
    const dot = rest.lastIndexOf('.');
    if (dot < 0) continue;
    const name = rest.slice(0, dot);
    const override = overrideFor(section, rest.slice(dot + 1), value, trusted);
    if (!override) continue;
    if (name.includes('=')) throw new UnsafeRepositoryConfigError(opts.repo, key);
    for (const [v, val] of override) pairs.push([`${section}.${name}.${v}`, val]);
  }
  return dedupe(pairs);
}

/** The overrides for one configured `<section>.<name>.<variable>`, as (variable, value) pairs; null for none. */
function overrideFor(section: string, variable: string, value: string | null, trusted: boolean): [string, string][] | null {
  if (section === 'merge' && variable === 'driver') return [['driver', TEXT_MERGE_DRIVER]];
  if (section === 'diff' && variable === 'textconv')
    return [
      ['textconv', 'cat'],
      ['cachetextconv', 'false'],
    ];
  if (section === 'diff' && variable === 'command') return [['command', 'false']];
  if (section === 'submodule' && variable === 'update' && value?.startsWith('!')) return [['update', 'checkout']];
  if (section === 'filter' && !trusted && ['clean', 'smudge', 'process', 'required'].includes(variable)) {
    return [
      ['clean', ''],
      ['smudge', ''],
      ['process', ''],
      ['required', 'false'],
    ];
  }
  return null;
}

/** `git config` arguments that list every entry in the sections that can name a program (reading config runs nothing). */
const DRIVER_QUERY = [...ALWAYS.flatMap(([k, v]) => ['-c', `${k}=${v}`]), 'config', '--null', '--get-regexp', '^(diff|merge|filter|pager|submodule)\\.'];

/**
 * `<key, value>` of every config entry in the sections that can name a program, as git sees them in `dir`
 * (includes followed; value null for a bare boolean key), read through the spawn helper. Empty when git finds none or
 * cannot read the config (a command there would then fail on the same config). Never throws.
 */
async function configuredDrivers(dir: string, env: Record<string, string> | undefined): Promise<[string, string | null][]> {
  const r = await runCaptured('git', DRIVER_QUERY, { cwd: dir, env: gitEnv(env ?? {}), maxBuffer: 16 * 1024 * 1024 });
  // exit 1: no such key; anything else: git cannot read this config and will refuse the real command too
  return r.exitCode === 0 && !r.error ? parseDrivers(r.stdout) : [];
}

/** {@link configuredDrivers} forked synchronously, for the callers that must answer at once (gitFor, safeGitConfigArgs). */
function configuredDriversSync(dir: string, env: Record<string, string> | undefined): [string, string | null][] {
  let out: string;
  try {
    out = execFileSync('git', DRIVER_QUERY, {
      cwd: dir,
      env: gitEnv(env ?? {}),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch {
    return [];
  }
  return parseDrivers(out);
}

/** `git config --null --get-regexp` output as (key, value) pairs: entries end with NUL, key and value split by newline. */
function parseDrivers(out: string): [string, string | null][] {
  return out
    .split('\0')
    .filter(Boolean)
    .map((entry) => {
      const nl = entry.indexOf('\n');
      return nl < 0 ? [entry, null] : [entry.slice(0, nl), entry.slice(nl + 1)];
    });
}

/**
 * The process environment as simple-git's environment guard leaves it (no `GIT_*`, EDITOR, PAGER, VISUAL, PREFIX,
 * SSH_ASKPASS: a guarded key passed explicitly would make it throw) plus `env`.
 */
function gitEnv(env: Record<string, string>): Record<string, string> {
  const guarded = new Set(['editor', 'pager', 'prefix', 'ssh_askpass', 'visual']);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    const lower = k.toLowerCase();
    if (v !== undefined && !lower.startsWith('git_') && !guarded.has(lower)) out[k] = v;
  }
  return { ...out, ...env };
}

/** Keeps the last value of each key, in first-seen order (a driver can appear under several variables). */
function dedupe(pairs: [string, string][]): [string, string][] {
  const map = new Map<string, string>();
  for (const [k, v] of pairs) map.set(k, v);
  return [...map];
}
