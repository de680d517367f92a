import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
    assert.deepEqual(
      declared.filter((c) => !registered.has(c)),
      [],
    );
    const api = ext.exports as { activationMs: number };
    assert.ok(api.activationMs > 0);
    // For test/bench/extension.bench.mjs only, in a file of its own (never in the test report).
    if (process.env.VERDICT_ACTIVATION_FILE) appendFileSync(process.env.VERDICT_ACTIVATION_FILE, `activationMs=${api.activationMs.toFixed(2)}\n`);
  });

  it("puts `verdict` on the integrated terminal's PATH (a terminal opened now runs it), and Copy CLI Path copies the launcher", async () => {
    const shim = await vscode.commands.executeCommand<string>('verdict.copyCliPath');
    assert.ok(shim && path.isAbsolute(shim), `a launcher path: ${shim}`);
    assert.equal(await vscode.env.clipboard.readText(), shim);
    assert.equal(execFileSync(shim, ['--version'], { encoding: 'utf8' }).trim().split(' ')[0], 'verdict');
    const out = path.join(process.env.VERDICT_TEST_TMP ?? os.tmpdir(), `terminal-${process.pid}.txt`);
    // The shell resolves `verdict` through PATH alone: the launcher's folder comes only from the terminal environment.
    const terminal = vscode.window.createTerminal({
      name: 'verdict-path',
      shellPath: '/bin/sh',
      shellArgs: ['-c', `command -v verdict > '${out}.tmp' && verdict --version >> '${out}.tmp'; mv '${out}.tmp' '${out}'`],
    });
    try {
      for (let i = 0; i < 200 && !existsSync(out); i++) await new Promise((r) => setTimeout(r, 100));
      assert.ok(existsSync(out), 'the terminal wrote its answer');
      const [found, version] = readFileSync(out, 'utf8').trim().split('\n');
      assert.equal(found, shim);
      assert.match(version ?? '', /^verdict \d+\.\d+\.\d+/);
    } finally {
      terminal.dispose();
    }
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
