/**
 * Benchmark (not a test): what spawning costs a whole `verdict run`, as ratios to a floor measured in
 * the same script, with and without the sandbox.
 *
 *   node esbuild.mjs && TMPDIR=/dev/shm npm run bench:spawn
 *   env: BENCH_ROUNDS=3  BENCH_BASELINE=/path/to/an/older/dist/cli.js (measured alternately, for a paired comparison)
 *
 * Workloads, each timed as a whole process (`node dist/cli.js run … --no-dashboard`, start-up included):
 * - plain: 100 instant tasks (`echo ok > out.txt`, check `test -s out.txt`), plain dirs, max_parallel 8. Floor: a bash
 *   script doing only the unavoidable work, 8 lanes (xargs -P 8): per task `mkdir`, the worker and the check, each a
 *   `bash -c`. Goal: ≤ 3× the floor.
 * - sleep: 200 × `sleep 1`, check `true`, plain dirs, max_parallel 50. Ideal: 200 / 50 × 1 s = 4 s. Goal: ≤ 1.15×. The
 *   bash floor is timed too (50 lanes): what starting 400 processes costs on this machine, which the ideal leaves out.
 * Both workloads also time `floor + bwrap` (BENCH_SANDBOX_FLOOR=0 leaves it out): the bash floor with the worker and the
 * check each in a bubblewrap sandbox, so the sandboxed run's ratio can be read against the sandbox's own cost too.
 * Rounds alternate the sides (floor, verdict, verdict --no-sandbox, and the baseline CLI's two when given); the median
 * of each side is compared. The machine is shared: read the spread (every round is printed), not one figure.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../helpers/fixtures';

const run = promisify(execFile);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLI = path.resolve('dist/cli.js');
/** The bash floor again with each worker and check in a bubblewrap sandbox (where bwrap is installed). */
const SANDBOX_FLOOR = process.env.BENCH_SANDBOX_FLOOR !== '0' && fs.existsSync('/usr/bin/bwrap');
const BASELINE = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE) : null;

interface Workload {
  name: string;
  tasks: number;
  parallel: number;
  spec: string;
  check: string;
  /** The ideal whole-run time when it is known without measuring (sleep), ms; else the floor is measured. */
  idealMs: number | null;
  goal: number;
}

const WORKLOADS: Workload[] = [
  { name: 'plain', tasks: 100, parallel: 8, spec: 'echo ok > out.txt', check: 'test -s out.txt', idealMs: null, goal: 3 },
  { name: 'sleep', tasks: 200, parallel: 50, spec: 'sleep 1', check: 'true', idealMs: (200 / 50) * 1000, goal: 1.15 },
];

/**
 * The bash floor: per task `mkdir`, the worker and the check, 8 (or `parallel`) lanes. With `sandboxed`, the worker and
 * the check each run in a bubblewrap sandbox with the flags every Verdict step has (user and PID namespaces, no
 * capability, / read-only, fresh /dev and /proc, an empty /tmp, the task dir writable): the floor of a sandboxed run, to
 * tell the sandbox's own cost from Verdict's.
 */
async function floor(w: Workload, root: string, sandboxed = false): Promise<number> {
  const box = sandboxed
    ? 'bwrap --die-with-parent --unshare-user --unshare-pid --cap-drop ALL --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind "$1" "$1" --remount-ro /tmp --chdir "$1" -- '
    : '';
  const script = `work() { mkdir -p "$1" && cd "$1" && ${box}bash -c '${w.spec}' && ${box}bash -c '${w.check}'; }; export -f work; seq 1 ${w.tasks} | xargs -P ${w.parallel} -I{} bash -c 'work ${root}/w/t{}'`;
  const t0 = performance.now();
  await run('bash', ['-c', script]);
  return performance.now() - t0;
}

async function verdict(w: Workload, root: string, cli: string, sandbox: boolean): Promise<number> {
  const tasks = Array.from({ length: w.tasks }, (_, i) => ({ key: `t${i}`, engine: 'script', spec: w.spec, check: w.check, verified: 'bench' }));
  const file = path.join(root, 'bench.swarm.json');
  fs.writeFileSync(file, JSON.stringify({ workdir: 'w', max_parallel: w.parallel, tasks }));
  const home = path.join(root, 'home');
  const t0 = performance.now();
  await run('node', [cli, 'run', file, '--home', home, '--no-dashboard', '--force', ...(sandbox ? [] : ['--no-sandbox'])], {
    env: { ...process.env, HOME: path.join(root, 'user-home') },
    maxBuffer: 64 * 1024 * 1024,
  });
  const ms = performance.now() - t0;
  const rows = fs
    .readFileSync(path.join(home, 'runs.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .filter((l) => JSON.parse(l).verdict === 'PASS').length;
  if (rows !== w.tasks) throw new Error(`${w.name}: ${rows} PASS rows of ${w.tasks}`);
  return ms;
}

async function measure(fn: (root: string) => Promise<number>): Promise<number> {
  const root = tempDir('verdict-bench-spawn-');
  try {
    return await fn(root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

for (const w of WORKLOADS) {
  const sides: Record<string, number[]> = {};
  const add = (name: string, ms: number) => (sides[name] ??= []).push(ms);
  for (let round = 0; round < ROUNDS; round++) {
    add('floor', await measure((root) => floor(w, root)));
    if (SANDBOX_FLOOR) add('floor + bwrap', await measure((root) => floor(w, root, true)));
    add('verdict', await measure((root) => verdict(w, root, CLI, true)));
    add('verdict --no-sandbox', await measure((root) => verdict(w, root, CLI, false)));
    if (BASELINE) {
      add('baseline', await measure((root) => verdict(w, root, BASELINE, true)));
      add('baseline --no-sandbox', await measure((root) => verdict(w, root, BASELINE, false)));
    }
  }
  const reference = w.idealMs ?? median(sides.floor ?? []);
  console.log(
    `\n${w.name}: ${w.tasks} tasks, max_parallel ${w.parallel}, ${w.idealMs === null ? `floor (bash, ${w.parallel} lanes)` : 'ideal'} ${(reference / 1000).toFixed(2)} s`,
  );
  for (const [name, xs] of Object.entries(sides)) {
    console.log(
      `  ${name.padEnd(22)} ${xs.map((x) => (x / 1000).toFixed(2)).join(' / ')} s → median ${(median(xs) / 1000).toFixed(2)} s = ${(median(xs) / reference).toFixed(2)}× (goal ≤ ${w.goal}×)`,
    );
  }
  const boxedFloor = sides['floor + bwrap'];
  if (boxedFloor && sides.verdict) console.log(`  verdict (sandboxed) = ${(median(sides.verdict) / median(boxedFloor)).toFixed(2)}× the sandboxed floor`);
  if (w.idealMs !== null && sides.floor && sides['verdict --no-sandbox'])
    console.log(`  verdict --no-sandbox = ${(median(sides['verdict --no-sandbox']) / median(sides.floor)).toFixed(2)}× the bash floor`);
}
