import assert from 'node:assert/strict';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { runManifest } from '../../extension/core/run/runner';
import { alive, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import fs from 'node:fs';
import { testSandboxMode } from '../helpers/sandbox-env';
import { loadManifest } from '../../extension/core/run/manifest';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('stuck engines', function () {
  this.timeout(60000);

  it('an engine that printed its final event but does not exit is stopped after the grace and judged normally', async () => {
    const dir = tempDir();
    // A bash "engine" whose output is read with the claude parser: it prints a real final `result` event, then hangs.
    const engines = resolveEngines({ hanger: { binary: 'bash', argv: ['-c', '{spec}'], output: 'claude', install: 'bash is part of the OS' } }, 'test');
    const pidFile = path.join(dir, 'pid');
    const spec = `echo done > out.txt; echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":10,"output_tokens":2}}'; echo $$ > ${pidFile}; sleep 300`;
    const { manifest } = loadManifest(
      writeManifest(dir, { workdir: 'w', tasks: [{ key: 'hang', engine: 'hanger', spec, check: 'test -s out.txt || { echo out.txt missing; exit 1; }' }] }),
    );
    const t0 = Date.now();
    // Unsandboxed, so the pid it writes (outside its task dir) is one this process can look up.
    const summary = await runManifest({ manifest, home: path.join(dir, 'home'), identity: 't', engines, sandbox: 'off', finalGraceMs: 600, killGraceMs: 200 });
    assert.equal(summary.tasks[0]?.verdict, 'PASS');
    assert.ok(Date.now() - t0 < 30000, 'it did not wait for the worker timeout');
    const [row] = readRows(path.join(dir, 'home'));
    assert.match(String(row?.notes), /printed its final event but kept running; it was stopped after 1 s, but the check passed/);
    assert.equal(row?.tokens_in, 10);
    await sleep(100);
    assert.equal(alive(Number(fs.readFileSync(pidFile, 'utf8'))), false);
  });

  it('a worker silent for longer than the watchdog is stopped as STALLED and retried like a timeout', async () => {
    const dir = tempDir();
    const { manifest } = loadManifest(
      writeManifest(dir, { workdir: 'w', tasks: [scriptTask('silent', 'echo starting; sleep 300', 'true', { watchdog_s: 0.5 })] }),
    );
    const summary = await runManifest({
      manifest,
      home: path.join(dir, 'home'),
      identity: 't',
      engines: resolveEngines(),
      sandbox: testSandboxMode(),
      killGraceMs: 200,
    });
    assert.equal(summary.tasks[0]?.verdict, 'STALLED');
    const rows = readRows(path.join(dir, 'home'));
    assert.deepEqual(
      rows.map((r) => r.verdict),
      ['STALLED', 'STALLED'],
    );
    assert.match(String(rows[0]?.notes), /printed nothing for 1 s and was stopped/);
  });

  it('a worker that keeps printing is not stalled by the watchdog', async () => {
    const dir = tempDir();
    const { manifest } = loadManifest(
      writeManifest(dir, {
        workdir: 'w',
        tasks: [
          scriptTask('chatty', 'for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.2; done; echo ok > ok.txt', 'test -s ok.txt || exit 1', { watchdog_s: 0.6 }),
        ],
      }),
    );
    const summary = await runManifest({ manifest, home: path.join(dir, 'home'), identity: 't', engines: resolveEngines(), sandbox: testSandboxMode() });
    assert.equal(summary.tasks[0]?.verdict, 'PASS');
  });
});
