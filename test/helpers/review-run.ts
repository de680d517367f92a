import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from './cli';
import { readRows } from './fixtures';

// The hostile-review e2e files' way of running one case: a test dir `dir` holding `home/` (VERDICT_HOME) and
// `user-home/` (HOME), and the built CLI.

/** The one run under `home/runs`. */
export function runIdOf(home: string): string {
  return fs.readdirSync(path.join(home, 'runs')).filter((f) => !f.startsWith('.'))[0] as string;
}

/** `verdict run FILE` with `dir`'s homes, no dashboard. */
export async function run(file: string, dir: string) {
  const env = { HOME: path.join(dir, 'user-home') };
  fs.mkdirSync(env.HOME, { recursive: true });
  return cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard'], { env });
}

/** `verdict merge RUN [TASK…]` of `dir`'s one run, from the repository `repo`. */
export async function merge(dir: string, repo: string, tasks: string[] = []) {
  const env = { HOME: path.join(dir, 'user-home') };
  return cli(['merge', runIdOf(path.join(dir, 'home')), ...tasks, '--home', path.join(dir, 'home')], { env, cwd: repo });
}

/** The work rows of `dir`'s run as `key:VERDICT`, sorted. */
export function workVerdicts(dir: string): string[] {
  return readRows(path.join(dir, 'home'))
    .filter((r) => r.step === 'work')
    .map((r) => `${String(r.task_key)}:${String(r.verdict)}`)
    .sort();
}

/** A check.sh that is strict (answer.txt must say 42) only when setup's `.env` says STRICT=1, and passes leniently without it. */
export const STRICT_WITH_ENV = 'set -e\nif [ -f .env ]; then . ./.env; fi\nif [ "${STRICT:-0}" = 1 ]; then grep -x 42 answer.txt; else echo lenient; fi\n';

/** Runs `check` as the orchestrator runs a check (`bash -o pipefail -c`) in `cwd`, unsandboxed; its exit code. */
export function checkAgain(cwd: string, check: string): number {
  return spawnSync('bash', ['-o', 'pipefail', '-c', check], { cwd, stdio: 'ignore' }).status ?? -1;
}

/**
 * A script that prints `good` the first time it runs (the check) and then rewrites itself to print `bad`: the code the
 * check runs is the worker's, and in plain mode the task dir it runs in is what is delivered.
 */
export function selfRewriting(good: string, bad: string): string {
  return `echo ${good}\nprintf '%s\\n' ${JSON.stringify(`echo ${bad}`)} > "$0"\n`;
}

/** Shell writing `text` to `file` (base64, so no quoting can go wrong). */
export function writeFileCmd(file: string, text: string): string {
  return `echo ${Buffer.from(text).toString('base64')} | base64 -d > ${file}`;
}
