import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import pkg from '../../../package.json';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { resolveHome } from '../../core/config/home';
import { packageRoot } from '../package-root';
import { InputError, type Io } from '../io';
import { createMcpServer } from './server';
import { Workspace } from './workspace';

/** Flags of `verdict mcp`. */
export interface McpFlags {
  home?: string;
  config?: string;
  workspace?: string;
  identity?: string;
}

/** The CLI a detached run (or a registered hook or server) is started with: this process's own script when it is
 * dist/cli.js, else the package's. */
export function cliPath(): string {
  const self = process.argv[1] ? path.resolve(process.argv[1]) : '';
  if (self.endsWith('cli.js') && fs.existsSync(self)) return self;
  return path.join(packageRoot(), 'dist', 'cli.js');
}

/** This Node and this CLI, absolute: how install-agent's hooks and MCP registration start Verdict. */
export function verdictLaunch(): { node: string; cli: string } {
  return { node: process.execPath, cli: cliPath() };
}

/**
 * `verdict mcp`: serves the MCP server over stdio until stdin closes. stdout carries the protocol only: anything
 * else in this process that writes to stdout (a console.log deep in a library) is sent to stderr instead, so a stray
 * line can never corrupt a message. Resolves 0 when the client disconnects.
 * @throws InputError when the workspace does not exist
 */
export async function mcpCommand(flags: McpFlags, io: Io): Promise<number> {
  let workspace: Workspace;
  try {
    workspace = new Workspace(flags.workspace ?? process.cwd());
  } catch (e) {
    throw new InputError(`--workspace: ${(e as Error).message}`);
  }
  const realWrite = process.stdout.write.bind(process.stdout) as (chunk: unknown, encoding?: unknown, cb?: unknown) => boolean;
  const protocolOut = new Writable({
    write(chunk, encoding, cb) {
      realWrite(chunk, encoding, cb);
    },
  });
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  const server = createMcpServer({
    home: resolveHome(flags.home),
    workspace,
    config: flags.config,
    identity: flags.identity,
    cli: cliPath(),
    version: pkg.version,
  });
  const transport = new StdioServerTransport(process.stdin, protocolOut);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
  });
  await server.connect(transport);
  io.err(`verdict mcp: serving on stdio (workspace ${workspace.root}, home ${resolveHome(flags.home)})`);
  process.stdin.on('end', () => void server.close());
  await closed;
  return 0;
}
