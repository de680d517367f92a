/**
 * Benchmark (not a test): the CLI's start-up, as ratios to `node -e 0` measured in the same script.
 *
 *   node esbuild.mjs && npm run bench:startup
 *   env: BENCH_ROUNDS=15  BENCH_BASELINE=/path/to/an/older/dist/cli.js (measured alternately, for a paired comparison)
 *
 * Each round runs, one after the other, `node -e 0`, `verdict --version` and `verdict lint` of a generated
 * 1,000-task manifest (and the baseline's of both), so a machine busy with other work slows every side of a round
 * alike; medians over the rounds are compared, of wall time and of CPU time (cpu-time.ts). Goals: `--version` ≤ 1.5× `node -e 0`; `lint` ≤ 300 ms whole-process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median, timeNode, type ProcessTimes } from './cpu-time';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const TASKS = 1000;

/** A 1,000-task manifest with what real tasks carry (spec, check, expect_files, verified), every lint rule applying. */
function manifest(dir: string): string {
  const tasks = Array.from({ length: TASKS }, (_, i) => ({
    key: `task-${i}`,
    spec: `Write out/${i}.txt containing the number ${i}, nothing else.`,
    check: `test "$(cat out/${i}.txt)" = ${i}`,
    expect_files: [`out/${i}.txt`],
    verified: `out/${i}.txt holds ${i}`,
    engine: 'script',
  }));
  const file = path.join(dir, 'big.swarm.json');
  fs.writeFileSync(file, JSON.stringify({ run_name: 'lint-bench', workdir: path.join(dir, 'work'), max_parallel: 8, tasks }, null, 2));
  return file;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-startup-bench-'));
const big = manifest(dir);
const cli = path.resolve('dist/cli.js');
const sides: Record<string, string[]> = {
  'node -e 0': ['-e', '0'],
  'verdict --version': [cli, '--version'],
  [`verdict lint (${TASKS} tasks)`]: [cli, 'lint', big],
};
if (process.env.BENCH_BASELINE) {
  const base = path.resolve(process.env.BENCH_BASELINE);
  sides['baseline --version'] = [base, '--version'];
  sides[`baseline lint (${TASKS} tasks)`] = [base, 'lint', big];
}

const times: Record<string, ProcessTimes[]> = {};
const loadBefore = os.loadavg()[0] as number;
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, args] of Object.entries(sides)) (times[name] ??= []).push(timeNode(args));
}
fs.rmSync(dir, { recursive: true, force: true });

const floor = median((times['node -e 0'] ?? []).map((x) => x.wallMs));
const floorCpu = median((times['node -e 0'] ?? []).map((x) => x.cpuMs));
console.log(
  `${ROUNDS} paired rounds on ${os.cpus().length} cores, load average ${loadBefore.toFixed(1)} before, ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} after`,
);
for (const [name, runs] of Object.entries(times)) {
  const goal = name.includes('--version') ? 'goal ≤ 1.5×' : name.includes('lint') ? 'goal ≤ 300 ms' : 'the floor';
  const wall = median(runs.map((x) => x.wallMs));
  const cpu = median(runs.map((x) => x.cpuMs));
  console.log(
    `${name.padEnd(28)} median ${wall.toFixed(0).padStart(5)} ms wall = ${(wall / floor).toFixed(2)}× node -e 0, ${cpu.toFixed(0).padStart(4)} ms CPU = ${(cpu / floorCpu).toFixed(2)}× (${goal})`,
  );
}
