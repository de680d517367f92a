import assert from 'node:assert/strict';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

describe('the CLI tables: graph order, steps and BLOCKED', function () {
  this.timeout(120000);

  it('verdict run\'s table and `verdict runs RUN` list a task after its prerequisites, the step a failure ended in, and BLOCKED with its prerequisite', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // Listed in reverse: the views put each task after the one it waits for.
    const manifest = writeManifest(dir, {
      run_name: 'cli-views',
      workdir: 'work',
      tasks: [
        { ...scriptTask('report', 'echo report > r.txt', 'test -s r.txt'), after: ['build'] },
        { ...scriptTask('build', 'echo built', 'echo "no artifact"; exit 1', { max_attempts: 1 }), after: ['fetch'] },
        scriptTask('fetch', 'echo data > d.txt', 'test -s d.txt'),
      ],
    });
    const run = await cli(['run', manifest, '--home', home, '--no-dashboard']);
    assert.equal(run.exitCode, 1, run.all);
    const table = run.stdout.slice(run.stdout.indexOf('\ntask '));
    const lines = table.trim().split('\n');
    assert.match(lines[0] ?? '', /^task\s+verdict\s+attempts\s+duration\s+tokens\s+ended at\s+after\s+verified \/ why not$/);
    assert.match(lines[1] ?? '', /^fetch\s+PASS\s+1\s+\S+\s+\?\s+—\s+—\s+fetch works$/);
    assert.match(lines[2] ?? '', /^build\s+FAIL\s+1\s+\S+\s+\?\s+check\s+fetch\s+the check exited 1/);
    assert.match(lines[3] ?? '', /^report\s+BLOCKED\s+0\s+\S+\s+\S+\s+—\s+build\s+.*build/);

    const runId = /run (\d{8}-\d{6}-\w+)/.exec(run.stdout)?.[1];
    assert.ok(runId, run.stdout);
    const listed = await cli(['runs', runId.slice(0, 17), '--home', home]);
    assert.equal(listed.exitCode, 0, listed.all);
    const rows = listed.stdout.trim().split('\n');
    assert.match(rows[0] ?? '', new RegExp(`^run ${runId} \\(cli-views\\) by .+, started \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d: finished, 1/3 passed$`));
    assert.match(rows[1] ?? '', /^TASK\s+STATUS\s+AFTER\s+ATTEMPTS\s+WHY$/);
    assert.match(rows[2] ?? '', /^fetch\s+PASS\s+—\s+1$/);
    assert.match(rows[3] ?? '', /^build\s+FAIL at check\s+fetch\s+1\s+.*exited 1/);
    assert.match(rows[4] ?? '', /^report\s+BLOCKED\s+build\s+0\s+.*build ended FAIL/);
    const json = JSON.parse((await cli(['runs', runId, '--json', '--home', home])).stdout) as { tasks: { key: string; status: string; step: string | null; after: string[] }[] };
    assert.deepEqual(json.tasks.map((t) => [t.key, t.status, t.step, t.after]), [['fetch', 'PASS', 'check', []], ['build', 'FAIL', 'check', ['fetch']], ['report', 'BLOCKED', null, ['build']]]);
    const unknown = await cli(['runs', 'nope', '--home', home]);
    assert.equal(unknown.exitCode, 2);
    assert.match(unknown.stderr, /no run nope/);
  });
});
