import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import * as vscode from 'vscode';
import { MCP_PROVIDER_ID, registerMcpProvider } from '../../../extension/vscode/mcp-provider';

/** Sends `initialize` to a stdio MCP server started as `command args` and resolves with its first answer line. */
function initialize(
  command: string,
  args: string[],
  env: Record<string, string | number | null>,
  cwd: string,
): Promise<{ result?: { serverInfo?: { name?: string } } }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])) },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let out = '';
    const timer = setTimeout(() => (child.kill(), reject(new Error(`no answer; stdout: ${out}`))), 30000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.stdin.end();
      try {
        resolve(JSON.parse(out.slice(0, nl)));
      } catch (e) {
        reject(new Error(`not JSON-RPC on stdout: ${out.slice(0, nl)}`));
      }
    });
    child.on('error', reject);
    child.stdin.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'vscode-test', version: '0' } },
      }) + '\n',
    );
  });
}

describe('Verdict MCP server in VS Code (mcpServerDefinitionProviders)', () => {
  it('contributes the provider, registers it on a VS Code with the API, and its definition starts a server that answers MCP', async () => {
    const ext = vscode.extensions.getExtension('verdict-dev.verdict');
    assert.ok(ext);
    await ext.activate();
    const contributed =
      (ext.packageJSON as { contributes: { mcpServerDefinitionProviders?: { id: string }[] } }).contributes.mcpServerDefinitionProviders ?? [];
    assert.deepEqual(
      contributed.map((c) => c.id),
      [MCP_PROVIDER_ID],
    );
    const lm = (vscode as unknown as { lm?: { registerMcpServerDefinitionProvider?: unknown } }).lm;
    assert.equal(typeof lm?.registerMcpServerDefinitionProvider, 'function', `VS Code ${vscode.version} has the API`);

    // The provider the extension registers, captured through the same function with VS Code's own definition class.
    let provider: { provideMcpServerDefinitions(token: vscode.CancellationToken): unknown[] } | undefined;
    const Definition = (vscode as unknown as { McpStdioServerDefinition: new (...a: never[]) => unknown }).McpStdioServerDefinition;
    const log = vscode.window.createOutputChannel('Verdict MCP test', { log: true });
    const disposables = registerMcpProvider(path.join(ext.extensionPath, 'dist', 'cli.js'), '0', log, {
      lm: { registerMcpServerDefinitionProvider: (_id, p) => ((provider = p), new vscode.Disposable(() => undefined)) },
      McpStdioServerDefinition: Definition as never,
    });
    try {
      assert.ok(provider);
      const defs = provider.provideMcpServerDefinitions(new vscode.CancellationTokenSource().token) as {
        label: string;
        command: string;
        args: string[];
        env: Record<string, string | number | null>;
        cwd?: vscode.Uri;
      }[];
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
      assert.ok(folder);
      if (!vscode.workspace.isTrusted) {
        // The untrusted-workspace session: the server starts runs, so an untrusted workspace is offered none.
        assert.deepEqual(defs, []);
        return;
      }
      assert.equal(defs.length, vscode.workspace.workspaceFolders?.length);
      assert.ok(defs[0] instanceof Definition);
      assert.deepEqual(defs[0]!.args.slice(1, 4), ['mcp', '--workspace', folder]);
      const answer = await initialize(defs[0]!.command, defs[0]!.args, defs[0]!.env, folder);
      assert.equal(answer.result?.serverInfo?.name, 'verdict', JSON.stringify(answer));
    } finally {
      for (const d of disposables) d.dispose();
      log.dispose();
    }
    // An older VS Code (no vscode.lm.registerMcpServerDefinitionProvider): nothing is registered, nothing throws.
    const none = vscode.window.createOutputChannel('Verdict MCP test 2', { log: true });
    assert.deepEqual(registerMcpProvider('/x/cli.js', '0', none, {}), []);
    none.dispose();
  });
});
