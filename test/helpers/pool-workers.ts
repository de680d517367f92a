// Pool workers for the e2e tests: each a `verdict pool worker` process with its own home, config and engines.
import fs from 'node:fs';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { CLI } from './cli';
import { tempDir } from './fixtures';

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

/** Engines of one machine: `agent` runs its spec with bash (or hangs, on a machine whose agent never ends), `good` too. */
export function poolMachine(dir: string, agent: 'bash' | 'hang'): { config: string; env: Record<string, string> } {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, 'agent-run'), agent === 'bash' ? '#!/bin/bash\nbash -c "$1"\n' : '#!/bin/bash\necho "working"; sleep 600\n', { mode: 0o755 });
  // A reviewer: rejects attempt 1 naming what is missing, approves attempt 2.
  fs.writeFileSync(path.join(bin, 'review-strict'), `#!/bin/bash\nif [ "$VERDICT_ATTEMPT" = 1 ]; then echo '{"verdict":"reject","concerns":["tests.txt is missing"]}'; else echo '{"verdict":"approve","concerns":[]}'; fi\n`, { mode: 0o755 });
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({
    engines: {
      agent: { binary: 'agent-run', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'agent-1' },
      good: { binary: 'agent-run', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'good-1' },
      strict: { binary: 'review-strict', argv: ['{spec}'], install: 'a test fixture', output: 'none', model: 'strict-1' },
    },
  }));
  return { config, env: { PATH: `${bin}:${process.env.PATH}`, VERDICT_POOL_LEASE_MS: LEASE_MS } };
}

/** Starts `verdict pool worker` as machine `name` (its own home and engines) on the pool of `url`. */
export function startPoolWorker(url: string, name: string, engines: string, agent: 'bash' | 'hang' = 'bash', slots = 2): PoolWorker {
  const dir = tempDir(`verdict-pool-${name}-`);
  const { config, env } = poolMachine(dir, agent);
  const home = path.join(dir, 'home');
  let out = '';
  const proc = execa('node', [CLI, 'pool', 'worker', '--db', url, '--home', home, '--config', config, '--host', name, '--slots', String(slots), '--engines', engines, ...unsandboxed], { env, reject: false, all: true, stdin: 'ignore' });
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

/** Ctrl-C of a worker (it drains), then waits for it to end. */
export async function drain(w: PoolWorker): Promise<void> {
  w.proc.kill('SIGINT');
  await w.proc;
}

