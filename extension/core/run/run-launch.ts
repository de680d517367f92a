import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { VerdictConfig } from '../config/config';
import { evalLogPath, runDir } from '../config/home';
import { shortHost } from '../host/hostname';
import type { RunSummary, TaskSummary } from './run-types';
import type { EvalRow } from '../store/eval-row';
import { statusInfo, type TaskOutcome } from '../../../schemas/status';
import { appendControl, type ControlAck, type ControlCommand, type ControlVerb, type Landed } from '../live/control';
import { describeRun, readState, type RunInfo } from '../live/registry';
import type { RunState } from '../live/state';

/**
 * Starting `verdict run` as a detached process that outlives whoever started it (the editor's window), and following
 * it from outside through VERDICT_HOME only: finding its run by the orchestrator's pid, waiting for its end, building
 * its RunSummary from state.json and the eval rows, and sending it control commands (core/live/control.ts) whose
 * acknowledgment is awaited in state.json. No vscode here: extension/vscode/launcher.ts is the editor's caller.
 */

/** What to start: `verdict run MANIFEST` (or `verdict resume RUN`) with these flags, from `cwd`. */
export interface DetachedRunSpec {
  /** The bundled CLI (dist/cli.js). */
  cli: string;
  manifest: string;
  /** Start `verdict resume RUN` of this run instead of `verdict run MANIFEST` (`manifest` and `only` are unused). */
  resume?: string;
  /** With `resume`: start `verdict rerun RUN TASK` of this task instead (the run has ended: it runs it again). */
  rerun?: string;
  /** VERDICT_HOME, absolute (passed as --home). */
  home: string;
  cwd: string;
  /** The effective settings, written to a private generated config file passed as --config. */
  config: VerdictConfig;
  identity?: string;
  maxParallel?: number;
  baseline?: boolean;
  /** Only these task keys (--only). */
  only?: readonly string[];
  /** --no-sandbox. */
  noSandbox?: boolean;
  /** --force: start (or resume) even over lint errors; the caller decided it with core/manifest/lint.ts startGate. */
  force?: boolean;
  /** The environment of the orchestrator (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/** A started orchestrator: its pid (the run's state.json will carry it), its log, and the child while we live. */
export interface DetachedRun {
  pid: number;
  /** stdout and stderr of the orchestrator: `<home>/launches/<stamp>.log`, renamed `<run id>.log` once known. */
  logFile: string;
  configFile: string;
  startedAt: number;
  /** Exit code or signal once the orchestrator ended while this process watched it; undefined while it runs. */
  exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  child: ChildProcess;
}

/**
 * How to run the bundled CLI with the Node this process runs on: under Electron (VS Code desktop) its own binary with
 * ELECTRON_RUN_AS_NODE=1; under plain Node (code-server's extension host, the CLI) that Node.
 */
export function nodeCommand(
  versions: NodeJS.ProcessVersions = process.versions,
  execPath = process.execPath,
): { command: string; env: Record<string, string> } {
  return versions.electron ? { command: execPath, env: { ELECTRON_RUN_AS_NODE: '1' } } : { command: execPath, env: {} };
}

/** The arguments of `verdict run` for a spec (without the node binary and the CLI path). */
export function runArguments(spec: DetachedRunSpec, configFile: string): string[] {
  const verb = spec.resume ? (spec.rerun !== undefined ? ['rerun', spec.resume, spec.rerun] : ['resume', spec.resume]) : ['run', spec.manifest];
  const args = [...verb, '--no-dashboard', '--home', spec.home, '--config', configFile];
  if (spec.identity) args.push('--identity', spec.identity);
  if (spec.maxParallel !== undefined) args.push('--max-parallel', String(spec.maxParallel));
  if (spec.baseline) args.push('--baseline');
  if (spec.only?.length && !spec.resume) args.push('--only', spec.only.join(','));
  if (spec.noSandbox) args.push('--no-sandbox');
  if (spec.force) args.push('--force');
  return args;
}

/** Folder of the orchestrators' logs and generated config files. */
export function launchesDir(home: string): string {
  return path.join(home, 'launches');
}

/**
 * Starts the orchestrator detached (own process group, unref'd, stdio to a log file): it goes on when this process
 * ends. The generated config file is 0600 (it may hold a Postgres URL).
 */
export function launchDetached(spec: DetachedRunSpec): DetachedRun {
  const dir = launchesDir(spec.home);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stamp = `${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}-${crypto.randomBytes(3).toString('hex')}`;
  const configFile = path.join(dir, `${stamp}.config.json`);
  fs.writeFileSync(configFile, JSON.stringify(spec.config, null, 2) + '\n', { mode: 0o600 });
  const logFile = path.join(dir, `${stamp}.log`);
  const fd = fs.openSync(logFile, 'a', 0o600);
  const node = nodeCommand();
  const startedAt = Date.now();
  let ended: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let child: ChildProcess;
  try {
    child = spawn(node.command, [spec.cli, ...runArguments(spec, configFile)], {
      cwd: spec.cwd,
      env: { ...(spec.env ?? process.env), ...node.env },
      stdio: ['ignore', fd, fd],
      detached: true,
      windowsHide: true,
    });
  } finally {
    fs.closeSync(fd);
  }
  child.on('exit', (code, signal) => {
    ended = { code, signal };
  });
  child.on('error', (e) => {
    ended = { code: null, signal: null };
    fs.appendFileSync(logFile, `cannot start ${node.command}: ${e.message}\n`);
  });
  child.unref();
  if (child.pid === undefined) {
    // spawn failed synchronously enough to have no pid: the 'error' event follows.
    ended ??= { code: null, signal: null };
  }
  return { pid: child.pid ?? -1, logFile, configFile, startedAt, exit: () => ended, child };
}

/** The last lines of a log, for an error message. */
export function logTail(file: string, maxLines = 20): string {
  try {
    const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    return lines.slice(-maxLines).join('\n');
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The run whose state.json names `pid` on this host and that started, or was last written, since `since` (a run an
 * orchestrator took over keeps its startedAt), or undefined.
 */
export function findRunByPid(home: string, pid: number, since: number): RunInfo | undefined {
  let ids: string[];
  try {
    ids = fs.readdirSync(path.join(home, 'runs'));
  } catch {
    return undefined;
  }
  const host = shortHost();
  for (const id of ids.sort().reverse()) {
    const stateFile = path.join(runDir(home, id), 'state.json');
    const read = readState(stateFile);
    if (!('state' in read)) continue;
    const s = read.state;
    if (s.pid === pid && s.host === host && (s.startedAt >= since - 1000 || s.heartbeatAt >= since)) return describeRun(s, stateFile);
  }
  return undefined;
}

/**
 * Why an orchestrator that ended before its run started did so, as one line, from its log's tail: the output after
 * the last `lint:` line of advice (info and warning lines do not stop a run; a lint error does and is kept), its
 * indented continuation lines joined with "; ". '' when the tail says nothing else.
 */
export function launchFailureReason(tail: string): string {
  const lines = tail.split('\n').filter((l) => l.trim() && !/^lint: .*: (info|warning) \[/.test(l));
  const head = lines.findIndex((l) => !/^\s/.test(l));
  if (head < 0) return lines.map((l) => l.trim()).join('; ');
  const [first, ...rest] = lines.slice(head).map((l) => l.trim());
  return rest.length ? `${(first as string).replace(/:$/, '')}: ${rest.join('; ')}` : (first as string);
}

/** Thrown when the orchestrator ended before its run started (bad manifest, preflight, config): the log says why. */
export class LaunchError extends Error {
  constructor(
    message: string,
    readonly logFile: string,
  ) {
    super(message);
    this.name = 'LaunchError';
  }
}

/**
 * Waits until the detached orchestrator's run exists (its state.json names the orchestrator's pid), then moves the log
 * to `<home>/launches/<run id>.log`. @throws LaunchError with the log's tail when it ended first or never started
 */
export async function waitForRunStart(home: string, run: DetachedRun, timeoutMs = 60_000): Promise<RunInfo> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const exited = run.exit();
    const info = findRunByPid(home, run.pid, run.startedAt);
    if (info) {
      const named = path.join(launchesDir(home), `${info.state.runId}.log`);
      try {
        fs.renameSync(run.logFile, named);
        run.logFile = named;
      } catch {
        // keep the stamp name
      }
      return info;
    }
    if (exited) {
      const tail = logTail(run.logFile);
      const how = exited.signal ?? `exit ${exited.code}`;
      throw new LaunchError(
        `verdict run could not start: ${launchFailureReason(tail) || `it ended (${how}) before its run started`} (${how}; log: ${run.logFile})${tail ? `\n${tail}` : ''}`,
        run.logFile,
      );
    }
    if (Date.now() > deadline)
      throw new LaunchError(`verdict run (pid ${run.pid}) started no run within ${Math.round(timeoutMs / 1000)} s; see ${run.logFile}`, run.logFile);
    await sleep(100);
  }
}

/**
 * Follows a run through its state.json until it is no longer running (finished, cancelled, or its orchestrator died),
 * calling `onState` on every change. Resolves with the last state. `signal` stops following (resolves with the
 * current state, still running).
 */
export async function followRun(stateFile: string, onState?: (s: RunState) => void, opts: { pollMs?: number; signal?: AbortSignal } = {}): Promise<RunInfo> {
  let last = '';
  for (;;) {
    const read = readState(stateFile);
    if ('state' in read) {
      const key = `${read.state.heartbeatAt}:${JSON.stringify(read.state.tasks)}:${read.state.status}:${read.state.control?.length ?? 0}`;
      if (key !== last) {
        last = key;
        onState?.(read.state);
      }
      const info = describeRun(read.state, stateFile);
      if (info.liveness !== 'running' || opts.signal?.aborted) return info;
    } else if (opts.signal?.aborted) {
      throw new Error(`stopped following ${stateFile} (${read.reason})`);
    }
    await sleep(opts.pollMs ?? 250);
  }
}

/** The work rows of a run (runs.jsonl; a reviewer's `step: "review"` rows left out), by task key, in attempt order. */
export function evalRowsOf(home: string, runId: string): Map<string, EvalRow[]> {
  const out = new Map<string, EvalRow[]>();
  let text: string;
  try {
    text = fs.readFileSync(evalLogPath(home), 'utf8');
  } catch {
    return out;
  }
  const needle = JSON.stringify(runId);
  for (const line of text.split('\n')) {
    if (!line.includes(needle)) continue;
    try {
      const row = JSON.parse(line) as EvalRow;
      // A review row is the reviewer's, not an attempt: its duration, tokens and notes are not the task's.
      if (row.run_id !== runId || (row.step ?? 'work') !== 'work') continue;
      const rows = out.get(row.task_key) ?? [];
      rows.push(row);
      out.set(row.task_key, rows);
    } catch {
      // a torn line is not this run's record
    }
  }
  for (const rows of out.values()) rows.sort((a, b) => a.attempt - b.attempt);
  return out;
}

/**
 * A finished run's {@link RunSummary} from outside its orchestrator: verdicts, branches and commits from state.json,
 * durations, tokens, reasons and check output from its eval rows. `recordErrors` is empty (only the orchestrator's
 * log knows them) and the spend is the sum of the attempts' costs state.json kept.
 */
export function summaryFromRecords(home: string, info: RunInfo): RunSummary {
  const { state } = info;
  const rows = evalRowsOf(home, state.runId);
  const tasks: TaskSummary[] = state.tasks.map((t) => {
    const mine = rows.get(t.key) ?? [];
    const last = mine[mine.length - 1];
    const final = statusInfo(t.status).final;
    const verdict = (final ? t.status : info.liveness === 'cancelled' ? 'CANCELLED' : 'INTERRUPTED') as TaskOutcome;
    const durationMs = mine.length
      ? mine.reduce((n, r) => n + r.duration_ms, 0)
      : t.attempts.reduce((n, a) => n + ((a.endedAt ?? a.startedAt) - a.startedAt), 0);
    let tokens: number | null = 0;
    for (const r of mine) tokens = tokens === null || r.worker_tokens === null ? null : tokens + r.worker_tokens;
    const lastRowIsLast = last !== undefined && last.attempt === t.attempts.length;
    return {
      key: t.key,
      verdict,
      attempts: t.attempts.length,
      durationMs,
      tokens,
      verified: t.verified,
      branch: t.branch,
      commit: t.commit,
      reason: verdict === 'PASS' ? '' : (t.reason ?? (lastRowIsLast ? last.notes : (t.attempts[t.attempts.length - 1]?.notes ?? ''))),
      checkOutput: lastRowIsLast ? last.check_output : '',
    };
  });
  const spent = state.tasks.reduce((n, t) => n + t.attempts.reduce((m, a) => m + (a.costMicroUsd ?? 0), 0), 0);
  return {
    runId: state.runId,
    runName: state.runName,
    stateFile: info.stateFile,
    cancelled: state.status === 'cancelled',
    durationMs: (state.endedAt ?? state.heartbeatAt) - state.startedAt,
    tasks,
    allPassed: tasks.every((t) => t.verdict === 'PASS'),
    recordErrors: [],
    spend: { spentMicroUsd: spent, budgetMicroUsd: null, postgresPending: null },
    state,
  };
}

/**
 * Appends a control command to a run's channel and waits (up to `waitMs`) for its acknowledgment in state.json.
 * Resolves with the command and its acknowledgment, or `ack: null` when the run ended or the time ran out first.
 */
export async function sendControlAndWait(
  stateFile: string,
  cmd: { verb: ControlVerb; task?: string; engine?: string; landed?: Landed; by: string },
  waitMs = 15_000,
): Promise<{ command: ControlCommand; ack: ControlAck | null }> {
  const command = await appendControl(path.dirname(stateFile), {
    verb: cmd.verb,
    ...(cmd.task !== undefined ? { task: cmd.task } : {}),
    ...(cmd.engine !== undefined ? { engine: cmd.engine } : {}),
    ...(cmd.landed !== undefined ? { landed: cmd.landed } : {}),
    by: cmd.by,
    host: shortHost(),
  });
  const deadline = Date.now() + waitMs;
  for (;;) {
    const read = readState(stateFile);
    if ('state' in read) {
      const ack = read.state.control?.find((c) => c.id === command.id);
      if (ack) return { command, ack };
      if (describeRun(read.state, stateFile).liveness !== 'running') return { command, ack: null };
    }
    if (Date.now() > deadline) return { command, ack: null };
    await sleep(100);
  }
}
