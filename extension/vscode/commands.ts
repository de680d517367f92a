import * as vscode from 'vscode';
import { resolveHome } from '../core/config/home';
import { resolveIdentity } from '../core/identity';
import { loadManifest } from '../core/manifest/load';
import { formatProblem } from '../core/manifest/types';
import { runManifest, type RunSummary } from '../core/run/runner';
import { resolveEngines } from '../../engines';

/** Settings read by the commands (contributes.configuration in package.json). */
function settings() {
  const c = vscode.workspace.getConfiguration('verdict');
  return {
    home: c.get<string>('home') || undefined,
    identity: c.get<string>('identity') || undefined,
    engines: c.get<Record<string, unknown>>('engines') ?? {},
  };
}

/** Runs the manifest in the active editor (or one picked from the workspace) with a cancellable progress. */
async function runManifestCommand(log: vscode.LogOutputChannel): Promise<RunSummary | undefined> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage('Verdict runs nothing in an untrusted workspace: running a manifest executes its workers and checks. Trust the workspace first.');
    return undefined;
  }
  let uri = vscode.window.activeTextEditor?.document.uri;
  if (!uri || !/\.swarm\.jsonc?$/.test(uri.fsPath)) {
    const found = await vscode.workspace.findFiles('**/*.swarm.{json,jsonc}', '**/node_modules/**', 50);
    const pick = await vscode.window.showQuickPick(found.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })), { placeHolder: 'Manifest to run' });
    uri = pick?.uri;
  }
  if (!uri) return undefined;
  const s = settings();
  const engines = resolveEngines(s.engines, 'settings: verdict.engines');
  let manifest;
  try {
    manifest = loadManifest(uri.fsPath, { engines: new Set(engines.keys()) }).manifest;
  } catch (e) {
    log.error((e as Error).message);
    void vscode.window.showErrorMessage(`Verdict: the manifest has errors; see the Verdict output. ${(e as Error).message.split('\n')[0]}`);
    return undefined;
  }
  const cwd = vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath ?? process.cwd();
  const { identity } = resolveIdentity({ flag: s.identity, cwd });
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Verdict: ${manifest.runName}`, cancellable: true }, async (progress, token) => {
    const controller = new AbortController();
    token.onCancellationRequested(() => controller.abort());
    const summary = await runManifest({
      manifest,
      home: resolveHome(s.home),
      identity,
      engines,
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === 'attempt-finished') {
          log.info(`${e.key} attempt ${e.attempt}: ${e.verdict}${e.reason ? ` — ${e.reason}` : ''}`);
          progress.report({ message: `${e.key}: ${e.verdict}` });
        } else if (e.type === 'run-started') log.info(`run ${e.runId} started; state ${e.stateFile}`);
      },
    });
    const passed = summary.tasks.filter((t) => t.verdict === 'PASS').length;
    void vscode.window.showInformationMessage(`Verdict: ${passed}/${summary.tasks.length} passed (run ${summary.runId})`);
    return summary;
  });
}

/** Validates the manifest in the active editor and logs the problems. */
async function lintManifestCommand(log: vscode.LogOutputChannel): Promise<void> {
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc) return;
  try {
    const { warnings } = loadManifest(doc.uri.fsPath, { engines: new Set(resolveEngines(settings().engines, 'settings: verdict.engines').keys()) });
    for (const w of warnings) log.warn(formatProblem(w));
    void vscode.window.showInformationMessage(`Verdict: manifest is valid${warnings.length ? ` (${warnings.length} warning(s))` : ''}`);
  } catch (e) {
    log.error((e as Error).message);
    void vscode.window.showErrorMessage(`Verdict: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** The command table: every command of package.json's contributes.commands, registered in one loop. */
export function registerCommands(log: vscode.LogOutputChannel): vscode.Disposable[] {
  const table: Record<string, (...args: unknown[]) => unknown> = {
    'verdict.runManifest': () => runManifestCommand(log),
    'verdict.lintManifest': () => lintManifestCommand(log),
  };
  return Object.entries(table).map(([id, fn]) => vscode.commands.registerCommand(id, fn));
}
