import path from 'node:path';
import picomatch from 'picomatch';
import * as vscode from 'vscode';

/** The setting listing extra manifest files (globs), e.g. Ringer's `manifest.json` files. */
const SETTING = 'manifestFiles';

/**
 * True when `uri` matches a glob of `verdict.manifestFiles`: a glob with a `/` matches the path relative to the
 * workspace folder holding the file (or the absolute path), one without matches the file name in any folder.
 */
export function isListedManifest(uri: vscode.Uri): boolean {
  const globs = vscode.workspace.getConfiguration('verdict', uri).get<string[]>(SETTING) ?? [];
  if (!globs.length || uri.scheme !== 'file') return false;
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  const rel = folder ? path.relative(folder.uri.fsPath, uri.fsPath).split(path.sep).join('/') : null;
  return globs.some((g) => {
    const match = picomatch(g, { dot: true, basename: !g.includes('/') });
    return match(uri.fsPath) || (rel !== null && match(rel));
  });
}

/**
 * Treat as a Verdict Manifest: adds the file to `verdict.manifestFiles` (the workspace's settings, its path relative
 * to the workspace folder; the user's settings with the absolute path when it is in no folder), so it is linted like
 * a `*.swarm.json` from now on. Resolves with the glob added, or undefined when there was no JSON file to add.
 */
export async function treatAsManifest(target?: unknown): Promise<string | undefined> {
  const uri = target instanceof vscode.Uri ? target : vscode.window.activeTextEditor?.document.uri;
  if (!uri || uri.scheme !== 'file' || !/\.jsonc?$/.test(uri.fsPath)) {
    void vscode.window.showErrorMessage('Verdict: pick a .json file (in the explorer, or open it) to treat as a manifest');
    return undefined;
  }
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  const glob = folder ? path.relative(folder.uri.fsPath, uri.fsPath).split(path.sep).join('/') : uri.fsPath;
  const config = vscode.workspace.getConfiguration('verdict', uri);
  const target_ = folder
    ? vscode.workspace.workspaceFolders?.length === 1
      ? vscode.ConfigurationTarget.Workspace
      : vscode.ConfigurationTarget.WorkspaceFolder
    : vscode.ConfigurationTarget.Global;
  const inspected = config.inspect<string[]>(SETTING);
  const current =
    (target_ === vscode.ConfigurationTarget.Global
      ? inspected?.globalValue
      : target_ === vscode.ConfigurationTarget.Workspace
        ? inspected?.workspaceValue
        : inspected?.workspaceFolderValue) ?? [];
  if (!current.includes(glob)) await config.update(SETTING, [...current, glob], target_);
  return glob;
}
