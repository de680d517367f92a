import * as vscode from 'vscode';
import { resolveHome } from '../core/config/home';
import { resolveIdentity } from '../core/identity';
import { loadManifest } from '../core/manifest/load';
import { runManifest, type RunSummary } from '../core/run/runner';
import type { ManifestDiagnostics } from './diagnostics';
import { isManifestDocument } from './diagnostics';
import { editorEngines } from './engines';
import { readSettings } from './settings';

/** What the commands share. */
export interface CommandContext {
  log: vscode.LogOutputChannel;
  diagnostics: ManifestDiagnostics;
}

/** The active editor's manifest, or one picked from the workspace; undefined when the user picks none. */
async function pickManifest(): Promise<vscode.Uri | undefined> {
  const active = vscode.window.activeTextEditor?.document;
  if (active && isManifestDocument(active)) return active.uri;
  const found = await vscode.workspace.findFiles('**/*.swarm.{json,jsonc}', '**/node_modules/**', 200);
  if (found.length === 1) return found[0];
  const pick = await vscode.window.showQuickPick(found.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })), { placeHolder: 'Manifest' });
  return pick?.uri;
}

/** Runs a manifest with a cancellable progress notification; lint findings go to the Problems panel first. */
async function runManifestCommand(ctx: CommandContext, target?: vscode.Uri): Promise<RunSummary | undefined> {
  if (!vscode.workspace.isTrusted) {
    void vscode.window.showWarningMessage('Verdict runs nothing in an untrusted workspace: running a manifest executes its workers and checks. Trust the workspace first.');
    return undefined;
  }
  const uri = target instanceof vscode.Uri ? target : await pickManifest();
  if (!uri) return undefined;
  const doc = await vscode.workspace.openTextDocument(uri);
  if (doc.isDirty) await doc.save();
  const findings = await ctx.diagnostics.lintNow(doc);
  const errors = findings.filter((f) => f.severity === 'error');
  if (errors.length) {
    void vscode.commands.executeCommand('workbench.actions.view.problems');
    void vscode.window.showErrorMessage(`Verdict: ${vscode.workspace.asRelativePath(uri)} has ${errors.length} error(s); see the Problems panel.`);
    return undefined;
  }
  const s = readSettings();
  const engines = editorEngines(ctx.log);
  const { manifest } = loadManifest(uri.fsPath, { engines: new Set(engines.keys()) });
  const cwd = vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath ?? process.cwd();
  const { identity } = resolveIdentity({ flag: s.identity, cwd });
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Verdict: ${manifest.runName}`, cancellable: true }, async (progress, token) => {
    const controller = new AbortController();
    token.onCancellationRequested(() => controller.abort());
    try {
      const summary = await runManifest({
        manifest,
        home: resolveHome(s.home),
        identity,
        engines,
        maxParallel: 'max_parallel' in (manifest.raw as object) ? undefined : s.maxParallel,
        signal: controller.signal,
        onEvent: (e) => {
          if (e.type === 'attempt-finished') {
            ctx.log.info(`${e.key} attempt ${e.attempt}: ${e.verdict}${e.reason ? ` — ${e.reason}` : ''}`);
            progress.report({ message: `${e.key}: ${e.verdict}` });
          } else if (e.type === 'run-started') ctx.log.info(`run ${e.runId} started; state ${e.stateFile}`);
        },
      });
      const passed = summary.tasks.filter((t) => t.verdict === 'PASS').length;
      void vscode.window.showInformationMessage(`Verdict: ${passed}/${summary.tasks.length} passed (run ${summary.runId})`);
      return summary;
    } catch (e) {
      ctx.log.error((e as Error).message);
      void vscode.window.showErrorMessage(`Verdict: cannot run ${manifest.runName}: ${(e as Error).message.split('\n')[0]}`);
      return undefined;
    }
  });
}

/** Lints a manifest now and opens the Problems panel. */
async function lintManifestCommand(ctx: CommandContext, target?: vscode.Uri): Promise<void> {
  const uri = target instanceof vscode.Uri ? target : await pickManifest();
  if (!uri) return;
  const findings = await ctx.diagnostics.lintNow(await vscode.workspace.openTextDocument(uri));
  void vscode.commands.executeCommand('workbench.actions.view.problems');
  ctx.log.info(`${vscode.workspace.asRelativePath(uri)}: ${findings.length} finding(s)`);
}

/** The command table: every command of package.json's contributes.commands, registered in one loop. */
export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  const table: Record<string, (...args: unknown[]) => unknown> = {
    'verdict.runManifest': (uri) => runManifestCommand(ctx, uri as vscode.Uri | undefined),
    'verdict.lintManifest': (uri) => lintManifestCommand(ctx, uri as vscode.Uri | undefined),
  };
  return Object.entries(table).map(([id, fn]) => vscode.commands.registerCommand(id, fn));
}
