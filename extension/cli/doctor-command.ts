import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { findBinary, resolveEngines } from '../../engines';
import { loadUserConfig, locateConfig, postgresUrlOf, type VerdictConfig } from '../core/config/config';
import { engineHealth, type EngineHealth } from './doctor-engines';
import { resolveHome } from '../core/config/home';
import { containmentChoice, settingsFromConfig, type ContainmentChoice } from '../core/config/settings';
import { containmentLine } from '../core/process/containment-line';
import {
  HOST_LOOPBACK_ADDRESS,
  probeNetstack,
  probeSandbox,
  secretsReport,
  socketCoverReport,
  type NetstackProbe,
  type SandboxProbe,
  type SecretsReport,
  type SocketCoverReport,
} from '../core/process/sandbox';
import { expandUserPath } from '../core/config/config';
import { spawnHelperInfo, type HelperInfo } from '../core/process/spawner';
import { memoryCapMechanism, type MemoryCapMechanism } from '../core/process/memory-cap';
import { probeOverlay } from '../core/git/overlay';
import type { Io } from './io';
import type { ManifestReport } from './doctor-manifest';

/** What `verdict doctor` found; `--json` prints exactly this object. */
export interface DoctorReport {
  /** True when `verdict run` could start here with the config in force and no flags; `problems` says why not. */
  ok: boolean;
  /** One line each: what stops a run from starting with the defaults. */
  problems: string[];
  /** The containment on this machine (probeSandbox), the mode the config asks for, and the line describing both. */
  sandbox: SandboxProbe & { mode: ContainmentChoice['sandbox']; line: string };
  /**
   * What keeps the host's unix sockets out of a step's reach (core/process/sandbox-view.ts): the covered folders, the
   * sockets bound here now and those covered where they lie, the config's declared `sockets`.
   */
  sockets: SocketCoverReport;
  /**
   * What no step can read of the user's secrets (core/process/secrets.ts): the hidden places present here (the
   * defaults, the config's `hide`, the config file), the config's `expose`, the credential variables not passed on.
   */
  secrets: SecretsReport;
  /**
   * What caps each step's memory here (core/process/memory-cap.ts): a v2 or v1 cgroup and the folder the steps' cgroups
   * are made in, or `none` with the reason and the fix (`line`).
   */
  memoryCap: MemoryCapMechanism;
  /**
   * The user-mode network stack that gives each sandboxed step with `"network": true` a network namespace of its own
   * (slirp4netns), or why there is none (runs with such a task then refuse to start).
   */
  network: NetstackProbe;
  /** Who runs Verdict: the uid and whether it is root (bubblewrap, overlay trees and memory cgroups differ: docs/testing.md "Root and other users"). */
  user: { uid: number | null; root: boolean; name: string };
  /** `git --version` and where git is; version null when git is missing. */
  git: { binary: string | null; version: string | null };
  node: { binary: string; version: string };
  /**
   * The spawn helper this process starts (docs/spawning.md): perl, or Node with the reason perl is not
   * used; null when none could start (then nothing can run: a problem).
   */
  spawnHelper: HelperInfo | null;
  /**
   * Every engine (built-ins and the config's): its binary on PATH or null, version, login, the probe's answer (with
   * --probe) and the command that fixes what is wrong. An engine's trouble stops only the tasks that use it, so it
   * is listed in `fixes`, not `problems`.
   */
  engines: EngineHealth[];
  /** Postgres (postgres_url or VERDICT_PG_URL), when configured: reachable or why not (the URL without its password). */
  postgres: { url: string; reachable: boolean; error: string | null } | null;
  /** One line each: something that does not stop a run but will bite (an engine not installed or logged out, Postgres down), with the command that fixes it. */
  fixes: string[];
  /**
   * The `tree` choices this machine supports (docs/manifest.md "Trees"): worktree and sparse wherever git runs;
   * overlay when a real overlay mount works here (probed: root, kernel support), else `overlayReason` says why not.
   */
  trees: { supported: Array<'worktree' | 'sparse' | 'overlay'>; overlayReason: string | null };
  /** VERDICT_HOME and whether records can be written there (`exists` false: it will be created). */
  home: { path: string; exists: boolean; writable: boolean };
  /**
   * The config file in force: `file` null when none (built-in defaults), `shown` the file or the default path it
   * would be read from, `via` what chose it, `error` why it does not load (then runs stop with exit 2).
   */
  config: { file: string | null; shown: string; via: string; error: string | null; sandbox: boolean; allowFullAccess: boolean; ringer: string | null };
  /**
   * With a MANIFEST: can it run here, task by task (cli/doctor-manifest.ts): each task `ready`, `will-fail` (its check
   * names a file nowhere) or `cannot-run` (an engine not installed, with its install command; a lint error), and what
   * stops the run as a whole. Absent without one. Nothing the manifest names is run.
   */
  manifest?: ManifestReport;
}

/** Options of {@link doctorReport}. `env` defaults to process.env (PATH, VERDICT_BWRAP, VERDICT_CONFIG…). */
export interface DoctorOptions {
  home?: string;
  config?: string;
  env?: NodeJS.ProcessEnv;
  /** Send each installed, not logged-out engine a one-line prompt (a real model call: a few tokens each). */
  probe?: boolean;
  /** A manifest to judge as well: can it run here, task by task (DoctorReport.manifest). */
  manifest?: string;
}

/**
 * Finds out what this machine offers a run: containment (probed fresh), git, node, engine binaries, VERDICT_HOME
 * and the config file in force. Never throws: a failure is a problem in the report.
 */
export async function doctorReport(options: DoctorOptions = {}): Promise<DoctorReport> {
  const env = options.env ?? process.env;
  const problems: string[] = [];
  const where = locateConfig(options.config, env);
  let config: DoctorReport['config'] = {
    file: where.file,
    shown: where.shown,
    via: where.via,
    error: null,
    sandbox: true,
    allowFullAccess: false,
    ringer: null,
  };
  let customEngines: Record<string, unknown> = {};
  let loadedConfig: VerdictConfig = {};
  let declaredSockets: string[] = [];
  let hide: string[] = [];
  let expose: string[] = [];
  const fixes: string[] = [];
  try {
    const loaded = loadUserConfig(options.config, env);
    const settings = settingsFromConfig(loaded.config, loaded.shown);
    config = { ...config, file: loaded.file, sandbox: settings.sandbox, allowFullAccess: settings.allowFullAccess, ringer: loaded.ringer.file };
    customEngines = settings.engines;
    declaredSockets = settings.sockets.map((p) => expandUserPath(p, env.HOME || os.homedir()));
    hide = [...settings.hide.map((p) => expandUserPath(p, env.HOME || os.homedir())), ...(loaded.file ? [loaded.file] : [])];
    expose = settings.expose.map((p) => expandUserPath(p, env.HOME || os.homedir()));
    loadedConfig = loaded.config;
    fixes.push(...loaded.ringer.notes);
  } catch (e) {
    config.error = (e as Error).message;
    problems.push(`config: ${config.error}`);
  }

  const probe = await probeSandbox(env, true);
  // probeSandbox keeps one answer per process: a probe of another environment must not become this process's answer.
  if (env !== process.env) void probeSandbox(process.env, true);
  const mode = containmentChoice({ ...config, configFile: where.shown, sockets: [], hide: [], expose: [] }).sandbox;
  if (probe.kind === 'none' && mode === 'auto')
    problems.push(`sandbox: ${probe.reason} (run with --no-sandbox, or set "sandbox": false in ${where.shown}, to run unsandboxed)`);
  const network = await probeNetstack(env, true);
  if (env !== process.env) void probeNetstack(process.env, true);
  if (network.kind === 'none' && mode === 'auto')
    problems.push(
      `network stack: ${network.reason} (runs with a task whose "network" is true, the default, refuse to start; "network": "host" on a task shares the host's network instead)`,
    );

  const gitBinary = findBinary('git', env.PATH ?? '');
  let gitVersion: string | null = null;
  if (gitBinary) {
    const r = await execa(gitBinary, ['--version'], { reject: false, timeout: 10_000, stdin: 'ignore', env: { ...env, GIT_CONFIG_NOSYSTEM: '1' } });
    gitVersion =
      r.exitCode === 0
        ? String(r.stdout)
            .trim()
            .replace(/^git version\s*/, '')
        : null;
  }
  if (!gitVersion) problems.push(gitBinary ? `git: ${gitBinary} --version failed` : 'git: not found on PATH (worktree-mode runs and the seal need it)');

  let engines: DoctorReport['engines'] = [];
  try {
    engines = await Promise.all([...resolveEngines(customEngines, where.shown).values()].map((e) => engineHealth(e, env, options.probe === true)));
  } catch (e) {
    problems.push(`engines: ${(e as Error).message}`);
  }
  for (const e of engines) {
    if (!e.found) fixes.push(`${e.name}: ${e.binary} is not installed — ${e.install}`);
    else if (e.login === 'no') fixes.push(`${e.name}: not logged in (${e.loginDetail}) — ${e.fix}`);
    else if (e.probe && !e.probe.ok) fixes.push(`${e.name}: installed${e.login === 'yes' ? ' and logged in' : ''}, but did not answer: ${e.probe.detail}`);
  }
  const postgres = await postgresCheck(postgresUrlOf(loadedConfig, env));
  if (postgres && !postgres.reachable)
    fixes.push(
      `postgres: ${postgres.url} is not reachable (${postgres.error}) — rows wait in runs.jsonl and are sent once it is; check the server, or unset VERDICT_PG_URL / postgres_url`,
    );

  const homePath = resolveHome(options.home, env);
  const home = { path: homePath, exists: fs.existsSync(homePath), writable: writableOrCreatable(homePath) };
  if (!home.writable) problems.push(`home: ${homePath} is not writable (set VERDICT_HOME or --home to a folder you can write)`);

  const spawnHelper = await spawnHelperInfo();
  if (!spawnHelper) problems.push('spawn helper: neither spawn-helper.pl nor spawn-helper.cjs could start (rebuild with `node esbuild.mjs`)');

  const overlay = await probeOverlay();
  const memoryCap = memoryCapMechanism();
  if (memoryCap.kind === 'none') fixes.push(memoryCap.line);
  const trees: DoctorReport['trees'] = {
    supported: [...(gitVersion ? (['worktree', 'sparse'] as const) : []), ...(overlay.ok ? (['overlay'] as const) : [])],
    overlayReason: overlay.ok ? null : overlay.reason,
  };

  let manifest: ManifestReport | undefined;
  if (options.manifest !== undefined) {
    const { manifestReport } = await import('./doctor-manifest');
    let known: ReadonlyMap<string, import('../../engines/types').EngineSpec>;
    try {
      known = resolveEngines(customEngines, where.shown);
    } catch {
      known = resolveEngines({}, where.shown);
    }
    manifest = await manifestReport(options.manifest, {
      engines: known,
      route: loadedConfig.route ?? null,
      containment: { sandbox: mode, allowFullAccess: config.allowFullAccess, configSource: where.shown, sockets: [], hide: [], expose: [] },
      home: homePath,
      env,
    });
  }

  return {
    ok: problems.length === 0 && (manifest?.ok ?? true),
    manifest,
    trees,
    problems,
    sandbox: { ...probe, mode, line: containmentLine(probe, mode) },
    sockets: socketCoverReport(env, declaredSockets),
    secrets: secretsReport(env, hide, expose),
    memoryCap,
    network,
    user: { uid: process.getuid?.() ?? null, root: process.getuid?.() === 0, name: os.userInfo().username },
    git: { binary: gitBinary, version: gitVersion },
    node: { binary: process.execPath, version: process.version },
    spawnHelper,
    engines,
    postgres,
    fixes,
    home,
    config,
  };
}

/** Connects to Postgres and runs `select 1` (5 s limit); null when no URL is configured. Never throws. */
async function postgresCheck(url: string | null): Promise<DoctorReport['postgres']> {
  if (!url) return null;
  const shown = redactPassword(url);
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, query_timeout: 5000 });
  try {
    await client.connect();
    await client.query('select 1');
    return { url: shown, reachable: true, error: null };
  } catch (e) {
    return { url: shown, reachable: false, error: (e as Error).message.split('\n')[0] ?? String(e) };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A connection URL with its password replaced by `***`. */
function redactPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
  }
}

/** `host sockets: …`: what keeps the host's sockets out of every step's reach, with what is bound here now. */
function socketsLine(s: SocketCoverReport): string {
  const home = s.homeFolders.length ? `, ${s.homeFolders.join(', ')}` : '';
  const covered = s.covered.length
    ? `${s.covered.length} of them outside those, each covered where it lies (${s.covered.slice(0, 5).join(', ')}${s.covered.length > 5 ? ', …' : ''})`
    : 'none outside those';
  const declared = s.declared.length ? `; reachable, as the config's "sockets" declares: ${s.declared.join(', ')}` : '';
  return `host sockets: none reachable from a step — ${s.folders.join(', ')}${home} are empty in every sandbox (only what a step names is shown); ${s.bound} bound on this host now, ${covered}${declared}`;
}

/** `network: …`: each step's own network namespace and its stack, or why there is none. */
function networkLine(n: NetstackProbe): string {
  if (n.kind === 'none') return `network: no user-mode stack — ${n.reason}`;
  return `network: each sandboxed step its own network namespace, outbound through slirp4netns ${n.version} (${n.binary}); the host's loopback as ${HOST_LOOPBACK_ADDRESS} ($VERDICT_HOST_LOOPBACK), its 127.0.0.1, ports and abstract sockets out of reach ("network": "host" shares them)`;
}

/** `secrets: …`: what no step can read, as present here, and the variables no step inherits. */
function secretsLine(s: SecretsReport): string {
  const hidden = s.hidden.length ? s.hidden.join(', ') : 'none present here';
  const exposed = s.exposed.length ? `; readable, as the config's "expose" says: ${s.exposed.join(', ')}` : '';
  const vars = s.droppedEnv.length ? `; variables no step inherits (an engine keeps its own keys): ${s.droppedEnv.join(', ')}` : '';
  return `secrets: hidden from every step (~/.ssh, ~/.gnupg, ~/.aws, ~/.netrc, ~/.pgpass, ~/.npmrc, Verdict's config… and "hide"): ${hidden}${exposed}${vars}`;
}

/** `, a tested version` / `, UNTESTED major version (tested: 2.1.332)`…; '' when the engine has no tested table entry. */
function testedWords(e: EngineHealth): string {
  const tested = e.tested.versions.join(', ');
  switch (e.tested.status) {
    case 'tested':
      return ', a tested version';
    case 'untested':
      return `, untested version (tested: ${tested})`;
    case 'untested-major':
      return `, UNTESTED major version (tested: ${tested}): flags, events or usage fields may have changed`;
    case 'unknown':
      return e.tested.versions.length ? `, version not recognised (tested: ${tested})` : '';
  }
}

/** One engine's line: where, version and whether Verdict was tested with it, login, probe; or how to install it. */
function engineLine(e: EngineHealth): string {
  if (!e.found) return `${e.binary} not on PATH — ${e.install}`;
  const parts = [`${e.found}${e.version ? ` (${e.version})` : ''}${testedWords(e)}`];
  if (e.login === 'yes') parts.push(`logged in (${e.loginDetail})`);
  else if (e.login === 'no') parts.push(`NOT logged in — ${e.fix}`);
  else if (e.login === 'unknown') parts.push('login unknown');
  if (e.probe) parts.push(e.probe.ok ? `answers: ${e.probe.detail}` : `does NOT answer: ${e.probe.detail}`);
  return parts.join(', ');
}

/** True when `dir` is a writable folder, or does not exist and its nearest existing ancestor is one. */
function writableOrCreatable(dir: string): boolean {
  let at = dir;
  while (!fs.existsSync(at)) {
    const up = path.dirname(at);
    if (up === at) return false;
    at = up;
  }
  try {
    if (!fs.statSync(at).isDirectory()) return false;
    fs.accessSync(at, fs.constants.W_OK | fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * `verdict doctor`: prints the report (text, or one JSON object with `--json`).
 * Returns 0 when a run could start here with the defaults, 1 otherwise (the problems are listed).
 */
export async function doctorCommand(options: DoctorOptions & { json?: boolean }, io: Io): Promise<number> {
  const r = await doctorReport(options);
  if (options.json) {
    io.out(JSON.stringify(r, null, 2));
    return r.ok ? 0 : 1;
  }
  io.out(r.sandbox.line);
  if (r.sandbox.kind === 'bwrap' && r.sandbox.mode !== 'off') {
    io.out(socketsLine(r.sockets));
    io.out(secretsLine(r.secrets));
    io.out(networkLine(r.network));
  }
  io.out(r.memoryCap.line);
  io.out(
    `user: ${r.user.name}${r.user.uid === null ? '' : ` (uid ${r.user.uid})`}${r.user.root ? ' — root: each step still runs with no capability in a user namespace of its own; overlay trees and memory cgroups are available to root' : ' — not root: overlay trees need root, and a memory cap needs a cgroup this user may write (else "memory cap: none" above)'}`,
  );
  io.out(`git: ${r.git.version ? `${r.git.version} (${r.git.binary})` : r.git.binary ? `${r.git.binary} does not run` : 'not found on PATH'}`);
  io.out(`node: ${r.node.version} (${r.node.binary})`);
  const h = r.spawnHelper;
  io.out(`spawn helper: ${h ? `${h.kind} ${h.version} (${h.binary}${h.fallback ? `; ${h.fallback}` : ''})` : 'none could start'}`);
  io.out(`trees: ${r.trees.supported.join(', ') || 'none (no git)'}${r.trees.overlayReason ? `; not overlay: ${r.trees.overlayReason}` : ''}`);
  io.out('engines:');
  const width = Math.max(0, ...r.engines.map((e) => e.name.length));
  for (const e of r.engines) io.out(`  ${e.name.padEnd(width)}  ${engineLine(e)}`);
  if (r.postgres) io.out(`postgres: ${r.postgres.url} ${r.postgres.reachable ? 'reachable' : `NOT reachable (${r.postgres.error})`}`);
  io.out(`home: ${r.home.path} (${r.home.writable ? (r.home.exists ? 'writable' : 'will be created') : 'NOT writable'})`);
  const c = r.config;
  const chosen = c.via === 'default' ? (c.file ? 'the default file' : 'absent: built-in defaults') : `from ${c.via}`;
  io.out(`config: ${c.file ?? c.shown} (${chosen})${c.error ? '' : `: sandbox ${c.sandbox ? 'on' : 'off'}, allow_full_access ${c.allowFullAccess}`}`);
  if (c.ringer) io.out(`ringer config: ${c.ringer} (read below the config above)`);
  io.out('');
  if (r.fixes.length) {
    io.out('to fix:');
    for (const f of r.fixes) io.out(`  ${f}`);
    io.out('');
  }
  const machineOk = r.problems.length === 0;
  if (machineOk) io.out('a run can start here with the defaults');
  else {
    io.out('a run cannot start here with the defaults:');
    for (const p of r.problems) io.out(`  ${p}`);
  }
  if (r.manifest) {
    const { manifestLines } = await import('./doctor-manifest');
    io.out('');
    for (const line of manifestLines(r.manifest)) io.out(line);
  }
  return r.ok ? 0 : 1;
}
