/**
 * Benchmark (not a test): the orchestrator main thread's CPU per attempt, the cost that becomes every attempt's latency
 * when many attempts end at once.
 *
 *   node esbuild.mjs && node --import=tsx test/bench/orchestrator-cpu.bench.ts
 *   env: BENCH_SMALL=100 BENCH_LARGE=300 BENCH_ROUNDS=3 BENCH_PARALLEL=8 BENCH_BASE_CLI=/path/to/other/dist/cli.js
 *        BENCH_TREE=worktree (worktree mode instead of plain dirs)
 *
 * Workload: `verdict run` (the built dist/cli.js, a process of its own) of instant plain tasks (`echo ok > out.txt`,
 * check `test -s out.txt`), max_parallel 8, sandboxed and unsandboxed, on tmpfs when /dev/shm exists (disk writeback
 * is no CPU of ours). Measured: the CPU time of the orchestrator's main thread alone (main-thread-cpu.cjs; the spawn
 * helper, the workers and libuv's threads excluded), for BENCH_SMALL and BENCH_LARGE tasks; per attempt =
 * (median large − median small) / (large − small), so start-up cancels out. A cost that grows with the run's size
 * (a state file rewritten whole at every attempt) shows as a per-attempt figure above the small run's average.
 * With BENCH_BASE_CLI, the same runs of that build (e.g. main's, copied aside) alternate with this one's, and the
 * ratio of the two is printed. Target: ≤ 2 ms per attempt.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median } from './cpu-time';

const here = import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname);
const PRELOAD = path.join(here, 'main-thread-cpu.cjs');
const CLI = path.resolve(here, '../../dist/cli.js');
const BASE = process.env.BENCH_BASE_CLI ? path.resolve(process.env.BENCH_BASE_CLI) : null;
const SMALL = Number(process.env.BENCH_SMALL ?? 100);
const LARGE = Number(process.env.BENCH_LARGE ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 8);
const TMP = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
/** `worktree`: the tasks run in worktree mode (a 50-file repository made per run, a commit sealed per attempt). */
const WORKTREES = process.env.BENCH_TREE === 'worktree';

/** One `verdict run` of `n` instant tasks; returns the main thread's and the whole process's CPU, ms. */
function runOnce(cli: string, n: number, sandbox: boolean): { main: number; proc: number } {
  const dir = fs.mkdtempSync(path.join(TMP, 'verdict-bench-orch-'));
  try {
    const tasks = Array.from({ length: n }, (_, i) => ({
      key: `t${i}`,
      engine: 'script',
      spec: 'echo ok > out.txt',
      check: 'test -s out.txt',
      verified: 'bench',
    }));
    const where = WORKTREES ? { worktrees: true, repo: makeRepo(path.join(dir, 'repo')) } : { workdir: 'w' };
    fs.writeFileSync(path.join(dir, 'b.swarm.json'), JSON.stringify({ run_name: 'bench', ...where, max_parallel: PARALLEL, tasks }));
    const cpuFile = path.join(dir, 'cpu');
    execFileSync(process.execPath, ['-r', PRELOAD, cli, 'run', 'b.swarm.json', '--home', 'H', '--no-dashboard', ...(sandbox ? [] : ['--no-sandbox'])], {
      cwd: dir,
      stdio: 'ignore',
      env: { ...process.env, BENCH_CPU_FILE: cpuFile },
    });
    const rows = fs
      .readFileSync(path.join(dir, 'H', 'runs.jsonl'), 'utf8')
      .trim()
      .split('\n').length;
    if (rows !== n) throw new Error(`bench run incomplete: ${rows} rows of ${n}`);
    const [main, proc] = fs.readFileSync(cpuFile, 'utf8').trim().split(' ').map(Number) as [number, number];
    return { main, proc };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A repository of 50 small files in one commit; returns its path. */
function makeRepo(repo: string): string {
  fs.mkdirSync(repo);
  for (let i = 0; i < 50; i++) fs.writeFileSync(path.join(repo, `f${i}.txt`), `${i}\n`);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', ...args], { cwd: repo, stdio: 'ignore' });
  git('init', '-q');
  git('add', '.');
  git('commit', '-qm', 'base');
  return repo;
}

const clis = BASE
  ? ([
      ['this', CLI],
      ['base', BASE],
    ] as const)
  : ([['this', CLI]] as const);
const results = new Map<string, { main: number[]; proc: number[] }>();
const add = (key: string, r: { main: number; proc: number }) => {
  const acc = results.get(key) ?? { main: [], proc: [] };
  acc.main.push(r.main);
  acc.proc.push(r.proc);
  results.set(key, acc);
};
for (let round = 0; round < ROUNDS; round++) {
  for (const sandbox of [false, true]) {
    for (const [name, cli] of clis) {
      for (const n of [SMALL, LARGE]) add(`${name} ${sandbox ? 'sandboxed' : 'unsandboxed'} ${n}`, runOnce(cli, n, sandbox));
    }
  }
}
console.log(
  `instant tasks (${WORKTREES ? 'worktree mode' : 'plain dirs'}), max_parallel ${PARALLEL}, ${ROUNDS} rounds, medians; CPU of the orchestrator's main thread (whole process in brackets), ms`,
);
const perAttempt = new Map<string, number>();
for (const sandbox of ['unsandboxed', 'sandboxed']) {
  for (const [name] of clis) {
    const s = results.get(`${name} ${sandbox} ${SMALL}`)!;
    const l = results.get(`${name} ${sandbox} ${LARGE}`)!;
    const per = (median(l.main) - median(s.main)) / (LARGE - SMALL);
    perAttempt.set(`${name} ${sandbox}`, per);
    console.log(
      `${name.padEnd(4)} ${sandbox.padEnd(11)}: ${SMALL} tasks ${median(s.main)} (${median(s.proc)}), ${LARGE} tasks ${median(l.main)} (${median(l.proc)}) → ${per.toFixed(2)} ms per attempt (target ≤ 2), ${((median(l.proc) - median(s.proc)) / (LARGE - SMALL)).toFixed(2)} ms whole process`,
    );
  }
  if (BASE) console.log(`  ${sandbox}: this / base = ${(perAttempt.get(`this ${sandbox}`)! / perAttempt.get(`base ${sandbox}`)!).toFixed(2)}×`);
}
