import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { hoverText } from './hover';
import { attemptNotice, type AttemptNoticeInput } from '../../../extension/core/run/notices';

// The suite is bundled into <repo>/out/integration: the repository's fixtures are two folders up.
const REPO = path.resolve(__dirname, '../..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `ok(diagnostics of uri)` holds (the JSON language service and the linter both work asynchronously). */
async function until(uri: vscode.Uri, ok: (d: vscode.Diagnostic[]) => boolean, what: string, timeoutMs = 30000): Promise<vscode.Diagnostic[]> {
  const t0 = Date.now();
  for (;;) {
    const d = vscode.languages.getDiagnostics(uri);
    if (ok(d)) return d;
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what}: never happened; diagnostics: ${JSON.stringify(d.map((x) => [x.source, x.message]))}`);
    await sleep(100);
  }
}

/** Writes `text` into the session's throwaway workspace and opens it. */
async function openCopy(rel: string, text: string): Promise<vscode.TextDocument> {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  assert.ok(root, 'no workspace folder');
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  await vscode.window.showTextDocument(doc);
  return doc;
}

describe('manifests open clean', () => {
  let ext: vscode.Extension<unknown>;
  before(async () => {
    const found = vscode.extensions.getExtension('verdict-dev.verdict');
    assert.ok(found);
    ext = found;
    await ext.activate();
  });

  it('is the extension installed from the .vsix (when run.mjs built one), not the repository', function () {
    if (process.env.VERDICT_FROM_VSIX !== '1') this.skip();
    assert.notEqual(path.resolve(ext.extensionPath), REPO);
    assert.ok(fs.existsSync(path.join(ext.extensionPath, 'dist/extension.js')));
    assert.ok(!fs.existsSync(path.join(ext.extensionPath, 'dist/extension.js.map')), 'the production build ships no source maps');
    assert.ok(!fs.existsSync(path.join(ext.extensionPath, 'node_modules')), 'no node_modules: everything is bundled');
  });

  it('the bundled demo manifest, copied away from the schemas, opens as JSONC with zero diagnostics', async () => {
    const demo = fs.readFileSync(path.join(ext.extensionPath, 'examples/demo/demo.swarm.json'), 'utf8');
    assert.match(demo, /^\s*\/\//m, 'the demo has // comments (the point of this test)');
    const doc = await openCopy('copied/elsewhere/demo.swarm.json', demo);
    assert.equal(doc.languageId, 'jsonc');
    // A control manifest in the same state: a comment and a syntax error (a missing comma). The JSON language
    // service's diagnostic for it (its diagnostics carry no source here) proves the service has read *.swarm.json
    // files, as JSONC: no complaint about the comment. (Schema errors are lint's alone: the service is given the
    // editor copy of the schema, which judges nothing; diagnostics.integration.test.ts.)
    const control = await openCopy(
      'copied/elsewhere/control.swarm.json',
      '{\n  // a comment\n  "max_parallel": 3\n  "tasks": [{ "key": "a", "spec": "s", "check": "test -f a" }]\n}\n',
    );
    const controlDiags = await until(
      control.uri,
      (d) => d.some((x) => x.source !== 'verdict' && /comma/i.test(x.message)),
      'the JSON service reading the control manifest',
    );
    assert.deepEqual(
      controlDiags.filter((x) => /comment/i.test(x.message)).map((x) => x.message),
      [],
      'comments are allowed in *.swarm.json',
    );
    // The schema is bound by file pattern, away from the schemas: hover over a property gives its description.
    const hover = await hoverText(control, 'max_parallel');
    assert.match(hover, /How many attempts run at the same time/, hover);
    // Our linter has run on the demo too (lint of a clean manifest publishes an empty list: poll for the API's view).
    const api = ext.exports as { lint(file: string): Promise<unknown[]> };
    assert.deepEqual(await api.lint(doc.uri.fsPath), []);
    await sleep(500); // let a late JSON validation of the demo land, if it were to
    assert.deepEqual(
      vscode.languages.getDiagnostics(doc.uri).map((x) => `${x.source}: ${x.message}`),
      [],
    );
  });

  it('a Ringer manifest.json (empty model and task_type) is recognised by its shape and lints with no error', async () => {
    const ringer = fs.readFileSync(path.join(REPO, 'test/fixtures/ringer/manifest.json'), 'utf8');
    const doc = await openCopy('ringer/manifest.json', ringer);
    const diags = await until(doc.uri, (d) => d.some((x) => x.source === 'verdict'), 'verdict diagnostics on a Ringer manifest.json');
    assert.deepEqual(
      diags.filter((x) => x.severity === vscode.DiagnosticSeverity.Error).map((x) => x.message),
      [],
    );
    assert.ok(
      diags.some((x) => /task_type/.test(x.message)),
      'the empty task_type gets the missing-task-type hint',
    );
  });

  it("an engine from Ringer's config.toml is known to the editor's lint, as to the CLI", async () => {
    const doc = await openCopy(
      'ringer-engine/uses-aider.swarm.json',
      JSON.stringify({
        tasks: [
          {
            key: 'a',
            engine: 'aider',
            task_type: 'docs',
            verified: 'a.md exists',
            expect_files: ['a.md'],
            spec: 'Write a.md: one paragraph on what this folder is for, for a new reader.',
            check: 'test -s a.md || { echo "a.md is missing"; exit 1; }',
          },
        ],
      }),
    );
    const api = ext.exports as { lint(file: string): Promise<{ rule: string; message: string }[]> };
    const unknown = async () => (await api.lint(doc.uri.fsPath)).filter((f) => /unknown engine/.test(f.message));
    assert.equal((await unknown()).length, 1, 'without the Ringer config, aider is unknown');
    process.env.RINGER_CONFIG = path.join(REPO, 'test/fixtures/ringer/config.toml');
    try {
      assert.deepEqual(await unknown(), []);
    } finally {
      delete process.env.RINGER_CONFIG;
    }
  });

  it('a browser extension manifest.json is left alone until "Treat as a Verdict Manifest"', async () => {
    const doc = await openCopy('webext/manifest.json', JSON.stringify({ manifest_version: 3, name: 'x', version: '1.0' }, null, 2));
    const api = ext.exports as { lint(file: string): Promise<unknown[]> };
    await api.lint(doc.uri.fsPath); // a lint round trip: the extension is up and has seen the document
    assert.deepEqual(
      vscode.languages.getDiagnostics(doc.uri).filter((x) => x.source === 'verdict'),
      [],
    );
    const findings = await vscode.commands.executeCommand<{ rule: string }[]>('verdict.treatAsManifest', doc.uri);
    assert.ok(findings && findings.length > 0, 'linted as a manifest now');
    assert.deepEqual(vscode.workspace.getConfiguration('verdict').get('manifestFiles'), ['webext/manifest.json']);
    await until(
      doc.uri,
      (d) => d.some((x) => x.source === 'verdict' && x.severity === vscode.DiagnosticSeverity.Error),
      'verdict errors (no tasks) after Treat as a Verdict Manifest',
    );
  });
});

describe('run notices name the task, its branch, and whether a retry comes', function () {
  this.timeout(120000);
  it('a task that fails once then passes: "retrying (attempt 2)", then PASS on its branch', async () => {
    const api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as {
      runManifest(file: string, o: { onEvent(e: { type: string } & Partial<AttemptNoticeInput>): void }): Promise<{ tasks: { verdict: string }[] }>;
    };
    const repo = path.join(process.env.VERDICT_TEST_TMP as string, 'notice-repo');
    fs.mkdirSync(repo, { recursive: true });
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: repo });
    git('init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(repo, 'README.md'), 'x\n');
    git('add', '.');
    git('commit', '-qm', 'base');
    const manifest = path.join(repo, 'notice.swarm.json');
    // The script engine's retry gets the failure in $VERDICT_FAILURE_FILE: the first attempt writes the wrong word.
    const spec = 'if [ -n "$VERDICT_FAILURE_FILE" ] && [ -s "$VERDICT_FAILURE_FILE" ]; then echo right > w.txt; else echo wrong > w.txt; fi';
    fs.writeFileSync(
      manifest,
      JSON.stringify({
        run_name: 'notices',
        worktrees: true,
        tasks: [
          {
            key: 'flaky',
            engine: 'script',
            task_type: 'script',
            verified: 'w.txt says right',
            spec,
            check: 'grep -x right w.txt || { echo "w.txt says $(cat w.txt)"; exit 1; }',
          },
        ],
      }),
    );
    git('add', '.');
    git('commit', '-qm', 'manifest');
    const notices: string[] = [];
    const summary = await api.runManifest(manifest, {
      onEvent: (e) => {
        if (e.type === 'attempt-finished') notices.push(attemptNotice(e as AttemptNoticeInput));
      },
    });
    assert.equal(summary.tasks[0]?.verdict, 'PASS');
    assert.equal(notices.length, 2, notices.join('\n'));
    assert.match(notices[0] ?? '', /^flaky, attempt 1: FAIL \(.+\) — retrying \(attempt 2\)$/);
    assert.match(notices[1] ?? '', /^flaky, attempt 2: PASS — work on branch verdict\/\S+\/flaky$/);
  });
});
