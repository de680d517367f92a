import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as vscode from 'vscode';
import type { VerdictApi } from '../../../extension/vscode/api';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A foreign repository inside the untrusted workspace: its `.git/config` names an fsmonitor and its `.git/hooks`
 * hold post-checkout, pre-commit and reference-transaction; each touches a marker file when it runs.
 */
function foreignRepo(root: string, markers: string): string {
  const repo = path.join(root, 'foreign');
  fs.mkdirSync(markers, { recursive: true });
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=T', '-c', 'user.email=t@t.invalid', ...args], { cwd: repo, stdio: 'ignore' });
  fs.mkdirSync(repo, { recursive: true });
  fs.writeFileSync(path.join(repo, '.gitignore'), 'ignored/\n');
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'fixture');
  const script = (file: string, name: string) => {
    fs.writeFileSync(file, `#!/bin/sh\ntouch '${path.join(markers, name)}'\ncat >/dev/null\nexit 0\n`);
    fs.chmodSync(file, 0o755);
  };
  script(path.join(repo, '.git', 'fsmonitor.sh'), 'fsmonitor');
  for (const hook of ['post-checkout', 'pre-commit', 'reference-transaction']) script(path.join(repo, '.git', 'hooks', hook), hook);
  git('config', 'core.fsmonitor', path.join(repo, '.git', 'fsmonitor.sh'));
  fs.writeFileSync(
    path.join(repo, 'm.swarm.json'),
    JSON.stringify(
      {
        worktrees: true,
        tasks: [
          {
            key: 'a',
            engine: 'script',
            spec: 'mkdir -p ignored && echo hi > ignored/out.txt',
            check: 'test -s ignored/out.txt',
            expect_files: ['ignored/out.txt'],
            task_type: 'demo',
            verified: 'out.txt is written',
          },
        ],
      },
      null,
      2,
    ),
  );
  return repo;
}

describe('git in an untrusted workspace', () => {
  let api: VerdictApi;
  let repo: string;
  let markers: string;
  const seen = () => fs.readdirSync(markers).sort();
  const clear = () => {
    for (const m of fs.readdirSync(markers)) fs.rmSync(path.join(markers, m));
  };

  before(async () => {
    api = (await vscode.extensions.getExtension('verdict-dev.verdict')?.activate()) as VerdictApi;
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    assert.ok(root, 'a workspace folder is open');
    markers = fs.mkdtempSync(path.join(process.env.VERDICT_TEST_TMP || os.tmpdir(), 'markers-'));
    repo = foreignRepo(root, markers);
  });

  it('the fixture is armed: plain git runs its fsmonitor and hooks', () => {
    assert.equal(vscode.workspace.isTrusted, false);
    clear();
    execFileSync('git', ['check-ignore', '-q', 'ignored/out.txt'], { cwd: repo, stdio: 'ignore' });
    execFileSync('git', ['branch', 'control'], { cwd: repo, stdio: 'ignore' });
    assert.deepEqual(seen(), ['fsmonitor', 'reference-transaction']);
    clear();
  });

  it('linting its worktree-mode manifest runs nothing from the folder, and says the git check was skipped', async () => {
    clear();
    const uri = vscode.Uri.file(path.join(repo, 'm.swarm.json'));
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    let skipped: vscode.Diagnostic | undefined;
    for (let i = 0; i < 100 && !skipped; i++) {
      skipped = vscode.languages.getDiagnostics(uri).find((d) => d.source === 'verdict' && /untrusted/.test(d.message));
      if (!skipped) await sleep(100);
    }
    assert.ok(
      skipped,
      `no "skipped: untrusted" diagnostic; diagnostics: ${JSON.stringify(vscode.languages.getDiagnostics(uri).map((d) => [d.code, d.message]))}`,
    );
    assert.equal(skipped.severity, vscode.DiagnosticSeverity.Information);
    await api.lint(uri.fsPath);
    await sleep(500); // anything started by the lint has had time to touch its marker
    assert.deepEqual(seen(), []);
  });
});
