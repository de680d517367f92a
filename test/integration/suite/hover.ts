// What the editor's hover says over a word of a document, as the integration tests read it.
import * as vscode from 'vscode';

/** The text of every hover at the first occurrence of `word` in `doc` (two characters into it), joined by newlines. */
export async function hoverText(doc: vscode.TextDocument, word: string): Promise<string> {
  const at = doc.positionAt(doc.getText().indexOf(word) + 2);
  const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, at);
  return hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : ''))).join('\n');
}
