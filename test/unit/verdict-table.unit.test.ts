import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { verdictTable } from '../../extension/cli/format';
import { runManifest, type RunSummary } from '../../extension/core/run/runner';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { testSandboxMode } from '../helpers/sandbox-env';
import { loadManifest } from '../../extension/core/run/manifest';

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

  it("the footer's spend is the one line of every view: spent, reserved, budget_usd and budget_tokens", () => {
    const summary = {
      runId: 'r1',
      runName: 'r',
      stateFile: '/nonexistent',
      cancelled: false,
      durationMs: 1000,
      tasks: [],
      allPassed: true,
      recordErrors: [],
      spend: { spentMicroUsd: 800000, budgetMicroUsd: 1000000, postgresPending: null },
      state: {
        tasks: [],
        spend: { spentMicroUsd: 800000, reservedMicroUsd: 100000, budgetMicroUsd: 1000000, tokens: { spent: 12000, reserved: 0, budget: 50000 } },
      },
    } as unknown as RunSummary;
    const footer = (s: RunSummary) => verdictTable(s).split('\n').slice(2);
    assert.deepEqual(footer(summary), [
      '0/0 passed in 1.0s — run r1',
      'spent $0.8000 · reserved $0.1000 · budget $1.00 (90 %) · tokens 12,000 · budget 50,000 tokens (24 %)',
    ]);
    // A state without the field (an older run): the summary's spent and budget.
    const older = { ...summary, state: { tasks: [] } } as unknown as RunSummary;
    assert.equal(footer(older)[1], 'spent $0.8000 · budget $1.00 (80 %)');
    // Nothing spent and no budget (scripts): no line at all.
    const none = { ...older, spend: { spentMicroUsd: 0, budgetMicroUsd: null, postgresPending: null } } as unknown as RunSummary;
    assert.deepEqual(footer(none), ['0/0 passed in 1.0s — run r1']);
  });
});
