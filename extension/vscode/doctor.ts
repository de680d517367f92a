import { execa } from 'execa';
import * as vscode from 'vscode';
import { resolveHome } from '../core/config/home';
import { nodeCommand } from '../core/run/run-launch';
import { readSettings } from './settings';

/** What Verdict: Doctor found: the CLI's exit code (0 a run can start here, 1 not) and its report. */
export interface DoctorResult {
  exitCode: number;
  text: string;
}

/**
 * Verdict: Doctor — `verdict doctor` of the bundled CLI on the editor's own Node, for the VERDICT_HOME the settings
 * name; the report opens as a text document (every problem with the command that fixes it). `{ probe: true }` also
 * sends each installed, logged-in engine a one-line prompt (a real model call). `{ show: false }` only returns it.
 */
export async function runDoctor(cli: string, log: vscode.LogOutputChannel, opts: { probe?: boolean; show?: boolean } = {}): Promise<DoctorResult> {
  const node = nodeCommand();
  const args = [cli, 'doctor', '--home', resolveHome(readSettings().home), ...(opts.probe ? ['--probe'] : [])];
  const r = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Verdict: doctor' }, () =>
    execa(node.command, args, { env: { ...process.env, ...node.env }, reject: false, all: true, stdin: 'ignore', timeout: 300_000 }),
  );
  const text = String(r.all ?? '');
  const exitCode = r.exitCode ?? 2;
  log.info(`verdict doctor: exit ${exitCode}\n${text}`);
  if (opts.show !== false) await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ content: `$ verdict doctor${opts.probe ? ' --probe' : ''}\n\n${text}\n`, language: 'log' }), { preview: true });
  return { exitCode, text };
}
