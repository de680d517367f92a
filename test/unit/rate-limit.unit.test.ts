import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { runManifest, type RunEvent } from '../../extension/core/run/runner';
import { readRows, tempDir, writeManifest } from '../helpers/fixtures';
import { loadManifest } from '../../extension/core/run/manifest';

describe('rate limits', function () {
  this.timeout(60000);

  it("requeues a rate-limited attempt without using the retry, halves that engine's concurrency, keeps results in", async () => {
    const dir = tempDir();
    const marks = path.join(dir, 'marks');
    const trace = path.join(dir, 'trace');
    fs.mkdirSync(marks);
    // First attempt of each task: the "engine" says 429 and exits 1. Later: it works. Every run leaves +/- in a trace.
    const spec = `echo "+ $VERDICT_ATTEMPT" >> ${trace}; if [ ! -f ${marks}/$VERDICT_TASK_KEY ]; then touch ${marks}/$VERDICT_TASK_KEY; echo "Error: 429 Too Many Requests (Retry-After: 0)"; echo - >> ${trace}; exit 1; fi; sleep 0.3; echo ok > ok.txt; echo - >> ${trace}`;
    const engines = resolveEngines({ flaky: { binary: 'bash', argv: ['-c', '{spec}'], output: 'codex', install: 'bash' } }, 'test');
    const tasks = ['a', 'b', 'c', 'd'].map((key) => ({
      key,
      engine: 'flaky',
      spec,
      check: 'test -s ok.txt || { echo ok.txt missing; exit 1; }',
      max_attempts: 1,
    }));
    const { manifest } = loadManifest(writeManifest(dir, { workdir: 'w', max_parallel: 4, tasks }));
    const notes: string[] = [];
    // Unsandboxed: the "engine" keeps its marks and trace outside its task dir, which the sandbox would refuse.
    const summary = await runManifest({
      manifest,
      home: path.join(dir, 'home'),
      identity: 't',
      engines,
      sandbox: 'off',
      rateLimitBaseMs: 10,
      onEvent: (e: RunEvent) => {
        if (e.type === 'task-note') notes.push(e.note);
      },
    });
    assert.deepEqual(
      summary.tasks.map((t) => t.verdict),
      ['PASS', 'PASS', 'PASS', 'PASS'],
      'max_attempts 1 and still PASS: the rate limit did not use the retry',
    );
    const rows = readRows(path.join(dir, 'home'));
    assert.equal(rows.filter((r) => r.verdict === 'RATE_LIMITED').length, 4);
    assert.equal(rows.filter((r) => r.verdict === 'PASS').length, 4);
    assert.ok(
      rows.every((r) => r.retry === false),
      'an attempt after a rate limit is not a retry',
    );
    assert.match(notes[0] ?? '', /engine flaky was rate-limited: at most 2 of its attempts run at once from now on/);
    assert.ok(notes.some((n) => /at most 1 of its attempts/.test(n)));
    // Once the limit is 1, the successful attempts (which sleep) never overlap.
    let running = 0;
    let peakAfter = 0;
    let seenSecond = false;
    for (const line of fs.readFileSync(trace, 'utf8').trim().split('\n')) {
      if (line.startsWith('+')) {
        running++;
        if (line === '+ 2') seenSecond = true;
      } else running--;
      if (seenSecond) peakAfter = Math.max(peakAfter, running);
    }
    assert.equal(peakAfter, 1);
  });
});
