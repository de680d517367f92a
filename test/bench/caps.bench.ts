/**
 * Benchmark (not a test): what the memory and output caps cost a step (core/process/memory-cap.ts, log-cap.ts): N
 * unsandboxed `true` steps through supervise() without caps, with a log cap, and with a memory cgroup (made, joined
 * through /bin/sh, read and removed), as the orchestrator's CPU (process.cpuUsage: user + system) and wall time per
 * step, and the ratios against no caps in the same run. Alternating rounds, the median round of each kept.
 *
 *   npm run bench:caps
 *   env: BENCH_STEPS=100 (per variant and round)  BENCH_ROUNDS=5
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { memoryCapMechanism } from '../../extension/core/process/memory-cap';
import { stopSpawnHelper } from '../../extension/core/process/spawner';
import { supervise } from '../../extension/core/process/supervisor';

const N = Number(process.env.BENCH_STEPS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-bench-caps-'));
const mech = memoryCapMechanism();
console.log(mech.line);

const variants: Record<string, { memoryMb?: number; logMaxBytes?: number }> = {
  'no caps': {},
  'log cap 64 MB': { logMaxBytes: 64 * 1024 * 1024 },
  ...(mech.kind !== 'none' ? { 'memory cap 4096 MB': { memoryMb: 4096 }, 'both caps': { memoryMb: 4096, logMaxBytes: 64 * 1024 * 1024 } } : {}),
};

async function round(caps: { memoryMb?: number; logMaxBytes?: number }): Promise<{ cpuMs: number; wallMs: number }> {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const { receipt } = await supervise({ file: 'true', args: [], cwd: dir, logFile: path.join(dir, 'step.log'), timeoutMs: 60_000, ...caps });
    if (receipt.exitCode !== 0) throw new Error(`a step failed: ${JSON.stringify(receipt)}`);
  }
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000 / N, wallMs: (performance.now() - t0) / N };
}

await round({});
const results = new Map<string, { cpuMs: number; wallMs: number }[]>();
for (let r = 0; r < ROUNDS; r++) for (const [name, caps] of Object.entries(variants)) results.set(name, [...(results.get(name) ?? []), await round(caps)]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const base = results.get('no caps')!;
const baseCpu = median(base.map((x) => x.cpuMs));
const baseWall = median(base.map((x) => x.wallMs));
for (const [name, xs] of results) {
  const cpu = median(xs.map((x) => x.cpuMs));
  const wall = median(xs.map((x) => x.wallMs));
  console.log(
    `${name.padEnd(20)} orchestrator CPU ${cpu.toFixed(2)} ms/step (×${(cpu / baseCpu).toFixed(2)})  wall ${wall.toFixed(2)} ms/step (×${(wall / baseWall).toFixed(2)})`,
  );
}
stopSpawnHelper();
fs.rmSync(dir, { recursive: true, force: true });
