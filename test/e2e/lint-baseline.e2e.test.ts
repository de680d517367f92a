import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

describe('verdict lint', function () {
  this.timeout(60000);
  it('--json lists {rule, severity, message, file, line, column, task_key}; exit 1 on an error', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'x.swarm.json');
    fs.writeFileSync(
      file,
      [
        '{',
        '  "max_parallel": 2,',
        '  "tasks": [',
        '    { "key": "a", "engine": "script", "task_type": "t", "verified": "v", "expect_files": ["a.txt"], "spec": "echo a > a.txt", "check": "true" }',
        '  ]',
        '}',
      ].join('\n'),
    );
    const r = await cli(['lint', file, '--json']);
    assert.equal(r.exitCode, 1, r.all);
    const rows = JSON.parse(r.stdout) as Record<string, unknown>[];
    const row = rows.find((x) => x.rule === 'check-cannot-fail');
    assert.ok(row, r.stdout);
    assert.equal(row.severity, 'error');
    assert.equal(row.file, file);
    assert.equal(row.line, 4);
    assert.equal(row.column, 136);
    assert.equal(row.task_key, 'a');
    assert.equal(typeof row.message, 'string');
  });

  it('exit 0 when there is no error, and the bundled demo lints clean of errors', async () => {
    const r = await cli(['lint', path.resolve('examples/demo/demo.swarm.json')]);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stdout, /1 manifest\(s\): 0 error\(s\)/);
  });
});

describe('verdict run --baseline', function () {
  this.timeout(60000);
  it('runs every check on the untouched tree first; a check that already passes is reported and its task not run', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    const repo = makeRepo(path.join(dir, 'repo'), { 'README.md': '# already here\n' });
    const manifest = writeManifest(repo, {
      worktrees: true,
      tasks: [
        scriptTask('already-true', 'echo worker ran > worker-ran.txt', 'test -s README.md || { echo README.md missing; exit 1; }'),
        scriptTask('real-work', 'echo done > new.txt', 'test -s new.txt || { echo new.txt missing; exit 1; }', { expect_files: ['new.txt'] }),
      ],
    });
    const r = await cli(['run', manifest, '--home', home, '--baseline']);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(r.stdout, /already-true\s+baseline: the check already passes on the untouched tree/);
    assert.match(r.stdout, /^already-true\s+SKIPPED\s+0\s/m);
    assert.match(r.stdout, /^real-work\s+PASS\s+1\s/m);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((x) => [x.task_key, x.verdict]),
      [['real-work', 'PASS']],
      'no worker ran for the skipped task',
    );
    const runId = fs.readdirSync(path.join(home, 'runs'))[0] as string;
    assert.ok(fs.existsSync(path.join(home, 'runs', runId, 'tasks', 'already-true', 'baseline', 'check.log')));
    assert.equal(fs.existsSync(path.join(home, 'worktrees', runId, 'already-true', 'worker-ran.txt')), false);
  });

  it('prints lint warnings before the run starts, and goes on (an error refuses it: lint-gate.e2e.test.ts)', async () => {
    const dir = tempDir();
    const manifest = writeManifest(dir, { max_parallel: 1, tasks: [scriptTask('a', 'echo a > a.txt', 'test -s a.txt', { expect_files: ['a.txt'] })] });
    const r = await cli(['run', manifest, '--home', path.join(dir, 'home')]);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.stderr, /lint: .*\.swarm\.json:\d+:\d+: warning \[check-silent\] \(a\)/);
    assert.match(r.stdout, /^a\s+PASS/m);
  });
});
