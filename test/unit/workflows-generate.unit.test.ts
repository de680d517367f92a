import assert from 'node:assert/strict';
import { builtinEngines } from '../../engines/index';
import { validateGenerated } from '../../extension/core/run/workflows/generate/file';
import type { TaskSpec } from '../../extension/core/manifest/types';
import { FILE, assertRange, col, ctx, findingsOf, manifest, task } from './lint-helpers';
import { parseManifest } from '../../extension/core/run/manifest';
import { WORKFLOW_SECTIONS } from '../../extension/core/run/workflows';

const engines = new Set(ctx.engines.keys());

function plannerSpec(over: Partial<TaskSpec> = {}): TaskSpec {
  const { manifest: m } = parseManifest(manifest([task('plan', { generate: { file: 'tasks.json', max_tasks: 2 } })]), FILE, { engines });
  assert.ok(m);
  return { ...(m.tasks[0] as TaskSpec), ...over };
}

const gctx = (over: Record<string, unknown> = {}) => ({
  planner: plannerSpec(),
  existingKeys: new Set(['plan', 'old']),
  allowedEngines: new Set(['codex', 'script']),
  lint: { engines: builtinEngines(), sections: WORKFLOW_SECTIONS },
  worktrees: false,
  ...over,
});

describe('generated: a planner in the manifest', () => {
  it('without a check of its own, its check is that the file exists and is not empty, and the file is expected', () => {
    const { manifest: m } = parseManifest(manifest([task('plan', { check: undefined, generate: { file: "it's.json", max_tasks: 2 } })]), FILE, { engines });
    const plan = m?.tasks[0];
    assert.equal(plan?.check, `test -s 'it'\\''s.json' || { echo 'it'\\''s.json'" is missing or empty: the planner must write its tasks there"; exit 1; }`);
    assert.deepEqual(plan?.expectFiles, ['csv.ts', "it's.json"]);
    assert.deepEqual(plan?.generate, { file: "it's.json", maxTasks: 2 });
  });

  it('a task without check and without generate still misses its check (schema)', async () => {
    const found = await findingsOf('invalid-manifest', manifest([task('a', { check: undefined })]));
    assert.match(found[0]?.message ?? '', /missing required field "check"/);
  });

  it('lint generate: a file outside the task dir, a planner that is best-of-N too', async () => {
    const a = task('a', { generate: { file: '../up.json', max_tasks: 2 } });
    const b = task('b', { generate: { file: 'ok.json', max_tasks: 2 }, repeat: 2 });
    const text = manifest([a, b]);
    const found = await findingsOf('generate', text);
    assert.deepEqual(
      found.map((f) => f.taskKey),
      ['a', 'b'],
    );
    assertRange(text, found[0], 4, col(a, '"../up.json"'), '"../up.json"');
    assert.match(found[0]?.message ?? '', /climbs out with "\.\."/);
    assert.match(found[1]?.message ?? '', /a planner cannot be best-of-N as well/);
    assert.equal(parseManifest(text, FILE, { engines }).manifest, null);
  });
});

describe('generated: the file', () => {
  it("positions are the file's own, line 1 included (the lint text's prefix is taken back out)", async () => {
    const text = '[{"key": "a", "engine": "script", "spec": "x"}]';
    const r = await validateGenerated(text, '/t/tasks.json', gctx());
    assert.equal(r.tasks, null);
    const missing = r.findings.find((f) => /missing required field "check"/.test(f.message));
    assert.deepEqual([missing?.range?.start, missing?.message], [{ line: 1, column: 2 }, '[0]: missing required field "check"']);
  });

  it('valid: each task comes after the planner (once), and may come after a task of the run', async () => {
    const text = JSON.stringify([
      { key: 'a', engine: 'script', spec: 'echo a > a.txt', check: 'test -s a.txt || exit 1', after: ['plan'] },
      { key: 'b', engine: 'script', spec: 'echo b > b.txt', check: 'test -s b.txt || exit 1', after: ['old', 'a'] },
    ]);
    const r = await validateGenerated(text, '/t/tasks.json', gctx());
    assert.deepEqual(
      r.findings.filter((f) => f.severity === 'error'),
      [],
    );
    assert.deepEqual(
      r.tasks?.map((t) => t.after),
      [['plan'], ['plan', 'old', 'a']],
    );
  });

  it("an after naming a task that exists nowhere is a task-graph error listing the keys, the run's included", async () => {
    const r = await validateGenerated(
      JSON.stringify([{ key: 'a', engine: 'script', spec: 'x', check: 'test -s x || exit 1', after: ['nope'] }]),
      '/t/tasks.json',
      gctx(),
    );
    assert.match(
      r.findings.find((f) => f.rule === 'task-graph')?.message ?? '',
      /\[0\]\.after\[0\]: no task has the key "nope"; keys in this manifest: plan, old/,
    );
  });

  it('malformed JSON: a syntax error at its place', async () => {
    const r = await validateGenerated('[\n  {"key": "a",,}\n]', '/t/tasks.json', gctx());
    assert.equal(r.tasks, null);
    assert.deepEqual(r.findings[0]?.range?.start, { line: 2, column: 15 });
  });
});

describe('generated: what every workflow section of a generated task names and compiles into', () => {
  // The run started with codex and script only: claude exists (lint knows it) but preflight never checked its binary.
  const errorsOf = async (t: Record<string, unknown>, maxTasks = 2) => {
    const r = await validateGenerated(
      JSON.stringify([t], null, 2),
      '/w/tasks.json',
      gctx({ planner: plannerSpec({ generate: { file: 'tasks.json', maxTasks } }) }),
    );
    return r.findings.filter((f) => f.severity === 'error').map((f) => f.message);
  };
  const base = { spec: 'Write a.txt', check: 'test -s a.txt', engine: 'codex', task_type: 't', verified: 'v' };

  it('hostile plan: an engine the run did not start with, named by validate, council, phases review or a review, is refused', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { key: 'v', ...base, validate: { engine: 'claude', check: 'true', engines: [{ engine: 'codex' }] } },
        /^\[0\]\.validate\.engine: engine "claude" is not one this run started with/,
      ],
      [
        { key: 'c', ...base, council: { members: [{ engine: 'claude' }, { engine: 'codex' }], chair: { engine: 'codex', check: 'true' } } },
        /^\[0\]\.council\.members\.0\.engine: engine "claude" is not one this run started with/,
      ],
      [
        {
          key: 'p',
          ...base,
          spec: 'Write {file}',
          check: 'test -s {file}',
          phases: { files: ['a.txt'], test: { engine: 'codex', model: 'm2', check: 'true' }, review: { engines: ['claude'] } },
        },
        /^\[0\]\.phases\.review\.engines\.0: engine "claude" is not one this run started with/,
      ],
      [
        { key: 'r', ...base, review: { engines: [{ engine: 'claude' }] } },
        /^\[0\]\.review\.engines\.0\.engine: engine "claude" is not one this run started with/,
      ],
    ];
    for (const [t, expected] of cases) {
      const errors = await errorsOf(t, 9);
      assert.ok(
        errors.some((m) => expected.test(m)),
        `${String(t.key)}: ${errors.join('\n') || 'accepted'}`,
      );
    }
  });

  it('hostile plan: a validated task and a council count every task they compile into against max_tasks', async () => {
    const validated = await errorsOf({ key: 'v', ...base, validate: { engine: 'codex', check: 'true', engines: [{ engine: 'codex' }, { engine: 'codex' }] } });
    assert.ok(
      validated.some((m) => /more tasks than "max_tasks": 2 .*with its 3 workers and validator/.test(m)),
      validated.join('\n') || 'accepted',
    );
    const council = await errorsOf(
      { key: 'c', ...base, council: { members: [{ engine: 'codex' }, { engine: 'codex', model: 'm2' }], chair: { engine: 'codex', check: 'true' } } },
      4,
    );
    assert.ok(
      council.some((m) => /more tasks than "max_tasks": 4 .*with its 5 answers, reviews and chair/.test(m)),
      council.join('\n') || 'accepted',
    );
    assert.deepEqual(
      await errorsOf(
        { key: 'c', ...base, council: { members: [{ engine: 'codex' }, { engine: 'codex', model: 'm2' }], chair: { engine: 'codex', check: 'true' } } },
        5,
      ),
      [],
    );
  });
});
