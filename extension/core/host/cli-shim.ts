// The `verdict` command of the integrated terminal: a small launcher file that runs the CLI bundled with the
// extension on the Node the editor runs on, so a .vsix install needs no `npm i -g` for `verdict` to work there.
import fs from 'node:fs';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';

/** How to start the bundled CLI: the Node binary and the environment it needs (run/run-launch.ts nodeCommand). */
export interface NodeCommand {
  command: string;
  env: Record<string, string>;
}

/** A word for `sh`: single-quoted, with each `'` written as `'\''`. */
function shWord(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * The launcher's file name and text for `platform`: on Windows `verdict.cmd`, elsewhere an `sh` script `verdict`
 * that execs `node cli "$@"` with `node.env` set.
 */
export function cliShimText(cli: string, node: NodeCommand, platform: NodeJS.Platform = process.platform): { name: string; text: string } {
  if (platform === 'win32') {
    const sets = Object.entries(node.env)
      .map(([k, v]) => `set "${k}=${v}"\r\n`)
      .join('');
    return { name: 'verdict.cmd', text: `@echo off\r\nsetlocal\r\n${sets}"${node.command}" "${cli}" %*\r\n` };
  }
  const env = Object.entries(node.env)
    .map(([k, v]) => `${k}=${shWord(v)} `)
    .join('');
  return {
    name: 'verdict',
    text: `#!/bin/sh\n# Written by the Verdict extension: its bundled CLI on the editor's own Node.\n${env}exec ${shWord(node.command)} ${shWord(cli)} "$@"\n`,
  };
}

/**
 * Writes the launcher into `dir` (created when missing) unless it already holds the same text, executable (0755), and
 * returns its absolute path.
 * @throws Error from the filesystem when `dir` cannot be created or written
 */
export function writeCliShim(dir: string, cli: string, node: NodeCommand, platform: NodeJS.Platform = process.platform): string {
  const { name, text } = cliShimText(cli, node, platform);
  const file = path.join(dir, name);
  fs.mkdirSync(dir, { recursive: true });
  let current: string | null = null;
  try {
    current = fs.readFileSync(file, 'utf8');
  } catch {
    // not written yet
  }
  if (current !== text) writeFileAtomic.sync(file, text, { mode: 0o755 });
  return file;
}
