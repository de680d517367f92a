/**
 * Benchmark (not a test): one big swarm through the orchestrator — its peak memory and its wall time against the ideal.
 *
 *   npm run bench:many       (env: BENCH_TASKS=500 BENCH_PARALLEL=32)
 *
 * Workload: 500 tasks, max_parallel 32, plain mode, script engine with an instant worker (`echo ok > ok.txt`) and an
 * instant check. Checks: every task PASS, exactly 500 rows in runs.jsonl (one per attempt, each run_id/task_key
 * once), 500 tasks in state.json. Peak RSS: process.memoryUsage().rss sampled every 50 ms, and the kernel's VmHWM
 * (/proc/self/status) at the end; target ≤ 300 MB. Ideal wall time: TASKS / PARALLEL × the time of one worker spawn
 * plus one check spawn (bash, no orchestrator), measured in this script as the median of 20 pairs run 32 at a time.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { resolveEngines } from '../../engines';
import { runManifest } from '../../extension/core/run/runner';
import { tempDir } from '../helpers/fixtures';
import { parseManifest } from '../../extension/core/run/manifest';

const run = promisify(execFile);
const TASKS = Number(process.env.BENCH_TASKS ?? 500);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 32);
const MB = 1024 * 1024;

/** Median wall time of one worker spawn + one check spawn while PARALLEL such pairs run at once, ms. */
async function spawnPairMs(dir: string): Promise<number> {
  const times: number[] = [];
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        await run('bash', ['-c', 'echo ok > /dev/null'], { cwd: dir });
        await run('bash', ['-c', 'true'], { cwd: dir });
        times.push(performance.now() - t0);
      }
    }),
  );
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

function vmHwmBytes(): number | null {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) * 1024 : null;
}

const root = tempDir('verdict-bench-many-');
const pair = await spawnPairMs(root);
const tasks = Array.from({ length: TASKS }, (_, i) => ({ key: `t${i}`, engine: 'script', spec: 'echo ok > ok.txt', check: 'test -s ok.txt' }));
const file = path.join(root, 'many.swarm.json');
const { manifest } = parseManifest(JSON.stringify({ workdir: 'w', max_parallel: PARALLEL, tasks }), file);
if (!manifest) throw new Error('bench manifest invalid');
const home = path.join(root, 'home');

let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const t0 = performance.now();
const summary = await runManifest({ manifest, home, identity: 'bench', engines: resolveEngines() });
const wall = performance.now() - t0;
clearInterval(sampler);
peakRss = Math.max(peakRss, process.memoryUsage().rss);

const lines = fs.readFileSync(path.join(home, 'runs.jsonl'), 'utf8').trim().split('\n');
const ids = new Set(
  lines.map((l) => {
    const r = JSON.parse(l) as { run_id: string; task_key: string };
    return `${r.run_id}/${r.task_key}`;
  }),
);
const state = JSON.parse(fs.readFileSync(summary.stateFile, 'utf8')) as { status: string; tasks: { status: string }[] };
const passed = summary.tasks.filter((t) => t.verdict === 'PASS').length;
if (lines.length !== TASKS || ids.size !== TASKS || passed !== TASKS || state.tasks.length !== TASKS || state.status !== 'finished') {
  throw new Error(`incomplete: ${lines.length} rows, ${ids.size} distinct, ${passed} PASS, ${state.tasks.length} tasks in state (${state.status})`);
}
const ideal = (TASKS / PARALLEL) * pair;
const hwm = vmHwmBytes();
console.log(
  `tasks ${TASKS}, max_parallel ${PARALLEL}, plain mode, script engine: ${passed} PASS, ${lines.length} rows, ${state.tasks.length} tasks in state.json`,
);
console.log(
  `peak RSS (50 ms samples): ${(peakRss / MB).toFixed(0)} MB; VmHWM ${hwm === null ? 'n/a' : `${(hwm / MB).toFixed(0)} MB`}; target ≤ 300 MB → ${Math.max(peakRss, hwm ?? 0) <= 300 * MB ? 'met' : 'MISSED'}`,
);
console.log(
  `wall ${(wall / 1000).toFixed(1)} s; ideal ${TASKS}/${PARALLEL} × ${pair.toFixed(1)} ms (one worker + check spawn) = ${(ideal / 1000).toFixed(1)} s → ${(wall / ideal).toFixed(2)}× ideal`,
);
