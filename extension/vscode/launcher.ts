import * as vscode from 'vscode';
import { postgresUrlOf } from '../core/config/config';
import { resolveHome } from '../core/config/home';
import { containmentChoice } from '../core/config/settings';
import { resolveIdentity } from '../core/host/identity';
import { loadManifest } from '../core/manifest/load';
import type { Manifest } from '../core/manifest/types';
import { runManifest, type RunEvent, type RunSummary } from '../core/run/runner';
import { editorEngines } from './engines';
import type { RunSessions } from './sessions';
import { readSettings } from './settings';

/** Options of a run started from the editor (command, API, Test Explorer). */
export interface LaunchOptions {
  /** Run only these task keys. */
  only?: readonly string[];
  maxParallel?: number;
  identity?: string;
  baseline?: boolean;
  /** Cancels the run. */
  token?: vscode.CancellationToken;
  onEvent?: (e: RunEvent) => void;
}

/** Thrown when something would execute in an untrusted workspace. */
export class UntrustedWorkspaceError extends Error {
  constructor(what: string) {
    super(`Verdict will not ${what} in an untrusted workspace: that executes workers and checks from the manifest. Trust the workspace (Manage Workspace Trust) first.`);
    this.name = 'UntrustedWorkspaceError';
  }
}

/** Refuses to execute anything while the workspace is untrusted. @throws UntrustedWorkspaceError */
export function requireTrust(what: string): void {
  if (!vscode.workspace.isTrusted) throw new UntrustedWorkspaceError(what);
}

/**
 * Loads a manifest and runs it (all tasks or `only`), registering the run in `sessions` so it can be cancelled and
 * its tasks stopped from the runs tree.
 * @throws UntrustedWorkspaceError, ManifestError (file:line:column), PreflightError, Error for unknown task keys or
 *   a config file that does not load (its message names the file and field)
 */
export async function launchManifest(file: string, sessions: RunSessions, log: vscode.LogOutputChannel, options: LaunchOptions = {}): Promise<RunSummary> {
  requireTrust('run a manifest');
  const engines = editorEngines(log);
  const { manifest } = loadManifest(file, { engines: new Set(engines.keys()) });
  return launchLoaded(manifest, sessions, log, options);
}

/** Runs an already loaded manifest (see launchManifest). */
export async function launchLoaded(manifest: Manifest, sessions: RunSessions, log: vscode.LogOutputChannel, options: LaunchOptions = {}): Promise<RunSummary> {
  requireTrust('run a manifest');
  const s = readSettings();
  if (s.configError) throw new Error(s.configError);
  if (options.only) {
    const unknown = options.only.filter((k) => !manifest.tasks.some((t) => t.key === k));
    if (unknown.length) throw new Error(`${manifest.file} has no task ${unknown.map((k) => `"${k}"`).join(', ')}`);
    manifest = { ...manifest, tasks: manifest.tasks.filter((t) => options.only?.includes(t.key)) };
  }
  const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(manifest.file))?.uri.fsPath ?? process.cwd();
  const { identity } = resolveIdentity({ flag: options.identity ?? s.identityFlag, cwd: folder, configDefault: s.identity });
  const { abort, control } = sessions.create();
  const cancel = options.token?.onCancellationRequested(() => abort.abort());
  let runId: string | null = null;
  try {
    return await runManifest({
      manifest,
      home: resolveHome(s.home),
      identity,
      engines: editorEngines(log),
      maxParallel: options.maxParallel ?? ('max_parallel' in (manifest.raw as object) ? undefined : s.maxParallel),
      baseline: options.baseline,
      postgresUrl: postgresUrlOf({ postgres_url: s.postgresUrl }),
      ...containmentChoice(s),
      signal: abort.signal,
      control,
      onEvent: (e) => {
        if (e.type === 'run-started') {
          runId = e.runId;
          sessions.register({ runId, abort, control });
          log.info(`run ${e.runId} (${manifest.runName}) started; state ${e.stateFile}`);
        } else if (e.type === 'attempt-finished') {
          log.info(`${e.key} attempt ${e.attempt}: ${e.verdict}${e.reason ? ` — ${e.reason}` : ''}`);
        }
        options.onEvent?.(e);
      },
    });
  } finally {
    cancel?.dispose();
    if (runId) sessions.end(runId);
  }
}
