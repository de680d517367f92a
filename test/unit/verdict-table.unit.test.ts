import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { verdictTable } from '../../extension/cli/format';
import { loadManifest } from '../../extension/core/manifest/load';
import { runManifest } from '../../extension/core/run/runner';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { testSandboxMode } from '../helpers/sandbox-env';

describe("the final verdict table comes from the run's summary in memory", function () {
  this.timeout(60000);

  it("the summary carries the run's state as state.json holds it; the table needs nothing read back off the disk", async () => {
    const dir = tempDir();
    const tasks = [
      scriptTask('a', 'echo a > a.txt', 'test -s a.txt || exit 1'),
      scriptTask('b', 'true', 'test -s b.txt || exit 1', { max_attempts: 1, after: ['a'] }),
      scriptTask('c', 'true', 'true', { after: ['b'] }),
    ];
    const { manifest } = loadManifest(writeManifest(dir, { workdir: 'w', tasks }));
    const summary = await runManifest({
      manifest,
      home: path.join(dir, 'home'),
      identity: 't',
      engines: resolveEngines(),
      sandbox: testSandboxMode(),
      forced: true,
    });
    assert.deepEqual(JSON.parse(fs.readFileSync(summary.stateFile, 'utf8')), JSON.parse(JSON.stringify(summary.state)));
    fs.rmSync(summary.stateFile);
    const table = verdictTable(summary);
    const row = (key: string) => table.split('\n').find((l) => l.startsWith(`${key} `)) ?? '';
    assert.match(table.split('\n')[0] ?? '', /ended at .*after/, 'the step and graph columns, from the state');
    assert.match(row('b'), /FAIL .* check +a /);
    assert.match(row('c'), /BLOCKED .* b +prerequisite b ended FAIL/);
  });
});
