import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictConfig } from '../core/config/config';
import { resolveHome, runDir } from '../core/config/home';
import { resolveIdentity } from '../core/host/identity';
import type { RunInfo } from '../core/live/registry';
import { followRun, launchDetached, sendControlAndWait, summaryFromRecords, waitForRunStart, type DetachedRun } from '../core/run/run-launch';
import type { RunState } from '../core/live/state';
import { startGate, startGateLines } from '../core/manifest/lint';
import { FROZEN_MANIFEST_FIX, lintFrozenManifest } from '../core/run/frozen-manifest';
import { readState } from '../core/live/registry';
import type { RunSummary } from '../core/run/runner';
import { statusInfo, type Verdict } from '../../schemas/status';
import { editorEngines } from './engines';
import { readSettings, type EditorSettings } from './settings';
import { lintManifestFile, loadManifest } from '../core/run/manifest';
import { WORKFLOW_SECTIONS } from '../core/run/workflows';

/** What a caller of a run started from the editor is told, derived from the run's state.json. */
export type LaunchEvent =
  | { type: 'run-started'; runId: string; stateFile: string; pid: number; logFile: string }
  /** willRetry: the task is not settled after this attempt (another follows); branch: the task branch, null in plain mode. */
  | { type: 'attempt-finished'; key: string; attempt: number; verdict: Verdict; reason: string; willRetry: boolean; branch: string | null };

/** Options of a run started from the editor (command, API, Test Explorer, Rerun Task). */
export interface LaunchOptions {
  /** Run only these task keys. */
  only?: readonly string[];
  maxParallel?: number;
  identity?: string;
  baseline?: boolean;
  /** Cancels the run (a `cancel` through its control channel). */
  token?: vscode.CancellationToken;
  onEvent?: (e: LaunchEvent) => void;
}

/** Thrown when something would execute in an untrusted workspace. */
export class UntrustedWorkspaceError extends Error {
  constructor(what: string) {
    super(
      `Verdict will not ${what} in an untrusted workspace: that executes workers and checks from the manifest. Trust the workspace (Manage Workspace Trust) first.`,
    );
    this.name = 'UntrustedWorkspaceError';
  }
}

/**
 * Thrown when lint finds an error in the manifest a run would start from (core/manifest/lint.ts startGate, the rule of
 * the CLI and the MCP tools too): the first line says what was refused and how many errors, one line per error follows
 * (`file:line:column: error [rule] (task) message`). The editor does not force a start; `verdict run --force` does.
 */
export class LintRefusedError extends Error {
  constructor(lines: string[]) {
    super(lines.join('\n'));
    this.name = 'LintRefusedError';
  }
}

/** Refuses to execute anything while the workspace is untrusted. @throws UntrustedWorkspaceError */
export function requireTrust(what: string): void {
  if (!vscode.workspace.isTrusted) throw new UntrustedWorkspaceError(what);
}

/**
 * The settings as a config file for the orchestrator (`verdict run --config`): the editor's effective settings
 * (readSettings: `verdict.*` over the user's config file), so the CLI applies the same precedence. Engines are the
 * editor's (the config file's under `verdict.engines`), as the editor's diagnostics see them.
 */
export function configForRun(s: EditorSettings): VerdictConfig {
  const c: VerdictConfig = { engines: s.engines, allow_full_access: s.allowFullAccess, sandbox: s.sandbox };
  if (s.identity !== undefined) c.identity = s.identity;
  if (s.maxParallel !== undefined) c.max_parallel = s.maxParallel;
  if (s.postgresUrl !== undefined) c.postgres_url = s.postgresUrl;
  // pool.trust is the config file's alone (no editor setting turns the re-check of a worker's PASS off).
  if (s.poolTrust === 'worker') c.pool = { ...(s.poolUrl !== undefined ? { url: s.poolUrl } : {}), trust: 'worker' };
  else if (s.poolUrl !== undefined) c.pool = s.poolUrl;
  if (s.sockets.length) c.sockets = s.sockets;
  if (s.quotaMaxWaitH !== undefined) c.quota = { max_wait_h: s.quotaMaxWaitH };
  if (s.hide.length) c.hide = s.hide;
  if (s.expose.length) c.expose = s.expose;
  return c;
}

/** Who the editor says it is when it sends a control command (same rule as a run's identity). */
export function editorIdentity(): string {
  const s = readSettings();
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
  return resolveIdentity({ flag: s.identityFlag, cwd: folder, configDefault: s.identity }).identity;
}

/**
 * Starts runs as detached `verdict run` processes (the bundled CLI on this host's Node) and follows them through
 * VERDICT_HOME. The orchestrators are not this window's: disposing the launcher (window reload or close) stops
 * following them, and they go on; any window, the CLI or the dashboard controls them through their control channel.
 */
export class RunLauncher implements vscode.Disposable {
  private readonly stop = new AbortController();
  private readonly started = new Map<string, DetachedRun>();

  /** @param cli the bundled CLI, `<extension>/dist/cli.js` */
  constructor(
    readonly cli: string,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** The orchestrators this window started, by run id (pid and log). */
  launched(): ReadonlyMap<string, Pick<DetachedRun, 'pid' | 'logFile'>> {
    return this.started;
  }

  /**
   * Validates the manifest in the editor (so a bad one fails here with file:line:column), then starts its
   * orchestrator detached and resolves once its run exists.
   * @throws UntrustedWorkspaceError, ManifestError, LintRefusedError (a lint error in the manifest), LaunchError (the
   *   orchestrator ended before its run started: bad config, preflight; its log's tail is in the message), Error for
   *   unknown task keys or a bad config file
   */
  async start(file: string, options: LaunchOptions = {}): Promise<RunInfo> {
    requireTrust('run a manifest');
    const s = readSettings();
    if (s.configError) throw new Error(s.configError);
    const engines = editorEngines(this.log);
    const { manifest } = loadManifest(file, { engines: new Set(engines.keys()), route: s.route });
    const gate = startGate(await lintManifestFile(manifest.file, { engines, allowFullAccess: s.allowFullAccess, trusted: true, route: s.route }), false);
    if (gate.refused) throw new LintRefusedError(startGateLines(gate, `will not run ${manifest.file}`, { force: '`verdict run --force`' }));
    if (options.only) {
      const unknown = options.only.filter((k) => !manifest.tasks.some((t) => t.key === k));
      if (unknown.length) throw new Error(`${manifest.file} has no task ${unknown.map((k) => `"${k}"`).join(', ')}`);
    }
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(manifest.file))?.uri.fsPath ?? path.dirname(manifest.file);
    const { identity } = resolveIdentity({ flag: options.identity ?? s.identityFlag, cwd: folder, configDefault: s.identity });
    const home = resolveHome(s.home);
    const run = launchDetached({
      cli: this.cli,
      manifest: manifest.file,
      home,
      cwd: folder,
      config: configForRun(s),
      identity,
      maxParallel: options.maxParallel,
      baseline: options.baseline,
      only: options.only,
      noSandbox: !s.sandbox,
    });
    this.log.info(`started verdict run ${manifest.file} (pid ${run.pid}, detached; log ${run.logFile})`);
    const info = await waitForRunStart(home, run);
    this.started.set(info.state.runId, run);
    this.log.info(`run ${info.state.runId} (${info.state.runName}) started by pid ${run.pid}; state ${info.stateFile}; log ${run.logFile}`);
    options.onEvent?.({ type: 'run-started', runId: info.state.runId, stateFile: info.stateFile, pid: run.pid, logFile: run.logFile });
    return info;
  }

  /**
   * `verdict resume RUN` (or, with `task`, `verdict rerun RUN TASK`) of a run that is not live, detached like a run
   * (see start): the orchestrator that takes the same run over and runs again its tasks that did not pass (or that
   * task and its BLOCKED dependents). Resolves once it has taken the run over (state.json names its pid).
   * @throws UntrustedWorkspaceError, LintRefusedError (a lint error in the run's frozen manifest), LaunchError (e.g.
   *   nothing left to resume: the CLI's message), Error for a bad config file
   */
  async resume(runId: string, manifestFile: string, task?: string): Promise<RunInfo> {
    requireTrust('resume a run');
    const s = readSettings();
    if (s.configError) throw new Error(s.configError);
    const home = resolveHome(s.home);
    // What would run is the run's frozen manifest: a lint error there refuses, as `verdict resume` does (startGate).
    // A state file that cannot be read is left to the CLI, which says why.
    const read = readState(path.join(runDir(home, runId), 'state.json'));
    if ('state' in read) {
      const gate = startGate(
        await lintFrozenManifest(home, read.state, {
          engines: editorEngines(this.log),
          allowFullAccess: s.allowFullAccess,
          trusted: true,
          sections: WORKFLOW_SECTIONS,
        }),
        false,
      );
      const verb = task !== undefined ? 'rerun' : 'resume';
      if (gate.refused)
        throw new LintRefusedError(
          startGateLines(gate, `will not ${verb} run ${runId} (its frozen manifest, from ${read.state.manifestFile})`, {
            force: `\`verdict ${verb} --force\``,
            fix: FROZEN_MANIFEST_FIX,
          }),
        );
    }
    const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(manifestFile))?.uri.fsPath ?? path.dirname(manifestFile);
    const { identity } = resolveIdentity({ flag: s.identityFlag, cwd: folder, configDefault: s.identity });
    const run = launchDetached({
      cli: this.cli,
      manifest: manifestFile,
      resume: runId,
      ...(task !== undefined ? { rerun: task } : {}),
      home,
      cwd: folder,
      config: configForRun(s),
      identity,
      noSandbox: !s.sandbox,
    });
    const what = task !== undefined ? `verdict rerun ${runId} ${task}` : `verdict resume ${runId}`;
    this.log.info(`started ${what} (pid ${run.pid}, detached; log ${run.logFile})`);
    const info = await waitForRunStart(home, run);
    this.started.set(info.state.runId, run);
    this.log.info(`run ${info.state.runId} (${info.state.runName}) taken over by pid ${run.pid} (${what}); log ${run.logFile}`);
    return info;
  }

  /**
   * Starts a run (see start) and follows it to its end; resolves with its summary from state.json and the eval rows.
   * The token cancels it through its control channel. When the launcher is disposed first, rejects (the run goes on).
   */
  async run(file: string, options: LaunchOptions = {}): Promise<RunSummary> {
    const info = await this.start(file, options);
    const home = resolveHome(readSettings().home);
    const cancel = options.token?.onCancellationRequested(() => {
      void sendControlAndWait(info.stateFile, { verb: 'cancel', by: editorIdentity() }).then(({ ack }) =>
        this.log.info(`cancel run ${info.state.runId}: ${ack ? ack.result : 'sent'}`),
      );
    });
    const seen = new Set<string>();
    const onState = (state: RunState) => {
      for (const t of state.tasks) {
        for (const a of t.attempts) {
          const id = `${t.key}#${a.attempt}`;
          if (!a.verdict || seen.has(id)) continue;
          seen.add(id);
          this.log.info(`${t.key} attempt ${a.attempt}: ${a.verdict}${a.notes ? ` — ${a.notes}` : ''}`);
          const last = a === t.attempts[t.attempts.length - 1];
          options.onEvent?.({
            type: 'attempt-finished',
            key: t.key,
            attempt: a.attempt,
            verdict: a.verdict,
            reason: a.notes,
            willRetry: !last || !statusInfo(t.status).final,
            branch: t.branch,
          });
        }
      }
    };
    try {
      const end = await followRun(info.stateFile, onState, { signal: this.stop.signal });
      if (end.liveness === 'running') throw new Error(`stopped following run ${info.state.runId}: the window is closing (the run goes on)`);
      return summaryFromRecords(home, end);
    } finally {
      cancel?.dispose();
    }
  }

  /** Stops following runs; their orchestrators go on. */
  dispose(): void {
    this.stop.abort();
  }
}
