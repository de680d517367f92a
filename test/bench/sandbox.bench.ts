/**
 * Benchmark (not a test): the CPU one bubblewrap sandbox costs, for the sandboxes a worktree attempt
 * runs (worker, check: today's arguments and those before the check's redundant read-only bind was left out) and for
 * each piece of them, as ms per sandbox and ratios in the same run.
 *
 *   npm run bench:sandbox
 *   env: BENCH_SANDBOXES=200 (per variant and round)  BENCH_ROUNDS=5
 *
 * CPU, not wall (the machine is shared): user + system time of every process of N sandboxes in a row. bubblewrap's
 * outer process exits as soon as the step's exit status is known, before its PID 1 inside is reaped, so that PID 1
 * and everything it reaped (the step) never reach a `wait` of ours: the loop therefore runs as PID 1 of a PID
 * namespace of its own (`unshare --pid --fork --mount-proc`, with `--user --map-current-user` when not root), which
 * reaps those orphans, and bash's `times` gives the children's total. Kernel threads' CPU (the network namespace's
 * cleanup, RCU callbacks) is machine-wide and so noisy on a shared machine; it is printed apart from the total
 * (schedstat of PID 2's children) and not in the ratios. Folders are outside /tmp, /var/tmp and /run
 * (test/helpers/uncovered.ts): under those (each a tmpfs of its own in a sandbox) the check's bind would be kept.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { bwrapCommand, probeSandbox, type BwrapPlan } from '../../extension/core/process/sandbox';
import { uncoveredDir } from '../helpers/uncovered';

const N = Number(process.env.BENCH_SANDBOXES ?? 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const probe = await probeSandbox();
if (probe.kind !== 'bwrap') {
  console.log(`no sandbox here: ${probe.reason}`);
  process.exit(0);
}
const bwrap = probe.binary;

// A worktree attempt's places, as the steps lay them out (run/steps/work.ts, check.ts; git/worktree.ts).
const root = uncoveredDir('verdict-bench-sandbox-');
const home = path.join(root, 'home');
const repo = path.join(root, 'repo');
const admin = path.join(repo, '.git', 'worktrees', 't1');
const task = path.join(home, 'worktrees', 'run', 't1');
const objects = path.join(home, 'worktrees', 'run', '.objects', 't1');
const scratchWorker = path.join(home, 'scratch', 'run', 't1', '1-worker');
const scratchCheck = path.join(home, 'scratch', 'run', 't1', '1-check');
const extra = Array.from({ length: 5 }, (_, i) => path.join(root, `extra${i}`));
for (const d of [admin, task, objects, path.join(scratchWorker, 'tmp'), path.join(scratchCheck, 'tmp'), ...extra]) fs.mkdirSync(d, { recursive: true });
fs.writeFileSync(path.join(admin, 'gitdir'), `${task}/.git\n`);

const step = (plan: Omit<BwrapPlan, 'binary'>, cwd: string, script: string): string[] => {
  const c = bwrapCommand({ binary: bwrap, ...plan }, cwd, '/usr/bin/bash', ['-c', script], [], { TMPDIR: path.join(cwd, 'tmp') });
  return [c.file, ...c.args];
};
const worker = step({ writable: [admin, task, scratchWorker, objects], network: true, readOnly: [path.join(admin, 'gitdir')], hidden: [home] }, task, 'true');
const checkNow = step({ writable: [task, scratchCheck], network: true, readOnly: [admin, objects], hidden: [home] }, task, 'true');
if (checkNow.includes(admin)) throw new Error(`the check still binds ${admin}: ${checkNow.join(' ')}`);
// The same check before the change: the admin folder bound read-only onto itself, before /tmp's remount.
const at = checkNow.indexOf('--remount-ro');
const checkBefore = [...checkNow.slice(0, at), '--ro-bind', admin, admin, ...checkNow.slice(at)];

// The worker's sandbox without the covers of /var/tmp and /run (sandbox-view.ts) that /tmp's alone had before.
const dropCovers = (argv: string[]): string[] =>
  argv.filter(
    (a, i) =>
      !(['--tmpfs', '--remount-ro'].includes(a) && ['/var/tmp', '/run'].includes(argv[i + 1] as string)) &&
      !(['/var/tmp', '/run'].includes(a) && ['--tmpfs', '--remount-ro'].includes(argv[i - 1] as string)),
  );
const workerTmpOnly = dropCovers(worker);

const base = [bwrap, '--die-with-parent', '--unshare-user', '--unshare-pid', '--cap-drop', 'ALL', '--ro-bind', '/', '/'];
const bash = ['--', '/usr/bin/bash', '-c', 'true'];
const VARIANTS: Record<string, string[]> = {
  'bash -c true (no sandbox)': ['/usr/bin/bash', '-c', 'true'],
  'check, before': checkBefore,
  'check, now': checkNow,
  'worker (worktree)': worker,
  'worker, /tmp covered alone': workerTmpOnly,
  'bwrap: user+pid ns, ro /': [...base, ...bash],
  '  + --dev /dev': [...base, '--dev', '/dev', ...bash],
  '  + --proc /proc': [...base, '--proc', '/proc', ...bash],
  '  + --unshare-net': [...base, '--unshare-net', ...bash],
  '  + 5 × --bind': [...base, ...extra.flatMap((d) => ['--bind', d, d]), ...bash],
  '  + 5 × --tmpfs': [...base, ...extra.flatMap((d) => ['--tmpfs', d]), ...bash],
};

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const reaper =
  process.getuid?.() === 0
    ? ['unshare', '--pid', '--fork', '--kill-child', '--mount-proc']
    : ['unshare', '--user', '--map-current-user', '--mount', '--pid', '--fork', '--kill-child', '--mount-proc'];

/**
 * CPU ms of every process of N runs of `argv`, reaped by a PID 1 of our own. A sandbox that fails is measured again,
 * up to twice: bubblewrap fails when a host mount vanishes while it remounts `/`'s submounts read-only (the overlay
 * trees of a run on the same machine come and go).
 */
function cpuMs(argv: string[], tries = 3): number {
  const script = `cmd=(${argv.map(quote).join(' ')}); for ((i=0;i<${N};i++)); do "\${cmd[@]}" >/dev/null || exit 1; done; times`;
  let out: string;
  try {
    out = execFileSync(reaper[0] as string, [...reaper.slice(1), '/usr/bin/bash', '-c', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (tries <= 1) throw e;
    console.log(
      `(measured again: ${String((e as { stderr?: string }).stderr ?? e)
        .trim()
        .split('\n')
        .pop()})`,
    );
    return cpuMs(argv, tries - 1);
  }
  const children = out.trim().split('\n').pop() ?? '';
  const secs = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
  if (secs.length !== 2) throw new Error(`cannot read bash's times: ${out}`);
  return ((secs[0] as number) + (secs[1] as number)) * 1000;
}

/** CPU ns so far of the kernel's threads (PID 2 and its children), machine-wide. */
function kernelThreadsNs(): number {
  let total = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (entry === '2' || ppid === 2) total += Number(fs.readFileSync(`/proc/${entry}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // gone
    }
  }
  return total;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

try {
  const cpu: Record<string, number[]> = {};
  const kthreads: Record<string, number[]> = {};
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, argv] of Object.entries(VARIANTS)) {
      const k0 = kernelThreadsNs();
      (cpu[name] ??= []).push(cpuMs(argv) / N);
      (kthreads[name] ??= []).push((kernelThreadsNs() - k0) / 1e6 / N);
    }
  }
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8').trim().split('\n').length;
  console.log(`bubblewrap ${probe.version}, ${N} sandboxes × ${ROUNDS} rounds, ${mounts} mounts on this host; CPU ms per sandbox (median; min–max)`);
  const floor = median(cpu['bash -c true (no sandbox)'] as number[]);
  const minimal = median(cpu['bwrap: user+pid ns, ro /'] as number[]);
  for (const [name, xs] of Object.entries(cpu)) {
    const m = median(xs);
    const piece = name.startsWith('  + ') ? `  (+${(m - minimal).toFixed(2)} ms)` : '';
    console.log(
      `${name.padEnd(28)} ${m.toFixed(2).padStart(6)}  (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})  ${(m / floor).toFixed(2)}× bash${piece}   kernel threads ${median(kthreads[name] as number[]).toFixed(2)}`,
    );
  }
  const before = median(cpu['check, before'] as number[]);
  const now = median(cpu['check, now'] as number[]);
  console.log(`check sandbox now / before: ${(now / before).toFixed(3)}  (over bash: ${((now - floor) / (before - floor)).toFixed(3)})`);
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
