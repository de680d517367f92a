import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { tempDir } from '../helpers/fixtures';

/** test/integration/run.mjs itself: how it fails when it has no VS Code to run in. */
describe('integration runner (test/integration/run.mjs)', function () {
  this.timeout(120000);

  it('no VS Code download possible: exit 2 (infrastructure), naming install.sh, at once', async () => {
    const cwd = tempDir(); // no .vscode-test cache here, so the electron route must download
    // The download goes through a proxy on a closed local port: it fails at once and nothing leaves the machine.
    const proxy = 'http://127.0.0.1:9';
    const r = await execa(process.execPath, [path.resolve('test/integration/run.mjs')], {
      cwd,
      reject: false,
      all: true,
      stdin: 'ignore',
      env: { ...process.env, VERDICT_VSCODE_ROUTE: 'electron', VERDICT_INTEGRATION_FROM: 'source', npm_config_proxy: proxy, npm_config_https_proxy: proxy },
    });
    const kept = r.all?.match(/files kept in (\S+)/)?.[1];
    if (kept) fs.rmSync(kept, { recursive: true, force: true });
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.all ?? '', /VS Code could not be downloaded/);
    assert.match(r.all ?? '', /bash test\/integration\/host\/install\.sh/);
  });
});
