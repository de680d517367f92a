import fs from 'node:fs';
import path from 'node:path';
import { shortHost } from './hostname';

/** Where an identity came from, for messages. */
export type IdentitySource = 'flag' | 'env' | 'file' | 'config' | 'hostname';

/**
 * Who is running: `--identity` > VERDICT_IDENTITY (then FLEET_IDENTITY, RINGER_IDENTITY) > the first line of a
 * `.fleet-agent` file found walking up from `cwd` > the config default > the short hostname.
 * The order is Ringer's, kept so one `.fleet-agent` file or variable names the same person to both tools.
 */
export function resolveIdentity(opts: { flag?: string | null; cwd: string; configDefault?: string | null; env?: NodeJS.ProcessEnv }): {
  identity: string;
  source: IdentitySource;
} {
  const env = opts.env ?? process.env;
  if (opts.flag?.trim()) return { identity: opts.flag.trim(), source: 'flag' };
  for (const name of ['VERDICT_IDENTITY', 'FLEET_IDENTITY', 'RINGER_IDENTITY']) {
    const v = env[name]?.trim();
    if (v) return { identity: v, source: 'env' };
  }
  for (let dir = path.resolve(opts.cwd); ; dir = path.dirname(dir)) {
    try {
      const first = fs.readFileSync(path.join(dir, '.fleet-agent'), 'utf8').split('\n')[0]?.trim();
      if (first) return { identity: first, source: 'file' };
    } catch {
      // no file at this level: keep walking up
    }
    if (path.dirname(dir) === dir) break;
  }
  if (opts.configDefault?.trim()) return { identity: opts.configDefault.trim(), source: 'config' };
  return { identity: shortHost(), source: 'hostname' };
}
