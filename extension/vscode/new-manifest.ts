import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { freeManifestName, listTemplates, planTemplate, templateEnginesLine, writeTemplate, type Template } from '../core/manifest/templates';
import { findBinary } from '../../engines/find-binary';
import { editorEngines } from './engines';
import { notificationLine } from '../core/run/notices';

/**
 * What "Verdict: New Manifest" may be given instead of asking (tests, other extensions): the template id, the target
 * folder, and what to do when the manifest's name is taken (`rename`: the next free name; `cancel`: write nothing).
 */
export interface NewManifestArgs {
  template?: string;
  folder?: string;
  onConflict?: 'rename' | 'cancel';
}

/** What the command did: the files written (manifest first), or why nothing was. */
export type NewManifestResult = { written: string[] } | { refused: string } | undefined;

/** The folder the explorer's context menu was opened on (a file: its folder), if any. */
function folderOf(target: unknown): string | undefined {
  if (!(target instanceof vscode.Uri) || target.scheme !== 'file') return undefined;
  try {
    return fs.statSync(target.fsPath).isDirectory() ? target.fsPath : path.dirname(target.fsPath);
  } catch {
    return undefined;
  }
}

/**
 * The picker's items: the title, the id and which engines the template needs (those not on the extension host's PATH
 * marked `(not installed)`, a template that names only the script engine said to run with no model), the description.
 */
export function templatePickItems(templates: Template[], log: vscode.LogOutputChannel): (vscode.QuickPickItem & { t: Template })[] {
  const engines = editorEngines(log);
  const installed = (name: string) => {
    const e = engines.get(name);
    return e ? findBinary(e.binary, process.env.PATH ?? '') !== null : false;
  };
  return templates.map((t) => ({ label: t.title, description: `${t.id} — ${templateEnginesLine(t, installed)}`, detail: t.description, t }));
}

async function pickTemplate(templates: Template[], log: vscode.LogOutputChannel): Promise<Template | undefined> {
  const pick = await vscode.window.showQuickPick(templatePickItems(templates, log), {
    placeHolder: 'A template for the new manifest',
    matchOnDescription: true,
    matchOnDetail: true,
  });
  return pick?.t;
}

async function pickFolder(): Promise<string | undefined> {
  const [uri] =
    (await vscode.window.showOpenDialog({
      canSelectFolders: true,
      canSelectFiles: false,
      canSelectMany: false,
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
      openLabel: 'Write the manifest here',
    })) ?? [];
  return uri?.fsPath;
}

/**
 * Verdict: New Manifest. Picks a template (quick pick: title, id and the engines it needs, one-line description), a folder (the explorer
 * folder it was opened on, else a folder dialog), writes the template's manifest and support files there and opens
 * the manifest. Never overwrites: when the manifest's name is taken it offers the next free name (`foo-2.swarm.json`);
 * a support file (a check script the manifest names) that exists with other contents refuses the whole write.
 * @param templatesDir the extension's templates/ folder
 */
export async function newManifest(
  templatesDir: string,
  log: vscode.LogOutputChannel,
  target?: unknown,
  args: NewManifestArgs = {},
): Promise<NewManifestResult> {
  const templates = listTemplates(templatesDir);
  if (!templates.length) return refuse(`no templates in ${templatesDir}`);
  const t = args.template !== undefined ? templates.find((x) => x.id === args.template) : await pickTemplate(templates, log);
  if (!t) return args.template !== undefined ? refuse(`no template "${args.template}" (there are: ${templates.map((x) => x.id).join(', ')})`) : undefined;
  const folder = args.folder ?? folderOf(target) ?? (await pickFolder());
  if (!folder) return undefined;
  fs.mkdirSync(folder, { recursive: true });

  let plan = planTemplate(t, folder);
  const manifestName = t.files[0] as string;
  const support = plan.conflicts.filter((c) => c !== manifestName);
  if (support.length)
    return refuse(
      `${support.map((c) => path.join(folder, c)).join(', ')} already exist(s) with other contents; the manifest's checks name them, so nothing was written. Choose another folder.`,
    );
  if (plan.conflicts.length) {
    const free = freeManifestName(t, folder);
    const choice =
      args.onConflict ??
      ((await vscode.window.showWarningMessage(`${path.join(folder, manifestName)} already exists.`, { modal: true }, `Write ${free}`)) ? 'rename' : 'cancel');
    if (choice !== 'rename') return { refused: `${manifestName} exists` };
    plan = planTemplate(t, folder, free);
  }
  const written = writeTemplate(t, folder, plan);
  log.info(`New Manifest (${t.id}): wrote ${written.join(', ')}`);
  await vscode.window.showTextDocument(vscode.Uri.file(written[0] as string));
  void vscode.window.showInformationMessage(
    `Verdict: wrote ${path.basename(written[0] as string)}${written.length > 1 ? ` and ${written.length - 1} support file(s)` : ''} from the ${t.id} template: adapt the tasks, checks and engines (the template's README says how), then run it.`,
  );
  return { written };

  function refuse(message: string): NewManifestResult {
    log.warn(`New Manifest: ${message}`);
    void vscode.window.showErrorMessage(`Verdict: ${notificationLine(message)}`, 'Show Log').then((pick) => {
      if (pick === 'Show Log') log.show(true);
    });
    return { refused: message };
  }
}
