import assert from 'node:assert/strict';
import * as vscode from 'vscode';

describe('Verdict: Doctor', () => {
  it("runs the bundled CLI on the editor's Node and returns its report: containment, engines, home", async () => {
    await vscode.extensions.getExtension('verdict-dev.verdict')?.activate();
    const r = await vscode.commands.executeCommand<{ exitCode: number; text: string }>('verdict.doctor', { show: false });
    assert.ok(r, 'the command returned nothing');
    assert.ok(r.exitCode === 0 || r.exitCode === 1, `exit ${r.exitCode}: ${r.text}`);
    assert.match(r.text, /^sandbox: /m);
    assert.match(r.text, /^engines:\n {2}\w/m);
    assert.match(r.text, /^ {2}script +\S+/m);
    assert.match(r.text, new RegExp(`^home: ${(process.env.VERDICT_HOME ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `, 'm'));
  });

  it('shows its report in a read-only document that never asks to be saved', async () => {
    const r = await vscode.commands.executeCommand<{ exitCode: number; text: string }>('verdict.doctor');
    const doc = vscode.window.activeTextEditor?.document;
    assert.ok(doc, 'a document is shown');
    assert.equal(doc.uri.scheme, 'verdict-doctor');
    assert.equal(doc.isUntitled, false);
    assert.equal(doc.isDirty, false);
    assert.equal(doc.getText(), `$ verdict doctor\n\n${r.text}\n`);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
