import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';

type Result = { written: string[] } | { refused: string } | undefined;

/** Verdict: New Manifest with preset answers (template id, folder, what to do on a taken name): no quick pick. */
describe('Verdict: New Manifest', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-new-manifest-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes the template from the installed extension and opens the manifest; it lints clean', async () => {
    await vscode.extensions.getExtension('verdict-dev.verdict')?.activate();
    const r = await vscode.commands.executeCommand<Result>('verdict.newManifest', undefined, { template: 'test-hardening', folder: dir });
    assert.ok(r && 'written' in r, JSON.stringify(r));
    assert.deepEqual(
      r.written.map((f) => path.relative(dir, f)),
      ['test-hardening.swarm.json', 'checks/mutants.sh', 'checks/mutants.txt'],
    );
    assert.equal(vscode.window.activeTextEditor?.document.uri.fsPath, path.join(dir, 'test-hardening.swarm.json'));
    const problems = async (file: string) => {
      await vscode.commands.executeCommand('verdict.lintManifest', vscode.Uri.file(file));
      return vscode.languages
        .getDiagnostics(vscode.Uri.file(file))
        .filter((d) => d.severity <= vscode.DiagnosticSeverity.Warning)
        .map((d) => d.message);
    };
    // The control: the same manifest with a check that cannot fail has an error here, so an empty list means clean.
    const broken = path.join(dir, 'broken.swarm.json');
    fs.writeFileSync(broken, fs.readFileSync(r.written[0] as string, 'utf8').replace(/"check": "[^"]*"/, '"check": "true"'));
    assert.ok(
      (await problems(broken)).some((m) => /cannot fail|always/i.test(m)),
      'the control manifest has its error',
    );
    fs.rmSync(broken);
    // The template's engine (codex) is said to be missing, with its install command, when it is not on this PATH.
    const codexHere = (process.env.PATH ?? '').split(path.delimiter).some((d) => d && fs.existsSync(path.join(d, 'codex')));
    const found = await problems(r.written[0] as string);
    assert.deepEqual(
      found.filter((m) => !/command `codex` is not on PATH.*npm i -g @openai\/codex/.test(m)),
      [],
    );
    assert.equal(found.length, codexHere ? 0 : 1, found.join('\n'));
  });

  it('no-model runs with no engine to install: written into a folder, it lints with no warning at all', async () => {
    const target = path.join(dir, 'no-model');
    const r = await vscode.commands.executeCommand<Result>('verdict.newManifest', undefined, { template: 'no-model', folder: target });
    assert.ok(r && 'written' in r, JSON.stringify(r));
    fs.mkdirSync(path.join(target, '.git')); // check-file-missing judges a repository: its test files are there
    const file = r.written[0] as string;
    await vscode.commands.executeCommand('verdict.lintManifest', vscode.Uri.file(file));
    assert.deepEqual(
      vscode.languages.getDiagnostics(vscode.Uri.file(file)).map((d) => d.message),
      [],
    );
    // The control: a check naming a test the folder does not hold gets its warning in the editor.
    const broken = path.join(target, 'broken.swarm.json');
    fs.writeFileSync(broken, fs.readFileSync(file, 'utf8').replace('test/word-count.test.mjs', 'test/nope.test.mjs'));
    await vscode.commands.executeCommand('verdict.lintManifest', vscode.Uri.file(broken));
    assert.ok(vscode.languages.getDiagnostics(vscode.Uri.file(broken)).some((d) => /names test\/nope\.test\.mjs/.test(d.message)));
  });

  it('never overwrites: a taken manifest name gets the next free one, the user\'s file stays; "cancel" writes nothing', async () => {
    fs.writeFileSync(path.join(dir, 'test-hardening.swarm.json'), '{"mine": true}');
    const cancelled = await vscode.commands.executeCommand<Result>('verdict.newManifest', undefined, {
      template: 'test-hardening',
      folder: dir,
      onConflict: 'cancel',
    });
    assert.ok(cancelled && 'refused' in cancelled);
    assert.ok(!fs.existsSync(path.join(dir, 'test-hardening-2.swarm.json')));
    const renamed = await vscode.commands.executeCommand<Result>('verdict.newManifest', undefined, {
      template: 'test-hardening',
      folder: dir,
      onConflict: 'rename',
    });
    assert.ok(renamed && 'written' in renamed, JSON.stringify(renamed));
    assert.deepEqual(
      renamed.written.map((f) => path.relative(dir, f)),
      ['test-hardening-2.swarm.json'],
      'identical check scripts are kept, not rewritten',
    );
    assert.equal(fs.readFileSync(path.join(dir, 'test-hardening.swarm.json'), 'utf8'), '{"mine": true}');
  });

  it('refuses when a check script the manifest names exists with other contents', async () => {
    fs.writeFileSync(path.join(dir, 'checks', 'mutants.txt'), 's/a/b/\n');
    const r = await vscode.commands.executeCommand<Result>('verdict.newManifest', undefined, { template: 'test-hardening', folder: dir, onConflict: 'rename' });
    assert.ok(r && 'refused' in r && /mutants\.txt already exist/.test(r.refused), JSON.stringify(r));
    assert.equal(fs.readFileSync(path.join(dir, 'checks', 'mutants.txt'), 'utf8'), 's/a/b/\n');
  });

  it('offers the workflow templates too (best-of-n, generated) and names the choices for an unknown id', async () => {
    const r = await vscode.commands.executeCommand<Result>('verdict.newManifest', undefined, { template: 'nope', folder: dir });
    assert.ok(r && 'refused' in r);
    assert.match(r.refused, /there are: best-of-n, [^)]*\bcode-review, [^)]*\bgenerated\b/);
  });
});
