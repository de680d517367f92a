/**
 * Benchmark (not a test): what a step's own network with outbound access costs (slirp4netns, started by the spawn
 * helper on the step's network namespace before the step runs) against the floor of a network namespace with only a
 * loopback (`"network": false`, bwrap `--unshare-net`) and against the host's network (`"network": "host"`), as ms per
 * sandboxed `true` and ratios in the same run.
 *
 *   npm run bench:netstack
 *   env: BENCH_STEPS=40 (per variant and round)  BENCH_ROUNDS=3
 *
 * Each variant runs its steps one after another through supervise() (the spawn helper, bwrap, and slirp4netns for
 * `netns`), rounds interleaved. Two numbers: wall time per step (start to exit reported: what a step waits), and the
 * CPU of the spawn helper and every process it reaped (bwrap, the sandbox's init and command, slirp4netns) from
 * /proc/<helper>/stat (utime + stime + cutime + cstime), which leaves out the orchestrator's own work (the same for
 * every variant) and the kernel threads' cleanup of each namespace (machine-wide).
 */
import fs from 'node:fs';
import path from 'node:path';
import { probeNetstack, probeSandbox, type BwrapPlan } from '../../extension/core/process/sandbox';
import { spawnHelperInfo, spawnHelperPid, stopSpawnHelper } from '../../extension/core/process/spawner';
import { supervise } from '../../extension/core/process/supervisor';
import { uncoveredDir } from '../helpers/uncovered';

const N = Number(process.env.BENCH_STEPS ?? 40);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const probe = await probeSandbox();
const stack = await probeNetstack();
if (probe.kind !== 'bwrap' || stack.kind !== 'slirp4netns') {
  console.log(`cannot measure here: ${probe.kind === 'none' ? probe.reason : stack.kind === 'none' ? stack.reason : ''}`);
  process.exit(0);
}

const dir = uncoveredDir('verdict-bench-netstack-');
const TICK_MS = 10; // USER_HZ is 100 on Linux: /proc times are in hundredths of a second

/** The spawn helper's CPU and its reaped children's, ms. */
function helperCpuMs(): number {
  const pid = spawnHelperPid();
  if (!pid) throw new Error('no spawn helper');
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  // utime, stime, cutime, cstime are fields 14-17 (1-based): 11-14 after the command.
  return ((f[11] ?? 0) + (f[12] ?? 0) + (f[13] ?? 0) + (f[14] ?? 0)) * TICK_MS;
}

const variants: Record<string, Pick<BwrapPlan, 'network' | 'netstack'>> = {
  loopback: { network: false },
  netns: { network: true, netstack: stack.binary },
  host: { network: 'host' },
};

async function runSteps(plan: Pick<BwrapPlan, 'network' | 'netstack'>): Promise<{ wallMs: number; cpuMs: number }> {
  const cpu0 = helperCpuMs();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const r = await supervise({
      file: '/usr/bin/true',
      args: [],
      cwd: dir,
      env: {},
      logFile: path.join(dir, 'log'),
      timeoutMs: 30_000,
      sandbox: { binary: probe.kind === 'bwrap' ? probe.binary : '', writable: [dir], ...plan },
    });
    if (r.receipt.exitCode !== 0) throw new Error(`a step failed: ${JSON.stringify(r.receipt)} ${fs.readFileSync(path.join(dir, 'log'), 'utf8')}`);
  }
  return { wallMs: (performance.now() - t0) / N, cpuMs: (helperCpuMs() - cpu0) / N };
}

await spawnHelperInfo();
// Warm-up: the helper started, caches filled.
await runSteps(variants.loopback as BwrapPlan);
await runSteps(variants.netns as BwrapPlan);
const results: Record<string, { wall: number[]; cpu: number[] }> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, plan] of Object.entries(variants)) {
    const r = await runSteps(plan);
    (results[name] ??= { wall: [], cpu: [] }).wall.push(r.wallMs);
    results[name].cpu.push(r.cpuMs);
  }
}
stopSpawnHelper();
fs.rmSync(dir, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`sandboxed \`true\`, ${N} steps x ${ROUNDS} rounds per variant (median of rounds), slirp4netns ${stack.version}`);
const floor = results.loopback as { wall: number[]; cpu: number[] };
for (const [name, r] of Object.entries(results)) {
  console.log(
    `  ${name.padEnd(9)} wall ${median(r.wall).toFixed(1).padStart(6)} ms/step (x${(median(r.wall) / median(floor.wall)).toFixed(2)})   cpu ${median(r.cpu).toFixed(1).padStart(6)} ms/step (x${(median(r.cpu) / median(floor.cpu)).toFixed(2)})`,
  );
}
