import assert from 'node:assert/strict';
import * as vscode from 'vscode';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the Verdict diagnostics of `uri` satisfy `ok` (they are debounced and computed asynchronously). */
async function diagnosticsWhere(uri: vscode.Uri, ok: (d: vscode.Diagnostic[]) => boolean, timeoutMs = 15000): Promise<vscode.Diagnostic[]> {
  const t0 = Date.now();
  for (;;) {
    const d = vscode.languages.getDiagnostics(uri).filter((x) => x.source === 'verdict');
    if (ok(d)) return d;
    if (Date.now() - t0 > timeoutMs) throw new Error(`diagnostics never matched; last: ${JSON.stringify(d.map((x) => [x.code, x.message]))}`);
    await sleep(100);
  }
}

/** A diagnostic's rule id (code may come back as {value, target} through the command API). */
const code = (d: vscode.Diagnostic) => String(typeof d.code === 'object' ? d.code.value : d.code);

describe('manifest diagnostics and quick fixes in the editor', () => {
  let doc: vscode.TextDocument;
  let uri: vscode.Uri;

  before(async () => {
    await vscode.extensions.getExtension('verdict-dev.verdict')?.activate();
    const [found] = await vscode.workspace.findFiles('lint-me.swarm.json');
    assert.ok(found);
    uri = found;
    doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
  });

  it('shows the linter findings in the Problems panel with rule ids, severities and exact ranges', async () => {
    const diags = await diagnosticsWhere(uri, (d) => ['check-silent', 'hard-coded-port', 'check-cannot-fail'].every((c) => d.some((x) => code(x) === c)));
    const silent = diags.find((d) => code(d) === 'check-silent') as vscode.Diagnostic;
    assert.equal(silent.severity, vscode.DiagnosticSeverity.Warning);
    assert.match(doc.getText(silent.range), /diff -q/);
    assert.equal(silent.range.start.line, 9);
    const port = diags.find((d) => code(d) === 'hard-coded-port') as vscode.Diagnostic;
    assert.match(doc.getText(port.range), /3000/);
    assert.equal(port.range.start.line, 18);
    const cannotFail = diags.find((d) => code(d) === 'check-cannot-fail') as vscode.Diagnostic;
    assert.equal(cannotFail.severity, vscode.DiagnosticSeverity.Error);
    assert.equal(cannotFail.range.start.line, 27);
    assert.match(doc.getText(cannotFail.range), /true/);
  });

  it('offers quick fixes that rewrite the check: diff -q → diff, a literal port → $PORT', async () => {
    for (const [rule, expected] of [
      ['check-silent', '"check": "diff out.txt expected.txt"'],
      ['hard-coded-port', 'localhost:$PORT/health'],
    ] as const) {
      const diags = await diagnosticsWhere(uri, (d) => d.some((x) => code(x) === rule));
      const diag = diags.find((d) => code(d) === rule) as vscode.Diagnostic;
      const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>(
        'vscode.executeCodeActionProvider',
        uri,
        diag.range,
        vscode.CodeActionKind.QuickFix.value,
      );
      // The command API drops the diagnostics' codes from returned actions; the range selects the one fix.
      const fixes = actions.filter((a) => a.edit);
      assert.equal(fixes.length, 1, `quick fixes for ${rule}: ${JSON.stringify(actions.map((a) => a.title))}`);
      const fix = fixes[0] as vscode.CodeAction & { edit: vscode.WorkspaceEdit };
      assert.ok(await vscode.workspace.applyEdit(fix.edit));
      assert.ok(doc.getText().includes(expected), doc.getText());
      await diagnosticsWhere(uri, (d) => !d.some((x) => code(x) === rule));
    }
  });

  it('updates while the user types (debounced) and clears when the problem is gone', async () => {
    const start = doc.getText().indexOf('"check": "true"') + '"check": "'.length;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(uri, new vscode.Range(doc.positionAt(start), doc.positionAt(start + 4)), 'test -s hi.txt || { echo hi.txt is empty; exit 1; }');
    assert.ok(await vscode.workspace.applyEdit(edit));
    await diagnosticsWhere(uri, (d) => !d.some((x) => code(x) === 'check-cannot-fail'));
    const bad = new vscode.WorkspaceEdit();
    bad.insert(uri, doc.positionAt(doc.getText().indexOf('"max_parallel": 2')), '"max_parallel": "two", ');
    assert.ok(await vscode.workspace.applyEdit(bad));
    const diags = await diagnosticsWhere(uri, (d) => d.some((x) => code(x) === 'invalid-manifest'));
    assert.ok(diags.some((d) => d.severity === vscode.DiagnosticSeverity.Error));
  });
});
