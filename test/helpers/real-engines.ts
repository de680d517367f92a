import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { CLI } from './cli';
import type { AgentCliName } from './agent-clis';
import { makeRepo, readRows, tempDir, writeManifest } from './fixtures';
import { startModelServer, type ModelServer, type ModelServerOptions } from '../fixtures/model-server';
import type { RunState } from '../../extension/core/live/state';
import { HOST_LOOPBACK_ADDRESS } from '../../extension/core/process/sandbox';

// Real agent CLIs (installed on demand, test/helpers/agent-clis.ts) driven by the built `verdict` CLI against the
// scripted model server on 127.0.0.1 (test/e2e/real-engines.e2e.test.ts, test/e2e/hostile-waits.e2e.test.ts). Where
// `unshare` and `ip` can make one, the verdict CLI and its workers run in a network namespace with only a loopback,
// bridged to the server through a unix socket, so nothing can leave the machine; otherwise update checks and
// telemetry are switched off through env only. Each sandboxed step has a network namespace of its own besides
// (slirp4netns, started inside whichever namespace the CLI runs in): the engines reach the server as
// $VERDICT_HOST_LOOPBACK (10.0.2.2), which slirp4netns maps to the 127.0.0.1 of the CLI's namespace, where the server
// (or the bridge to it) listens.

/**
 * The command prefix that runs a command in a loopback-only network namespace: as root `unshare -n`; as another user
 * a user namespace of its own too (`--map-current-user`: the command still runs as this user, not as root, so Verdict
 * and codex behave as they do for this user), with the capabilities that brought `lo` up dropped before the command
 * (bubblewrap refuses to start holding capabilities no set-uid bit gave it). Null where neither works
 * (VERDICT_E2E_NETNS=0 turns it off).
 */
function isolation(): string[] | null {
  if (process.env.VERDICT_E2E_NETNS === '0') return null;
  const prefix =
    process.getuid?.() === 0
      ? ['unshare', '-n', 'sh', '-c', 'ip link set lo up && exec "$@"', 'sh']
      : [
          'unshare',
          '--user',
          '--map-current-user',
          '--net',
          '--keep-caps',
          'sh',
          '-c',
          'ip link set lo up && exec setpriv --inh-caps=-all --ambient-caps=-all "$@"',
          'sh',
        ];
  try {
    const [cmd, ...args] = prefix as [string, ...string[]];
    execFileSync(cmd, [...args, 'true'], { stdio: 'ignore', timeout: 10000 });
    return prefix;
  } catch {
    return null;
  }
}

const ISOLATION = isolation();

/** True when `verdict` runs in a loopback-only network namespace (see isolation). */
export const ISOLATED = ISOLATION !== null;

// Runs inside the namespace: listens on 127.0.0.1:PORT there, forwards every connection to the unix socket,
// then runs the command and exits with its code.
const BRIDGE = `const net = require('net'), cp = require('child_process');
const [sock, port, cmd, ...args] = process.argv.slice(1);
net.createServer((c) => { const u = net.connect(sock); c.pipe(u).pipe(c); u.on('error', () => c.destroy()); c.on('error', () => u.destroy()); })
  .listen(Number(port), '127.0.0.1', () => cp.spawn(cmd, args, { stdio: 'inherit' }).on('exit', (code) => process.exit(code ?? 1)));`;

/** The API key every CLI is given (a server started with `requireKey: TEST_KEY` refuses any other). */
export const TEST_KEY = 'sk-verdict-test';

/**
 * The server's base URL as a sandboxed step reaches it: each step has a network namespace of its own (slirp4netns),
 * where the host's 127.0.0.1 is $VERDICT_HOST_LOOPBACK (10.0.2.2), not 127.0.0.1; unsandboxed (the tests' fallback
 * where no sandbox can run) the server's own address.
 */
export function modelServerUrl(server: ModelServer): string {
  if (process.env.VERDICT_TEST_UNSANDBOXED) return server.url;
  return server.url.replace('//127.0.0.1:', `//${HOST_LOOPBACK_ADDRESS}:`);
}

/** Environment pointing one CLI at the server, with a fresh home under `dir` and every update check and telemetry off. */
export function engineEnv(engine: AgentCliName, dir: string, server: ModelServer): Record<string, string> {
  const home = path.join(dir, 'user-home');
  const env: Record<string, string> = {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
  };
  fs.mkdirSync(env.XDG_CONFIG_HOME as string, { recursive: true });
  if (engine === 'claude') {
    return {
      ...env,
      ANTHROPIC_BASE_URL: modelServerUrl(server),
      ANTHROPIC_API_KEY: TEST_KEY,
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
  }
  if (engine === 'grok') {
    // @vibe-kit/grok-cli reads its endpoint and key from these (its --help); it keeps ~/.grok/user-settings.json.
    return { ...env, GROK_BASE_URL: `${modelServerUrl(server)}/v1`, GROK_API_KEY: TEST_KEY };
  }
  if (engine === 'gemini') {
    // Gemini CLI reads its settings from ~/.gemini/settings.json: the API key login, no telemetry, no update check,
    // and one attempt per model call (its own retries would hide a 429 for minutes).
    const gemini = path.join(home, '.gemini');
    fs.mkdirSync(gemini, { recursive: true });
    fs.writeFileSync(
      path.join(gemini, 'settings.json'),
      JSON.stringify({
        security: { auth: { selectedType: 'gemini-api-key' } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true, maxAttempts: 1 },
      }) + '\n',
    );
    return { ...env, GOOGLE_GEMINI_BASE_URL: modelServerUrl(server), GEMINI_API_KEY: TEST_KEY };
  }
  if (engine === 'codex') {
    const codexHome = path.join(dir, 'codex-home');
    fs.mkdirSync(codexHome, { recursive: true });
    fs.writeFileSync(
      path.join(codexHome, 'config.toml'),
      [
        'model = "stub-model"',
        'model_provider = "verdict-test"',
        'check_for_update_on_startup = false',
        '[analytics]',
        'enabled = false',
        '[model_providers.verdict-test]',
        'name = "Verdict test model server"',
        `base_url = "${modelServerUrl(server)}/v1"`,
        'env_key = "VERDICT_TEST_MODEL_KEY"',
        'wire_api = "responses"',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        '',
      ].join('\n'),
    );
    return { ...env, CODEX_HOME: codexHome, VERDICT_TEST_MODEL_KEY: TEST_KEY };
  }
  const config = {
    model: 'verdict-test/stub-model',
    small_model: 'verdict-test/stub-model',
    autoupdate: false,
    share: 'disabled',
    permission: { edit: 'allow', bash: 'allow', webfetch: 'deny' },
    // The title is generated by a model call opencode never reports in its JSON output; switched off so that
    // every call the server answers is one the CLI accounts for.
    agent: { title: { disable: true } },
    provider: {
      'verdict-test': {
        npm: '@ai-sdk/openai-compatible',
        name: 'Verdict test model server',
        options: { baseURL: `${modelServerUrl(server)}/v1`, apiKey: TEST_KEY },
        models: { 'stub-model': { name: 'Stub', tool_call: true, limit: { context: 200000, output: 8192 } } },
      },
    },
  };
  return {
    ...env,
    OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_CLAUDE_CODE: '1',
  };
}

/** A `verdict` process started by {@link startVerdict}; `done` ends the bridge (always await it). */
export interface VerdictProcess {
  child: ResultPromise<{ cwd: string; env: Record<string, string>; reject: false; all: true; stdin: 'ignore' }>;
  done(): Promise<Awaited<VerdictProcess['child']>>;
}

/**
 * Starts `node dist/cli.js ...args` in `cwd` with `env` (in the loopback-only namespace when ISOLATED, its 127.0.0.1:
 * `server.port` bridged to the server), without waiting for it.
 */
export async function startVerdict(args: string[], opts: { cwd: string; env: Record<string, string>; server: ModelServer }): Promise<VerdictProcess> {
  const verdict = [CLI, ...args];
  const options = { cwd: opts.cwd, env: opts.env, reject: false, all: true, stdin: 'ignore' } as const;
  if (!ISOLATED) {
    const child = execa('node', verdict, options);
    return { child, done: () => child };
  }
  const sock = path.join(opts.cwd, `model-${process.pid}-${Date.now()}.sock`);
  const socket = net.createServer((c) => {
    const u = net.connect(opts.server.port, '127.0.0.1');
    c.pipe(u).pipe(c);
    u.on('error', () => c.destroy());
    c.on('error', () => u.destroy());
  });
  await new Promise<void>((resolve) => socket.listen(sock, resolve));
  const inner = ['node', '-e', BRIDGE, sock, String(opts.server.port), 'node', ...verdict];
  const [cmd, ...prefix] = ISOLATION as [string, ...string[]];
  const child = execa(cmd, [...prefix, ...inner], options);
  return {
    child,
    done: async () => {
      try {
        return await child;
      } finally {
        await new Promise<void>((resolve) => socket.close(() => resolve()));
      }
    },
  };
}

/** One `verdict run` of a real engine against the scripted model server, and what it left. */
export interface RealRun {
  server: ModelServer;
  /** The test's temporary folder: the repo or workdir, the Verdict home, the CLIs' user home (`user-home`). */
  dir: string;
  home: string;
  /** The HOME the CLIs were given (engineEnv). */
  userHome: string;
  result: Awaited<VerdictProcess['child']>;
  rows: Record<string, unknown>[];
  state: RunState;
  /** Wall time of the `verdict run`, ms. */
  ms: number;
}

/** What {@link runRealTask} runs. */
export interface RealTaskOptions {
  engine: AgentCliName;
  model: string;
  /** Folders holding the CLIs' binaries, put first on PATH. */
  binDirs: string[];
  mode: 'worktree' | 'plain';
  server?: ModelServerOptions;
  /** Task fields over the default one-task manifest (key alpha, writes alpha.txt, one attempt). */
  task?: Record<string, unknown>;
  /** Other engines configured too (best-of-N candidates, reviewers on another engine). */
  alsoEngines?: AgentCliName[];
  /** Environment over engineEnv's; a value `null` removes the variable. */
  env?: Record<string, string | null>;
  /** Called with the CLIs' HOME before the run (to seed the user's own state files). */
  seedHome?: (userHome: string) => void;
  /** The run's name (default `real-<engine>`). */
  name?: string;
  /** A Verdict config file's content (`--config`), e.g. `{"quota": {"max_wait_h": 0}}`. Absent: none. */
  config?: Record<string, unknown>;
  /** Manifest fields over the default (budgets, logins). */
  manifest?: Record<string, unknown>;
  /** More tasks after the first (each a whole task: key, spec, check…), run against the same model server. */
  moreTasks?: Record<string, unknown>[];
  /** Called with Verdict's home before the run (e.g. to load a price catalog into it). */
  prepareHome?: (home: string) => Promise<void>;
}

/**
 * Writes a one-task manifest (task key `alpha`: create alpha.txt holding `alpha ready`, one attempt), runs it with the
 * built `verdict run` against a fresh scripted model server (startVerdict: in the loopback-only namespace where it can
 * be made), and collects the eval rows and the run state. Throws when the run left no row.
 */
export async function runRealTask(o: RealTaskOptions): Promise<RealRun> {
  const server = await startModelServer(o.server ?? {});
  const dir = tempDir(`verdict-real-${o.engine}-`);
  const home = path.join(dir, 'verdict-home');
  const task = {
    key: 'alpha',
    engine: o.engine,
    model: o.model,
    spec: "Create alpha.txt containing 'alpha ready'",
    check: "grep -x 'alpha ready' alpha.txt",
    expect_files: ['alpha.txt'],
    task_type: 'e2e',
    verified: 'alpha.txt holds the line "alpha ready"',
    timeout_s: 240,
    max_attempts: 1,
    ...o.task,
  };
  const run = { run_name: o.name ?? `real-${o.engine}`, max_parallel: 1, ...o.manifest, tasks: [task, ...(o.moreTasks ?? [])] };
  const manifest =
    o.mode === 'worktree' ? writeManifest(makeRepo(path.join(dir, 'repo')), { ...run, worktrees: true }) : writeManifest(dir, { ...run, workdir: 'work' });
  const env: Record<string, string> = {
    ...Object.assign({}, ...(o.alsoEngines ?? []).map((e) => engineEnv(e, dir, server))),
    ...engineEnv(o.engine, dir, server),
    PATH: [...o.binDirs, process.env.PATH ?? ''].join(path.delimiter),
    PWD: dir,
  };
  for (const [k, v] of Object.entries(o.env ?? {})) {
    if (v === null) delete env[k];
    else env[k] = v;
  }
  const userHome = env.HOME as string;
  o.seedHome?.(userHome);
  const args = ['run', manifest, '--home', home, '--identity', 'real-engines-e2e'];
  if (o.config) {
    const configFile = path.join(dir, 'config.json');
    // Where the tests run unsandboxed (test/helpers/sandbox-env.ts), the config named here replaces VERDICT_CONFIG's.
    fs.writeFileSync(configFile, JSON.stringify({ ...(process.env.VERDICT_TEST_UNSANDBOXED ? { sandbox: false } : {}), ...o.config }));
    args.push('--config', configFile);
  }
  const started = Date.now();
  let result: RealRun['result'];
  try {
    await o.prepareHome?.(home);
    result = await (await startVerdict(args, { cwd: dir, env, server })).done();
  } finally {
    await server.close();
  }
  const ms = Date.now() - started;
  const rows = readRows(home);
  if (!rows.length) throw new Error(`verdict run left no eval row:\n${result.all}`);
  // The run's own rows come last (prepareHome may have seeded the log with others).
  const runId = String(rows[rows.length - 1]?.run_id);
  const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as RunState;
  return { server, dir, home, userHome, result, rows, state, ms };
}

/** What an assertion failure shows about a run: verdict's output, what the server saw, the worker logs' tails. */
export function explainRun(run: RealRun): string {
  const log = run.rows
    .map(
      (r) =>
        `${String(r.step)} ${String(r.attempt)}: ${fs.existsSync(String(r.worker_log)) ? fs.readFileSync(String(r.worker_log), 'utf8').slice(-3000) : '(no log)'}`,
    )
    .join('\n---\n');
  const seen = run.server.requests.map((r) => `${r.method} ${r.path} → ${r.reply}${r.tool ? ` (${r.tool})` : ''}`).join('\n');
  return `verdict output:\n${run.result.all}\n\nserver saw:\n${seen}\n\nworker log tails:\n${log}`;
}
