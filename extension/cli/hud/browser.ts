import open from 'open';

/**
 * Whether opening a browser makes sense here: never in CI (`CI` set), never when VERDICT_NO_BROWSER is set, never
 * when stdout is not a terminal (tests, pipes, services), and on Linux/BSD only with a display (DISPLAY or
 * WAYLAND_DISPLAY). This is what keeps `verdict run` from opening or waiting on anything in a headless place.
 */
export function canOpenBrowser(env: NodeJS.ProcessEnv = process.env, isTTY = process.stdout.isTTY === true, platform = process.platform): boolean {
  if (env.CI || env.VERDICT_NO_BROWSER || !isTTY) return false;
  if (platform === 'darwin' || platform === 'win32') return true;
  return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
}

/** Opens `url` in the default browser (the `open` package), without waiting for the browser. Errors are returned. */
export async function openInBrowser(url: string): Promise<Error | null> {
  try {
    const child = await open(url, { wait: false });
    child.on('error', () => undefined);
    child.unref();
    return null;
  } catch (e) {
    return e as Error;
  }
}
