/**
 * Protected check inputs: the files a worker may not change or delete, because the check relies on them.
 * A worker that rewrites `run-tests.sh` to `exit 0`, or deletes the tests, must FAIL, not PASS.
 *
 * The default set, taken from the task tree as prepared (after checkout, include and setup, before any worker):
 * - what the check runs: a script it executes (`./run-tests.sh`, `bash run-tests.sh`) and every file under a folder it
 *   names (`pytest tests/`); not the files it only reads as data (`grep x out.txt`: usually the deliverable);
 * - every existing file at a conventional test place: `test/`, `tests/`, `spec/`, `__tests__/`, `*_test.*`, `*.test.*`,
 *   `*.spec.*`.
 * - under a test runner or build tool that reads files by name as its configuration (pytest: every `conftest.py`,
 *   `pytest.ini`, `.pytest.ini`, `pytest.toml`; npm, npx, yarn, pnpm: `.npmrc`, `.yarnrc`, `.yarnrc.yml`, pnpm's
 *   `pnpm-workspace.yaml`; make: `GNUmakefile`, `makefile`), every existing one, and a new one is refused (it rewrites
 *   what the check runs or reports). A new `tox.ini`, `setup.cfg` or `pyproject.toml` is refused under pytest when it
 *   holds pytest's section (`[pytest]`, `[tool:pytest]`, `[tool.pytest…]`); an existing one is not protected.
 * A task's (or the run's) `protect` globs widen it (`"fixtures/**"`) or narrow it (`"!tests/snapshots/**"`, which also
 * allows a new file there); `"protect": []` turns protection off. Adding other new files stays allowed everywhere.
 * Everything is compared with the tree as prepared: a file that was there and is unchanged is never a finding, and a
 * retry gets back exactly the files that were there.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import picomatch from 'picomatch';
import { parse as shellParse } from 'shell-quote';
import { parse as parseToml } from 'smol-toml';
import { fsPath, readEntries, readLinkName, showName } from '../fs/byte-names';
import { makeParentsReal, parentsAreReal } from '../fs/real-parents';

/**
 * The commands whose inputs are protected: a task's check, or its check and its suite (run/steps/suite.ts), each
 * read on its own (a comment at the end of one never hides the other). judgedCommands gives a task's.
 */
export type CheckCommands = string | readonly string[];

function commandsOf(check: CheckCommands): readonly string[] {
  return typeof check === 'string' ? [check] : check;
}

/**
 * The commands that judge a task's work and whose inputs the worker may not change: its check, and its `suite` when it
 * has one (a worker that weakens the suite's tests would pass a suite that no longer tests anything).
 */
export function judgedCommands(spec: { check: string; suite?: { command: string } }): string[] {
  return spec.suite ? [spec.check, spec.suite.command] : [spec.check];
}

/** Conventional places of tests (relative globs, matched against paths relative to the task dir). */
export const CONVENTIONAL_TEST_GLOBS = ['test/**', 'tests/**', 'spec/**', '**/__tests__/**', '**/*_test.*', '**/*.test.*', '**/*.spec.*'];

/** Folders never walked for protected files: git's own, and dependency trees. */
const SKIP_DIRS = new Set(['.git', 'node_modules']);

/** The protected files of a task and the content each had when the task was prepared. */
export interface ProtectedSet {
  /** Path relative to the task dir → `<x|->sha256` of its content (hex, with the executable bit), or `symlink:<target>`. */
  files: Map<string, string>;
  /** A copy of each protected file as it was (same relative paths), to restore before a retry; null when not kept. */
  snapshotDir: string | null;
  /** Globs of files the worker may not add (a new conftest.py rewrites what pytest reports); empty when none. */
  forbidNew?: string[];
  /** Globs (the `protect` setting's `!` globs, without the `!`) of files that are never refused as new. */
  allowNew?: string[];
  /** The judged commands, whose runners' files that configure them by a section (tox.ini `[pytest]`) are refused as new when they hold it. */
  sectionCheck?: readonly string[];
  /** The files named like one of those (tox.ini, setup.cfg, pyproject.toml) the tree had: never "new". */
  sectionExisting?: string[];
}

/**
 * The files to protect in `taskDir` as it is now, for a task whose check is `check` and whose `protect` setting is
 * `protect` (null: the default set; [] : none; otherwise default ∪ globs − `!`globs). The task's `deliverables`
 * (expect_files, relative) are never protected. With `snapshotDir`, a copy of each protected file is kept there.
 */
export function protectedSet(
  taskDir: string,
  check: CheckCommands,
  protect: readonly string[] | null,
  snapshotDir: string | null = null,
  deliverables: readonly string[] = [],
): ProtectedSet {
  const files = new Map<string, string>();
  if (protect !== null && protect.length === 0) return { files, snapshotDir: null };
  const kindOf = (rel: string): 'file' | 'dir' | null => {
    try {
      // Most words of a check name nothing in the tree: no error object is made for them (throwIfNoEntry).
      const st = fs.statSync(fsPath(taskDir, rel), { throwIfNoEntry: false });
      return st ? (st.isDirectory() ? 'dir' : 'file') : null;
    } catch {
      return null;
    }
  };
  const all = listFiles(taskDir);
  for (const rel of protectedPaths(all, kindOf, check, protect, deliverables)) files.set(rel, fingerprint(fsPath(taskDir, rel)));
  const rules = newFileRules(check, protect);
  // The files named like a runner's section file the tree had (a project's pyproject.toml) are not new, whatever they hold.
  const sectionExisting = rules.sectionCheck ? all.filter((rel) => RUNNER_SECTION_FILES.some((r) => r.file === path.posix.basename(rel))) : [];
  if (snapshotDir && rules.sectionCheck) writeSectionExisting(snapshotDir, sectionExisting);
  if (snapshotDir) {
    for (const rel of files.keys()) {
      fs.mkdirSync(fsPath(snapshotDir, path.posix.dirname(rel)), { recursive: true });
      copyEntry(fsPath(taskDir, rel), fsPath(snapshotDir, rel));
    }
  }
  return { files, snapshotDir, ...rules, ...(rules.sectionCheck ? { sectionExisting } : {}) };
}

/** Where protectedSet keeps the sectionExisting of a set whose snapshot folder is `snapshotDir`: beside it. */
function sectionExistingFile(snapshotDir: string): string {
  return `${snapshotDir.replace(/\/+$/, '')}-section-files.json`;
}

function writeSectionExisting(snapshotDir: string, rels: string[]): void {
  const file = sectionExistingFile(snapshotDir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(rels));
}

/** The sectionExisting protectedSet kept for `snapshotDir`; none kept (a run from an earlier Verdict): empty. */
function readSectionExisting(snapshotDir: string): string[] {
  try {
    const v = JSON.parse(fs.readFileSync(sectionExistingFile(snapshotDir), 'utf8')) as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/** The `forbidNew` and `allowNew` of a ProtectedSet for `check` and `protect` (not []: then nothing is protected). */
function newFileRules(check: CheckCommands, protect: readonly string[] | null): Pick<ProtectedSet, 'forbidNew' | 'allowNew' | 'sectionCheck'> {
  return {
    forbidNew: forbidNewFor(check),
    allowNew: (protect ?? []).filter((g) => g.startsWith('!')).map((g) => g.slice(1)),
    ...(sectionRulesFor(check) ? { sectionCheck: commandsOf(check) } : {}),
  };
}

/**
 * Whether a file at `rel` that the tree did not have before is refused under `check` and `protect` (its test runner
 * would load it: a new conftest.py under pytest), as protectedChanges and the merge queue's re-check judge it. Only for
 * files the tree did not have: an existing one is protected instead (protectedPaths). With `read` (a new file's text,
 * null when unreadable), a file that configures the runner only by a section (a tox.ini with `[pytest]`) is refused
 * when it holds it (sectionRefused); without, never.
 */
export function newFileRefused(check: CheckCommands, protect: readonly string[] | null, read?: (rel: string) => string | null): (rel: string) => boolean {
  if (protect !== null && protect.length === 0) return () => false;
  const { forbidNew, allowNew } = newFileRules(check, protect);
  const forbidden = globMatcher(forbidNew ?? []);
  const allowed = globMatcher(allowNew ?? []);
  return (rel) => (forbidden(rel) || (read !== undefined && sectionRefused(check, rel, () => read(rel)))) && !allowed(rel);
}

/**
 * Which of `all` (paths relative to a tree, `/`-separated) are protected, by the rules of protectedSet; `kindOf` says
 * whether a path is a file or a folder of that tree (null: neither). Pure: the tree may be a dir or a commit (the merge
 * queue's re-check takes it from the base it rebased onto).
 */
export function protectedPaths(
  all: readonly string[],
  kindOf: (rel: string) => 'file' | 'dir' | null,
  check: CheckCommands,
  protect: readonly string[] | null,
  deliverables: readonly string[] = [],
): string[] {
  if (protect !== null && protect.length === 0) return [];
  const named = commandsOf(check).flatMap((c) => namedPaths(c, kindOf));
  const positive = (protect ?? []).filter((g) => !g.startsWith('!'));
  const negative = (protect ?? []).filter((g) => g.startsWith('!')).map((g) => g.slice(1));
  const isConventional = globMatcher(CONVENTIONAL_TEST_GLOBS);
  const isExtra = globMatcher(positive);
  const isExcluded = globMatcher(negative);
  // The runner's own files that exist (a committed pytest.ini): a new one is refused, so an existing one is protected.
  const isRunnerFile = globMatcher(forbidNewFor(check));
  // A deliverable (expect_files) is the worker's to write, whatever else says.
  return all.filter(
    (rel) =>
      (named.some((n) => rel === n || rel.startsWith(`${n}/`)) || isConventional(rel) || isExtra(rel) || isRunnerFile(rel)) &&
      !isExcluded(rel) &&
      !deliverables.includes(rel),
  );
}

const matchers = new Map<string, (rel: string) => boolean>();

/**
 * A picomatch matcher (dot files included) for `globs`, compiled once per set of globs for the process: every task of
 * a run has the same conventional globs and usually the same `protect`, and compiling them costs more than matching.
 * No glob: matches nothing.
 */
function globMatcher(globs: readonly string[]): (rel: string) => boolean {
  if (!globs.length) return () => false;
  const key = JSON.stringify(globs);
  let m = matchers.get(key);
  if (!m) {
    m = picomatch([...globs], { dot: true });
    if (matchers.size >= 256) matchers.clear();
    matchers.set(key, m);
  }
  return m;
}

/**
 * The configuration files of the test runners and build tools the check runs, which a worker's new one would rewrite
 * (what they load, which target they run, which shell runs a script): pytest's conftest.py and ini files, npm's,
 * yarn's and pnpm's rc files (`.npmrc` `script-shell=/bin/true` makes `npm test` exit 0), make's makefiles that take
 * precedence over a committed `Makefile`. Globs relative to the task dir, both at its top and in a folder (a check
 * may `cd` there). A new one is refused; one the tree had is protected (protectedPaths).
 */
const RUNNER_CONFIG: { runs: RegExp; files: string[] }[] = [
  // pytest reads the first of these it finds from the common folder of its arguments upwards.
  { runs: /\bpytest\b|\bpy\.test\b/, files: ['conftest.py', 'pytest.ini', '.pytest.ini', 'pytest.toml', '.pytest.toml'] },
  // npm/npx/pnpm read the project's .npmrc (script-shell, node-options); yarn its .yarnrc(.yml) (yarn-path, yarnPath);
  // pnpm its pnpm-workspace.yaml (scriptShell and its other settings).
  { runs: /(?:^|[^\w.-])(?:npm|npx|pnpm|pnpx|yarn)(?![\w.-])/, files: ['.npmrc', '.yarnrc', '.yarnrc.yml', '.yarnrc.yaml'] },
  { runs: /(?:^|[^\w.-])pnpm(?![\w.-])/, files: ['pnpm-workspace.yaml'] },
  // GNU make reads GNUmakefile, then makefile, then Makefile: a new one of the first two hides a committed Makefile.
  { runs: /(?:^|[^\w.-])g?make(?![\w.-])/, files: ['GNUmakefile', 'makefile'] },
];

/**
 * Files a runner reads as configuration only when they hold its section (pytest: tox.ini `[pytest]`, setup.cfg
 * `[tool:pytest]`, pyproject.toml `[tool.pytest.ini_options]` or `[tool.pytest]`): a new one that holds it is refused,
 * one without it is not (a new pyproject.toml is often the work). One the tree had is not protected: it often holds
 * the work too (dependencies).
 */
const RUNNER_SECTION_FILES: { runs: RegExp; file: string; holds: (text: string) => boolean }[] = [
  { runs: RUNNER_CONFIG[0]!.runs, file: 'tox.ini', holds: (text) => /^\s*\[\s*pytest\s*\]/m.test(text) },
  { runs: RUNNER_CONFIG[0]!.runs, file: 'setup.cfg', holds: (text) => /^\s*\[\s*tool:pytest\s*\]/m.test(text) },
  // pytest reads pyproject.toml's `tool.pytest` table (`[tool.pytest.ini_options]`, or a dotted or inline spelling of
  // it): parsed, not matched, so `pytest = "^8"` among a project's dependencies is not taken for it.
  { runs: RUNNER_CONFIG[0]!.runs, file: 'pyproject.toml', holds: tomlHoldsPytest },
];

/** Whether a pyproject.toml's text configures pytest (a `tool.pytest` table); a text that is no TOML may, so it does. */
function tomlHoldsPytest(text: string): boolean {
  try {
    const tool = parseToml(text).tool;
    return typeof tool === 'object' && tool !== null && !Array.isArray(tool) && 'pytest' in tool;
  } catch {
    return true;
  }
}

function atAnyDepth(file: string): string[] {
  return [file, `**/${file}`];
}

/**
 * The files the test runners and build tools `check` runs read as configuration, as globs relative to the task dir: a
 * new one rewrites what the check runs or reports (a new conftest.py under pytest, a new .npmrc under npm, a new
 * GNUmakefile under make), so it is refused, and one the tree had is protected. Empty when the check runs none of them.
 */
export function forbidNewFor(check: CheckCommands): string[] {
  const commands = commandsOf(check);
  return RUNNER_CONFIG.filter((r) => commands.some((c) => r.runs.test(c))).flatMap((r) => r.files.flatMap(atAnyDepth));
}

/** Bytes of a configuration file read to look for a runner's section: a larger one is refused unread. */
const CONFIG_READ_MAX = 1 << 20;

/**
 * The text of the configuration file at `abs` for sectionRefused, or null when it is not a regular file of at most
 * CONFIG_READ_MAX bytes (a symlink, a FIFO that would block the read, a device): never opens anything else.
 */
export function readConfigText(abs: string | Buffer): string | null {
  try {
    const st = fs.lstatSync(abs);
    if (!st.isFile() || st.size > CONFIG_READ_MAX) return null;
    return fs.readFileSync(abs, 'utf8');
  } catch {
    return null;
  }
}

/** Whether `check` runs a runner that has files configuring it by a section (RUNNER_SECTION_FILES). */
function sectionRulesFor(check: CheckCommands): boolean {
  const commands = commandsOf(check);
  return RUNNER_SECTION_FILES.some((r) => commands.some((c) => r.runs.test(c)));
}

/**
 * Whether a new file at `rel` whose text `read` gives (null: unreadable) is a runner's configuration under `check` by
 * its content: a tox.ini with a `[pytest]` section under pytest (RUNNER_SECTION_FILES). An unreadable one is refused
 * (it cannot be shown not to hold the section). False for any other file.
 */
export function sectionRefused(check: CheckCommands, rel: string, read: () => string | null): boolean {
  const commands = commandsOf(check);
  const base = path.posix.basename(rel);
  const rule = RUNNER_SECTION_FILES.find((r) => r.file === base && commands.some((c) => r.runs.test(c)));
  if (!rule) return false;
  const text = read();
  return text === null || rule.holds(text);
}

/**
 * The protected set a task was prepared with, rebuilt from its snapshot folder alone (a later orchestrator of the same
 * run, `verdict resume`): every file there is a protected file as it was before any worker ran, so neither the list
 * nor the contents come from the task dir a worker may have changed. No snapshot folder: nothing was protected.
 * `protect` is the task's setting, as for protectedSet.
 */
export function protectedSetFromSnapshot(snapshotDir: string, check: CheckCommands, protect: readonly string[] | null): ProtectedSet {
  if (protect !== null && protect.length === 0) return { files: new Map(), snapshotDir: null };
  const rules = newFileRules(check, protect);
  const existing = rules.sectionCheck ? { sectionExisting: readSectionExisting(snapshotDir) } : {};
  if (!fs.existsSync(snapshotDir)) return { files: new Map(), snapshotDir: null, ...rules, ...existing };
  const files = new Map(listFiles(snapshotDir).map((rel) => [rel, fingerprint(fsPath(snapshotDir, rel))]));
  return { files, snapshotDir, ...rules, ...existing };
}

/**
 * Puts every changed or deleted protected file back as it was (from the snapshot), and removes a new file the test
 * runner would load, so a retry starts from the check's own inputs. Returns the paths restored, as people read them
 * (fs/byte-names.ts showName). Never throws for one file: it is left and named by the next check.
 * Nothing is written through a link the worker made: every folder from `taskDir` down to a file put back is checked
 * with lstat, and one that is a symlink (or not a folder) is removed itself and made a real folder first
 * (fs/real-parents.ts), so a worker's `tests -> /home/user/repo/tests` never has the user's files rewritten.
 */
export function restoreProtected(taskDir: string, set: ProtectedSet): string[] {
  const restored: string[] = [];
  for (const { rel, what } of changesOf(taskDir, set)) {
    const abs = fsPath(taskDir, rel);
    if (what === 'new') {
      // Listed by a walk that follows no link; a parent replaced by one since is left to the next check.
      if (!parentsAreReal(taskDir, rel)) continue;
      fs.rmSync(abs, { force: true });
      restored.push(showName(rel));
      continue;
    }
    if (!set.snapshotDir) continue;
    try {
      makeParentsReal(taskDir, rel);
      fs.rmSync(abs, { recursive: true, force: true });
      copyEntry(fsPath(set.snapshotDir, rel), abs);
      restored.push(showName(rel));
    } catch {
      // left as the worker made it; the next guard names it again
    }
  }
  return restored;
}

/**
 * The protected files that were changed or deleted since `set` was taken, each as `path (changed)` or
 * `path (deleted)`, and the new files the test runner would load as `path (new: …)`, sorted, paths as people read
 * them (showName); empty when none.
 */
export function protectedChanges(taskDir: string, set: ProtectedSet): string[] {
  return changesOf(taskDir, set)
    .map(({ rel, what }) => `${showName(rel)} (${what === 'new' ? 'new: it changes what the test runner reports' : what})`)
    .sort();
}

/** What protectedChanges reports, by relative path (a fs/byte-names.ts string). */
function changesOf(taskDir: string, set: ProtectedSet): { rel: string; what: 'changed' | 'deleted' | 'new' }[] {
  const out: { rel: string; what: 'changed' | 'deleted' | 'new' }[] = [];
  for (const [rel, before] of set.files) {
    let now: string | null;
    try {
      now = fingerprint(fsPath(taskDir, rel));
    } catch {
      now = null;
    }
    if (now === null) out.push({ rel, what: 'deleted' });
    // Reached through a link the worker put in place of one of its folders: not the tree's file any more.
    else if (now !== before || !parentsAreReal(taskDir, rel)) out.push({ rel, what: 'changed' });
  }
  if (set.forbidNew?.length || set.sectionCheck?.length) {
    const forbidden = globMatcher(set.forbidNew ?? []);
    const allowed = globMatcher(set.allowNew ?? []);
    const read = (rel: string) => (): string | null => readConfigText(fsPath(taskDir, rel));
    const existing = new Set(set.sectionExisting ?? []);
    for (const rel of listFiles(taskDir))
      if (
        !set.files.has(rel) &&
        !allowed(rel) &&
        (forbidden(rel) || (set.sectionCheck && !existing.has(rel) && sectionRefused(set.sectionCheck, rel, read(rel))))
      )
        out.push({ rel, what: 'new' });
  }
  return out;
}

/** Package managers that run a script of the package.json in the current folder, and their own commands (not scripts). */
const PACKAGE_RUNNERS: Record<string, { run: string[]; aliases: Record<string, string>; builtins: Set<string> | null }> = {
  // npm runs a script only through run/run-script (and its aliases) or the lifecycle commands named in `aliases`.
  npm: {
    run: ['run', 'run-script', 'rum', 'urn'],
    aliases: { test: 'test', t: 'test', tst: 'test', start: 'start', stop: 'stop', restart: 'restart' },
    builtins: null,
  },
  // yarn and pnpm also run `yarn <script>` when <script> is none of their own commands.
  yarn: {
    run: ['run'],
    aliases: { test: 'test', start: 'start' },
    builtins: new Set([
      'add',
      'audit',
      'autoclean',
      'bin',
      'cache',
      'check',
      'config',
      'create',
      'dlx',
      'exec',
      'generate-lock-entry',
      'global',
      'help',
      'import',
      'info',
      'init',
      'install',
      'licenses',
      'link',
      'list',
      'login',
      'logout',
      'node',
      'outdated',
      'owner',
      'pack',
      'policies',
      'publish',
      'remove',
      'tag',
      'team',
      'unlink',
      'unplug',
      'upgrade',
      'upgrade-interactive',
      'version',
      'versions',
      'why',
      'workspace',
      'workspaces',
      'set',
      'up',
      'dedupe',
      'npm',
      'plugin',
      'constraints',
      'explain',
      'rebuild',
      'patch',
      'patch-commit',
      'stage',
      'search',
    ]),
  },
  pnpm: {
    run: ['run', 'run-script'],
    aliases: { test: 'test', t: 'test', tst: 'test', start: 'start' },
    builtins: new Set([
      'add',
      'install',
      'i',
      'update',
      'up',
      'remove',
      'rm',
      'link',
      'unlink',
      'import',
      'rebuild',
      'prune',
      'fetch',
      'patch',
      'patch-commit',
      'exec',
      'dlx',
      'create',
      'audit',
      'list',
      'ls',
      'outdated',
      'why',
      'pack',
      'publish',
      'root',
      'bin',
      'store',
      'server',
      'setup',
      'init',
      'env',
      'config',
      'licenses',
      'deploy',
      'doctor',
      'help',
    ]),
  },
};

/**
 * The package.json scripts that `check` runs through npm, yarn or pnpm in the task dir (`npm test` → test, with its
 * pretest and posttest; `npm run lint`, `yarn build`, `pnpm run e2e`), sorted: a worker that rewrote `"test": "jest"`
 * to `"test": "echo ok"` would make `npm test` pass whatever it broke, so these entries are protected like a script the
 * check runs (package.json itself stays the worker's: its dependencies are often the work). Empty when none.
 */
export function runnerScripts(check: CheckCommands): string[] {
  const out = new Set<string>();
  for (const c of commandsOf(check)) {
    const tokens = checkTokens(c);
    if (!tokens) continue;
    let at = 0;
    while (at < tokens.length) {
      const t = tokens[at];
      const runner = typeof t === 'string' && (at === 0 || typeof tokens[at - 1] !== 'string') ? PACKAGE_RUNNERS[path.basename(t)] : undefined;
      at++;
      if (!runner) continue;
      const words: string[] = [];
      while (at < tokens.length && typeof tokens[at] === 'string') words.push(tokens[at++] as string);
      const args = words.filter((w) => !w.startsWith('-'));
      const [first, second] = args;
      let name: string | undefined;
      if (first === undefined) continue;
      if (runner.run.includes(first)) name = second;
      else if (runner.aliases[first]) name = runner.aliases[first];
      else if (runner.builtins && !runner.builtins.has(first)) name = first;
      if (name) for (const n of [name, `pre${name}`, `post${name}`]) out.add(n);
    }
  }
  return [...out].sort();
}

/**
 * The scripts among `names` whose command differs between two texts of package.json (`before`, `after`; null: no such
 * file), each as `package.json scripts.<name> (changed|added|deleted)`, sorted. A file that is not a JSON object reads
 * as having no scripts, so breaking the file is a change of every script it held.
 */
export function changedScripts(before: string | null, after: string | null, names: readonly string[]): string[] {
  const scriptsOf = (text: string | null): Record<string, unknown> => {
    if (text === null) return {};
    try {
      const v = JSON.parse(text) as { scripts?: unknown };
      return v && typeof v === 'object' && v.scripts && typeof v.scripts === 'object' ? (v.scripts as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };
  const was = scriptsOf(before);
  const now = scriptsOf(after);
  const out: string[] = [];
  for (const n of names) {
    const a = Object.prototype.hasOwnProperty.call(was, n) ? JSON.stringify(was[n]) : undefined;
    const b = Object.prototype.hasOwnProperty.call(now, n) ? JSON.stringify(now[n]) : undefined;
    if (a !== b) out.push(`package.json scripts.${n} (${a === undefined ? 'added' : b === undefined ? 'deleted' : 'changed'})`);
  }
  return out.sort();
}

/** Commands whose first non-option argument is a script they run. */
const INTERPRETERS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh', 'python', 'python3', 'node', 'ruby', 'perl', 'php', 'deno', 'bun', 'tsx', 'source', '.']);

/**
 * Paths the check runs or names as folders, existing in the task dir (relative, without a trailing slash): a command
 * word that is a file (`./run-tests.sh`), the script an interpreter runs (`bash run-tests.sh`, `python check.py`), and
 * any folder (`pytest tests/`). Files the check only reads as data (`grep x out.txt`) are not taken: they are
 * usually the deliverable itself; name such inputs in `protect`.
 */
/** Build tools whose own file decides what `make test` runs. */
const RUNNER_FILES: Record<string, string[]> = { make: ['Makefile', 'makefile', 'GNUmakefile'] };

const parsedChecks = new Map<string, ReturnType<typeof shellParse> | null>();

/** The shell words and operators of `check` (null: it does not parse), parsed once per check text for the process: the tasks of a run often share one check. */
function checkTokens(check: string): ReturnType<typeof shellParse> | null {
  let tokens = parsedChecks.get(check);
  if (tokens === undefined) {
    try {
      tokens = shellParse(check);
    } catch {
      tokens = null;
    }
    if (parsedChecks.size >= 256) parsedChecks.clear();
    parsedChecks.set(check, tokens);
  }
  return tokens;
}

function namedPaths(check: string, kindOf: (rel: string) => 'file' | 'dir' | null): string[] {
  const tokens = checkTokens(check);
  if (!tokens) return [];
  const out: string[] = [];
  const existing = (w: string): { rel: string; dir: boolean } | null => {
    if (!w || w.startsWith('-') || w.includes('$') || path.isAbsolute(w)) return null;
    const rel = path.normalize(w).replace(/\/+$/, '');
    if (rel === '.' || rel.startsWith('..')) return null;
    const kind = kindOf(rel);
    return kind ? { rel, dir: kind === 'dir' } : null;
  };
  let commandWord = true;
  let scriptNext = false;
  for (const t of tokens) {
    if (typeof t !== 'string') {
      // an operator (&&, ||, ;, |, (, …) starts a new command
      commandWord = true;
      scriptNext = false;
      continue;
    }
    const hit = existing(t);
    if (commandWord) {
      if (hit && !hit.dir) out.push(hit.rel);
      for (const f of RUNNER_FILES[path.basename(t)] ?? []) if (kindOf(f) === 'file') out.push(f);
      scriptNext = INTERPRETERS.has(path.basename(t));
      commandWord = false;
      continue;
    }
    if (scriptNext && !t.startsWith('-')) {
      if (hit) out.push(hit.rel);
      scriptNext = false;
      continue;
    }
    if (hit?.dir) out.push(hit.rel);
  }
  return out;
}

/**
 * Every file under `dir` (relative paths, `/`-separated), not following symlinked folders. Names are fs/byte-names.ts
 * strings: one that is not valid UTF-8 is listed (and so protected, or refused as new) like any other.
 */
function listFiles(dir: string, rel = ''): string[] {
  const out: string[] = [];
  let entries: { name: string; dirent: fs.Dirent<Buffer> }[];
  try {
    entries = readEntries(fsPath(dir, rel));
  } catch {
    return out;
  }
  for (const { name, dirent } of entries) {
    const child = rel ? `${rel}/${name}` : name;
    if (dirent.isDirectory()) {
      if (!SKIP_DIRS.has(name)) out.push(...listFiles(dir, child));
    } else if (dirent.isFile() || dirent.isSymbolicLink()) out.push(child);
  }
  return out;
}

/** Copies the file or symlink `from` (a symlink as a symlink, a file with its mode) to `to`. @throws from the file system */
function copyEntry(from: string | Buffer, to: string | Buffer): void {
  if (fs.lstatSync(from).isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(from, { encoding: 'buffer' }), to);
  else fs.copyFileSync(from, to);
}

function fingerprint(abs: string | Buffer): string {
  const st = fs.lstatSync(abs);
  if (st.isSymbolicLink()) return `symlink:${readLinkName(abs)}`;
  const mode = (st.mode & 0o111) !== 0 ? 'x' : '-';
  return `${mode}${crypto.createHash('sha256').update(fs.readFileSync(abs)).digest('hex')}`;
}
