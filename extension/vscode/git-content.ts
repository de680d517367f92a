import * as vscode from 'vscode';
import { simpleGit } from 'simple-git';

/** URI scheme of read-only file versions read from git objects. */
export const GIT_SCHEME = 'verdict-git';

/** A file as it is in commit `ref` of `repo`, as a read-only document URI. */
export function gitFileUri(repo: string, ref: string, file: string): vscode.Uri {
  return vscode.Uri.from({ scheme: GIT_SCHEME, path: `/${file}`, query: JSON.stringify({ repo, ref }) });
}

/**
 * Serves `git show <ref>:<path>` for verdict-git: URIs, so diffs compare two commits without touching any working
 * tree; the documents are read-only by construction. A path absent at that ref reads as empty (an added or deleted
 * file diffs against nothing).
 */
export class GitContentProvider implements vscode.TextDocumentContentProvider {
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const { repo, ref } = JSON.parse(uri.query) as { repo: string; ref: string };
    try {
      return await simpleGit(repo).show([`${ref}:${uri.path.slice(1)}`]);
    } catch {
      return '';
    }
  }
}
