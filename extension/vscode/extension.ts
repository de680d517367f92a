import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { registerDashboard } from './dashboard/register';
import { ManifestDiagnostics } from './diagnostics';
import { editorEngines } from './engines';
import { readSettings } from './settings';

/**
 * Wires the extension: one LogOutputChannel, manifest diagnostics and the command table. Everything else lives in
 * extension/core, which never imports vscode.
 */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Verdict', { log: true });
  const diagnostics = new ManifestDiagnostics(() => editorEngines(log), () => readSettings().allowFullAccess, log);
  context.subscriptions.push(
    log,
    diagnostics,
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('verdict')) diagnostics.refreshAll();
    }),
    ...registerCommands({ log, diagnostics }),
    ...registerDashboard(context, { log }),
  );
}

export function deactivate(): void {
  // every disposable is in context.subscriptions
}
