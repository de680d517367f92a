/**
 * Benchmark (not a test): the orchestrator's overhead per task, as a ratio to the floor measured in the same script.
 *
 *   npm run bench            (env: BENCH_TASKS=100 BENCH_FILES=1000 BENCH_PARALLEL=8 BENCH_ROUNDS=3)
 *   TMPDIR=/dev/shm npm run bench   (on tmpfs: disk writeback no longer swamps both sides; the stable figure)
 *
 * Workload: 100 tasks with an instant worker (script engine, `true`), worktree mode, a generated repository of 1,000
 * files, max_parallel 8. Floor: the same work done directly — per task `git worktree add -b` (serialized per
 * repository, as git requires), a worker spawn and a check spawn, 8 at a time — with no records, state or commits.
 * Each side runs BENCH_ROUNDS times (default 3), alternating, on fresh repositories deleted after each round; the best
 * of each is compared. Target: ≤ 1.3×. A third side runs Verdict with `sandbox: 'off'`: the ratio of the sandboxed run
 * (the default: setup, worker and check each in bubblewrap) to it is the per-task cost of the sandbox.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { resolveEngines } from '../../engines';
import { runManifest } from '../../extension/core/run/runner';
import type { SandboxMode } from '../../extension/core/process/sandbox';
import { git, makeRepo, tempDir } from '../helpers/fixtures';
import { parseManifest } from '../../extension/core/run/manifest';

const run = promisify(execFile);
const TASKS = Number(process.env.BENCH_TASKS ?? 100);
const FILES = Number(process.env.BENCH_FILES ?? 1000);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 8);

function generatedRepo(dir: string): string {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`src/m${Math.floor(i / 50)}/f${i}.ts`] = `export const v${i} = ${i};\n`;
  return makeRepo(dir, files);
}

async function pool<T>(items: T[], limit: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

async function floor(root: string): Promise<number> {
  const repo = generatedRepo(path.join(root, 'repo'));
  let lock = Promise.resolve();
  const keys = Array.from({ length: TASKS }, (_, i) => `t${i}`);
  const t0 = performance.now();
  await pool(keys, PARALLEL, async (key) => {
    const dir = path.join(root, 'wt', key);
    const add = lock.then(() => run('git', ['worktree', 'add', '--quiet', '-b', `floor/${key}`, dir, 'HEAD'], { cwd: repo }));
    lock = add.then(
      () => undefined,
      () => undefined,
    );
    await add;
    await run('bash', ['-c', 'true'], { cwd: dir });
    await run('bash', ['-c', 'true'], { cwd: dir });
  });
  return performance.now() - t0;
}

/** Mean duration per step (ms) over every receipt of the run in `home`. */
function stepMeans(home: string): Record<string, number> {
  const sums = new Map<string, { ms: number; n: number }>();
  for (const rel of fs.readdirSync(path.join(home, 'runs'), { recursive: true }) as string[]) {
    if (path.basename(rel) !== 'receipt.json') continue;
    const { steps } = JSON.parse(fs.readFileSync(path.join(home, 'runs', rel), 'utf8')) as { steps: { step: string; startedAt: number; endedAt: number }[] };
    for (const s of steps) {
      const acc = sums.get(s.step) ?? { ms: 0, n: 0 };
      acc.ms += s.endedAt - s.startedAt;
      acc.n++;
      sums.set(s.step, acc);
    }
  }
  return Object.fromEntries([...sums].map(([k, v]) => [k, Math.round(v.ms / v.n)]));
}

const stepsOf = new Map<number, Record<string, number>>();

async function verdict(root: string, sandbox: SandboxMode = 'auto'): Promise<number> {
  const repo = generatedRepo(path.join(root, 'repo'));
  const tasks = Array.from({ length: TASKS }, (_, i) => ({ key: `t${i}`, engine: 'script', spec: 'true', check: 'true' }));
  const file = path.join(repo, 'bench.swarm.json');
  const text = JSON.stringify({ worktrees: true, max_parallel: PARALLEL, tasks });
  const { manifest } = parseManifest(text, file);
  if (!manifest) throw new Error('bench manifest invalid');
  const t0 = performance.now();
  const summary = await runManifest({ manifest, home: path.join(root, 'home'), identity: 'bench', engines: resolveEngines(), sandbox });
  const ms = performance.now() - t0;
  const rows = fs
    .readFileSync(path.join(root, 'home', 'runs.jsonl'), 'utf8')
    .trim()
    .split('\n').length;
  if (!summary.allPassed || rows !== TASKS) throw new Error(`bench run incomplete: ${rows} rows, allPassed=${summary.allPassed}`);
  if (git(repo, 'worktree', 'list').split('\n').length !== TASKS + 1) throw new Error('worktree count mismatch');
  stepsOf.set(ms, stepMeans(path.join(root, 'home')));
  return ms;
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const floors: number[] = [];
const verdicts: number[] = [];
const unsandboxed: number[] = [];
/** Measures one side in a fresh folder, then deletes it (untimed), so earlier rounds' files do not load the disk. */
async function measure(prefix: string, fn: (root: string) => Promise<number>): Promise<number> {
  const root = tempDir(prefix);
  try {
    return await fn(root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
for (let round = 0; round < ROUNDS; round++) {
  floors.push(await measure('verdict-bench-floor-', floor));
  verdicts.push(await measure('verdict-bench-run-', (root) => verdict(root)));
  unsandboxed.push(await measure('verdict-bench-nosandbox-', (root) => verdict(root, 'off')));
}
const u = Math.min(...unsandboxed);
const f = Math.min(...floors);
const v = Math.min(...verdicts);
console.log(`tasks ${TASKS}, files ${FILES}, max_parallel ${PARALLEL}`);
console.log(`floor   (worktree add + worker + check, direct): ${floors.map((x) => x.toFixed(0)).join(' / ')} ms → best ${(f / TASKS).toFixed(1)} ms/task`);
console.log(`verdict (runManifest, records, state, commits):  ${verdicts.map((x) => x.toFixed(0)).join(' / ')} ms → best ${(v / TASKS).toFixed(1)} ms/task`);
console.log(
  `verdict --no-sandbox:                             ${unsandboxed.map((x) => x.toFixed(0)).join(' / ')} ms → best ${(u / TASKS).toFixed(1)} ms/task`,
);
const means = (ms: number): string =>
  Object.entries(stepsOf.get(ms) ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
console.log(`mean ms per step, best sandboxed run:   ${means(v)}`);
console.log(`mean ms per step, best unsandboxed run: ${means(u)}`);
console.log(`overhead ratio: ${(v / f).toFixed(2)}× (target ≤ 1.3×)`);
console.log(`sandbox cost: ${(v / u).toFixed(2)}× the unsandboxed run, ${((v - u) / TASKS).toFixed(1)} ms/task`);
