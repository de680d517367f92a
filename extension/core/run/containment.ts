/**
 * How the steps of one run are contained: which sandbox each step gets (bubblewrap, or none when the user said
 * --no-sandbox or a task has allowed full_access), the per-step scratch folders and the environment that points
 * temporary files and package caches there. Mount rules: core/process/sandbox.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EngineSpec } from '../../../engines/types';
import type { StateFile } from '../live/state';
import type { SandboxInit } from '../live/worker-journal';
import { expandUserPath } from '../config/config';
import {
  expandStatePath,
  HOST_LOOPBACK_ADDRESS,
  type BwrapPlan,
  type Containment,
  type NetstackProbe,
  type SandboxMode,
  type SandboxProbe,
} from '../process/sandbox';
import { DEFAULT_MEMORY_MB } from '../process/memory-cap';
import { DEFAULT_LOG_MAX_MB } from '../process/log-cap';
import type { TaskSpec } from '../manifest/types';

/** The containment decided for a run before it starts. */
export interface RunContainment {
  /** bubblewrap at this path for every sandboxed step; null when the run is unsandboxed. */
  bwrap: string | null;
  /** slirp4netns at this path for every sandboxed step with `"network": true`; null when none is installed (or unsandboxed). */
  netstack: string | null;
  /** One line for the run's output and state: what contains the steps, or why nothing does. */
  summary: string;
}

/**
 * Decides a run's containment from the user's mode and what the machine offers. `auto` without a working bubblewrap
 * is refused before anything starts (never silently unsandboxed): the result is then a string, the one line that
 * names the reason and the way to go on anyway.
 */
export function decideContainment(
  mode: SandboxMode,
  probe: SandboxProbe,
  net: NetstackProbe = { kind: 'none', reason: 'not probed' },
  needsNet: readonly string[] = [],
): RunContainment | string {
  if (mode === 'off') {
    return {
      bwrap: null,
      netstack: null,
      summary: `sandbox: off (--no-sandbox): workers and checks can write anywhere you can, and share the host's network${probe.kind === 'none' ? `; ${probe.reason}` : ''}`,
    };
  }
  if (probe.kind === 'none') {
    return `no sandbox: ${probe.reason}. Nothing ran. To run without one anyway (workers can then write anywhere you can): --no-sandbox, "sandbox": false in the config, or the VS Code setting verdict.sandbox`;
  }
  const base = `sandbox: bwrap ${probe.version}: each step in its own PID namespace with no capability, the filesystem read-only but the task dir, a scratch dir and the engine's state dirs`;
  if (net.kind === 'none') {
    // Never silently on the host's network: a task that asks for its own network needs the stack.
    if (needsNet.length)
      return `no network stack: ${net.reason}. Nothing ran. Tasks ${needsNet.join(', ')} have "network": true (the default), which gives each step a network namespace of its own through slirp4netns. Install it, or set "network": "host" on those tasks to share the host's network (every port, abstract socket and 127.0.0.1 shared with the host and other tasks), or "network": false for none`;
    return { bwrap: probe.binary, netstack: null, summary: `${base}; network: no user-mode stack (${net.reason}), no task asks for one` };
  }
  return {
    bwrap: probe.binary,
    netstack: net.binary,
    summary: `${base}; network: each step its own namespace through slirp4netns ${net.version} (the host's loopback as ${HOST_LOOPBACK_ADDRESS})`,
  };
}

/** The keys of the tasks whose steps need a network namespace of their own (`"network": true`, not full_access). */
export function tasksNeedingNetstack(tasks: readonly { key: string; network: boolean | 'host'; fullAccess?: boolean }[]): string[] {
  return tasks.filter((t) => t.network === true && !t.fullAccess).map((t) => t.key);
}

/**
 * The caps every step of a task runs under (supervise's `memoryMb` and `logMaxBytes`): the task's memory_mb and
 * log_max_mb (the manifest's, or the config's, filled in at the run's start), else the defaults. Pure.
 */
export function stepCaps(spec: Pick<TaskSpec, 'memoryMb' | 'logMaxMb'>): { memoryMb: number; logMaxBytes: number } {
  return { memoryMb: spec.memoryMb ?? DEFAULT_MEMORY_MB, logMaxBytes: (spec.logMaxMb ?? DEFAULT_LOG_MAX_MB) * 1024 * 1024 };
}

/** The containment a task's steps run under: none for an (allowed) full_access task or an unsandboxed run. */
export function taskContainment(run: RunContainment, fullAccess: boolean): Containment {
  return run.bwrap && !fullAccess ? 'bwrap' : 'none';
}

/**
 * A fresh scratch folder for one step: `<home>/scratch/<runId>/<key>/<attempt>-<step>/` with `tmp/` inside (removed
 * first if a crashed run left it). Removed with {@link removeTaskScratch}.
 */
export function stepScratch(home: string, runId: string, key: string, attempt: number, step: ScratchStep): string {
  const dir = path.join(home, 'scratch', runId, key, `${attempt}-${step}`);
  // Usually there is none (only a crashed run leaves one): rmSync would make an error object to find that out.
  if (fs.existsSync(dir)) fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true });
  return dir;
}

/**
 * The steps that get a scratch folder (its name: `<attempt>-<step>`): setup, the worker and the check, and each
 * reader, numbered after its step (`review-<n>`; a workflow's readers likewise, named in its folder: `critique-1`,
 * `critique-1-2` for a criticism's command, `rank-1`), so this file names no workflow.
 */
export type ScratchStep = 'setup' | 'worker' | 'check' | `${string}-${number}` | `${string}-${number}-${number}`;

/**
 * The scratch folder of a step whose only use of it is its sandbox (setup, worker, check: TMPDIR and the caches inside,
 * bound writable): made fresh ({@link stepScratch}) when `boxed`, else only named — an unsandboxed step is given
 * neither the variables nor the bind, so the folder would be made and removed for nothing at every attempt.
 */
export function sandboxScratch(home: string, runId: string, key: string, attempt: number, step: 'setup' | 'worker' | 'check', boxed: boolean): string {
  return boxed ? stepScratch(home, runId, key, attempt, step) : path.join(home, 'scratch', runId, key, `${attempt}-${step}`);
}

/**
 * Removes one step's scratch folder, when there is one: the common case — only its empty `tmp/` inside — in two
 * rmdir calls, anything a step left there recursively. Never throws.
 */
export function removeStepScratch(home: string, runId: string, key: string, attempt: number, step: ScratchStep): void {
  const dir = path.join(home, 'scratch', runId, key, `${attempt}-${step}`);
  // An unsandboxed step made none (sandboxScratch): no error object for that.
  if (!fs.existsSync(dir)) return;
  try {
    fs.rmdirSync(path.join(dir, 'tmp'));
    fs.rmdirSync(dir);
  } catch (e) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // left for removeTaskScratch at the run's end
    }
  }
}

/** Removes a task's scratch folders (nothing of the task is alive then), when it has any. Never throws. */
export function removeTaskScratch(home: string, runId: string, key: string): void {
  const dir = path.join(home, 'scratch', runId, key);
  if (!fs.existsSync(dir)) return;
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    // left as it is: nothing of it is read again
  }
}

/** Removes the run's scratch folder once no task's is left in it. Never throws. */
export function removeRunScratch(home: string, runId: string): void {
  try {
    fs.rmdirSync(path.join(home, 'scratch', runId));
  } catch {
    // a task's scratch is still there (it could not be removed), or there was none
  }
}

/**
 * Environment of a sandboxed step: temporary files and the common package caches in its scratch folder (the rest
 * of the filesystem is read-only, and a shared cache would let one task plant files for another).
 */
export function scratchEnv(scratch: string): Record<string, string> {
  const tmp = path.join(scratch, 'tmp');
  return { TMPDIR: tmp, TMP: tmp, TEMP: tmp, npm_config_cache: path.join(scratch, 'npm-cache'), PIP_CACHE_DIR: path.join(scratch, 'pip-cache') };
}

/** An engine's state paths expanded for one environment (see EngineSpec stateDirs, stateFiles, stateGuarded, stateShared). */
export interface EngineState {
  /** Its state dirs, each existing. */
  dirs: string[];
  /** Files it gets private writable copies of. */
  files: string[];
  /** Settings put back after a step. */
  guarded: string[];
  /** What a read-only reader shares with other runs (login, settings). */
  shared: string[];
}

/**
 * An engine's declared state paths (dirs, private-copy files, guarded settings, shared paths), expanded for `env` (`~` is env.HOME, else the OS home); state dirs are created
 * when missing, mode 0700 (bubblewrap can only bind what exists). Never throws for a dir it cannot create: that dir is left out,
 * and the engine then gets the OS's read-only error.
 */
export function engineState(engine: EngineSpec, env: NodeJS.ProcessEnv): EngineState {
  const home = env.HOME || os.homedir();
  const dirs: string[] = [];
  for (const t of engine.stateDirs) {
    const dir = expandStatePath(t, env, home);
    if (!dir) continue;
    try {
      // Private (0700), as the CLIs make them themselves; codex refuses a socket dir with any other mode.
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      dirs.push(dir);
    } catch {
      // left out: read-only inside the sandbox
    }
  }
  const files = engine.stateFiles.map((t) => expandStatePath(t, env, home)).filter((f): f is string => f !== null);
  const guarded = engine.stateGuarded.map((t) => expandStatePath(t, env, home)).filter((f): f is string => f !== null);
  const shared = engine.stateShared.map((t) => expandStatePath(t, env, home)).filter((f): f is string => f !== null);
  return { dirs, files, guarded, shared };
}

/**
 * How a read-only reader (a reviewer, critic or ranking reviewer; a task with `inputs`: council reviewers and chair,
 * validators) sees its engine's state: every state dir is its own empty folder (`privateDirs`, a tmpfs) with only the
 * shared paths inside bound back (`sharedPaths`: the login, the settings), so no session, history or log another run
 * or task left there is visible — a codex ranking reviewer cannot read a codex candidate's session to learn whose work
 * a name stands for. A state dir that is itself shared stays writable whole (`writable`). Pure.
 */
export function readerStateView(state: EngineState): { writable: string[]; privateDirs: string[]; sharedPaths: string[] } {
  const shared = new Set(state.shared);
  const writable = state.dirs.filter((d) => shared.has(d));
  const privateDirs = state.dirs.filter((d) => !shared.has(d));
  const sharedPaths = state.shared.filter((p) => privateDirs.some((d) => p.startsWith(`${d}${path.sep}`)));
  return { writable, privateDirs, sharedPaths };
}

/**
 * The state dirs of the run's other engines, as a read-only reader must not see them (hidden: an empty tmpfs each):
 * a claude council reviewer could otherwise read ~/.codex/sessions, where the codex members left their transcripts,
 * and say which letter is whose. Only dirs that exist, and none that holds or is one of `keep` (absolute paths: the
 * reader's own state dirs, its working dir, its binary; and the home), as named or resolved — those stay as they are.
 * Never throws.
 */
export function otherEnginesState(engines: Iterable<EngineSpec>, own: EngineSpec, env: NodeJS.ProcessEnv, keep: readonly string[]): string[] {
  const home = env.HOME || os.homedir();
  // A kept path counts where it is named and where it leads (an engine binary is often a link into a versions folder).
  const kept = [...keep, home].filter((k) => path.isAbsolute(k)).flatMap((k) => [path.resolve(k), realPathOr(k)]);
  const out = new Set<string>();
  for (const engine of engines) {
    if (engine.name === own.name) continue;
    for (const t of engine.stateDirs) {
      const dir = expandStatePath(t, env, home);
      if (!dir) continue;
      const abs = path.resolve(dir);
      if (abs === '/' || abs === '/tmp') continue;
      if (kept.some((k) => k === abs || k.startsWith(`${abs}${path.sep}`))) continue;
      if (fs.existsSync(abs)) out.add(abs);
    }
  }
  return [...out];
}

function realPathOr(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * The sandbox of one step, or null when the step runs unsandboxed. See BwrapPlan for the fields; its init is recorded
 * in the run's worker journal as soon as the spawn helper holds it (StateFile.recordSandboxInit).
 */
export function stepPlan(run: SandboxedRun, containment: Containment, plan: Omit<BwrapPlan, 'binary' | 'onInit'>): BwrapPlan | null {
  if (containment !== 'bwrap' || !run.bwrap) return null;
  const { stateFile } = run;
  const v = run.view;
  const view = v
    ? {
        ...(v.sockets.length ? { sockets: [...v.sockets] } : {}),
        ...(v.hide.length ? { hide: [...(plan.hide ?? []), ...v.hide] } : {}),
        ...(v.expose.length ? { expose: [...v.expose] } : {}),
      }
    : {};
  return {
    binary: run.bwrap,
    ...plan,
    ...(run.netstack ? { netstack: run.netstack } : {}),
    ...view,
    ...(stateFile ? { onInit: (init: SandboxInit) => stateFile.recordSandboxInit(init) } : {}),
  };
}

/** What the user's config and the manifest add to every sandbox of a run (BwrapPlan `sockets`, `hide`, `expose`). Paths absolute. */
export interface SandboxView {
  /** Unix sockets (or folders of them) every step may reach (config `sockets`). */
  sockets: string[];
  /** More places no step may read (config and manifest `hide`, the config file in force). */
  hide: string[];
  /** Hidden places every step may read (config `expose`). */
  expose: string[];
}

/**
 * A run's {@link SandboxView} from the lists as written (absolute or `~/…`; config.ts and the manifest's loader validate
 * them), `~/` read as `env.HOME` (else the OS home). Pure but for the OS home.
 */
export function sandboxView(lists: { sockets?: readonly string[]; hide?: readonly string[]; expose?: readonly string[] }, env: NodeJS.ProcessEnv): SandboxView {
  const home = env.HOME || os.homedir();
  const abs = (l: readonly string[] | undefined) => [...new Set((l ?? []).map((p) => expandUserPath(p, home)))];
  return { sockets: abs(lists.sockets), hide: abs(lists.hide), expose: abs(lists.expose) };
}

/**
 * What {@link stepPlan} needs of a run (an AttemptContext has it): bubblewrap's path (null: unsandboxed) and the state
 * file whose worker journal records each sandbox's init for crash recovery (run/reconcile.ts). Without a state file
 * (`verdict merge`'s re-check, which belongs to no live run) only the living spawn helper kills the init.
 */
export interface SandboxedRun {
  bwrap: string | null;
  /** slirp4netns's path for steps with `"network": true` (RunContainment.netstack); absent or null: none. */
  netstack?: string | null;
  /** What the user's config adds to every sandbox (declared sockets); absent: nothing. */
  view?: SandboxView;
  stateFile?: Pick<StateFile, 'recordSandboxInit'>;
}

/**
 * What a step of a run must not see: VERDICT_HOME (other tasks' worktrees, records and ports) and, in plain mode, the
 * workdir (other tasks' dirs). The step's own task dir, scratch dir and records are bound back inside.
 */
export function hiddenFromSteps(home: string, workdir: string | null): string[] {
  return workdir ? [home, workdir] : [home];
}

/**
 * What a task that reads anonymous inputs (a council's reviews and chair, a validator) must not see besides: in
 * worktree mode, the repository's git dir (`commonDir`), whose branches (`verdict/<run>/<key>`), commit messages
 * (`verdict: <key> …`) and objects hold the very trees it is shown under letters, so matching a copy against them
 * would say whose each letter is. Its steps then run without git in their worktree (the seal runs outside them).
 * Empty for any other task.
 */
export function hiddenForAnonymity(inputs: { anonymous?: boolean } | undefined, commonDir: string | null): string[] {
  return inputs?.anonymous && commonDir ? [commonDir] : [];
}
