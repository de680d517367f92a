import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

describe('the CLI tables: graph order, steps and BLOCKED', function () {
  this.timeout(120000);

  it("verdict run's table and `verdict runs RUN` list a task after its prerequisites, the step a failure ended in, and BLOCKED with its prerequisite", async () => {
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
    assert.match(
      rows[0] ?? '',
      new RegExp(`^run ${runId} \\(cli-views\\) by .+, started \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d: finished, 1/3 passed · 1 failed · 1 skipped$`),
    );
    assert.match(rows[1] ?? '', /^TASK\s+STATUS\s+AFTER\s+ATTEMPTS\s+WHY$/);
    assert.match(rows[2] ?? '', /^fetch\s+PASS\s+—\s+1$/);
    assert.match(rows[3] ?? '', /^build\s+FAIL at check\s+fetch\s+1\s+.*exited 1/);
    assert.match(rows[4] ?? '', /^report\s+BLOCKED\s+build\s+0\s+.*build ended FAIL/);
    const json = JSON.parse((await cli(['runs', runId, '--json', '--home', home])).stdout) as {
      tasks: { key: string; status: string; result: string; step: string | null; after: string[] }[];
    };
    assert.deepEqual(
      json.tasks.map((t) => [t.key, t.status, t.result, t.step, t.after]),
      [
        ['fetch', 'PASS', 'passed', 'check', []],
        ['build', 'FAIL', 'failed', 'check', ['fetch']],
        ['report', 'BLOCKED', 'skipped', null, ['build']],
      ],
    );
    const unknown = await cli(['runs', 'nope', '--home', home]);
    assert.equal(unknown.exitCode, 2);
    assert.match(unknown.stderr, /no run nope/);
  });

  it('best-of-N: both tables list the candidates under their task with the winner, their engine and how the task was decided; hostile check output stays one printable line', async () => {
    const dir = tempDir();
    const home = path.join(dir, 'home');
    // Candidate 1's check prints a screen clear, an OSC 52 clipboard write, markup and a line that looks like a verdict.
    const hostile = "printf 'fix--c1  PASS\\n<b>ALL GOOD</b>\\033[2J\\033]52;c;cm0gLXJm\\007'";
    const manifest = writeManifest(dir, {
      run_name: 'cli-best-of-n',
      workdir: 'work',
      max_parallel: 1,
      tasks: [
        scriptTask('fix', 'echo "candidate $VERDICT_CANDIDATE" > out.txt', `if grep -q 'candidate 1' out.txt; then ${hostile}; exit 1; fi; test -s out.txt`, {
          repeat: 3,
          select: 'all',
          max_attempts: 1,
        }),
        { ...scriptTask('ship', 'echo shipped > shipped.txt', 'test -s shipped.txt'), after: ['fix'] },
      ],
    });
    const run = await cli(['run', manifest, '--home', home, '--no-dashboard']);
    assert.equal(run.exitCode, 0, run.all);
    const runId = /run (\d{8}-\d{6}-\w+)/.exec(run.stdout)?.[1] as string;
    const table = run.stdout.slice(run.stdout.indexOf('\ntask ')).trim().split('\n');
    const at = (re: RegExp) => table.findIndex((l) => re.test(l));
    const fix = at(/^fix\s+PASS\s+0\s/);
    assert.ok(fix > 0, table.join('\n'));
    assert.match(table[fix] ?? '', /select all; winner: candidate 2 \(fix--c2, script\)/);
    assert.match(table[fix + 1] ?? '', /^ {2}fix--c1\s+FAIL\s+1\s.*candidate 1 · script · /);
    assert.match(table[fix + 2] ?? '', /^ {2}fix--c2\s+PASS\s+1\s.*candidate 2 · winner · script$/);
    assert.match(table[fix + 3] ?? '', /^ {2}fix--c3\s+PASS\s+1\s.*candidate 3 · script$/);
    assert.match(table[fix + 4] ?? '', /^ship\s+PASS\s+1\s+\S+\s+\S+\s+—\s+fix\s/);

    const listed = await cli(['runs', runId, '--home', home]);
    assert.equal(listed.exitCode, 0, listed.all);
    // The table, then (after a blank line) what contained the steps, the network included.
    const [tablePart, containment] = listed.stdout.trim().split('\n\n');
    assert.match(containment ?? '', /^sandbox: /);
    const rows = (tablePart ?? '').split('\n').slice(1);
    assert.match(rows[0] ?? '', /^TASK\s+STATUS\s+AFTER\s+ATTEMPTS\s+WHY$/);
    assert.match(rows[1] ?? '', /^fix\s+PASS\s+—\s+0\s+select all; winner: candidate 2 \(fix--c2, script\)$/);
    assert.match(rows[2] ?? '', /^ {2}fix--c1\s+FAIL at check\s+—\s+1\s+candidate 1 · script · /);
    assert.match(rows[3] ?? '', /^ {2}fix--c2\s+PASS\s+—\s+1\s+candidate 2 · winner · script$/);
    assert.match(rows[4] ?? '', /^ {2}fix--c3\s+PASS\s+—\s+1\s+candidate 3 · script$/);
    assert.match(rows[5] ?? '', /^ship\s+PASS\s+fix\s+1/);
    // Then under which memory containment the attempts ran (core/process/memory-cap.ts).
    assert.match(rows[6] ?? '', /^memory: (cgroup[12] 4096 MB|none \(4096 MB not enforced\)) \(fix--c1#1, fix--c2#1, fix--c3#1, ship#1\)$/);
    assert.equal(rows.length, 7, listed.stdout);
    // Nothing of the check's output reaches the terminal as control characters, and it cannot add a line of its own.
    for (const out of [run.stdout, listed.stdout]) {
      assert.doesNotMatch(out, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, 'no escape or control character is printed');
      assert.doesNotMatch(out, /^fix--c1\s+PASS/m, 'the hostile output does not become a row of its own');
    }
    // The control: the escapes did reach the run's records (the reason in state.json), so the tables had to clean them.
    const state = JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'state.json'), 'utf8')) as {
      tasks: { key: string; reason?: string; attempts: { notes: string }[] }[];
    };
    const c1 = state.tasks.find((t) => t.key === 'fix--c1');
    assert.match(`${c1?.reason ?? ''}${c1?.attempts[0]?.notes ?? ''}`, /\u001b\[2J/, 'the hostile output is in the record');
    assert.match(listed.stdout, /<b>ALL GOOD<\/b>\?\[2J\?\]52;c;cm0gLXJm\?/, 'shown as text, each control character a ?');
    const json = JSON.parse((await cli(['runs', runId, '--json', '--home', home])).stdout) as { tasks: Record<string, unknown>[] };
    assert.deepEqual(
      json.tasks.map((t) => [
        t.key,
        t.status,
        t.select ?? null,
        t.winner ?? null,
        t.group ?? null,
        t.candidate ?? null,
        t.won ?? null,
        t.score === undefined ? 'absent' : t.score,
      ]),
      [
        ['fix', 'PASS', 'all', 'fix--c2', null, null, null, 'absent'],
        ['fix--c1', 'FAIL', null, null, 'fix', 1, false, null],
        ['fix--c2', 'PASS', null, null, 'fix', 2, true, null],
        ['fix--c3', 'PASS', null, null, 'fix', 3, false, null],
        ['ship', 'PASS', null, null, null, null, null, 'absent'],
      ],
    );
  });
});
