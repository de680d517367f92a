import * as vscode from 'vscode';
import { registerCommands } from './commands';

/**
 * Wires the extension: one LogOutputChannel and the command table. Everything else lives in extension/core, which
 * never imports vscode.
 */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Verdict', { log: true });
  context.subscriptions.push(log, ...registerCommands(log));
}

export function deactivate(): void {
  // runs in flight are cancelled by their own disposables
}
