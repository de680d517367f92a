/**
 * Benchmark (not a test): the CLI's start-up (issue 15 item 4), as ratios to `node -e 0` measured in the same script.
 *
 *   node esbuild.mjs && npm run bench:startup
 *   env: BENCH_ROUNDS=15  BENCH_BASELINE=/path/to/an/older/dist/cli.js (measured alternately, for a paired comparison)
 *
 * Each round runs, one after the other, `node -e 0`, `verdict --version` and `verdict lint` of a generated
 * 1,000-task manifest (and the baseline's of both), so a machine busy with other work slows every side of a round
 * alike; medians over the rounds are compared. Goals: `--version` ≤ 1.5× `node -e 0`; `lint` ≤ 300 ms whole-process.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

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

const times: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, args] of Object.entries(sides)) {
    const t0 = performance.now();
    execFileSync(process.execPath, args, { stdio: 'ignore' });
    (times[name] ??= []).push(performance.now() - t0);
  }
}
fs.rmSync(dir, { recursive: true, force: true });

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const floor = median(times['node -e 0'] ?? []);
console.log(`${ROUNDS} paired rounds on ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
for (const [name, xs] of Object.entries(times)) {
  const goal = name.includes('--version') ? 'goal ≤ 1.5×' : name.includes('lint') ? 'goal ≤ 300 ms' : 'the floor';
  console.log(`${name.padEnd(28)} median ${median(xs).toFixed(0).padStart(5)} ms = ${(median(xs) / floor).toFixed(2)}× node -e 0 (${goal})`);
}
