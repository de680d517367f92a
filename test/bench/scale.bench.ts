/**
 * Benchmark (not a test): a thousand tasks on one machine, against what the sandboxes themselves cost.
 *
 *   node esbuild.mjs && npm run bench:scale
 *   env: BENCH_TASKS=1000  BENCH_PARALLEL=64  BENCH_ROUNDS=3  BENCH_MODES=plain,worktree
 *        BENCH_BASE_CLI=/path/to/other/dist/cli.js (each mode also run with that build, right after this one, and
 *        compared round by round: the median of the paired ratios)
 *
 * Workload: BENCH_TASKS tasks of `sleep 1` (check `true`, `"network": false`) at BENCH_PARALLEL lanes, each a whole
 * `verdict run` of the built CLI (start-up included), in plain mode and in worktree mode (a one-commit repository).
 * Floor: the same number of worker and check sandboxes, each the bubblewrap argv Verdict builds for a step
 * (core/process/sandbox.ts bwrapCommand: the task folder and a scratch folder writable, VERDICT_HOME hidden, a network
 * namespace of its own), per task a shell script doing `mkdir`, the worker `sleep 1` and the check `true`, BENCH_PARALLEL
 * scripts at a time (xargs -P). Ideal: tasks ÷ lanes × 1 s. Rounds alternate the floor's place (first, then last);
 * medians are compared. With worktree mode among BENCH_MODES, a second floor, "floor + bwrap + git", adds per task the
 * least git a tool that gives each task a worktree and keeps its work must run: `git worktree add -b` of a branch of its
 * own before the worker (tried again on git's own registration race, as Verdict does), then `git add -A` and `git
 * commit` in the worktree (three git processes; no guard, no check of what the worker left). It is not the goal's
 * floor; it says how much of worktree mode's distance from the floor is git's own cost.
 * Reported: each side's wall time per round and its median as a ratio to the floor (goals: plain ≤ 1.3×, worktree
 * ≤ 1.5×); the orchestrator's peak RSS (VmHWM of its process, read from /proc every 200 ms; goal ≤ 250 MB); nothing
 * lost (BENCH_TASKS PASS rows; in worktree mode BENCH_TASKS task branches); and `verdict runs RUN` on the finished run
 * against `verdict --version` (start-up alone), both whole processes (goal: under 300 ms). Not covered here: the
 * dashboard's update latency with the run open (test/bench/dashboard.bench.ts measures the hub alone).
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { bwrapCommand, probeSandbox } from '../../extension/core/process/sandbox';
import { makeRepo } from '../helpers/fixtures';
import { uncoveredDir } from '../helpers/uncovered';

const run = promisify(execFile);
const TASKS = Number(process.env.BENCH_TASKS ?? 1000);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 64);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MODES = (process.env.BENCH_MODES ?? 'plain,worktree').split(',') as ('plain' | 'worktree')[];
const CLI = path.resolve('dist/cli.js');
const MB = 1024 * 1024;

const probe = await probeSandbox();
if (probe.kind !== 'bwrap') {
  console.log(`no sandbox here: ${probe.reason}`);
  process.exit(0);
}
const bwrap = probe.binary;

const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/**
 * The floor: per task its folders, then the worker's and the check's sandboxes as Verdict builds them, run from a
 * shell script of its own; the scripts run BENCH_PARALLEL at a time (xargs -P), as the spawn benchmark's floor does.
 * Writing the scripts is not timed. ms.
 */
async function floor(root: string, withGit = false): Promise<number> {
  const home = path.join(root, 'home');
  const repo = withGit ? makeRepo(path.join(root, 'repo')) : null;
  const scripts = path.join(root, 'floor');
  fs.mkdirSync(scripts, { recursive: true });
  const step = (task: string, scratch: string, script: string) => {
    const c = bwrapCommand({ binary: bwrap, writable: [task, scratch], network: false, hidden: [home] }, task, '/usr/bin/bash', ['-c', script], [], {
      TMPDIR: path.join(scratch, 'tmp'),
    });
    return [c.file, ...c.args].map(quote).join(' ');
  };
  for (let i = 0; i < TASKS; i++) {
    const task = path.join(root, 'w', `t${i}`);
    const [worker, check] = ['worker', 'check'].map((s) => path.join(home, 'scratch', `t${i}`, s));
    // bwrapCommand wants its folders to exist when it is called; the script makes them again, as a run does.
    for (const d of [task, `${worker}/tmp`, `${check}/tmp`, home]) fs.mkdirSync(d, { recursive: true });
    const mkdir = `mkdir -p ${[task, `${worker}/tmp`, `${check}/tmp`].map(quote).join(' ')}`;
    const sandboxes = `${step(task, worker as string, 'sleep 1')} && ${step(task, check as string, 'true')}`;
    if (!repo) {
      fs.writeFileSync(path.join(scripts, `t${i}.sh`), `${mkdir} && ${sandboxes}\n`);
      continue;
    }
    // The worktree goes where the task folder is (git wants it absent or empty); an add that meets another's
    // half-written registration dies and is tried again (up to 50 times, 10-60 ms apart); the last try's error is shown.
    const g = `git -C ${quote(repo)}`;
    const add = `for n in $(seq 50); do ${g} worktree add -q -b floor/t${i} ${quote(task)} HEAD 2>/tmp/floor-add.$$ && break; ${g} branch -q -D floor/t${i} 2>/dev/null; sleep 0.0$((RANDOM % 5 + 1)); done; cat /tmp/floor-add.$$ >&2; rm -f /tmp/floor-add.$$`;
    const seal = `git -C ${quote(task)} add -A && { git -C ${quote(task)} -c user.name=floor -c user.email=floor@localhost commit -q -m t${i} >/dev/null || true; }`;
    fs.writeFileSync(path.join(scripts, `t${i}.sh`), `${mkdir} && ${add} && test -e ${quote(`${task}/.git`)} && ${sandboxes} && ${seal}\n`);
  }
  const t0 = performance.now();
  await run('bash', ['-c', `ls | xargs -P ${PARALLEL} -n 1 bash`], { cwd: scripts, maxBuffer: 64 * MB });
  const ms = performance.now() - t0;
  if (repo) {
    const { stdout } = await run('git', ['-C', repo, 'for-each-ref', '--format=%(refname)', 'refs/heads/floor/']);
    const branches = stdout.trim().split('\n').filter(Boolean).length;
    if (branches !== TASKS) throw new Error(`floor + bwrap + git: ${branches} branches of ${TASKS}`);
  }
  return ms;
}

interface VerdictRound {
  ms: number;
  peakRssBytes: number;
  runsMs: number;
  versionMs: number;
}

/** The peak resident memory of `pid` so far (VmHWM), bytes; 0 once it has gone. */
function vmHwm(pid: number): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Wall time of one whole process, ms. */
async function timed(args: string[]): Promise<number> {
  const t0 = performance.now();
  await run('node', args, { maxBuffer: 64 * MB });
  return performance.now() - t0;
}

/** One `verdict run` of the workload in `mode`, checked for losses; then `verdict runs RUN` on it. */
async function verdict(root: string, mode: 'plain' | 'worktree', cli = CLI): Promise<VerdictRound> {
  const tasks = Array.from({ length: TASKS }, (_, i) => ({
    key: `t${i}`,
    engine: 'script',
    spec: 'sleep 1',
    check: 'true',
    network: false,
    verified: 'bench',
  }));
  const where = mode === 'worktree' ? makeRepo(path.join(root, 'repo')) : root;
  const file = path.join(where, 'scale.swarm.json');
  fs.writeFileSync(file, JSON.stringify({ max_parallel: PARALLEL, tasks, ...(mode === 'worktree' ? { worktrees: true } : { workdir: 'w' }) }));
  if (mode === 'worktree') fs.appendFileSync(path.join(where, '.git', 'info', 'exclude'), 'scale.swarm.json\n');
  const home = path.join(root, 'home');
  const t0 = performance.now();
  const child = spawn('node', [cli, 'run', file, '--home', home, '--no-dashboard', '--force'], {
    env: { ...process.env, HOME: path.join(root, 'user-home') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()).length > 64 * 1024 && (stderr = stderr.slice(-32 * 1024)));
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, vmHwm(child.pid as number))), 200);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearInterval(sampler);
  const ms = performance.now() - t0;
  if (code !== 0) {
    // The lint's 1,000 "check-cannot-fail" lines (the workload's `true`) are left out of what is shown.
    const said = stderr.split('\n').filter((l) => !l.includes('[check-cannot-fail]'));
    throw Object.assign(new Error(`${mode}: verdict run (${cli}) exited ${code}: ${said.join('\n').slice(-4000)}\n${notPassed(home)}\nkept: ${root}`), {
      keep: true,
    });
  }
  const rows = fs
    .readFileSync(path.join(home, 'runs.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { run_id: string; task_key: string; verdict: string });
  const passed = new Set(rows.filter((r) => r.verdict === 'PASS').map((r) => r.task_key));
  if (passed.size !== TASKS || rows.length !== TASKS) throw new Error(`${mode}: ${passed.size} tasks passed, ${rows.length} rows, of ${TASKS}`);
  if (mode === 'worktree') {
    const { stdout } = await run('git', ['-C', where, 'for-each-ref', '--format=%(refname)', 'refs/heads/verdict/']);
    const branches = stdout.trim().split('\n').filter(Boolean).length;
    if (branches !== TASKS) throw new Error(`worktree: ${branches} task branches of ${TASKS}`);
  }
  const runId = rows[0]?.run_id as string;
  const versionMs = await timed([cli, '--version']);
  const runsMs = await timed([cli, 'runs', runId, '--home', home]);
  return { ms, peakRssBytes: peak, runsMs, versionMs };
}

/** The rows of the run in `home` that are not PASS, a line each (verdict, task, reason), or why there are none to show. */
function notPassed(home: string): string {
  let text: string;
  try {
    text = fs.readFileSync(path.join(home, 'runs.jsonl'), 'utf8');
  } catch (e) {
    return `no rows: ${(e as Error).message}`;
  }
  const rows = text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { task_key: string; verdict: string; notes?: string });
  const bad = rows.filter((r) => r.verdict !== 'PASS');
  return `${rows.length} rows, ${bad.length} not PASS${bad.length ? ':\n' : ''}${bad
    .slice(0, 20)
    .map((r) => `  ${r.verdict} ${r.task_key}: ${(r.notes ?? '').slice(0, 300)}`)
    .join('\n')}`;
}

/** Runs `fn` in a new folder, removed after it unless `fn` failed with an error marked `keep` (left for a look). */
async function inFreshFolder<T>(fn: (root: string) => Promise<T>): Promise<T> {
  const root = uncoveredDir('verdict-bench-scale-');
  let keep = false;
  try {
    return await fn(root);
  } catch (e) {
    keep = Boolean((e as { keep?: boolean }).keep);
    throw e;
  } finally {
    if (!keep) await run('rm', ['-rf', root]);
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const secs = (ms: number) => (ms / 1000).toFixed(1);

const floors: number[] = [];
/** The floor with the least git of a worktree tool (floor(root, true)), when worktree mode is measured. */
const gitFloors: number[] = [];
const WITH_GIT = MODES.includes('worktree');
const measureFloors = async () => {
  floors.push(await inFreshFolder((root) => floor(root)));
  if (WITH_GIT) gitFloors.push(await inFreshFolder((root) => floor(root, true)));
};
const sides: Record<string, VerdictRound[]> = {};
const BASE = process.env.BENCH_BASE_CLI ? path.resolve(process.env.BENCH_BASE_CLI) : null;
for (let round = 0; round < ROUNDS; round++) {
  // The floor first in one round and last in the next, so that neither side always meets the same moment of the load.
  if (round % 2 === 0) await measureFloors();
  for (const mode of MODES) {
    // With a base build: this build first in one round and the base first in the next.
    if (BASE && round % 2 === 1) (sides[`${mode} base`] ??= []).push(await inFreshFolder((root) => verdict(root, mode, BASE)));
    (sides[mode] ??= []).push(await inFreshFolder((root) => verdict(root, mode)));
    if (BASE && round % 2 === 0) (sides[`${mode} base`] ??= []).push(await inFreshFolder((root) => verdict(root, mode, BASE)));
  }
  if (round % 2 === 1) await measureFloors();
  const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(
    `round ${round + 1}: floor + bwrap ${secs(floors[round] as number)} s; ${WITH_GIT ? `floor + bwrap + git ${secs(gitFloors[round] as number)} s; ` : ''}${Object.keys(
      sides,
    )
      .map((m) => `${m} ${secs(sides[m]?.[round]?.ms ?? 0)} s`)
      .join('; ')} (load ${load})`,
  );
}

const ideal = (TASKS / PARALLEL) * 1000;
const floorMs = median(floors);
console.log(
  `\n${TASKS} × sleep 1 at ${PARALLEL} lanes; ideal ${secs(ideal)} s; floor + bwrap (Verdict's own sandbox argv) median ${secs(floorMs)} s = ${(floorMs / ideal).toFixed(2)}× ideal`,
);
const gitFloorMs = WITH_GIT ? median(gitFloors) : NaN;
if (WITH_GIT) {
  console.log(
    `floor + bwrap + git (worktree add -b, add -A, commit per task) median ${secs(gitFloorMs)} s = ${(gitFloorMs / floorMs).toFixed(2)}× the floor + bwrap`,
  );
}
const GOAL: Record<string, number> = { plain: 1.3, worktree: 1.5, 'plain base': 1.3, 'worktree base': 1.5 };
for (const [mode, xs] of Object.entries(sides)) {
  const ms = median(xs.map((x) => x.ms));
  console.log(
    `  ${mode.padEnd(9)} ${xs.map((x) => secs(x.ms)).join(' / ')} s → median ${secs(ms)} s = ${(ms / floorMs).toFixed(2)}× the floor (goal ≤ ${GOAL[mode]}×); ` +
      (mode.startsWith('worktree') ? `${(ms / gitFloorMs).toFixed(2)}× the floor + bwrap + git; ` : '') +
      `peak RSS ${(Math.max(...xs.map((x) => x.peakRssBytes)) / MB).toFixed(0)} MB (goal ≤ 250); ` +
      `verdict runs RUN ${median(xs.map((x) => x.runsMs)).toFixed(0)} ms against --version ${median(xs.map((x) => x.versionMs)).toFixed(0)} ms (goal < 300 ms); nothing lost`,
  );
}
for (const mode of BASE ? MODES : []) {
  const ratios = (sides[mode] ?? []).map((x, i) => x.ms / (sides[`${mode} base`]?.[i]?.ms ?? NaN));
  console.log(`  ${mode}: this build / ${BASE} per round ${ratios.map((x) => x.toFixed(2)).join(' / ')} → median ${median(ratios).toFixed(2)}`);
}
