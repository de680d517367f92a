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
  if (opts.show !== false) {
    const uri = vscode.Uri.from({ scheme: DOCTOR_SCHEME, path: '/verdict doctor.log', query: String(++reportCount) });
    doctorReports.set(uri, `$ verdict doctor${opts.probe ? ' --probe' : ''}\n\n${text}\n`);
    const doc = await vscode.languages.setTextDocumentLanguage(await vscode.workspace.openTextDocument(uri), 'log');
    await vscode.window.showTextDocument(doc, { preview: true });
  }
  return { exitCode, text };
}

/** The URI scheme of doctor reports: read-only documents (an untitled one asked to be saved when closed). */
export const DOCTOR_SCHEME = 'verdict-doctor';
let reportCount = 0;

/** The reports Verdict: Doctor showed, by URI (each report a document of its own; a few KB each). */
class DoctorReports implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  set(uri: vscode.Uri, text: string): void {
    this.texts.set(uri.toString(), text);
  }
  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? 'This doctor report is gone (the window was reloaded): run Verdict: Doctor again.\n';
  }
}

/** The provider extension.ts registers for {@link DOCTOR_SCHEME}. */
export const doctorReports = new DoctorReports();
