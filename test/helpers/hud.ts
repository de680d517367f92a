import fs from 'node:fs';
import http from 'node:http';
import { execa, type ResultPromise } from 'execa';
import { CLI } from './cli';

/** Flags Debian's chromium needs here (root, no GPU, no network but 127.0.0.1). */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
/**
 * A Chromium or Chrome binary: $CHROMIUM, else the first that exists of Debian's chromium (test/integration/host/
 * install.sh installs it), chromium-browser, google-chrome, and macOS's Chrome. Null when none is found.
 */
export function findChromium(): string | null {
  const candidates = [
    process.env.CHROMIUM,
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
    '/usr/bin/google-chrome',
    '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
  ];
  return candidates.find((c): c is string => !!c && fs.existsSync(c)) ?? null;
}

/** The browser the dashboard tests drive (see findChromium); '/usr/bin/chromium' when none is found, so a launch fails loudly. */
export const CHROMIUM = findChromium() ?? '/usr/bin/chromium';

/** A `verdict hud` child process and its URL; `log()` is its stderr so far. */
export interface HudProcess {
  url: string;
  port: number;
  child: ResultPromise;
  log(): string;
  stop(): Promise<void>;
}

/** Starts `node dist/cli.js hud --no-open --port 0 --home <home>` (with `env` added) and waits for its URL (at most 20 s). */
export async function startHudProcess(home: string, env: Record<string, string> = {}): Promise<HudProcess> {
  const child = execa('node', [CLI, 'hud', '--no-open', '--port', '0', '--home', home], { reject: false, stdin: 'ignore', buffer: false, env });
  let out = '';
  let err = '';
  child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`verdict hud printed no URL in 20 s:\n${out}\n${err}`)), 20000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /verdict hud: (http:\/\/127\.0\.0\.1:\d+\/t\/[^/\s]+\/)/.exec(out);
      if (m?.[1]) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    child,
    log: () => err,
    stop: async () => {
      child.kill('SIGTERM');
      await child;
    },
  };
}

/** A raw GET with any Host header (fetch will not send a foreign Host). Resolves the status code. */
export function rawGet(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'GET', headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}
