/**
 * Benchmark (not a test): the CLI's start-up (issue 15 item 4), as a ratio to `node -e 0` measured in the same script.
 *
 *   node esbuild.mjs && npm run bench:startup
 *   env: BENCH_ROUNDS=15  BENCH_BASELINE=/path/to/an/older/dist/cli.js (measured alternately, for a paired comparison)
 *
 * Each round runs, one after the other, `node -e 0`, `node dist/cli.js --version` (and the baseline's); medians are
 * compared. Goal: ≤ 1.5× `node -e 0`.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const sides: Record<string, string[]> = { 'node -e 0': ['-e', '0'], 'verdict --version': [path.resolve('dist/cli.js'), '--version'] };
if (process.env.BENCH_BASELINE) sides['baseline --version'] = [path.resolve(process.env.BENCH_BASELINE), '--version'];

const times: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, args] of Object.entries(sides)) {
    const t0 = performance.now();
    execFileSync(process.execPath, args, { stdio: 'ignore' });
    (times[name] ??= []).push(performance.now() - t0);
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const floor = median(times['node -e 0'] ?? []);
for (const [name, xs] of Object.entries(times)) {
  console.log(`${name.padEnd(20)} median ${median(xs).toFixed(0)} ms = ${(median(xs) / floor).toFixed(2)}× node -e 0 (goal ≤ 1.5×)`);
}
