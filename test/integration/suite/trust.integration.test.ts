import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('in an untrusted workspace', () => {
  let api: VerdictApi;
  before(async () => {
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
  });

  it('the workspace really is untrusted', () => {
    assert.equal(vscode.workspace.isTrusted, false);
  });

  it('refuses to run anything and says why (API and commands)', async () => {
    const [uri] = await vscode.workspace.findFiles('ok.swarm.json');
    assert.ok(uri);
    await assert.rejects(api.runManifest(uri.fsPath), /will not run a manifest in an untrusted workspace/);
    assert.equal(await vscode.commands.executeCommand('verdict.runManifest', uri), undefined);
    assert.equal(await vscode.commands.executeCommand('verdict.mergeAllPassed', { runId: 'x' }), undefined);
    assert.equal(await vscode.commands.executeCommand('verdict.rerunTask', { runId: 'x', key: 'y' }), undefined);
    const before = new Set(api.runs().map((r) => r.state.runId));
    await vscode.commands.executeCommand('verdict.runManifest', uri);
    assert.deepEqual(
      api.runs().filter((r) => !before.has(r.state.runId)),
      [],
      'no run was started',
    );
  });

  it('still lints: diagnostics work without trust', async () => {
    const [uri] = await vscode.workspace.findFiles('lint-me.swarm.json');
    assert.ok(uri);
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    for (let i = 0; i < 100; i++) {
      if (
        vscode.languages
          .getDiagnostics(uri)
          .some((d) => d.source === 'verdict' && String(typeof d.code === 'object' ? d.code.value : d.code) === 'check-cannot-fail')
      )
        return;
      await sleep(100);
    }
    const direct = await api.lint(uri.fsPath);
    assert.fail(
      `no Verdict diagnostics in the untrusted workspace; api.lint finds ${JSON.stringify(direct.map((f) => f.rule))}; all diagnostics: ${JSON.stringify(vscode.languages.getDiagnostics(uri).map((d) => [d.source, d.code]))}`,
    );
  });
});
