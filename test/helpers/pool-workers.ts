// Pool workers for the e2e tests: each a `verdict pool worker` process with its own home, config and engines.
import fs from 'node:fs';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import pg from 'pg';
import { CLI } from './cli';
import { git, makeRepo, tempDir } from './fixtures';
import { postgresBinDir, TestPostgres } from './postgres';

/** Lease for these tests, ms: a silent worker loses its attempt after this. */
export const LEASE_MS = '3000';
/** `--no-sandbox` where the tests run unsandboxed (VERDICT_TEST_UNSANDBOXED). */
export const unsandboxed = process.env.VERDICT_TEST_UNSANDBOXED ? ['--no-sandbox'] : [];

/** A `verdict pool worker` child: its process, its VERDICT_HOME, its output so far. */
export interface PoolWorker {
  proc: ResultPromise;
  home: string;
  out: () => string;
}

/** One model call of `costUsd` as opencode reports it as it streams (a step_finish of 1,000 tokens in and 50 out). */
export function meterStep(costUsd: number): string {
  return `{"type":"step_finish","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":1000,"output":50,"reasoning":0,"cache":{"write":0,"read":0}},"cost":${costUsd}}}`;
}

/**
 * Engines of one machine: `agent` runs its spec with bash (or hangs, on a machine whose agent never ends), `good` too;
 * `meter` runs it and reads opencode's JSON; `strict` and `runaway` review (runaway streams its spend and never ends).
 */
export function poolMachine(dir: string, agent: 'bash' | 'hang'): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, 'agent-run'), agent === 'bash' ? '#!/bin/bash\nbash -c "$1"\n' : '#!/bin/bash\necho "working"; sleep 600\n', { mode: 0o755 });
  // A reviewer: rejects attempt 1 naming what is missing, approves attempt 2.
  fs.writeFileSync(
    path.join(bin, 'review-strict'),
    `#!/bin/bash\nif [ "$VERDICT_ATTEMPT" = 1 ]; then echo '{"verdict":"reject","concerns":["tests.txt is missing"]}'; else echo '{"verdict":"approve","concerns":[]}'; fi\n`,
    { mode: 0o755 },
  );
  // A reviewer that reports a model call of $0.0001 (opencode's JSON) every 0.2 s and never answers nor ends.
  fs.writeFileSync(path.join(bin, 'review-runaway'), `#!/bin/bash\nwhile :; do echo '${meterStep(0.0001)}'; sleep 0.2; done\n`, { mode: 0o755 });
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      engines: {
        agent: { binary: 'agent-run', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'agent-1' },
        good: { binary: 'agent-run', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'good-1' },
        strict: { binary: 'review-strict', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'strict-1' },
        // Prints Claude Code's JSON, whose result carries a cost: what a subscription login must not count as paid.
        paid: { binary: 'agent-run', argv: ['{spec}'], install: 'a test fixture', output: 'claude', model: 'paid-1' },
        // Runs its spec with bash and reads its output as opencode's JSON, which reports each model call's cost as it streams.
        meter: { binary: 'agent-run', argv: ['{spec}'], install: 'a test fixture', output: 'opencode', model: 'meter-1' },
        runaway: { binary: 'review-runaway', argv: ['{spec}'], install: 'a test fixture', output: 'opencode', model: 'runaway-1' },
      },
    }),
  );
  return { config, env: { PATH: `${bin}:${process.env.PATH}`, VERDICT_POOL_LEASE_MS: LEASE_MS } };
}

/** Starts `verdict pool worker` as machine `name` (its own home and engines) on the pool of `url`. */
export function startPoolWorker(url: string, name: string, engines: string, agent: 'bash' | 'hang' = 'bash', slots = 2): PoolWorker {
  const dir = tempDir(`verdict-pool-${name}-`);
  const { config, env } = poolMachine(dir, agent);
  const home = path.join(dir, 'home');
  let out = '';
  const proc = execa(
    'node',
    [CLI, 'pool', 'worker', '--db', url, '--home', home, '--config', config, '--host', name, '--slots', String(slots), '--engines', engines, ...unsandboxed],
    { env, reject: false, all: true, stdin: 'ignore' },
  );
  proc.all?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return { proc, home, out: () => out };
}

/** Polls `fn` every 100 ms until it holds. @throws after limitMs, naming `what` */
export async function until(what: string, fn: () => boolean | Promise<boolean>, limitMs = 120_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Waits until every worker in `ws` said it took its slots (its first "slot" line).
 * @throws after limitMs, with each worker's output so far (why a worker never came up: a refused database, a crash)
 */
export async function workersUp(ws: readonly PoolWorker[], limitMs = 120_000): Promise<void> {
  try {
    await until(ws.length === 1 ? 'the worker up' : `${ws.length} workers up`, () => ws.every((w) => /slot/.test(w.out())), limitMs);
  } catch (e) {
    throw new Error(`${(e as Error).message}; their output:\n${ws.map((w, i) => `--- worker ${i + 1}\n${w.out()}`).join('\n')}`);
  }
}

/** Ctrl-C of a worker (it drains), then waits for it to end. */
export async function drain(w: PoolWorker): Promise<void> {
  w.proc.kill('SIGINT');
  await w.proc;
}

/** A repository to run in (`<dir>/repo`, one commit) and a bare repository as the remote every worker fetches from. */
export function repoAndRemote(dir: string): { repo: string; remote: string } {
  const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# pool\n' });
  const remote = path.join(dir, 'remote.git');
  git(dir, 'init', '-q', '--bare', remote);
  return { repo, remote };
}

/** One SQL statement on the pool's database (a fresh connection, closed after). @throws what pg throws */
export async function query(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(sql, params);
  } finally {
    await c.end();
  }
}

/**
 * The mocha hooks of a pool suite; call it inside `describe`. Before the suite: a throwaway Postgres (the suite is
 * skipped, saying why, on a machine without PostgreSQL binaries). After each test (`kill: 'each'`) or after the suite
 * (`'all'`): every worker pushed onto `workers` is SIGKILLed and awaited. After the suite: the server stops.
 * `url()` is the server's connection URL (valid once the suite's `before` ran); `server()` the server itself.
 */
export function poolSuite(kill: 'each' | 'all' = 'each'): { url: () => string; server: () => TestPostgres; workers: PoolWorker[] } {
  const bin = postgresBinDir();
  let pgServer: TestPostgres | undefined;
  const workers: PoolWorker[] = [];
  const killAll = async (): Promise<void> => {
    for (const w of workers.splice(0)) {
      w.proc.kill('SIGKILL');
      await w.proc;
    }
  };
  before(async function () {
    if (!bin) {
      console.log("    skipped: no PostgreSQL binaries (/usr/lib/postgresql/*/bin); .ci/run installs Debian's postgresql");
      this.skip();
    }
    pgServer = await TestPostgres.create(bin as string);
  });
  if (kill === 'each') afterEach(killAll);
  after(async () => {
    await killAll();
    pgServer?.stop();
  });
  const server = (): TestPostgres => {
    if (!pgServer) throw new Error("poolSuite: the server is made in the suite's before hook");
    return pgServer;
  };
  return { url: () => server().url, server, workers };
}
