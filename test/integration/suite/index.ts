// The extension host calls run() when extensionTestsPath points at this module (both routes: code-server and
// @vscode/test-electron). The tests themselves are bundled into tests.js beside this file.
import fs from 'node:fs';
import path from 'node:path';
import util from 'node:util';
import Mocha from 'mocha';

/** Runs every integration test; rejects when any fails. */
export function run(): Promise<void> {
  // The code-server route cannot see the extension host's console: it reads mocha's report from this file.
  const log = process.env.VERDICT_TEST_LOG;
  if (log) {
    const base = (Mocha as unknown as { reporters: { Base: { consoleLog: (...a: unknown[]) => void } } }).reporters.Base;
    const original = base.consoleLog;
    base.consoleLog = (...a: unknown[]) => {
      fs.appendFileSync(log, util.format(...a) + '\n');
      original(...a);
    };
  }
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 60000 });
  // Two sessions: the untrusted-workspace suite runs alone in a window whose workspace is not trusted.
  // test/bench/extension.bench.mjs runs only what it measures (VERDICT_GREP).
  mocha.grep(process.env.VERDICT_GREP ? new RegExp(process.env.VERDICT_GREP) : /untrusted workspace/);
  if (!process.env.VERDICT_GREP && process.env.VERDICT_UNTRUSTED !== '1') mocha.invert();
  mocha.addFile(path.join(__dirname, 'tests.js'));
  return new Promise((resolve, reject) => {
    mocha.run((failures) => (failures > 0 ? reject(new Error(`${failures} integration test(s) failed`)) : resolve()));
  });
}
