/**
 * Memory caps for steps: each capped step runs in a cgroup of its own with the task's `memory_mb` as its limit, made by
 * the orchestrator under `verdict/` in its own cgroup (else at the hierarchy's root) and removed after the step. The step's leader joins it before it
 * runs its command (the spawn helper's child writes its own pid to the cgroup's `cgroup.procs` between fork and exec,
 * SpawnRequest.cgroupProcs; under the Node helper a `/bin/sh` in front does it and execs: bubblewrap for a sandboxed
 * step, so the whole sandbox is inside), and everything it starts is inside too: a child inherits its parent's cgroup
 * through fork, clone and new namespaces (cgroups(7)).
 *
 * Where a cgroup can be had: the unified hierarchy (cgroup v2) with the memory controller, or the v1 memory hierarchy,
 * either with its root writable by this user (root). Where none can be had (an unprivileged user: a delegated subtree or
 * a `systemd-run --user --scope` is not used) the mechanism is `none` with the reason: the run says so at start, `verdict doctor` says so, and every row records `mem_cap: "none"`.
 *
 * Over its limit the kernel's OOM killer acts within the step's cgroup only (the orchestrator, the spawn helper and
 * other tasks are in other cgroups); the supervisor sees the kill in the cgroup's counter (`oom_kill` of
 * memory.events, v2, or memory.oom_control, v1: Documentation/admin-guide/cgroup-v2.rst and cgroup-v1/memory.rst)
 * and ends the rest of the step.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The default memory cap of a step when neither the task nor the run nor the config names one, MB (MiB). */
export const DEFAULT_MEMORY_MB = 4096;
/** The smallest and largest `memory_mb`, MB: below 16 MB not even a shell and bubblewrap start. */
export const MIN_MEMORY_MB = 16;
export const MAX_MEMORY_MB = 16 * 1024 * 1024;

/** How a step's memory is capped here: a v2 or v1 cgroup, or not at all. */
export type MemoryCapKind = 'cgroup2' | 'cgroup1' | 'none';

/** What this machine offers for memory caps (probed once per process: {@link memoryCapMechanism}). */
export interface MemoryCapMechanism {
  kind: MemoryCapKind;
  /** The folder the steps' cgroups are made in (`…/verdict`), or null for `none`. */
  parent: string | null;
  /** One line: what caps a step's memory, or why nothing does and what would. */
  line: string;
}

const NAME_PREFIX = 'step-';

/** The cgroup mounts of this process's mount namespace: type (cgroup2 or cgroup) → mount point and options. */
function cgroupMounts(mounts: string): Array<{ type: 'cgroup2' | 'cgroup'; dir: string; options: string[] }> {
  const out: Array<{ type: 'cgroup2' | 'cgroup'; dir: string; options: string[] }> = [];
  for (const line of mounts.split('\n')) {
    const [, dir, type, opts] = line.split(' ');
    if ((type === 'cgroup2' || type === 'cgroup') && dir) out.push({ type, dir: dir.replace(/\\040/g, ' '), options: (opts ?? '').split(',') });
  }
  return out;
}

/**
 * Probes the mechanism: the cgroup2 mount with the memory controller, else a v1 memory mount (from `mountsText`, the
 * text of /proc/self/mounts, read when absent), where `verdict/` can be made and a probe cgroup with a memory limit made
 * and removed in it. `VERDICT_MEMORY_CAP=none` in `env` says none (to run, or test, as a machine without cgroups).
 * Never throws.
 */
export function probeMemoryCap(mountsText?: string, env: NodeJS.ProcessEnv = process.env, cgroupText?: string): MemoryCapMechanism {
  if (env.VERDICT_MEMORY_CAP === 'none') return none('VERDICT_MEMORY_CAP=none');
  let mounts: string;
  let own = '';
  try {
    mounts = mountsText ?? fs.readFileSync('/proc/self/mounts', 'utf8');
    own = cgroupText ?? (mountsText === undefined ? fs.readFileSync('/proc/self/cgroup', 'utf8') : '');
  } catch {
    return none('no /proc/self/mounts to find a cgroup hierarchy in');
  }
  /**
   * Where to make `verdict/` in a hierarchy mounted at `dir`: under this process's own cgroup first (the steps stay
   * within whatever limits the orchestrator runs under: a container's, a slice's), else at the mount's root. On v2 the
   * own cgroup usually fails (a cgroup holding processes cannot enable controllers for its children), so the root.
   */
  const places = (dir: string, v2: boolean): string[] => {
    const line = own.split('\n').find((l) => (v2 ? l.startsWith('0::') : /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l)));
    const rel = line ? line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1) : '/';
    const mine = path.join(dir, rel);
    return [...new Set([...(rel !== '/' && fs.existsSync(mine) ? [mine] : []), dir])];
  };
  const found = cgroupMounts(mounts);
  const reasons: string[] = [];
  for (const m of found.filter((f) => f.type === 'cgroup2')) {
    let controllers = '';
    try {
      controllers = fs.readFileSync(path.join(m.dir, 'cgroup.controllers'), 'utf8');
    } catch {
      continue;
    }
    if (!controllers.split(/\s+/).includes('memory')) {
      reasons.push(`the cgroup v2 hierarchy at ${m.dir} has no memory controller`);
      continue;
    }
    for (const at of places(m.dir, true)) {
      const parent = path.join(at, 'verdict');
      const problem = prepareParent('cgroup2', at, parent);
      if (problem) reasons.push(problem);
      else
        return {
          kind: 'cgroup2',
          parent,
          line: `memory cap: cgroup v2 (${parent}): each step in its own cgroup with memory.max = the task's memory_mb, no swap; over it the step is killed and FAILs`,
        };
    }
  }
  for (const m of found.filter((f) => f.type === 'cgroup' && f.options.includes('memory'))) {
    for (const at of places(m.dir, false)) {
      const parent = path.join(at, 'verdict');
      const problem = prepareParent('cgroup1', at, parent);
      if (problem) reasons.push(problem);
      else
        return {
          kind: 'cgroup1',
          parent,
          line: `memory cap: cgroup v1 (${parent}): each step in its own memory cgroup with memory.limit_in_bytes = the task's memory_mb; over it the step is killed and FAILs`,
        };
    }
  }
  if (!found.length) reasons.push('no cgroup hierarchy is mounted');
  else if (!reasons.length) reasons.push('no cgroup hierarchy here has the memory controller');
  return none(reasons.join('; '));
}

function none(reason: string): MemoryCapMechanism {
  const fix =
    process.getuid?.() === 0
      ? 'mount a cgroup hierarchy with the memory controller (cgroup v2 at /sys/fs/cgroup)'
      : 'run as root (an unprivileged user gets no cgroup here)';
  return { kind: 'none', parent: null, line: `memory cap: none — ${reason}; steps run without a memory limit (rows say mem_cap "none"). To cap them: ${fix}` };
}

/**
 * Makes `parent` in the cgroup `root` (and enables the memory controller for its children on v2); null when it works,
 * else why not (a `verdict/` made for nothing is removed again).
 */
function prepareParent(kind: 'cgroup2' | 'cgroup1', root: string, parent: string): string | null {
  const made = !fs.existsSync(parent);
  try {
    fs.mkdirSync(parent, { recursive: true });
    if (kind === 'cgroup2') {
      for (const dir of [root, parent]) {
        const control = path.join(dir, 'cgroup.subtree_control');
        if (!fs.readFileSync(control, 'utf8').split(/\s+/).includes('memory')) fs.writeFileSync(control, '+memory');
      }
    }
    // A probe cgroup proves a child with a limit can be made and removed here.
    const probe = path.join(parent, `probe-${process.pid}`);
    fs.mkdirSync(probe, { recursive: true });
    try {
      fs.writeFileSync(path.join(probe, kind === 'cgroup2' ? 'memory.max' : 'memory.limit_in_bytes'), String(64 * 1024 * 1024));
    } finally {
      fs.rmdirSync(probe);
    }
    sweepStale(parent);
    return null;
  } catch (e) {
    if (made) {
      try {
        fs.rmdirSync(parent);
      } catch {
        // not made, or in use
      }
    }
    return `cannot make a memory-limited cgroup in ${parent}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
  }
}

/**
 * Removes the step cgroups an orchestrator that is gone left behind (crashed before it removed them): named
 * `step-<pid>-…` for a pid that no longer exists. rmdir removes only an empty cgroup, so one still holding processes
 * stays. Never throws.
 */
function sweepStale(parent: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^step-(\d+)-/.exec(name);
    if (!m || fs.existsSync(`/proc/${m[1]}`)) continue;
    try {
      fs.rmdirSync(path.join(parent, name));
    } catch {
      // still in use, or not ours to remove
    }
  }
}

let cached: MemoryCapMechanism | null = null;

/** The mechanism of this machine, probed on first use and then kept for the life of the process. Never throws. */
export function memoryCapMechanism(): MemoryCapMechanism {
  cached ??= probeMemoryCap();
  return cached;
}

/** What a capped step's receipt says about its memory: how it was contained and, when it was killed for it, how. */
export interface MemoryCapRecord {
  /** The mechanism the step ran under (`none`: no limit was enforced). */
  kind: MemoryCapKind;
  /** The limit asked for, MB (also under `none`, where it was not enforced). */
  limitMb: number;
  /** The most memory the step's cgroup held, MB (rounded up), when the kernel says it; null else. */
  peakMb?: number | null;
  /** The kernel's OOM killer killed a process of the step at its limit: the step was ended and counts as failed. */
  outOfMemory?: boolean;
  /** Why the cgroup could not be made for this step (then `kind` is `none`). */
  error?: string;
}

let sequence = 0;

/** One step's cgroup, made by {@link createStepCgroup}. */
export interface StepCgroup {
  dir: string;
  kind: 'cgroup2' | 'cgroup1';
  limitMb: number;
  /** The cgroup's `cgroup.procs`: the step's process writes its pid there before its exec (SpawnRequest.cgroupProcs). */
  procsFile: string;
  /** How many processes of the step the OOM killer killed so far (0 when the kernel does not count them). */
  oomKills(): number;
  /** The peak memory of the cgroup, bytes, or null when the kernel does not say. */
  peakBytes(): number | null;
  /** SIGKILL to every process in the cgroup (v2: cgroup.kill when there is one). Never throws. */
  killAll(): void;
  /** Ends what is left in it and removes it (retrying while its last processes exit, up to `waitMs`). Never throws; false when it stayed. */
  remove(waitMs?: number): Promise<boolean>;
}

/**
 * Makes cgroup folder `dir` and sets its limit of `limitMb` MB (see createStepCgroup); the files a kernel may lack
 * (swap, oom.group, memsw) are skipped when absent.
 * @throws Error naming the folder and the OS error, after removing the folder when it was made
 */
function makeLimitedCgroup(dir: string, kind: 'cgroup1' | 'cgroup2', limitMb: number): void {
  const bytes = String(limitMb * 1024 * 1024);
  const write = (file: string, value: string, optional = false) => {
    try {
      fs.writeFileSync(path.join(dir, file), value);
    } catch (e) {
      if (!(optional && (e as NodeJS.ErrnoException).code === 'ENOENT')) throw e;
    }
  };
  try {
    fs.mkdirSync(dir);
    if (kind === 'cgroup2') {
      write('memory.max', bytes);
      write('memory.swap.max', '0', true);
      write('memory.oom.group', '1', true);
    } else {
      write('memory.limit_in_bytes', bytes);
      write('memory.memsw.limit_in_bytes', bytes, true);
    }
  } catch (e) {
    try {
      fs.rmdirSync(dir);
    } catch {
      // not made
    }
    throw new Error(`cannot make the step's memory cgroup ${dir}: ${(e as Error).message}`);
  }
}

/** The text of `file` in cgroup folder `dir`, or null when it cannot be read. */
function readCgroupFile(dir: string, file: string): string | null {
  try {
    return fs.readFileSync(path.join(dir, file), 'utf8');
  } catch {
    return null;
  }
}

/**
 * SIGKILL to every process in cgroup `dir`: cgroup.kill where v2 has it, else one signal per pid its procs file lists
 * (pids 0 and 1 left alone). Never throws.
 */
function killCgroup(dir: string, kind: 'cgroup1' | 'cgroup2'): void {
  const pids = (): number[] =>
    (readCgroupFile(dir, 'cgroup.procs') ?? '')
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .filter((n) => n > 1);
  if (kind === 'cgroup2' && fs.existsSync(path.join(dir, 'cgroup.kill'))) {
    try {
      fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
      return;
    } catch {
      // fall back to one signal each
    }
  }
  for (const pid of pids()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/**
 * Makes a cgroup for one step under the mechanism's parent with a limit of `limitMb` MB (v2: memory.max, no swap,
 * memory.oom.group so the kernel ends the whole step at once; v1: memory.limit_in_bytes and, where swap is accounted,
 * memory.memsw.limit_in_bytes the same).
 * @throws Error naming the cgroup folder and the OS error when it cannot be made or limited
 */
export function createStepCgroup(mech: MemoryCapMechanism, limitMb: number): StepCgroup {
  if (mech.kind === 'none' || !mech.parent) throw new Error('no cgroup mechanism');
  const kind = mech.kind;
  const dir = path.join(mech.parent, `${NAME_PREFIX}${process.pid}-${++sequence}-${Date.now().toString(36)}`);
  makeLimitedCgroup(dir, kind, limitMb);
  const read = (file: string): string | null => readCgroupFile(dir, file);
  const killAll = () => killCgroup(dir, kind);
  return {
    dir,
    kind,
    limitMb,
    procsFile: path.join(dir, 'cgroup.procs'),
    oomKills() {
      const text = read(kind === 'cgroup2' ? 'memory.events' : 'memory.oom_control') ?? '';
      const m = /^oom_kill (\d+)$/m.exec(text);
      return m ? Number(m[1]) : 0;
    },
    peakBytes() {
      const text = read(kind === 'cgroup2' ? 'memory.peak' : 'memory.max_usage_in_bytes');
      const n = text === null ? NaN : Number(text.trim());
      return Number.isFinite(n) ? n : null;
    },
    killAll,
    async remove(waitMs = 5000) {
      const until = Date.now() + waitMs;
      for (;;) {
        try {
          fs.rmdirSync(dir);
          return true;
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') return true;
          if (Date.now() > until) return false;
        }
        killAll();
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}

/** `peakBytes` in MB, rounded up; null stays null. Pure. */
export function bytesToMb(bytes: number | null): number | null {
  return bytes === null ? null : Math.ceil(bytes / (1024 * 1024));
}

/** How a step's memory was contained, in a few words (state.json's attempts, `verdict runs RUN`): `cgroup1 4096 MB`. Pure. */
export function memCapLabel(m: Pick<MemoryCapRecord, 'kind' | 'limitMb'>): string {
  return m.kind === 'none' ? `none (${m.limitMb} MB not enforced)` : `${m.kind} ${m.limitMb} MB`;
}
