import { containmentChoice } from '../core/config/settings';
import { resolveHome } from '../core/config/home';
import { shortHost } from '../core/host/hostname';
import { poolStatus } from '../core/pool/status';
import { poolLines, poolView } from '../../schemas/pool-view';
import { runPoolWorker } from '../core/pool/worker';
import { hidePassword } from '../core/pool/schema';
import { findBinary } from '../../engines';
import { MAX_PARALLEL } from '../core/manifest/limits';
import { loadEngines } from './load-engines';
import { InputError, UsageError, type Io } from './io';

/** Flags of `verdict pool`. */
export interface PoolFlags {
  db?: string;
  slots?: string;
  engines?: string;
  host?: string;
  home?: string;
  config?: string;
  noSandbox?: boolean;
  json?: boolean;
}

/**
 * `verdict pool worker`: runs a pool worker until Ctrl-C (or SIGTERM), which drains it: nothing new is claimed,
 * running attempts finish and are recorded. `verdict pool status`: prints the pool. Returns the exit code.
 * @throws UsageError for a missing --db, a bad --slots or an unknown action; InputError for an unknown engine
 */
export async function poolCommand(action: string, flags: PoolFlags, io: Io): Promise<number> {
  const url = flags.db ?? process.env.VERDICT_POOL_URL;
  if (!url) throw new UsageError("--db URL (the pool's Postgres) is required (or set VERDICT_POOL_URL)");
  if (action === 'status') {
    const status = await poolStatus(url).catch((e: Error) => {
      throw new InputError(`the pool database ${hidePassword(url)} cannot be read: ${e.message}`);
    });
    if (flags.json) io.out(JSON.stringify(status, null, 2));
    else for (const line of poolLines(poolView(status, { url: hidePassword(url), readAt: Date.now() }))) io.out(line);
    return 0;
  }
  if (action !== 'worker') throw new UsageError(`unknown pool action "${action}": worker or status`);
  const slots = flags.slots === undefined ? 1 : Number(flags.slots);
  if (!Number.isInteger(slots) || slots < 1 || slots > MAX_PARALLEL)
    throw new UsageError(`--slots must be an integer from 1 to ${MAX_PARALLEL} (attempts at once, as max_parallel), got "${flags.slots}"`);
  const { settings, engines: all } = loadEngines(flags.config);
  // Default: every engine whose command is on PATH here.
  const names = flags.engines
    ? flags.engines
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [...all].filter(([, e]) => findBinary(e.binary, process.env.PATH ?? '')).map(([n]) => n);
  const unknown = names.filter((n) => !all.has(n));
  if (unknown.length) throw new InputError(`--engines: unknown engine(s) ${unknown.join(', ')}; known: ${[...all.keys()].sort().join(', ')}`);
  if (!names.length) throw new UsageError('--engines names no engine');
  const engines = new Map(names.map((n) => [n, all.get(n)!]));
  const controller = new AbortController();
  const onSignal = () => {
    if (!controller.signal.aborted) io.err('draining: running attempts finish and are recorded; nothing new is claimed');
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    await runPoolWorker({
      url,
      home: resolveHome(flags.home),
      host: flags.host ?? shortHost(),
      slots,
      engines,
      known: all,
      env: process.env,
      sandbox: containmentChoice(settings, { noSandbox: flags.noSandbox }).sandbox ?? 'auto',
      sockets: settings.sockets,
      // The worker's config file holds the pool's URL, password included: no step may read it, wherever it lies.
      hide: [...settings.hide, settings.configFile],
      expose: settings.expose,
      signal: controller.signal,
      log: (line) => io.out(`${new Date().toISOString()} ${line}`),
    });
  } catch (e) {
    throw new InputError(`the pool worker stopped: ${(e as Error).message} (database ${hidePassword(url)})`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return 0;
}
