/**
 * Benchmark (not a test): what one task's tree costs with each `tree` choice (docs/manifest.md "Trees") on a generated
 * monorepo, as ratios to `worktree` measured in the same run.
 *
 *   npm run bench:trees      (env: BENCH_FILES=50000 BENCH_TASKS=20 BENCH_FILE_BYTES=4000 BENCH_PARALLEL=4;
 *                             BENCH_ROUNDS=1 (part 1 measured that many times over, each round on new tasks);
 *                             BENCH_WHOLE=0 skips part 2; BENCH_KINDS=sparse,overlay measures only those, and the
 *                             ratios are then to the first one listed; BENCH_REPO=<dir> keeps the generated
 *                             repository there and reuses it when it is already there; BENCH_RESIDENT_MB=N holds N MB
 *                             more in this process during part 1, as a larger orchestrator would: see residentMb)
 *
 * Repository: BENCH_FILES files of ~BENCH_FILE_BYTES bytes each (distinct contents), in 50 packages
 * `packages/p<N>/src/…` (1,000 files each at the default size); one commit, made with git fast-import.
 * Part 1, the tree alone: BENCH_TASKS calls of addWorktree (core/git/worktree.ts: branch, registration, checkout, the
 * task's index; the first call of a run also marks the run's folder for ext4, process/top-dir.ts) one after another,
 * per tree, each kind's trees kept until every kind is measured (see removeTrees): per-task time (median and max, ms;
 * each round's median), CPU per task (the bench process, its children and the spawn helper's, git and mount: see cpuMs; what a machine
 * shared with other work inflates least) and per-task disk (du of the task's own folders: for worktree and sparse the task dir, its admin dir and its base index; for overlay the upper layer and
 * the admin dir with the task's index. Blocks shared with the lower layer are not counted: overlay's base index and the
 * shared base of its split index are hard links to the lower layer's files — a copy, where the two are on different
 * file systems, would be counted). Overlay's lower layer (one per run and start commit: the checkout, its index and
 * that index's shared base) is timed and sized apart. Sparse tasks each take one package (`packages/p<i>/**`).
 * Part 2, whole runs: runManifest with BENCH_TASKS instant tasks (`echo ok > packages/p<i>/src/out.txt`, check `test
 * -s`), worktree mode, max_parallel BENCH_PARALLEL, sandbox on and off, commits made by the seal: wall time.
 * Goals: overlay ≤ 50 ms and ≤ 1 MB per task; sparse ≤ 0.2 s per task.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { runManifest } from '../../extension/core/run/runner';
import { addWorktree, inspectRepo, taskBranch, type TreeChoice } from '../../extension/core/git/worktree';
import { lowerLayer, releaseOverlays, type LowerLayer } from '../../extension/core/git/overlay-tree';
import { probeOverlay } from '../../extension/core/git/overlay';
import type { SandboxMode } from '../../extension/core/process/sandbox';
import { spawnHelperPid } from '../../extension/core/process/spawner';
import type { TreeKind } from '../../extension/core/manifest/types';
import { tempDir } from '../helpers/fixtures';
import { parseManifest } from '../../extension/core/run/manifest';

const FILES = Number(process.env.BENCH_FILES ?? 50000);
const TASKS = Number(process.env.BENCH_TASKS ?? 20);
const FILE_BYTES = Number(process.env.BENCH_FILE_BYTES ?? 4000);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const PACKAGES = 50;

/**
 * A repository of FILES distinct files, written by git fast-import, then checked out once (kept: BENCH_REPO).
 * The fast-import stream is written to git's stdin file by file, never held whole: the bench measures in this same
 * process, and every child it starts (git, mount) is forked from it, at a CPU cost that grows with its resident memory
 * (see residentMb). Built whole (~200 MB of buffers, 510 MB resident after), it made the first run over a just-generated
 * repository 3-4× dearer per overlay task than a run over a kept one (docs/trees.md, docs/performance.md "Trees").
 */
async function generatedRepo(dir: string): Promise<string> {
  if (fs.existsSync(path.join(dir, '.git', 'verdict-bench-done'))) return dir;
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  const line = 'export const value = "the quick brown fox jumps over the lazy dog";\n';
  const body = line.repeat(Math.max(1, Math.ceil(FILE_BYTES / line.length)));
  const fastImport = spawn('git', ['fast-import', '--quiet'], { cwd: dir, stdio: ['pipe', 'ignore', 'inherit'] });
  const ended = new Promise<number | null>((resolve, reject) => fastImport.on('error', reject).on('close', resolve));
  const write = async (text: string) => {
    if (!fastImport.stdin.write(text)) await once(fastImport.stdin, 'drain');
  };
  await write(`commit refs/heads/main\ncommitter Bench <bench@example.invalid> 1700000000 +0000\ndata 5\nbench\n`);
  for (let i = 0; i < FILES; i++) {
    const content = `// file ${i}\n${body}`;
    await write(`M 100644 inline packages/p${i % PACKAGES}/src/f${i}.ts\ndata ${Buffer.byteLength(content)}\n${content}\n`);
  }
  fastImport.stdin.end();
  const code = await ended;
  if (code !== 0) throw new Error(`git fast-import exited ${code}`);
  execFileSync('git', ['reset', '-q', '--hard', 'main'], { cwd: dir });
  fs.writeFileSync(path.join(dir, '.git', 'verdict-bench-done'), `${FILES} ${FILE_BYTES}\n`);
  return dir;
}

/**
 * This process's resident memory (VmRSS of /proc/self/status), MB. Every child process is started by fork (libuv on
 * Linux), whose CPU cost, the parent's and the child's, grows with it: ~0.1 ms per MB per spawn measured here (a spawn
 * of /bin/true from this bench: 4.4-4.8 ms of CPU at 113-124 MB resident, 24 ms at 322 MB, 45 ms at 514 MB). Printed
 * with the figures it inflates.
 */
function residentMb(): number {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * Disk used by `paths` (du -sk, one count per hard-linked inode), bytes; blocks of inodes that `shared` also holds (hard
 * links to them) are not counted.
 */
function diskBytes(paths: string[], shared: string[] = []): number {
  const existing = paths.filter((p) => fs.existsSync(p));
  if (!existing.length) return 0;
  const du = (ps: string[]) =>
    ps.length
      ? Number(
          (
            spawnSync('du', ['-skc', ...ps], { encoding: 'utf8' })
              .stdout.trim()
              .split('\n')
              .pop() ?? '0'
          ).split(/\s+/)[0],
        ) * 1024
      : 0;
  const base = shared.filter((p) => fs.existsSync(p));
  return du([...base, ...existing]) - du(base);
}

/**
 * CPU time used so far by this process and its finished children (user + system, ms): process.cpuUsage() for this
 * one, `cutime + cstime` of /proc/self/stat (proc(5), fields 16 and 17, clock ticks of 10 ms) for the children it
 * waited for (git, mount), and the same four fields of the spawn helper (process/spawner.ts), which starts a tree's git
 * and mount commands (process/run-captured.ts runQuiet) and waits for them. On a machine shared with other work this is what
 * changes least from run to run.
 */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  const ticks = (pid: number | 'self', from: number) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return fields.slice(from, 15).reduce((sum, f) => sum + Number(f), 0) * 10;
    } catch {
      return 0; // no helper (yet)
    }
  };
  const helper = spawnHelperPid();
  return (user + system) / 1000 + ticks('self', 13) + (helper ? ticks(helper, 11) : 0);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
}

interface TreeFigures {
  kind: TreeKind;
  /** Per-task wall time over every round's tasks, median and max: ms. */
  medianMs: number;
  maxMs: number;
  /** Each round's median per-task wall time: ms. */
  roundMedians: number[];
  /** Each round's CPU per task (this process and its children, see cpuMs), mean over its tasks: ms. */
  roundCpu: number[];
  diskPerTask: number;
  /** Overlay: the lower layer, made once (wall and CPU ms, bytes). */
  shared?: { ms: number; cpuMs: number; bytes: number };
}

/** Part 1: ROUNDS × TASKS trees of `kind`, one after another, on `repo` (none removed before every kind is measured). */
async function treesAlone(repo: string, kind: TreeKind, root: string): Promise<TreeFigures> {
  const info = await inspectRepo(repo, 'main');
  const runRoot = path.join(root, `trees-${kind}`);
  // A kept repository (BENCH_REPO) still has the branches of an earlier bench run.
  const old = execFileSync('git', ['for-each-ref', '--format=%(refname:short)', `refs/heads/verdict/bench-${kind}/`], { cwd: repo, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);
  if (old.length) execFileSync('git', ['branch', '-D', '-q', ...old], { cwd: repo });
  let shared: TreeFigures['shared'];
  let lower: LowerLayer | null = null;
  if (kind === 'overlay') {
    const c0 = cpuMs();
    const t0 = performance.now();
    lower = await lowerLayer(info.commonDir, info.baseSha, runRoot);
    shared = { ms: performance.now() - t0, cpuMs: cpuMs() - c0, bytes: diskBytes([lower.dir, lower.index, ...(lower.sharedIndex ? [lower.sharedIndex] : [])]) };
  }
  const times: number[] = [];
  const disks: number[] = [];
  const roundMedians: number[] = [];
  const roundCpu: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const roundTimes: number[] = [];
    let cpu = 0;
    for (let n = 0; n < TASKS; n++) {
      const i = round * TASKS + n;
      const key = `t${i}`;
      const dir = path.join(runRoot, key);
      const tree: TreeChoice =
        kind === 'sparse' ? { kind, cone: [`packages/p${i % PACKAGES}`] } : kind === 'overlay' ? { kind, lower: lower! } : { kind: 'worktree' };
      const c0 = cpuMs();
      const t0 = performance.now();
      const links = await addWorktree(info, dir, taskBranch(`bench-${kind}`, key), { tree });
      roundTimes.push(performance.now() - t0);
      cpu += cpuMs() - c0;
      // Overlay's base index and its split index's shared base are hard links to the lower layer's files: not counted.
      const own = kind === 'overlay' ? [links.adminDir, path.join(runRoot, '.overlay', key)] : [links.adminDir, path.join(runRoot, '.index', key), dir];
      disks.push(diskBytes(own, lower ? [lower.index, ...(lower.sharedIndex ? [lower.sharedIndex] : [])] : []));
    }
    times.push(...roundTimes);
    roundMedians.push(median(roundTimes));
    roundCpu.push(cpu / TASKS);
  }
  return { kind, medianMs: median(times), maxMs: Math.max(...times), roundMedians, roundCpu, diskPerTask: median(disks), shared };
}

/**
 * Removes part 1's trees, once every kind is measured: on ext4 without a journal (this machine's), inodes freed in the
 * last minute or more are passed over when a new one is allocated (fs/ext4/ialloc.c `recently_deleted`), so removing
 * one kind's million files right before the next kind made every file the next one created several times dearer.
 */
async function removeTrees(repo: string, root: string, kinds: readonly TreeKind[]): Promise<void> {
  for (const kind of kinds) {
    const runRoot = path.join(root, `trees-${kind}`);
    if (kind === 'overlay') await releaseOverlays(runRoot);
    fs.rmSync(runRoot, { recursive: true, force: true });
  }
  execFileSync('git', ['worktree', 'prune'], { cwd: repo });
}

/** Part 2: one whole run of TASKS instant tasks with `tree`, sandbox `mode`: wall ms. */
async function wholeRun(repo: string, kind: TreeKind, mode: SandboxMode, root: string): Promise<number> {
  const home = path.join(root, `home-${kind}-${mode}`);
  const tasks = Array.from({ length: TASKS }, (_, i) => {
    const rel = `packages/p${i % PACKAGES}/src/out-${i}.txt`;
    return {
      key: `t${i}`,
      engine: 'script',
      spec: `echo ok > ${rel}`,
      check: `test -s ${rel}`,
      task_type: 'bench',
      verified: 'v',
      ...(kind === 'sparse' ? { sparse: [`packages/p${i % PACKAGES}/**`] } : {}),
    };
  });
  const file = path.join(root, `bench-${kind}-${mode}.swarm.json`);
  const text = JSON.stringify({ run_name: `trees-${kind}`, worktrees: true, repo, base_ref: 'main', tree: kind, max_parallel: PARALLEL, tasks });
  fs.writeFileSync(file, text);
  const { manifest } = parseManifest(text, file);
  if (!manifest) throw new Error('bench manifest did not load');
  const t0 = performance.now();
  const summary = await runManifest({ manifest, engines: resolveEngines(), home, sandbox: mode, identity: 'bench' });
  const ms = performance.now() - t0;
  const passed = summary.tasks.filter((t) => t.verdict === 'PASS').length;
  if (passed !== TASKS) throw new Error(`${kind}/${mode}: ${passed} of ${TASKS} passed`);
  // The worktree and sparse runs keep their worktrees (as any run does): remove them before the next run.
  for (const dir of fs.readdirSync(path.join(home, 'worktrees'))) fs.rmSync(path.join(home, 'worktrees', dir), { recursive: true, force: true });
  execFileSync('git', ['worktree', 'prune'], { cwd: repo });
  return ms;
}

const fmtMs = (ms: number) => `${ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(2)} s`}`;
/** `; rounds a / b / c` when there was more than one. */
const rounds = (xs: number[]) => (xs.length > 1 ? `; rounds ${xs.map(fmtMs).join(' / ')}` : '');
const fmtBytes = (b: number) => (b < 1 << 20 ? `${(b / 1024).toFixed(0)} KB` : `${(b / (1 << 20)).toFixed(1)} MB`);

async function main(): Promise<void> {
  const root = tempDir('verdict-bench-trees-');
  const t0 = performance.now();
  const repo = await generatedRepo(process.env.BENCH_REPO ? path.resolve(process.env.BENCH_REPO) : path.join(root, 'repo'));
  console.log(
    `repository: ${FILES} files of ~${FILE_BYTES} bytes, ${fmtBytes(diskBytes([path.join(repo)]) - diskBytes([path.join(repo, '.git')]))} checked out (made in ${fmtMs(performance.now() - t0)}); ${TASKS} tasks`,
  );
  // An orchestrator's size (VS Code's extension host is one process with every extension in it): see residentMb.
  const ballast = Array.from({ length: Number(process.env.BENCH_RESIDENT_MB ?? 0) }, () => Buffer.alloc(1 << 20, 1));
  const overlay = await probeOverlay();
  const only = process.env.BENCH_KINDS?.split(',') as TreeKind[] | undefined;
  const kinds: TreeKind[] = (['worktree', 'sparse', ...(overlay.ok ? (['overlay'] as const) : [])] as TreeKind[]).filter((k) => !only || only.includes(k));
  if (!overlay.ok) console.log(`overlay: not measured here (${overlay.reason})`);

  console.log(`\npart 1: the tree alone (addWorktree, one task after another; this process resident: ${residentMb().toFixed(0)} MB)`);
  let base: TreeFigures | null = null;
  for (const kind of kinds) {
    const f = await treesAlone(repo, kind, root);
    base ??= f;
    const shared = f.shared ? `; lower layer once: ${fmtMs(f.shared.ms)} (CPU ${fmtMs(f.shared.cpuMs)}), ${fmtBytes(f.shared.bytes)}` : '';
    console.log(
      `  ${f.kind.padEnd(8)} per task ${fmtMs(f.medianMs)} median (max ${fmtMs(f.maxMs)}${rounds(f.roundMedians)}), CPU ${f.roundCpu.map(fmtMs).join(' / ')}, ${fmtBytes(f.diskPerTask)} — ${(f.medianMs / base.medianMs).toFixed(3)}× time, ${(f.diskPerTask / base.diskPerTask).toFixed(4)}× disk of ${base.kind}${shared}`,
    );
  }
  await removeTrees(repo, root, kinds);
  ballast.length = 0;
  console.log(`  (load average ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`);
  if (process.env.BENCH_WHOLE === '0') return;

  console.log(`\npart 2: whole runs (${TASKS} instant tasks, max_parallel ${PARALLEL}, commits by the seal)`);
  for (const mode of ['auto', 'off'] as SandboxMode[]) {
    const walls: Array<[TreeKind, number]> = [];
    for (const kind of kinds) walls.push([kind, await wholeRun(repo, kind, mode, root)]);
    const w = walls[0]?.[1] as number;
    console.log(`  sandbox ${mode === 'auto' ? 'on ' : 'off'}: ${walls.map(([k, ms]) => `${k} ${fmtMs(ms)} (${(ms / w).toFixed(2)}×)`).join(', ')}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
