import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { cli } from '../helpers/cli';
import { git, makeRepo, scriptTask, tempDir, writeManifest } from '../helpers/fixtures';

/**
 * Every bad input: exit 2, a message naming what and where, and nothing created (no run records, worktree, branch).
 * The preflight cases pass --force: their filler check `true` is a lint error, which would refuse the run first.
 */
describe('verdict run with bad input', function () {
  this.timeout(60000);
  let dir: string;
  let home: string;
  beforeEach(() => {
    dir = tempDir();
    home = path.join(dir, 'home');
  });
  const nothingCreated = () => assert.equal(fs.existsSync(path.join(home, 'runs')), false, 'no run records may be left behind');

  it('malformed JSON: file:line:column', async () => {
    const file = path.join(dir, 'bad.swarm.json');
    fs.writeFileSync(file, '{\n  "tasks": [\n    { "key": "a", "spec": "x" "check": "true" }\n  ]\n}\n');
    const r = await cli(['run', file, '--home', home]);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, new RegExp(`${file.replace(/[.]/g, '\\.')}:3:31: error: \\(syntax\\): malformed JSON: a comma was expected`));
    nothingCreated();
  });

  it('schema violation: the field path', async () => {
    const file = writeManifest(dir, { max_parallel: 0, tasks: [scriptTask('a', 'x', 'true', { max_attempts: 'two' })] });
    const r = await cli(['run', file, '--home', home]);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /:2:19: error: max_parallel: must be >= 1/);
    assert.match(r.stderr, /error: tasks\[0\]\.max_attempts: must be integer/);
    nothingCreated();
  });

  it("a time limit past Node's timer (2,200,000 s): file:line:column and the field, nothing run (it was TIMEOUT after 0.2 s)", async () => {
    const file = path.join(dir, 'long.swarm.json');
    fs.writeFileSync(
      file,
      '{\n  "tasks": [\n    { "key": "t", "engine": "script", "spec": "echo done > out.txt", "check": "grep -q done out.txt",\n      "timeout_s": 2200000,\n      "check_timeout_s": 2200000 }\n  ]\n}\n',
    );
    const r = await cli(['run', file, '--home', home]);
    assert.equal(r.exitCode, 2, r.all);
    assert.match(
      r.stderr,
      new RegExp(
        `${file.replace(/[.]/g, '\\.')}:4:20: error: tasks\\[0\\]\\.timeout_s: must be <= 2147483, got 2200000 \\(seconds: Node's timers hold at most 2\\^31−1 ms`,
      ),
    );
    assert.match(r.stderr, new RegExp(`${file.replace(/[.]/g, '\\.')}:5:26: error: tasks\\[0\\]\\.check_timeout_s: must be <= 2147483, got 2200000`));
    nothingCreated();
    // verdict lint says the same, at the same places.
    const lint = await cli(['lint', file]);
    assert.equal(lint.exitCode, 1);
    assert.match(lint.stdout, /:4:20: error \[invalid-manifest\] \(t\) tasks\[0\]\.timeout_s: must be <= 2147483/);
    assert.match(lint.stdout, /:5:26: error \[invalid-manifest\] \(t\) tasks\[0\]\.check_timeout_s: must be <= 2147483/);
  });

  it('numbers out of range in the config file and the flags: the file:line:column or the flag, exit 2, nothing run', async () => {
    const file = writeManifest(dir, { tasks: [scriptTask('a', 'echo ok > f', 'grep -q ok f')] });
    const config = path.join(dir, 'c.json');
    fs.writeFileSync(config, '{\n  "max_parallel": 100000\n}\n');
    const c = await cli(['run', file, '--home', home, '--config', config]);
    assert.equal(c.exitCode, 2, c.all);
    assert.match(c.stderr, /c\.json:2:19: max_parallel: must be an integer from 1 to 256 \(as the manifest's max_parallel\), got 100000/);
    const f = await cli(['run', file, '--home', home, '--max-parallel', '100000']);
    assert.equal(f.exitCode, 2, f.all);
    assert.match(f.stderr, /--max-parallel must be an integer from 1 to 256/);
    nothingCreated();
  });

  it('duplicate keys and unsafe keys', async () => {
    const file = writeManifest(dir, { tasks: [scriptTask('a', 'x', 'true'), scriptTask('a', 'y', 'true'), scriptTask('../escape', 'z', 'true')] });
    const r = await cli(['run', file, '--home', home]);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /tasks\[1\]\.key: duplicate task key "a"/);
    assert.match(r.stderr, /tasks\[2\]\.key: a task key becomes a directory/);
    nothingCreated();
  });

  it('unknown engine: lists the known ones', async () => {
    const file = writeManifest(dir, { tasks: [{ key: 'a', spec: 'x', check: 'true', engine: 'skynet' }] });
    const r = await cli(['run', file, '--home', home]);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /tasks\[0\]\.engine: unknown engine "skynet"; known engines: .*claude.*codex.*script/);
    nothingCreated();
  });

  it('missing engine binary: names the binary and how to install it, before any task starts', async () => {
    const config = path.join(dir, 'verdict.config.json');
    fs.writeFileSync(
      config,
      JSON.stringify({ engines: { ghost: { binary: 'verdict-ghost-cli', argv: ['{spec}'], install: 'npm i -g ghost-cli', output: 'none' } } }),
    );
    const file = writeManifest(dir, { tasks: [scriptTask('ok', 'true', 'true'), { key: 'g', spec: 'x', check: 'true', engine: 'ghost' }] });
    const r = await cli(['run', file, '--home', home, '--config', config, '--force']);
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.stderr, /engine "ghost" needs the `verdict-ghost-cli` command, which is not on PATH\. Install it: npm i -g ghost-cli/);
    nothingCreated();
  });

  it('worktree mode outside a git repository', async () => {
    const file = writeManifest(dir, { worktrees: true, tasks: [scriptTask('a', 'true', 'true')] });
    const r = await cli(['run', file, '--home', home, '--force']);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /worktree mode needs a git repository, but .* is not inside one/);
    nothingCreated();
  });

  it('a base_ref that does not exist: no worktree, no branch', async () => {
    const repo = makeRepo(path.join(dir, 'repo'));
    const file = writeManifest(repo, { worktrees: true, base_ref: 'no-such-branch', tasks: [scriptTask('a', 'true', 'true')] });
    const r = await cli(['run', file, '--home', home, '--force']);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /base_ref "no-such-branch" does not name a commit/);
    assert.equal(git(repo, 'branch', '--list', 'verdict/*'), '');
    assert.equal(git(repo, 'worktree', 'list').split('\n').length, 1);
    nothingCreated();
  });

  it('a workdir that cannot be written', async () => {
    const blocker = path.join(dir, 'a-file');
    fs.writeFileSync(blocker, 'not a folder');
    const file = writeManifest(dir, { workdir: 'a-file/work', tasks: [scriptTask('a', 'true', 'true')] });
    const r = await cli(['run', file, '--home', home, '--force']);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /workdir .*a-file\/work cannot be created: .*a-file is a file/);
    nothingCreated();
  });

  it('a VERDICT_HOME that cannot be written', async () => {
    const blocker = path.join(dir, 'home-is-a-file');
    fs.writeFileSync(blocker, 'x');
    const file = writeManifest(dir, { workdir: 'w', tasks: [scriptTask('a', 'true', 'true')] });
    const r = await cli(['run', file, '--home', path.join(blocker, 'home'), '--force']);
    assert.equal(r.exitCode, 2, r.all);
    assert.match(r.stderr, /VERDICT_HOME .*home-is-a-file\/home cannot be created: .*home-is-a-file is a file/);
  });

  it('a malformed config file: file:line:column', async () => {
    const config = path.join(dir, 'c.json');
    fs.writeFileSync(config, '{ "engines": { ');
    const file = writeManifest(dir, { tasks: [scriptTask('a', 'true', 'true')] });
    const r = await cli(['run', file, '--home', home, '--config', config]);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /c\.json:1:\d+: malformed JSON/);
  });

  it('bad flags: usage and exit 2', async () => {
    const r = await cli(['run', 'x.swarm.json', '--max-parallel', 'lots']);
    assert.equal(r.exitCode, 2);
    assert.match(r.stderr, /--max-parallel must be an integer from 1 to 256 \(as the manifest's max_parallel\), got "lots"/);
    const u = await cli(['frobnicate']);
    assert.equal(u.exitCode, 2);
    assert.match(u.stderr, /unknown command "frobnicate"[\s\S]*usage: verdict/);
  });
});
