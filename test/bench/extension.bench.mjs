// Benchmark (not a test): the extension's activation time and bundle size.
//   node test/bench/extension.bench.mjs [runs=5]
// Activation: time inside activate() (performance.now around the whole function, reported by the API as
// activationMs), median over fresh extension hosts — each run starts a new host through test/integration/run.mjs and
// runs only the activation test. Size: dist/extension.js in bytes. Targets: ≤ 50 ms, ≤ 1.5 MB.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const runs = Number(process.argv[2] ?? 5);
const samples = [];
for (let i = 0; i < runs; i++) {
  const file = path.join(os.tmpdir(), `verdict-activation-${process.pid}-${i}.txt`);
  const out = execFileSync('node', ['test/integration/run.mjs'], {
    encoding: 'utf8',
    env: { ...process.env, VERDICT_GREP: 'activates in a workspace', VERDICT_TRUSTED_ONLY: '1', VERDICT_ACTIVATION_FILE: file },
  });
  const m = (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '').match(/activationMs=([\d.]+)/);
  fs.rmSync(file, { force: true });
  if (!m) throw new Error(`no activationMs in ${file} after the run:\n${out}`);
  samples.push(Number(m[1]));
}
samples.sort((a, b) => a - b);
const median = samples[Math.floor(samples.length / 2)];
const size = fs.statSync('dist/extension.js').size;
console.log(
  `activation: ${samples.map((s) => s.toFixed(1)).join(', ')} ms → median ${median.toFixed(1)} ms (target ≤ 50 ms, ratio ${(median / 50).toFixed(2)} of budget)`,
);
console.log(`dist/extension.js: ${size} bytes = ${(size / 1024 / 1024).toFixed(2)} MiB (target ≤ 1.5 MB, ratio ${(size / 1.5e6).toFixed(2)} of budget)`);
