import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { resolveEngines } from '../../../engines';
import { resolveHome } from '../../../extension/core/config/home';
import { runManifest } from '../../../extension/core/run/runner';

import { askProbe, probeDir } from './probe';
import { sleep } from './until';
import { loadManifest } from '../../../extension/core/run/manifest';

describe('dashboard panel in VS Code', function () {
  this.timeout(90000);

  it('opens the dashboard and shows the running run inside the webview', async function () {
    await vscode.extensions.getExtension('verdict-dev.verdict')?.activate();
    const tmp = process.env.VERDICT_TEST_TMP as string;
    const dir = fs.mkdtempSync(path.join(tmp, 'dashboard-'));
    const file = path.join(dir, 'dashboard.swarm.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        run_name: 'panel-e2e-run',
        workdir: 'work',
        tasks: [{ key: 'sleeper', engine: 'script', spec: 'echo panel-worker-started; sleep 60', check: 'true' }],
      }),
    );
    const engines = resolveEngines({});
    const { manifest } = loadManifest(file, { engines: new Set(engines.keys()) });
    const controller = new AbortController();
    const run = runManifest({ manifest, home: resolveHome(), identity: 'integration', engines, signal: controller.signal, killGraceMs: 500 });
    try {
      await vscode.commands.executeCommand('verdict.openDashboard');
      const dashboardTab = () =>
        vscode.window.tabGroups.all
          .flatMap((g) => g.tabs)
          .find((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith('verdict.dashboard'));
      for (let i = 0; i < 50 && !dashboardTab(); i++) await sleep(100);
      const inputs = vscode.window.tabGroups.all
        .flatMap((g) => g.tabs)
        .map((t) => `${t.label}: ${(t.input as { viewType?: string })?.viewType ?? typeof t.input}`);
      assert.ok(dashboardTab(), `a dashboard webview tab is open (tabs: ${inputs.join(', ')})`);
      const seen = await askProbe({ text: 'panel-e2e-run' });
      if (!seen) this.skip(); // @vscode/test-electron route: nobody can look inside the webview
      assert.ok(seen.found, `the running run shows in the dashboard webview: ${seen.error}`);
    } finally {
      controller.abort();
      await run;
    }
  });

  it('follows a changed verdict.home: the open panel shows the runs of the new records folder', async function () {
    const tmp = process.env.VERDICT_TEST_TMP as string;
    if (!fs.existsSync(probeDir())) this.skip(); // @vscode/test-electron route: nobody can look inside the webview
    const dir = fs.mkdtempSync(path.join(tmp, 'other-home-'));
    const home = path.join(dir, 'home');
    const file = path.join(dir, 'other.swarm.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        run_name: 'other-home-run',
        workdir: 'work',
        tasks: [{ key: 'quick', engine: 'script', spec: 'echo hi > hi.txt', check: 'test -s hi.txt' }],
      }),
    );
    const engines = resolveEngines({});
    const { manifest } = loadManifest(file, { engines: new Set(engines.keys()) });
    await runManifest({ manifest, home, identity: 'integration', engines, killGraceMs: 500 });
    await vscode.commands.executeCommand('verdict.openDashboard');
    const settings = vscode.workspace.getConfiguration('verdict');
    try {
      await settings.update('home', home, vscode.ConfigurationTarget.Global);
      let seen = { found: false, error: null as string | null };
      for (let i = 0; i < 10 && !seen.found; i++) seen = (await askProbe({ text: 'other-home-run' })) ?? seen;
      assert.ok(seen.found, `the run of the new verdict.home shows in the open dashboard: ${seen.error}`);
    } finally {
      await settings.update('home', undefined, vscode.ConfigurationTarget.Global);
    }
  });
});
