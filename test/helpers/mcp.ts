import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI } from './cli';

/**
 * A client connected to `verdict mcp --home HOME --workspace WORKSPACE` over stdio (the SDK's own client), with
 * every transport error it saw and the server's stderr so far. `env` is added to the server's environment
 * (VERDICT_CONFIG: a config file of the test's own).
 */
export async function connectMcp(
  home: string,
  workspace: string,
  env: Record<string, string> = {},
): Promise<{ client: Client; errors: Error[]; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--home', home, '--workspace', workspace],
    cwd: workspace,
    env: { ...(process.env as Record<string, string>), VERDICT_IDENTITY: 'mcp-tester', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: 'verdict-test', version: '0.0.0' });
  const errors: Error[] = [];
  client.onerror = (e) => void errors.push(e);
  await client.connect(transport);
  return { client, errors, stderr: () => stderr };
}

/** Calls a tool; the answer with its text joined and, when the first content is JSON, parsed as `json` (else null). */
export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult & { json: any; text: string }> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
  let json: unknown = null;
  try {
    json = JSON.parse((r.content[0] as { text: string }).text);
  } catch {
    // an error message, not JSON
  }
  return { ...r, json, text };
}
