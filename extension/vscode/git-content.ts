import * as vscode from 'vscode';
import { runGit } from '../core/git/safe-git';

/** URI scheme of read-only file versions read from git objects. */
export const GIT_SCHEME = 'verdict-git';

/** A file as it is in commit `ref` of `repo`, as a read-only document URI. */
export function gitFileUri(repo: string, ref: string, file: string): vscode.Uri {
  return vscode.Uri.from({ scheme: GIT_SCHEME, path: `/${file}`, query: JSON.stringify({ repo, ref }) });
}

/**
 * Serves `git show <ref>:<path>` for verdict-git: URIs, so diffs compare two commits without touching any working
 * tree; the documents are read-only by construction. A path absent at that ref reads as empty (an added or deleted
 * file diffs against nothing). `git show <rev>:<path>` prints the stored blob, running no filter or textconv, so git
 * runs untrusted here in any workspace (safe-git.ts), started by the spawn helper (`runGit`), not forked from the
 * extension host.
 */
export class GitContentProvider implements vscode.TextDocumentContentProvider {
  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const { repo, ref } = JSON.parse(uri.query) as { repo: string; ref: string };
    try {
      return await runGit(repo, ['show', `${ref}:${uri.path.slice(1)}`], { trusted: false });
    } catch {
      return '';
    }
  }
}
