import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, readRows, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

interface TaskJson {
  key: string;
  status: string;
  reason?: string;
  commit: string | null;
  after?: string[];
  generated?: string[];
  attempts: { verdict: string | null }[];
}
interface StateJson {
  runId: string;
  tasks: TaskJson[];
}

function onlyState(home: string): StateJson {
  const [id] = fs.readdirSync(path.join(home, 'runs'));
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', id as string, 'state.json'), 'utf8')) as StateJson;
}

function frozen(
  home: string,
  runId: string,
): { version?: number; manifest: { tasks: { key: string; after?: string[] }[] }; generated?: { by: string; keys: string[] }[] } {
  return JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'manifest.json'), 'utf8'));
}

/** A planner whose script writes `text` to tasks.json (a quoted heredoc: nothing in it is expanded). */
function planner(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return scriptTask('plan', `cat > tasks.json <<'VERDICT_EOF'\n${text}\nVERDICT_EOF`, undefined as unknown as string, {
    check: undefined,
    generate: { file: 'tasks.json', max_tasks: 3 },
    max_attempts: 1,
    ...extra,
  });
}

describe('workflows: generated tasks', function () {
  this.timeout(240000);

  it('a planner writes 3 tasks; they join the frozen manifest (version 2) and the state, and run after it, from its commit', async () => {
    const dir = tempDir();
    const repo = makeRepo(path.join(dir, 'repo'));
    const tasks = [
      scriptTask('g1', 'echo one > g1.txt', 'test -s g1.txt || { echo "g1.txt missing"; exit 1; }'),
      scriptTask('g2', 'echo two > g2.txt', 'test -s g2.txt || { echo "g2.txt missing"; exit 1; }'),
      scriptTask('g3', 'cat g1.txt g2.txt > g3.txt', 'grep -q two g3.txt || { echo "g3.txt lacks g2"; exit 1; }', { after: ['g1', 'g2'] }),
    ];
    const file = writeManifest(repo, { worktrees: true, max_parallel: 3, tasks: [planner(JSON.stringify(tasks, null, 2))] });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    assert.match(r.all, /3 generated task\(s\) joined the run: g1, g2, g3/);
    const s = onlyState(home);
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status, t.after ?? []]),
      [
        ['plan', 'PASS', []],
        ['g1', 'PASS', ['plan']],
        ['g2', 'PASS', ['plan']],
        ['g3', 'PASS', ['plan', 'g1', 'g2']],
      ],
    );
    assert.deepEqual(s.tasks[0]?.generated, ['g1', 'g2', 'g3']);
    const f = frozen(home, s.runId);
    assert.equal(f.version, 2);
    assert.deepEqual(
      f.manifest.tasks.map((t) => t.key),
      ['plan', 'g1', 'g2', 'g3'],
    );
    assert.deepEqual(
      f.generated?.map((g) => [g.by, g.keys]),
      [['plan', ['g1', 'g2', 'g3']]],
    );
    assert.deepEqual(
      JSON.parse(fs.readFileSync(path.join(home, 'runs', s.runId, 'manifest.v1.json'), 'utf8')).manifest.tasks.map((t: { key: string }) => t.key),
      ['plan'],
    );
    assert.deepEqual(
      readRows(home)
        .map((row) => row.task_key)
        .sort(),
      ['g1', 'g2', 'g3', 'plan'],
    );
    // g1 started from the planner's commit (which holds tasks.json).
    const plan = s.tasks[0]?.commit as string;
    assert.equal(git(repo, 'rev-parse', `${s.tasks[1]?.commit}~1`), plan);
    assert.deepEqual(
      git(repo, 'ls-tree', '--name-only', s.tasks[3]?.commit as string)
        .split('\n')
        .sort(),
      ['README.md', 'g1.txt', 'g2.txt', 'g3.txt', 'tasks.json'],
    );
  });

  it('a schema error: the planner FAILs naming positions in the generated file; nothing joins; the retry sees them and fixes the file', async () => {
    const dir = tempDir();
    // Attempt 1: task [1] has no check and an unsafe key. Attempt 2 (VERDICT_FAILURE_FILE set) writes a valid file.
    const bad =
      '[\n  {"key": "ok", "engine": "script", "spec": "echo ok > ok.txt", "check": "test -s ok.txt || exit 1"},\n  {"key": "../x", "engine": "script", "spec": "true"}\n]';
    const good = '[\n  {"key": "ok", "engine": "script", "spec": "echo ok > ok.txt", "check": "test -s ok.txt || exit 1"}\n]';
    const spec = `if [ -n "$VERDICT_FAILURE_FILE" ]; then cp "$VERDICT_FAILURE_FILE" seen-failure.md; fi; if [ -n "$VERDICT_FAILURE_FILE" ]; then cat > tasks.json <<'E'\n${good}\nE\nelse cat > tasks.json <<'E'\n${bad}\nE\nfi`;
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [{ key: 'plan', engine: 'script', spec, generate: { file: 'tasks.json', max_tasks: 3 }, max_attempts: 2 }],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const rows = readRows(home);
    assert.deepEqual(
      rows.map((row) => [row.task_key, row.verdict]),
      [
        ['plan', 'FAIL'],
        ['plan', 'PASS'],
        ['ok', 'PASS'],
      ],
    );
    const tasksFile = path.join(dir, 'w', 'plan', 'tasks.json');
    const notes = String(rows[0]?.notes);
    assert.match(notes, /^the tasks in tasks\.json were refused and none joined the run \(2 error\(s\)\)/);
    assert.ok(notes.includes(`${tasksFile}:3:3: error: [1]: missing required field "check" [invalid-manifest]`), notes);
    assert.ok(notes.includes(`${tasksFile}:3:11: error: [1].key: a task key becomes a directory`), notes);
    // The retry was told where, in the generated file.
    assert.ok(fs.readFileSync(path.join(dir, 'w', 'plan', 'seen-failure.md'), 'utf8').includes(`${tasksFile}:3:3`));
    const s = onlyState(home);
    assert.deepEqual(
      s.tasks.map((t) => [t.key, t.status]),
      [
        ['plan', 'PASS'],
        ['ok', 'PASS'],
      ],
    );
    const log = fs.readFileSync(path.join(home, 'runs', s.runId, 'tasks', 'plan', 'attempt-1', 'generate.log'), 'utf8');
    assert.match(log, /:3:3: error: \[1\]: missing required field "check"/);
  });

  it('refused, the planner FAIL and nothing joins: a generated task that generates, max_tasks exceeded, a check that cannot fail, widened access', async () => {
    const cases: [string, unknown[], RegExp][] = [
      [
        'recursion',
        [scriptTask('inner', 'true', 'test -s x || exit 1', { generate: { file: 'more.json', max_tasks: 2 } })],
        /\[0\]\.generate: a generated task cannot generate tasks itself \(no recursion\)/,
      ],
      [
        'cap',
        [1, 2, 3, 4].map((n) => scriptTask(`t${n}`, 'true', 'test -s x || exit 1')),
        /\[3\]: the file holds more tasks than "max_tasks": 3 of plan allows \(this is task 4; 4 in all\); nothing is cut/,
      ],
      [
        'cap-by-candidates',
        [scriptTask('t', 'true', 'test -s x || exit 1', { repeat: 4 })],
        /\[0\]: the file holds more tasks than "max_tasks": 3 .*with its 4 candidates/,
      ],
      ['cannot-fail', [scriptTask('t', 'true', 'echo done')], /\[check-cannot-fail\]/],
      ['full-access', [scriptTask('t', 'true', 'test -s x || exit 1', { full_access: true })], /\[0\]\.full_access: a generated task cannot have full_access/],
      [
        'engine-args',
        [scriptTask('t', 'true', 'test -s x || exit 1', { engine_args: ['--dangerously-bypass-approvals-and-sandbox'] })],
        /\[0\]\.engine_args: a generated task cannot set engine_args/,
      ],
      [
        'guards-off',
        [scriptTask('t', 'true', 'test -s x || exit 1', { guard: { secrets: false }, allow_deps: true, protect: [] })],
        /\[0\]\.guard: a generated task cannot turn built-in guards off.*\[0\]\.allow_deps: a generated task cannot allow dependencies.*\[0\]\.protect: a generated task can only add protected check inputs/,
      ],
      [
        'engine',
        [scriptTask('t', 'true', 'test -s x || exit 1', { engine: 'codex' })],
        /\[0\]\.engine: engine "codex" is not one this run started with \(script\)/,
      ],
      ['collision', [scriptTask('plan', 'true', 'test -s x || exit 1')], /\[0\]\.key: the run already has a task "plan"/],
      [
        'cycle',
        [scriptTask('a', 'true', 'test -s x || exit 1', { after: ['b'] }), scriptTask('b', 'true', 'test -s x || exit 1', { after: ['a'] })],
        /cycle in after: /,
      ],
      ['not-an-array', { tasks: [] } as unknown as unknown[], /the file must hold a JSON array of tasks, not an object/],
    ];
    for (const [name, content, expected] of cases) {
      const dir = tempDir();
      const file = writeManifest(dir, { workdir: 'w', tasks: [planner(JSON.stringify(content, null, 2))] });
      const home = path.join(dir, 'home');
      const r = await cli(['run', file, '--home', home, '--no-dashboard']);
      assert.equal(r.exitCode, 1, `${name}: ${r.all}`);
      const s = onlyState(home);
      assert.deepEqual(
        s.tasks.map((t) => [t.key, t.status]),
        [['plan', 'FAIL']],
        name,
      );
      assert.match(String(readRows(home)[0]?.notes), expected, name);
      assert.equal(frozen(home, s.runId).version, undefined, name);
    }
  });

  it('resume: a generated task that failed runs again from the frozen manifest; the planner is kept', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'may-pass');
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [
        planner(
          JSON.stringify([scriptTask('g', `test -f ${marker} && echo g > g.txt`, 'test -s g.txt || { echo "g.txt missing"; exit 1; }', { max_attempts: 1 })]),
        ),
      ],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 1, r.all);
    const s1 = onlyState(home);
    assert.deepEqual(
      s1.tasks.map((t) => [t.key, t.status]),
      [
        ['plan', 'PASS'],
        ['g', 'FAIL'],
      ],
    );
    fs.writeFileSync(marker, '');
    const again = await cli(['resume', s1.runId, '--home', home, '--no-dashboard']);
    assert.equal(again.exitCode, 0, again.all);
    assert.match(again.all, /resuming 1 task\(s\) of run \S+ \(same run\): g\n/);
    assert.deepEqual(
      readRows(home).map((row) => [row.task_key, row.verdict]),
      [
        ['plan', 'PASS'],
        ['g', 'FAIL'],
        ['g', 'PASS'],
      ],
    );
    // Running the planner again would add its tasks twice.
    const rerun = await cli(['rerun', s1.runId, 'plan', '--home', home, '--no-dashboard']);
    assert.notEqual(rerun.exitCode, 0, rerun.all);
    assert.match(rerun.all, /plan is a planner whose tasks already joined the run \(g\); rerun those instead/);
  });

  it('a tasks file that is a symlink (to valid tasks) is refused, worktree and plain mode alike; nothing joins', async () => {
    const valid = JSON.stringify([scriptTask('t', 'echo t > t.txt', 'test -s t.txt || exit 1')]);
    const spec = `cat > real.json <<'E'\n${valid}\nE\nln -s real.json tasks.json`;
    for (const worktrees of [true, false]) {
      const dir = tempDir();
      const repo = makeRepo(path.join(dir, 'repo'));
      const file = writeManifest(repo, {
        worktrees,
        workdir: 'w',
        tasks: [{ key: 'plan', engine: 'script', spec, generate: { file: 'tasks.json', max_tasks: 3 }, max_attempts: 1 }],
      });
      const home = path.join(dir, 'home');
      const r = await cli(['run', file, '--home', home, '--no-dashboard']);
      assert.equal(r.exitCode, 1, r.all);
      const s = onlyState(home);
      assert.deepEqual(
        s.tasks.map((t) => [t.key, t.status]),
        [['plan', 'FAIL']],
        `worktrees ${worktrees}`,
      );
      assert.match(String(readRows(home)[0]?.notes), /tasks\.json \(a symlink to /, `worktrees ${worktrees}`);
      assert.equal(frozen(home, s.runId).version, undefined);
    }
  });

  it('a file over 1 MiB is refused before it is parsed', async () => {
    const dir = tempDir();
    const spec = "{ printf '['; for i in $(seq 1 20000); do printf '%060d,' 0; done; printf '0]'; } > tasks.json";
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [{ key: 'plan', engine: 'script', spec, generate: { file: 'tasks.json', max_tasks: 3 }, max_attempts: 1 }],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(
      String(readRows(home)[0]?.notes),
      /^tasks\.json: the file is 1220003 bytes; a generated tasks file may have at most 1048576; no task joined the run$/,
    );
  });

  it('network: a planner without network generates tasks without network, and one that asks for it is refused', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [planner(JSON.stringify([scriptTask('t', 'echo x > x.txt', 'test -s x.txt || exit 1')]), { network: false })],
    });
    const home = path.join(dir, 'home');
    const r = await cli(['run', file, '--home', home, '--no-dashboard']);
    assert.equal(r.exitCode, 0, r.all);
    const s = onlyState(home);
    assert.deepEqual(
      frozen(home, s.runId).manifest.tasks.map((t) => [t.key, (t as { network?: boolean }).network]),
      [
        ['plan', false],
        ['t', false],
      ],
    );

    const dir2 = tempDir();
    const file2 = writeManifest(dir2, {
      workdir: 'w',
      tasks: [planner(JSON.stringify([scriptTask('t', 'true', 'test -s x || exit 1', { network: true })]), { network: false })],
    });
    const r2 = await cli(['run', file2, '--home', path.join(dir2, 'home'), '--no-dashboard']);
    assert.equal(r2.exitCode, 1, r2.all);
    assert.match(String(readRows(path.join(dir2, 'home'))[0]?.notes), /\[0\]\.network: plan runs without network, so the tasks it generates do too/);
  });

  it('network: a planner in a network namespace of its own cannot generate a task on the host\'s network ("host")', async () => {
    const dir = tempDir();
    const file = writeManifest(dir, {
      workdir: 'w',
      tasks: [planner(JSON.stringify([scriptTask('t', 'echo x > x.txt', 'test -s x.txt || exit 1', { network: 'host' })]))],
    });
    const r = await cli(['run', file, '--home', path.join(dir, 'home'), '--no-dashboard']);
    assert.equal(r.exitCode, 1, r.all);
    assert.match(
      String(readRows(path.join(dir, 'home'))[0]?.notes),
      /\[0\]\.network: a generated task cannot share the host's network \("host"\): plan did not/,
    );
  });
});
