import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { hoverText } from './hover';
import { sleep, until } from './until';

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

describe("one diagnostic per schema error: VS Code's JSON service completes and explains from the schema, lint alone judges", function () {
  this.timeout(90000);

  it('a wrong type is one Verdict error (no second one from the JSON service), while completion and hover still come from the schema', async () => {
    await vscode.extensions.getExtension('verdict-dev.verdict')?.activate();
    const dir = fs.mkdtempSync(path.join(process.env.VERDICT_TEST_TMP as string, 'schema-once-'));
    const manifest = path.join(dir, 'schema-once.swarm.json');
    fs.writeFileSync(manifest, '{\n  "max_parallel": "two",\n  "tasks": [{ "key": "a", "spec": "s", "check": "test -s a.txt" }]\n}\n');
    // The control: a document the JSON service does judge (a missing comma), to know when it has run.
    const control = path.join(dir, 'control.json');
    fs.writeFileSync(control, '{\n  "a": 1\n  "b": 2\n}\n');
    const doc = await vscode.workspace.openTextDocument(manifest);
    await vscode.window.showTextDocument(doc);
    const controlDoc = await vscode.workspace.openTextDocument(control);
    const jsonDiagnostics = (uri: vscode.Uri) => vscode.languages.getDiagnostics(uri).filter((d) => d.source !== 'verdict');
    await vscode.window.showTextDocument(controlDoc, { preview: false, preserveFocus: true, viewColumn: vscode.ViewColumn.Beside });
    await until('the JSON service judging the control document', () => jsonDiagnostics(controlDoc.uri).length === 1, 60000).catch((e: Error) => {
      throw new Error(
        `${e.message}; its diagnostics: ${JSON.stringify(vscode.languages.getDiagnostics().map(([u, d]) => [u.fsPath, d.map((x) => `${x.source}: ${x.message}`)]))}`,
      );
    });

    // The manifest's schema is VS Code's: completion offers its properties, hover gives their descriptions.
    const inTasks = doc.positionAt(doc.getText().indexOf('"key"'));
    const completions = await until('schema completions in the manifest', async () => {
      const list = await vscode.commands.executeCommand<vscode.CompletionList>('vscode.executeCompletionItemProvider', doc.uri, inTasks);
      const labels = list.items.map((i) => (typeof i.label === 'string' ? i.label : i.label.label));
      return labels.some((l) => /max_attempts/.test(l)) ? labels : undefined;
    });
    assert.ok(
      completions.some((l) => /timeout_s/.test(l)),
      completions.join(', '),
    );
    const hover = await hoverText(doc, 'max_parallel');
    assert.match(hover, /How many attempts run at the same time/, hover);

    // An edit to the manifest, then one to the control: once the control's new error shows, the manifest's turn
    // (queued before it) has come too.
    const touch = new vscode.WorkspaceEdit();
    touch.insert(doc.uri, new vscode.Position(0, 1), ' ');
    assert.ok(await vscode.workspace.applyEdit(touch));
    const second = new vscode.WorkspaceEdit();
    second.insert(controlDoc.uri, new vscode.Position(3, 0), '  "c": 3\n');
    assert.ok(await vscode.workspace.applyEdit(second));
    await until("the control document's second error", () => jsonDiagnostics(controlDoc.uri).length === 2, 60000);

    const verdict = await diagnosticsWhere(doc.uri, (d) => d.some((x) => code(x) === 'invalid-manifest'));
    const wrongType = verdict.filter((d) => d.range.start.line === 1);
    assert.equal(wrongType.length, 1, JSON.stringify(verdict.map((d) => [code(d), d.message])));
    assert.deepEqual(
      jsonDiagnostics(doc.uri).map((d) => `${d.source}: ${d.message}`),
      [],
      'no second diagnostic from the JSON service beside the lint error',
    );
  });
});
