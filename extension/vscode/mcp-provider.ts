import * as vscode from 'vscode';
import { resolveHome } from '../core/config/home';
import { nodeCommand } from '../core/run/run-launch';
import { readSettings } from './settings';

/**
 * Offers `verdict mcp` (the bundled CLI's MCP server) to VS Code's own MCP support, so chat agents in the editor get
 * Verdict's tools without any configuration. The API (`vscode.lm.registerMcpServerDefinitionProvider`,
 * `vscode.McpStdioServerDefinition`, contribution point `mcpServerDefinitionProviders`) is VS Code 1.101+; this
 * extension's `engines.vscode` stays lower, so it is feature-detected: on an older VS Code nothing is registered (the
 * contribution point is ignored there) and a person registers `verdict mcp` by hand (docs/agents.md).
 */

/** The provider id, as in package.json `contributes.mcpServerDefinitionProviders`. */
export const MCP_PROVIDER_ID = 'verdict.mcp';

/** The part of VS Code 1.101's API this module uses (the typings this project builds against predate it). */
interface McpApi {
  lm?: {
    registerMcpServerDefinitionProvider?: (
      id: string,
      provider: { onDidChangeMcpServerDefinitions?: vscode.Event<void>; provideMcpServerDefinitions(token: vscode.CancellationToken): unknown[] },
    ) => vscode.Disposable;
  };
  McpStdioServerDefinition?: new (
    label: string,
    command: string,
    args?: string[],
    env?: Record<string, string | number | null>,
    version?: string,
  ) => { cwd?: vscode.Uri };
}

/** The arguments of `verdict mcp` for a workspace folder and the home the editor uses. */
export function mcpServerArgs(cli: string, folder: string, home: string): string[] {
  return [cli, 'mcp', '--workspace', folder, '--home', home];
}

/**
 * Registers the provider when this VS Code has the API; returns its disposables (none on an older VS Code). One
 * server per trusted workspace folder; an untrusted workspace offers none (the server starts runs).
 * @param cli the bundled CLI, `<extension>/dist/cli.js`
 */
export function registerMcpProvider(
  cli: string,
  version: string,
  log: vscode.LogOutputChannel,
  api: McpApi = vscode as unknown as McpApi,
): vscode.Disposable[] {
  const register = api.lm?.registerMcpServerDefinitionProvider;
  const Definition = api.McpStdioServerDefinition;
  if (!register || !Definition) {
    log.info("this VS Code has no MCP server API (1.101+): Verdict's MCP server is not offered to it; register `verdict mcp` by hand (docs/agents.md)");
    return [];
  }
  const changed = new vscode.EventEmitter<void>();
  const node = nodeCommand();
  const provider = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: () => {
      if (!vscode.workspace.isTrusted) return [];
      const home = resolveHome(readSettings().home);
      return (vscode.workspace.workspaceFolders ?? []).map((f) => {
        const label = (vscode.workspace.workspaceFolders?.length ?? 0) > 1 ? `Verdict (${f.name})` : 'Verdict';
        const d = new Definition(label, node.command, mcpServerArgs(cli, f.uri.fsPath, home), node.env, version);
        d.cwd = f.uri;
        return d;
      });
    },
  };
  const disposables: vscode.Disposable[] = [changed, register.call(api.lm, MCP_PROVIDER_ID, provider)];
  disposables.push(
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => changed.fire()),
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('verdict.home') && changed.fire()),
  );
  log.info("offered Verdict's MCP server to VS Code (mcpServerDefinitionProviders: verdict.mcp)");
  return disposables;
}
