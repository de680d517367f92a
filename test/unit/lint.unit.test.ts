import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import type { Finding } from '../../extension/core/manifest/findings';
import { FILE, applyFix, assertRange, col, ctx, findingsOf, manifest, task } from './lint-helpers';
import { tempDir } from '../helpers/fixtures';
import { lintManifestFile, lintManifestText } from '../../extension/core/run/manifest';

const FIXTURES = path.resolve('test/fixtures/manifests');
const rulesOf = (findings: Finding[]) => findings.map((f) => `${f.rule}${f.taskKey ? ` ${f.taskKey}` : ''}`);

describe('lint: loader problems as findings', () => {
  it('malformed JSON is invalid-manifest at the position of the error', async () => {
    const text = '{\n  "tasks": [\n    { "key": "a" "spec": "x" }\n  ]\n}';
    const [f] = await lintManifestText(text, FILE, ctx);
    assert.equal(f?.rule, 'invalid-manifest');
    assert.equal(f?.severity, 'error');
    assert.deepEqual(f?.range?.start, { line: 3, column: 18 });
    assert.match(f?.message ?? '', /a comma was expected/);
  });

  it('a schema violation is invalid-manifest at the value, with its field path and task', async () => {
    const t = task('a', { timeout_s: -1 });
    const text = manifest([t], { max_parallel: 'four' });
    const found = (await lintManifestText(text, FILE, ctx)).filter((f) => f.rule === 'invalid-manifest');
    assert.deepEqual(
      found.map((f) => f.message),
      ['max_parallel: must be integer', 'tasks[0].timeout_s: must be >= 0.001, got -1'],
    );
    assertRange(text, found[0], 2, 18, '"four"');
    assertRange(text, found[1], 4, col(t, '-1'), '-1');
    assert.equal(found[1]?.taskKey, 'a');
  });

  it('unknown fields are unknown-field warnings at the field name', async () => {
    const t = { ...task('a'), colour: 'red' };
    const text = manifest([t], { owner: 'me' });
    const found = await findingsOf('unknown-field', text);
    assert.deepEqual(
      found.map((f) => f.severity),
      ['warning', 'warning'],
    );
    assertRange(text, found[0], 2, 3, '"owner"');
    assertRange(text, found[1], 4, col(t, '"colour"'), '"colour"');
  });

  it('duplicate-key on the second use, unsafe-key on the key, unknown-engine on the engine (all errors)', async () => {
    const dup = task('a');
    const unsafe = task('../escape');
    const unknown = task('c', { engine: 'gpt-magic' });
    const text = manifest([task('a'), dup, unsafe, unknown]);
    const found = (await lintManifestText(text, FILE, ctx)).filter((f) => f.severity === 'error');
    assert.deepEqual(
      found.map((f) => f.rule),
      ['duplicate-key', 'unsafe-key', 'unknown-engine'],
    );
    assertRange(text, found[0], 5, col(dup, '"a"'), '"a"');
    assertRange(text, found[1], 6, col(unsafe, '"../escape"'), '"../escape"');
    assertRange(text, found[2], 7, col(unknown, '"gpt-magic"'), '"gpt-magic"');
    assert.match(found[2]?.message ?? '', /known engines: claude, codex, gemini, grok, opencode, script/);
  });

  it('still runs the rules when the schema fails elsewhere (a half-typed task)', async () => {
    const text = manifest([task('a', { check: 'npm test || true' }), { key: 'b', spec: 'still typing' }]);
    const rules = (await lintManifestText(text, FILE, ctx)).map((f) => f.rule);
    assert.ok(rules.includes('invalid-manifest'));
    assert.ok(rules.includes('check-cannot-fail'));
  });

  it('sorts findings by position', async () => {
    const text = manifest([task('a', { check: 'true', verified: undefined }), task('b', { full_access: true })], { max_parallel: 1, colour: 1 });
    const offsets = (await lintManifestText(text, FILE, ctx)).map((f) => f.range?.offset ?? -1);
    assert.deepEqual(
      offsets,
      [...offsets].sort((x, y) => x - y),
    );
  });

  it('reports an unreadable file as one invalid-manifest error without a range', async () => {
    const found = await lintManifestFile('/nonexistent/m.swarm.json', ctx);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.rule, 'invalid-manifest');
    assert.equal(found[0]?.range, null);
    assert.match(found[0]?.message ?? '', /cannot read the manifest/);
  });
});

describe('lint: bad input never throws', () => {
  for (const text of [
    '',
    '   ',
    'hello',
    '[]',
    '42',
    'null',
    '{',
    '{"tasks": 3}',
    '{"tasks": [1, "x", null, []]}',
    '{"tasks": [{"key": 7, "check": ["a"], "spec": {}, "expect_files": "x"}]}',
  ]) {
    it(`lints ${JSON.stringify(text)} into findings with ranges`, async () => {
      const found = await lintManifestText(text, FILE, ctx);
      assert.ok(found.length >= 1);
      assert.ok(found.every((f) => f.range !== null));
      assert.ok(found.some((f) => f.rule === 'invalid-manifest'));
    });
  }

  it('lints every prefix of a real manifest (a manifest being typed) without throwing', async () => {
    const text = fs.readFileSync(path.join(FIXTURES, 'auth-feature.json'), 'utf8');
    for (let end = 0; end <= text.length; end += 11) {
      const found = await lintManifestText(text.slice(0, end), FILE, ctx);
      for (const f of found) assert.ok(f.range === null || f.range.offset + f.range.length <= end, `range past the end at ${end}`);
    }
  });

  it('lints checks that are half-typed shell (open quotes, stray operators)', async () => {
    for (const check of ['grep -q "unterminated', 'echo $(', '&& ||', ')', '{ test -f a', 'if grep -q x f; then', "curl 'http://localhost:3000"]) {
      await lintManifestText(manifest([task('a', { check })]), FILE, ctx);
    }
  });

  it('lints a 1,000-task manifest', async () => {
    const tasks = Array.from({ length: 1000 }, (_, i) => task(`t${i}`, { check: i % 3 ? 'npm test' : 'grep -q x f.txt', model: 'gpt-5-mini' }));
    const found = await lintManifestText(manifest(tasks), FILE, ctx);
    assert.equal(found.filter((f) => f.rule === 'check-silent').length, 334);
  });
});

describe('lint: quick fix output runs', () => {
  it('the grep -q fix prints what is missing when bash runs it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-fix-'));
    try {
      fs.writeFileSync(path.join(dir, 'csv.ts'), 'export const x = 1;\n');
      const text = manifest([task('a', { check: 'grep -q "export function parseCsv" csv.ts' })]);
      const fixed = JSON.parse(applyFix(text, (await findingsOf('check-silent', text))[0])) as { tasks: { check: string }[] };
      const run = () => execFileSync('bash', ['-c', fixed.tasks[0]?.check ?? ''], { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
      assert.throws(run, (e: { status: number; stdout: string }) => e.status === 1 && e.stdout === 'missing export function parseCsv in csv.ts\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('lint: Ringer-format manifests written by a team', () => {
  // Linted from a copy outside any repository: check-file-missing looks for the files the checks name in the repository
  // holding the manifest, which for the fixture in place would be this clone (or whatever holds it).
  const lintFixture = async (name: string) => {
    const copy = path.join(tempDir(), name);
    fs.copyFileSync(path.join(FIXTURES, name), copy);
    return (await lintManifestFile(copy, { ...ctx, useGit: false })).map((f) => ({ ...f, file: path.join(FIXTURES, name) }));
  };

  it('log-tools.json: accepted; finds the silent checks, the check that cannot fail, the unroutable model', async () => {
    const found = await lintFixture('log-tools.json');
    assert.ok(!found.some((f) => f.rule === 'invalid-manifest'));
    assert.deepEqual(rulesOf(found), [
      'check-silent parse-json-lines',
      'missing-verified summary-report',
      'check-cannot-fail summary-report',
      'check-pipefail cli-entrypoint',
      'check-silent cli-entrypoint',
      'model-not-routable cli-entrypoint',
    ]);
    const sigpipe = found.find((f) => f.rule === 'check-pipefail');
    assert.equal(sigpipe?.severity, 'warning', '`… | grep -q` can kill the producer with SIGPIPE under pipefail');
  });

  it('auth-feature.json: accepted; finds serial fan-out, a pointer spec, hard-coded ports, silent tests, a lost deliverable', async () => {
    const found = await lintFixture('auth-feature.json');
    assert.ok(!found.some((f) => f.rule === 'invalid-manifest'));
    assert.deepEqual(rulesOf(found), [
      'serial-fan-out',
      'underspecified-spec login-route',
      'hard-coded-port login-route',
      'check-pipefail login-route',
      'hard-coded-port login-route',
      'missing-expect-files logout-route',
      'missing-task-type logout-route',
      'check-silent session-migration',
      'check-silent session-migration',
      'deliverable-lost session-migration',
    ]);
  });

  it('dashboard-worktrees.json: accepted; finds the committing worker, the shared Sidebar.tsx, the wrong-lab model, a silent git diff', async () => {
    const found = await lintFixture('dashboard-worktrees.json');
    assert.ok(!found.some((f) => f.rule === 'invalid-manifest'));
    assert.deepEqual(rulesOf(found), [
      'worker-commits sidebar-collapse',
      'write-collision sidebar-badges',
      'model-not-routable sidebar-badges',
      'check-silent api-client-types',
    ]);
    assert.match(found[1]?.message ?? '', /Task "sidebar-collapse" also names src\/components\/Sidebar\.tsx/);
  });

  it('the bundled demo lints clean (git asked about its expected files)', async () => {
    assert.deepEqual(await lintManifestFile(path.resolve('examples/demo/demo.swarm.json'), { ...ctx, useGit: true }), []);
  });
});

describe('lint: task keys git cannot use in a branch name', () => {
  it('unsafe-key (error) on "foo." and "bar.lock", on the key, saying why', async () => {
    const dot = task('foo.');
    const lock = task('bar.lock');
    const text = manifest([dot, lock]);
    const found = await findingsOf('unsafe-key', text);
    assert.deepEqual(
      found.map((f) => [f.severity, f.taskKey]),
      [
        ['error', 'foo.'],
        ['error', 'bar.lock'],
      ],
    );
    assertRange(text, found[0], 4, col(dot, '"foo."'), '"foo."');
    assertRange(text, found[1], 5, col(lock, '"bar.lock"'), '"bar.lock"');
    assert.match(found[0]?.message ?? '', /^tasks\[0\]\.key: task key "foo\." cannot be part of a git branch name: it ends with "\."/);
    assert.match(found[1]?.message ?? '', /it ends with "\.lock" \(git writes <ref>\.lock while it updates a ref\)/);
  });
});
