/**
 * Benchmark (not a test): how many git processes a worktree-mode task starts, by kind, and the wall time of the run.
 *
 *   node esbuild.mjs && npm run bench:git
 *   env: BENCH_TASKS=20  BENCH_PARALLEL=4  BENCH_ROUNDS=3  BENCH_BASE_CLI=/path/to/other/dist/cli.js
 *        BENCH_SPEC='sleep 1' BENCH_CHECK=true (the worker and check; default below)
 *        VERDICT_KEEP_TMP=1 keeps each round's folder (its git.log.<pid> files: every argv)
 *
 * Workload: BENCH_TASKS tasks of `echo <n> > f.txt` (a change, so the seal commits; check `test -s f.txt`,
 * `"network": false`) at BENCH_PARALLEL lanes, one `verdict run` of the built CLI in worktree mode on a one-commit
 * repository. Every git the orchestrator starts goes through a logging `git` put first on PATH (a shell script that
 * appends its argv to a file and execs the real git); the kinds are the subcommand after the `-c` overrides
 * (`config --get-regexp` is the driver-name read of core/git/safe-git.ts). With BENCH_BASE_CLI, each round also runs
 * that build on the same workload (the two alternate which goes first) and the medians are compared as a ratio.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { probeSandbox } from '../../extension/core/process/sandbox';
import { makeRepo } from '../helpers/fixtures';
import { uncoveredDir } from '../helpers/uncovered';

const run = promisify(execFile);
const TASKS = Number(process.env.BENCH_TASKS ?? 20);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SPEC = process.env.BENCH_SPEC;
const CHECK = process.env.BENCH_CHECK ?? 'test -s f.txt';
const CLIS: Record<string, string> = { this: path.resolve('dist/cli.js') };
if (process.env.BENCH_BASE_CLI) CLIS.base = path.resolve(process.env.BENCH_BASE_CLI);

const probe = await probeSandbox();
if (probe.kind !== 'bwrap') {
  console.log(`no sandbox here: ${probe.reason}`);
  process.exit(0);
}

interface Round {
  ms: number;
  kinds: Map<string, number>;
}

/** The kind of one logged git argv: its subcommand (after `-c k=v` pairs and `-C dir`), `config --get-regexp` apart. */
function kindOf(argv: string[]): string {
  let i = 0;
  while (i < argv.length && (argv[i] === '-c' || argv[i] === '-C' || argv[i] === '--git-dir' || argv[i] === '--work-tree')) i += 2;
  const sub = argv[i] ?? '(none)';
  if (sub === 'config' && argv.includes('--get-regexp')) return 'config --get-regexp (driver names)';
  if (sub === 'worktree') return `worktree ${argv[i + 1] ?? ''}`.trim();
  return sub;
}

/** One `verdict run` of the workload with `cli`, its git processes logged; checked for losses. */
async function once(root: string, cli: string): Promise<Round> {
  const repo = makeRepo(path.join(root, 'repo'));
  const tasks = Array.from({ length: TASKS }, (_, i) => ({
    key: `t${i}`,
    engine: 'script',
    spec: SPEC ?? `echo ${i} > f.txt`,
    check: CHECK,
    network: false,
    verified: 'bench',
  }));
  const file = path.join(repo, 'git.swarm.json');
  fs.writeFileSync(file, JSON.stringify({ max_parallel: PARALLEL, tasks, worktrees: true }));
  fs.appendFileSync(path.join(repo, '.git', 'info', 'exclude'), 'git.swarm.json\n');
  const bin = path.join(root, 'bin');
  const log = path.join(root, 'git.log');
  fs.mkdirSync(bin);
  const real = (await run('bash', ['-c', 'command -v git'])).stdout.trim();
  // One record per git: its argv, each argument ended by NUL, then \x01 and a newline (a commit message has newlines).
  fs.writeFileSync(path.join(bin, 'git'), `#!/bin/sh\nprintf '%s\\0' "$@" >> '${log}.'$$\nprintf '\\1\\n' >> '${log}.'$$\nexec '${real}' "$@"\n`, {
    mode: 0o755,
  });
  const home = path.join(root, 'home');
  const t0 = performance.now();
  const child = spawn('node', [cli, 'run', file, '--home', home, '--no-dashboard', '--force'], {
    env: { ...process.env, HOME: path.join(root, 'user-home'), PATH: `${bin}:${process.env.PATH}` },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()).length > 64 * 1024 && (stderr = stderr.slice(-32 * 1024)));
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`verdict run exited ${code}: ${stderr.slice(-2000)}`);
  const rows = fs
    .readFileSync(path.join(home, 'runs.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { verdict: string });
  if (rows.length !== TASKS || rows.some((r) => r.verdict !== 'PASS')) throw new Error(`${rows.length} rows of ${TASKS}, not all PASS`);
  const kinds = new Map<string, number>();
  for (const f of fs.readdirSync(root).filter((n) => n.startsWith('git.log.'))) {
    for (const rec of fs.readFileSync(path.join(root, f), 'utf8').split('\x01\n').filter(Boolean)) {
      const k = kindOf(rec.split('\0').slice(0, -1));
      kinds.set(k, (kinds.get(k) ?? 0) + 1);
    }
  }
  return { ms, kinds };
}

async function inFreshFolder<T>(fn: (root: string) => Promise<T>): Promise<T> {
  const root = uncoveredDir('verdict-bench-git-');
  try {
    return await fn(root);
  } finally {
    if (!process.env.VERDICT_KEEP_TMP) await run('rm', ['-rf', root]);
    else console.log(`kept ${root}`);
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

const sides: Record<string, Round[]> = {};
const names = Object.keys(CLIS);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 ? [...names].reverse() : names;
  for (const name of order) (sides[name] ??= []).push(await inFreshFolder((root) => once(root, CLIS[name] as string)));
  console.log(`round ${round + 1}: ${names.map((n) => `${n} ${((sides[n]?.[round]?.ms ?? 0) / 1000).toFixed(2)} s`).join('; ')} (load ${load()})`);
}

console.log(
  `\n${TASKS} worktree tasks (${SPEC ?? 'echo <n> > f.txt'}, check ${CHECK}) at ${PARALLEL} lanes, ${ROUNDS} rounds; git processes per task (last round):`,
);
const kinds = [...new Set(names.flatMap((n) => [...(sides[n]?.at(-1)?.kinds.keys() ?? [])]))].sort();
const per = (n: string, k: string) => ((sides[n]?.at(-1)?.kinds.get(k) ?? 0) / TASKS).toFixed(2);
console.log(`  ${'kind'.padEnd(36)} ${names.map((n) => n.padStart(6)).join(' ')}`);
for (const k of kinds) console.log(`  ${k.padEnd(36)} ${names.map((n) => per(n, k).padStart(6)).join(' ')}`);
const total = (n: string) => [...(sides[n]?.at(-1)?.kinds.values() ?? [])].reduce((a, b) => a + b, 0) / TASKS;
console.log(`  ${'total'.padEnd(36)} ${names.map((n) => total(n).toFixed(2).padStart(6)).join(' ')}`);
for (const n of names)
  console.log(
    `wall ${n}: ${(sides[n] ?? []).map((r) => (r.ms / 1000).toFixed(2)).join(' / ')} s → median ${(median((sides[n] ?? []).map((r) => r.ms)) / 1000).toFixed(2)} s`,
  );
if (CLIS.base) {
  const ratios = (sides.this ?? []).map((r, i) => r.ms / (sides.base?.[i]?.ms ?? NaN));
  console.log(`paired ratio this/base per round: ${ratios.map((r) => r.toFixed(2)).join(' / ')} → median ${median(ratios).toFixed(2)}`);
}
