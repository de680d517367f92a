import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import * as vscode from 'vscode';

const EXTENSION_ID = 'verdict-dev.verdict';

describe('extension activation', () => {
  it('activates in a workspace with a manifest and registers every command package.json declares', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(ext, `${EXTENSION_ID} is not loaded`);
    await ext.activate();
    const declared = (ext.packageJSON.contributes.commands as { command: string }[]).map((c) => c.command);
    const registered = new Set(await vscode.commands.getCommands(true));
    assert.ok(declared.length >= 2);
    assert.deepEqual(declared.filter((c) => !registered.has(c)), []);
    const api = ext.exports as { activationMs: number };
    assert.ok(api.activationMs > 0);
    // For test/bench/extension.bench.mjs only, in a file of its own (never in the test report).
    if (process.env.VERDICT_ACTIVATION_FILE) appendFileSync(process.env.VERDICT_ACTIVATION_FILE, `activationMs=${api.activationMs.toFixed(2)}\n`);
  });

  it('validates manifests with the schema: hover on a field shows its description', async () => {
    const [uri] = await vscode.workspace.findFiles('ok.swarm.json');
    assert.ok(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    const offset = doc.getText().indexOf('"max_parallel"') + 3;
    let text = '';
    for (let i = 0; i < 40 && !text.includes('attempts run at the same time'); i++) {
      const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri, doc.positionAt(offset));
      text = hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : (c as vscode.MarkdownString).value))).join('\n');
      if (!text.includes('attempts run at the same time')) await new Promise((r) => setTimeout(r, 250));
    }
    assert.match(text, /How many attempts run at the same time/);
  });
});
