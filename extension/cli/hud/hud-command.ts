import path from 'node:path';
import { localActions, localRunActions } from '../../core/dashboard/actions';
import { dashboardScoreboard } from '../../core/dashboard/scoreboard';
import { resolveIdentity } from '../../core/host/identity';
import { listRuns } from '../../core/live/registry';
import type { DashboardLog } from '../../core/dashboard/source';
import { loadUserConfig, poolUrlOf, type VerdictConfig } from '../../core/config/config';
import { InputError, UsageError, type Io } from '../io';
import { packageRoot } from '../package-root';
import { canOpenBrowser, openInBrowser } from './browser';
import { findRunningHud, removeHudRecord, writeHudRecord } from './hud-file';
import { startHud, type Hud } from './server';
import { PoolMonitor } from '../../core/pool/monitor';
import { MAX_TIMER_S } from '../../core/fs/timer';

/** The hud's usual port. */
export const DEFAULT_HUD_PORT = 8700;

/** Flags of `verdict hud`. */
export interface HudFlags {
  home: string;
  /** As typed; undefined: DEFAULT_HUD_PORT, or a free port when that one is taken. */
  port?: string;
  open: boolean;
  /** Exit after this many seconds with no page connected and no run running (a hud `verdict run` started). */
  idleExitS?: string;
  /** --pool URL: the worker pool to show (default $VERDICT_POOL_URL, else the config's `pool`). */
  pool?: string;
}

/**
 * `verdict hud`: serves the dashboard of every run under `home` on 127.0.0.1, records itself in `<home>/hud.json`
 * for `verdict run` to reuse, prints the URL and opens it (unless --no-open or there is no display). Runs until
 * SIGINT/SIGTERM (or --idle-exit-s). Returns the exit code: 0 on a clean stop, 2 on bad flags or a taken port.
 */
export async function hudCommand(flags: HudFlags, io: Io, stop?: AbortSignal): Promise<number> {
  const explicit = flags.port !== undefined;
  const port = explicit ? Number(flags.port) : DEFAULT_HUD_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0..65535, got "${flags.port}"`);
  const idle = flags.idleExitS === undefined ? null : Number(flags.idleExitS);
  if (idle !== null && !(idle > 0 && idle <= MAX_TIMER_S))
    throw new UsageError(`--idle-exit-s must be a number of seconds above 0 and at most ${MAX_TIMER_S}, got "${flags.idleExitS}"`);
  const running = await findRunningHud(flags.home);
  if (running) {
    io.out(`verdict hud already serves ${flags.home}: ${running}`);
    if (flags.open && canOpenBrowser()) await openInBrowser(running);
    return 0;
  }
  const log: DashboardLog = { info: (m) => io.err(`${new Date().toISOString()} ${m}`), warn: (m) => io.err(`${new Date().toISOString()} ${m}`) };
  const scoreboard = () => dashboardScoreboard(flags.home);
  // The page's stop and rerun are acknowledged in the run's state.json as sent by whoever runs this hud.
  let config: VerdictConfig;
  try {
    config = loadUserConfig(undefined).config;
  } catch (e) {
    throw new InputError((e as Error).message);
  }
  const by = resolveIdentity({ cwd: process.cwd(), configDefault: config.identity }).identity;
  // Rerun of a run that ended starts `verdict rerun` detached with this CLI and the config in force here.
  const actions = localActions(flags.home, by, { cli: process.argv[1], config });
  // Pause, resume and drain go through the control channel; resume of a run that ended starts `verdict resume` detached.
  const runActions = localRunActions(flags.home, by, { cli: process.argv[1], config });
  const poolUrl = flags.pool ?? (process.env.VERDICT_POOL_URL || poolUrlOf(config));
  if (poolUrl !== undefined && !/^postgres(ql)?:\/\//.test(poolUrl))
    throw new UsageError(`--pool must be a postgres:// or postgresql:// URL, got "${poolUrl}"`);
  // The first read is not awaited: a pool database that is down shows as such in the page, the hud still serves.
  const pool = poolUrl ? new PoolMonitor() : undefined;
  void pool?.follow(poolUrl ?? null);
  let hud: Hud;
  try {
    hud = await startHud({ home: flags.home, port, assets: path.join(packageRoot(), 'dist', 'webview'), log, scoreboard, actions, runActions, pool });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
    if (explicit) {
      io.err(`verdict: port ${port} on 127.0.0.1 is taken; pick another with --port (0: any free port)`);
      return 2;
    }
    hud = await startHud({ home: flags.home, port: 0, assets: path.join(packageRoot(), 'dist', 'webview'), log, scoreboard, actions, runActions, pool });
    io.err(`port ${port} is taken; serving on ${hud.port} instead`);
  }
  writeHudRecord(flags.home, { pid: process.pid, port: hud.port, url: hud.url, home: flags.home, startedAt: Date.now() });
  io.out(`verdict hud: ${hud.url}`);
  io.out(`(every run under ${flags.home}; 127.0.0.1 only; the token in the URL is required; Ctrl-C stops)`);
  if (flags.open && canOpenBrowser()) {
    const err = await openInBrowser(hud.url);
    if (err) io.err(`cannot open a browser: ${err.message}`);
  }
  await new Promise<void>((resolve) => {
    const done = () => resolve();
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
    stop?.addEventListener('abort', done);
    if (idle !== null) {
      let quietSince = Date.now();
      const t = setInterval(() => {
        const busy = hud.clients() > 0 || listRuns(flags.home).runs.some((r) => r.liveness === 'running');
        if (busy) quietSince = Date.now();
        else if (Date.now() - quietSince > idle * 1000) {
          clearInterval(t);
          done();
        }
      }, 5000);
      t.unref();
    }
  });
  removeHudRecord(flags.home);
  await hud.close();
  await pool?.close();
  return 0;
}
