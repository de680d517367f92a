/**
 * Benchmark (not a test): what relaying a step's output costs the spawn helper (SpawnRequest.relay: readers' and workers' socket,
 * docs/containment.md "Readers"; checks' and setup's pipe, "Output"), for each helper (perl, node), against the same step
 * writing the log file itself.
 *
 *   TMPDIR=/dev/shm npm run bench:relay
 *   env: BENCH_ROUNDS=3
 *
 * Workloads, each one step started through spawner.ts (unsandboxed, dieWithHelper, as a sandboxed step's output is
 * relayed the same way; the sandbox adds nothing per byte):
 * - lines: 20,000 lines of 200 bytes, each its own write() (perl with autoflush: an engine printing JSON events);
 * - bulk: 64 MiB in 64 KiB writes (`head -c`: a test run's output);
 * - quiet: `/bin/true` × 200 (what relay adds to a spawn that prints nothing: the socket pair and its end).
 * Printed: the helper's CPU (its threads' schedstat) per step, ms, and the step's wall time, median of the rounds;
 * the three routes alternate within a round, in reverse order every other round.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnHelperInfo, spawnHelperPid, spawnViaHelper, stopSpawnHelper, type SpawnRequest } from '../../extension/core/process/spawner';
import { tempDir } from '../helpers/fixtures';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** CPU time of every thread of `pid` so far, ms (schedstat: ns on a CPU). */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  return ns / 1e6;
}

type Workload = 'lines' | 'bulk' | 'quiet';
const STEPS: Record<Workload, number> = { lines: 3, bulk: 3, quiet: 200 };

/** How the step's output reaches the log: the file itself, the socket relay (readers, workers) or the pipe relay (checks, setup). */
type Route = 'file' | 'socket' | 'pipe';

function request(w: Workload, dir: string, route: Route): SpawnRequest {
  const env = { PATH: process.env.PATH ?? '' };
  const log = path.join(dir, `log-${w}-${route}`);
  const base = { cwd: dir, env, log, dieWithHelper: true, ...(route === 'socket' ? { relay: true } : route === 'pipe' ? { relay: 'pipe' as const } : {}) };
  if (w === 'lines') return { ...base, file: 'perl', args: ['-e', '$| = 1; my $l = ("x" x 199) . "\\n"; print $l for 1 .. 20000'] };
  if (w === 'bulk') return { ...base, file: '/bin/sh', args: ['-c', 'head -c 67108864 /dev/zero'] };
  return { ...base, file: '/bin/true', args: [] };
}

async function round(kind: 'perl' | 'node', w: Workload, route: Route, dir: string): Promise<{ cpu: number; wall: number }> {
  const pid = spawnHelperPid() as number;
  const before = cpuMs(pid);
  const t0 = performance.now();
  for (let i = 0; i < STEPS[w]; i++) {
    const s = await spawnViaHelper(request(w, dir, route));
    const exit = await s.exited;
    if (exit.code !== 0) throw new Error(`${kind} ${w} ${route}: exit ${exit.code ?? exit.signal}`);
  }
  const wall = (performance.now() - t0) / STEPS[w];
  const cpu = (cpuMs(pid) - before) / STEPS[w];
  for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f));
  return { cpu, wall };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const saved = process.env.VERDICT_SPAWN_HELPER;
const dir = tempDir('verdict-bench-relay-');
const seen: Record<string, { cpu: number[]; wall: number[] }> = {};
for (let r = 0; r < ROUNDS; r++) {
  for (const kind of ['perl', 'node'] as const) {
    process.env.VERDICT_SPAWN_HELPER = kind;
    stopSpawnHelper();
    const info = await spawnHelperInfo();
    if (info?.kind !== kind) throw new Error(`asked for the ${kind} helper, got ${info?.kind ?? 'none'}`);
    for (const w of ['lines', 'bulk', 'quiet'] as const) {
      for (const route of r % 2 ? (['pipe', 'socket', 'file'] as const) : (['file', 'socket', 'pipe'] as const)) {
        const got = await round(kind, w, route, dir);
        const key = `${kind} ${w} ${route.padEnd(6)}`;
        seen[key] ??= { cpu: [], wall: [] };
        seen[key].cpu.push(got.cpu);
        seen[key].wall.push(got.wall);
      }
    }
  }
}
stopSpawnHelper();
if (saved === undefined) delete process.env.VERDICT_SPAWN_HELPER;
else process.env.VERDICT_SPAWN_HELPER = saved;
fs.rmSync(dir, { recursive: true, force: true });
console.log(
  `\nspawn helper CPU and step wall time per step (ms, median of ${ROUNDS} rounds): lines = 20,000 writes of 200 B, bulk = 64 MiB, quiet = /bin/true`,
);
for (const [key, v] of Object.entries(seen))
  console.log(
    `  ${key.padEnd(20)} helper CPU ${median(v.cpu).toFixed(3).padStart(9)}   wall ${median(v.wall).toFixed(1).padStart(8)}   (CPU ${v.cpu.map((x) => x.toFixed(2)).join(' / ')})`,
  );
