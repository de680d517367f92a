import { spawn } from 'node:child_process';
import type { Io } from '../io';
import { canOpenBrowser, openInBrowser } from './browser';
import { resolveHome } from '../../core/config/home';
import { selfCommand, shellWord } from '../self-command';
import { findRunningHud } from './hud-file';

// What `verdict run` does about the dashboard, apart from the hud server (hud-command.ts): a run only reuses a hud
// or starts one as its own process, so it never loads the server.

/**
 * What `verdict run` does about the dashboard (unless --no-dashboard): reuse the hud already serving `home` and
 * print its URL; otherwise, only where a browser can be opened (canOpenBrowser: a terminal with a display, not CI),
 * start one as a detached `verdict hud --idle-exit-s 600` that outlives the run, print its URL and open it. In a
 * headless place (CI, tests, pipes, ssh without a display) it starts and opens nothing and prints how to watch.
 * Never throws; waits at most ~6 s (the health check, or a fresh hud coming up).
 */
export async function dashboardForRun(home: string, io: Io): Promise<void> {
  try {
    const running = await findRunningHud(home);
    if (running) {
      io.out(`dashboard: ${running}`);
      return;
    }
    if (!canOpenBrowser()) {
      io.out(`dashboard: \`${hudCommand(home)}\` serves it to a browser (not started: no display here)`);
      return;
    }
    const script = process.argv[1];
    if (!script) return;
    const child = spawn(process.execPath, [script, 'hud', '--no-open', '--home', home, '--idle-exit-s', '600'], { detached: true, stdio: 'ignore' });
    child.unref();
    for (let i = 0; i < 25; i++) {
      await new Promise((r) => setTimeout(r, 200));
      const url = await findRunningHud(home, 500);
      if (url) {
        io.out(`dashboard: ${url}`);
        const err = await openInBrowser(url);
        if (err) io.err(`cannot open a browser: ${err.message}`);
        return;
      }
    }
    io.err(`dashboard: the hud did not come up; run \`${hudCommand(home)}\` to see why`);
  } catch (e) {
    io.err(`dashboard: ${(e as Error).message}`);
  }
}

/** The command line that serves `home`'s dashboard, as the user can type it here (self-command.ts). */
function hudCommand(home: string): string {
  return `${selfCommand()} hud${home === resolveHome() ? '' : ` --home ${shellWord(home)}`}`;
}
