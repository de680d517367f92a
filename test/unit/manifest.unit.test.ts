import assert from 'node:assert/strict';
import path from 'node:path';
import { ManifestError, formatProblem } from '../../extension/core/manifest/types';
import { loadManifest, parseManifest } from '../../extension/core/run/manifest';

const FILE = '/work/x/demo.swarm.jsonc';
const engines = new Set(['codex', 'script', 'claude']);
const errors = (text: string) => parseManifest(text, FILE, { engines }).problems.filter((p) => p.severity === 'error');

describe('manifest loader', () => {
  it('loads a Ringer-style manifest with defaults applied and paths resolved against the manifest folder', () => {
    const text = `{
      // Ringer fields, unchanged
      "run_name": "r1", "workdir": "./work", "max_parallel": 3,
      "tasks": [
        { "key": "a", "spec": "do a", "check": "true", "expect_files": ["a.txt"], "engine": "codex",
          "model": "gpt-5-mini", "task_type": "parser", "timeout_s": 60, "engine_args": ["--x", "1"],
          "verified": "a works", "full_access": true, "max_attempts": 3 },
        { "key": "b", "spec": "do b", "check": "make test", },
      ],
    }`;
    const { manifest, problems } = parseManifest(text, FILE, { engines });
    assert.deepEqual(problems, []);
    assert.ok(manifest);
    assert.equal(manifest.runName, 'r1');
    assert.equal(manifest.workdir, '/work/x/work');
    assert.equal(manifest.maxParallel, 3);
    assert.equal(manifest.worktrees, false);
    assert.deepEqual(manifest.tasks[0], {
      key: 'a',
      spec: 'do a',
      check: 'true',
      expectFiles: ['a.txt'],
      engine: 'codex',
      model: 'gpt-5-mini',
      taskType: 'parser',
      timeoutMs: 60000,
      checkTimeoutMs: 300000,
      watchdogMs: null,
      engineArgs: ['--x', '1'],
      verified: 'a works',
      fullAccess: true,
      network: true,
      protect: null,
      maxAttempts: 3,
      fallback: [],
      after: [],
      review: null,
      guard: { secrets: true, stubs: true, deps: true, paths: true },
      allowDeps: [],
      allowPaths: null,
      sparse: null,
    });
    const b = manifest.tasks[1];
    assert.ok(b);
    assert.equal(b.engine, 'codex');
    assert.equal(b.timeoutMs, 900000);
    assert.equal(b.maxAttempts, 2);
    assert.equal(b.model, null);
    assert.deepEqual(b.expectFiles, []);
  });

  it('names line:column for malformed JSON', () => {
    const errs = errors('{\n  "tasks": [\n    { "key": "a" "spec": "x" }\n  ]\n}');
    assert.equal(errs.length >= 1, true);
    const e = errs[0];
    assert.ok(e?.range);
    assert.equal(e.range.start.line, 3);
    assert.equal(e.range.start.column, 18);
    assert.match(formatProblem(e), /^\/work\/x\/demo\.swarm\.jsonc:3:18: error: \(syntax\): malformed JSON: a comma was expected/);
  });

  it('names the field path and position of a schema violation', () => {
    const text = '{\n  "max_parallel": "four",\n  "tasks": [ { "key": "a", "spec": "x", "check": "true", "timeout_s": -1 } ]\n}';
    const errs = errors(text);
    const byPath = new Map(errs.map((e) => [e.path, e]));
    assert.equal(byPath.get('max_parallel')?.message, 'must be integer');
    assert.deepEqual(byPath.get('max_parallel')?.range?.start, { line: 2, column: 19 });
    assert.match(byPath.get('tasks[0].timeout_s')?.message ?? '', /^must be >= 0\.001, got -1$/);
    assert.deepEqual(byPath.get('tasks[0].timeout_s')?.range?.start, { line: 3, column: 71 });
  });

  it('points a missing required field at the object that lacks it', () => {
    const errs = errors('{ "tasks": [ { "key": "a", "spec": "x" } ] }');
    assert.equal(errs.length, 1);
    assert.equal(errs[0]?.path, 'tasks[0]');
    assert.equal(errs[0]?.message, 'missing required field "check"');
    assert.equal(errs[0]?.range?.start.column, 14);
  });

  it('refuses duplicate task keys, naming the first use', () => {
    const errs = errors('{ "tasks": [ {"key":"a","spec":"x","check":"true"}, {"key":"a","spec":"y","check":"true"} ] }');
    assert.equal(errs.length, 1);
    assert.equal(errs[0]?.path, 'tasks[1].key');
    assert.match(errs[0]?.message ?? '', /duplicate task key "a" \(first used by tasks\[0\]\)/);
  });

  it('refuses duplicate properties in one object', () => {
    const errs = errors('{ "tasks": [ {"key":"a","spec":"x","check":"true","check":"false"} ] }');
    assert.equal(errs.length, 1);
    assert.equal(errs[0]?.path, 'tasks[0].check');
    assert.match(errs[0]?.message ?? '', /appears more than once/);
  });

  for (const bad of ['a/b', 'a\\\\b', '..', '.hidden', 'x..y', '', 'sp ace']) {
    it(`refuses the unsafe key ${JSON.stringify(bad)}`, () => {
      const errs = errors(`{ "tasks": [ {"key":"${bad}","spec":"x","check":"true"} ] }`);
      assert.ok(errs.length >= 1, 'expected an error');
      assert.ok(
        errs.every((e) => e.path === 'tasks[0].key'),
        JSON.stringify(errs),
      );
    });
  }

  it('accepts keys made of letters, digits, dot, underscore and dash', () => {
    assert.deepEqual(errors('{ "tasks": [ {"key":"A-1_b.c","spec":"x","check":"true"} ] }'), []);
  });

  it('lists the known engines for an unknown one', () => {
    const errs = errors('{ "tasks": [ {"key":"a","spec":"x","check":"true","engine":"gpt-magic"} ] }');
    assert.equal(errs.length, 1);
    assert.equal(errs[0]?.path, 'tasks[0].engine');
    assert.equal(errs[0]?.message, 'unknown engine "gpt-magic"; known engines: claude, codex, script');
  });

  it('hide: absolute or ~/ paths kept as written; a relative one, an expose or a sockets is an error at its place', () => {
    const { manifest, problems } = parseManifest(
      '{ "hide": ["~/.config/mycloud", "/etc/app/secret.env"], "tasks": [ {"key":"a","spec":"x","check":"true"} ] }',
      FILE,
      { engines },
    );
    assert.deepEqual(problems, []);
    assert.deepEqual(manifest?.hide, ['~/.config/mycloud', '/etc/app/secret.env']);
    assert.deepEqual(parseManifest('{ "tasks": [ {"key":"a","spec":"x","check":"true"} ] }', FILE, { engines }).manifest?.hide, []);
    const text =
      '{\n  "hide": ["/ok", "relative/secret"],\n  "expose": ["~/.ssh"],\n  "sockets": ["/run/docker.sock"],\n  "tasks": [ {"key":"a","spec":"x","check":"true"} ]\n}';
    const errs = errors(text).map((e) => [e.path, e.range?.start.line, e.range?.start.column, e.message]);
    assert.deepEqual(errs, [
      ['hide[1]', 2, 19, '"relative/secret" must be an absolute path or start with ~/'],
      [
        'expose',
        3,
        3,
        'a manifest cannot expose a hidden path (a repository may not widen its own sandbox); only your own config file can ("expose" in ~/.config/verdict/config.json)',
      ],
      [
        'sockets',
        4,
        3,
        'a manifest cannot let its steps reach a socket of the machine (a repository may not widen its own sandbox); only your own config file can ("sockets" in ~/.config/verdict/config.json)',
      ],
    ]);
    assert.equal(parseManifest(text, FILE, { engines }).manifest, null);
  });

  it('warns, not fails, on unknown fields, pointing at the field name', () => {
    const { manifest, problems } = parseManifest('{ "owner": "me", "tasks": [ {"key":"a","spec":"x","check":"true","colour":"red"} ] }', FILE, { engines });
    assert.ok(manifest);
    assert.deepEqual(
      problems.map((p) => [p.severity, p.path]),
      [
        ['warning', 'owner'],
        ['warning', 'tasks[0].colour'],
      ],
    );
    assert.equal(problems[1]?.range?.start.column, 66);
  });

  it('guard, allow_deps and allow_paths: task keys over run keys over all-on; false turns every guard off; bad shapes are errors', () => {
    const text = JSON.stringify({
      guard: { stubs: false },
      allow_deps: ['zod'],
      allow_paths: ['src/**'],
      tasks: [
        { key: 'a', spec: 's', check: 'true' },
        { key: 'b', spec: 's', check: 'true', guard: { stubs: true, deps: false }, allow_deps: true, allow_paths: ['lib/'] },
        { key: 'c', spec: 's', check: 'true', guard: false, allow_deps: false },
      ],
    });
    const tasks = parseManifest(text, FILE, { engines }).manifest?.tasks ?? [];
    assert.deepEqual(
      tasks.map((t) => [t.guard, t.allowDeps, t.allowPaths]),
      [
        [{ secrets: true, stubs: false, deps: true, paths: true }, ['zod'], ['src/**']],
        [{ secrets: true, stubs: true, deps: false, paths: true }, true, ['lib/']],
        [{ secrets: false, stubs: false, deps: false, paths: false }, [], ['src/**']],
      ],
    );
    const bad = errors(JSON.stringify({ tasks: [{ key: 'a', spec: 's', check: 'true', guard: { stub: false }, allow_paths: [] }] }));
    assert.deepEqual([...new Set(bad.map((p) => p.path))], ['tasks[0].guard', 'tasks[0].allow_paths']);
    assert.ok(
      bad.some((p) => /additional properties/.test(p.message)),
      'the unknown guard name is the reason',
    );
  });

  it('splits a string engine_args like a shell, and refuses shell operators in it', () => {
    const ok = parseManifest('{ "tasks": [ {"key":"a","spec":"x","check":"true","engine_args":"--c \'a b\' -v"} ] }', FILE, { engines });
    assert.deepEqual(ok.manifest?.tasks[0]?.engineArgs, ['--c', 'a b', '-v']);
    const errs = errors('{ "tasks": [ {"key":"a","spec":"x","check":"true","engine_args":"-v; rm -rf /"} ] }');
    assert.equal(errs[0]?.path, 'tasks[0].engine_args');
  });

  it('throws ManifestError from loadManifest for a missing file, naming it', () => {
    assert.throws(
      () => loadManifest('/nonexistent/m.swarm.json'),
      (e: unknown) => e instanceof ManifestError && /\/nonexistent\/m\.swarm\.json: error: \(file\): cannot read the manifest/.test(e.message),
    );
  });

  it('loads the bundled demo manifest', () => {
    const { manifest } = loadManifest(path.resolve('examples/demo/demo.swarm.json'), { engines: new Set(['script']) });
    assert.equal(manifest.worktrees, true);
    assert.equal(manifest.tasks.length, 4);
  });
});
