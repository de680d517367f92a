import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { resolveEngines } from '../../engines';
import { RunControl, runManifest } from '../../extension/core/run/runner';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';
import { testSandboxMode } from '../helpers/sandbox-env';
import { loadManifest } from '../../extension/core/run/manifest';

describe('runner: stopping and vanishing inputs', function () {
  this.timeout(60000);

  it('cancel during worktree creation: every task CANCELLED, no half-made worktree or dangling branch', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const tasks = Array.from({ length: 8 }, (_, i) => scriptTask(`t${i}`, 'echo x > x.txt', 'test -s x.txt || exit 1'));
    const { manifest } = loadManifest(writeManifest(repo, { worktrees: true, max_parallel: 8, tasks }));
    const abort = new AbortController();
    const summary = await runManifest({
      manifest,
      home: path.join(dir, 'home'),
      identity: 't',
      engines: resolveEngines(),
      sandbox: testSandboxMode(),
      signal: abort.signal,
      onEvent: (e) => {
        if (e.type === 'attempt-started' && e.key === 't0') abort.abort();
      },
    });
    assert.equal(summary.cancelled, true);
    assert.ok(
      summary.tasks.every((t) => t.verdict === 'CANCELLED'),
      JSON.stringify(summary.tasks.map((t) => t.verdict)),
    );
    // every branch Verdict made has its worktree, and every worktree exists on disk (nothing prunable)
    const porcelain = git(repo, 'worktree', 'list', '--porcelain');
    assert.doesNotMatch(porcelain, /prunable/);
    const worktrees = porcelain
      .split('\n')
      .filter((l) => l.startsWith('worktree '))
      .slice(1)
      .map((l) => l.slice(9));
    for (const w of worktrees) assert.ok(fs.existsSync(w), `${w} is registered but missing`);
    const branches = git(repo, 'branch', '--list', 'verdict/*', '--format=%(refname:short)').split('\n').filter(Boolean);
    assert.equal(branches.length, worktrees.length);
    assert.equal(
      readRows(path.join(dir, 'home')).every((r) => r.verdict === 'CANCELLED'),
      true,
    );
  });

  it('stops one task while the others go on; the stopped task is not retried', async () => {
    const dir = tempDir();
    const control = new RunControl();
    const tasks = [scriptTask('slow', 'sleep 30', 'true', { max_attempts: 2 }), scriptTask('quick', 'sleep 0.5; echo ok > ok.txt', 'test -s ok.txt || exit 1')];
    const { manifest } = loadManifest(writeManifest(dir, { workdir: 'w', tasks }));
    const summary = await runManifest({
      manifest,
      home: path.join(dir, 'home'),
      identity: 't',
      engines: resolveEngines(),
      sandbox: testSandboxMode(),
      control,
      killGraceMs: 200,
      onEvent: (e) => {
        if (e.type === 'attempt-started' && e.key === 'slow') setTimeout(() => control.stopTask('slow'), 200);
      },
    });
    assert.deepEqual(
      summary.tasks.map((t) => [t.key, t.verdict, t.attempts]),
      [
        ['slow', 'CANCELLED', 1],
        ['quick', 'PASS', 1],
      ],
    );
    assert.equal(control.stopTask('nope'), false);
  });

  it('a manifest deleted while its run is live: the run finishes from its loaded copy and the frozen manifest stays', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('a', 'sleep 0.5; echo a > a.txt', 'test -s a.txt || exit 1')] });
    const { manifest } = loadManifest(file);
    const summary = await runManifest({
      manifest,
      home: path.join(dir, 'home'),
      identity: 't',
      engines: resolveEngines(),
      sandbox: testSandboxMode(),
      onEvent: (e) => {
        if (e.type === 'attempt-started') fs.rmSync(file);
      },
    });
    assert.equal(fs.existsSync(file), false);
    assert.equal(summary.tasks[0]?.verdict, 'PASS');
    const frozen = JSON.parse(fs.readFileSync(path.join(dir, 'home', 'runs', summary.runId, 'manifest.json'), 'utf8')) as { manifest: { tasks: unknown[] } };
    assert.equal(frozen.manifest.tasks.length, 1);
  });
});
