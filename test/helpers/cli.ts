import path from 'node:path';
import { execa } from 'execa';

/** The built CLI (npm test builds it first). */
export const CLI = path.resolve('dist/cli.js');

/** Runs `node dist/cli.js ...args` with stdin closed; never rejects on a non-zero exit. */
export function cli(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) {
  return execa('node', [CLI, ...args], { cwd: opts.cwd, env: opts.env, reject: false, all: true, stdin: 'ignore' });
}
