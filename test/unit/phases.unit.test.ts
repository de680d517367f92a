import assert from 'node:assert/strict';
import { builtinEngines } from '../../engines';
import { lintManifestText, parseManifest } from '../../extension/core/run/manifest';
import { WORKFLOW_SECTIONS } from '../../extension/core/run/workflows';

const engines = new Set(['codex', 'claude', 'gemini', 'script']);
const manifest = (task: Record<string, unknown>, run: Record<string, unknown> = {}) =>
  JSON.stringify(
    {
      ...run,
      tasks: [{ key: 'util', engine: 'codex', spec: 'Write {file}: a pure function.', check: 'node --check {file}', verified: '{file} parses', ...task }],
    },
    null,
    2,
  );
const phases = { files: ['src/zscore.mjs', 'src/ewma.mjs'], test: { engine: 'claude', check: 'node --test test/' } };

describe('phases: compiled into ordinary tasks', () => {
  it('one implement task per file ({file} replaced, only that file, delivered, reviewed), then the test phase under the key', () => {
    const m = parseManifest(manifest({ phases: { ...phases, review: { engines: ['gemini'] } } }, { worktrees: true }), '/m.swarm.json', { engines }).manifest!;
    assert.deepEqual(
      m.tasks.map((t) => [t.key, t.engine, t.model, t.after]),
      [
        ['util--impl-1', 'codex', null, []],
        ['util--impl-2', 'codex', null, []],
        ['util', 'claude', null, ['util--impl-1', 'util--impl-2']],
      ],
    );
    const [a, , test] = m.tasks;
    assert.deepEqual(
      [a!.spec, a!.check, a!.verified, a!.expectFiles, a!.allowPaths],
      ['Write src/zscore.mjs: a pure function.', 'node --check src/zscore.mjs', 'src/zscore.mjs parses', ['src/zscore.mjs'], ['src/zscore.mjs']],
    );
    assert.deepEqual(a!.review, { engines: [{ engine: 'gemini', model: null }], require: 'all' });
    assert.equal(test!.check, 'node --test test/');
    assert.deepEqual(test!.protect, ['src/zscore.mjs', 'src/ewma.mjs'], 'the test writer may not change the implementation');
    assert.equal(test!.review, null);
    assert.equal(test!.inputs, undefined, 'worktree mode: the test phase starts from the merge of the implementations');
    assert.match(test!.spec, /Other agents implemented these files, one each, for the task below: src\/zscore\.mjs, src\/ewma\.mjs/);
  });

  it('plain mode: the test phase reads the implementations as inputs named by their keys; implement on its own engine', () => {
    const m = parseManifest(
      manifest({
        model: 'gpt-5',
        phases: { ...phases, implement: { engine: 'gemini' }, test: { ...phases.test, engine: 'codex', model: 'gpt-5', spec: 'write tests' } },
      }),
      '/m.swarm.json',
      { engines },
    ).manifest!;
    assert.deepEqual(
      m.tasks.map((t) => [t.key, t.engine, t.model]),
      [
        ['util--impl-1', 'gemini', null],
        ['util--impl-2', 'gemini', null],
        ['util', 'codex', 'gpt-5'],
      ],
    );
    assert.deepEqual(m.tasks[2]!.inputs, { from: [{ key: 'util--impl-1' }, { key: 'util--impl-2' }], anonymous: false });
    assert.equal(m.tasks[2]!.spec, 'write tests');
  });
});

describe('phases: lint', () => {
  const errors = (task: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    parseManifest(manifest(task, extra), '/m.swarm.json', { engines })
      .problems.filter((p) => p.severity === 'error')
      .map((p) => [p.code, p.path, p.message]);

  it("the test phase on the implementer's engine and model is an error at phases.test.engine (a default model counts as the same)", async () => {
    const same = errors({ phases: { ...phases, test: { engine: 'codex', check: 'node --test test/' } } });
    assert.deepEqual(
      same.map((e) => e.slice(0, 2)),
      [['phases', 'tasks[0].phases.test.engine']],
    );
    assert.match(String(same[0]![2]), /the test phase runs on the implementer's own engine and model \(codex\)/);
    assert.deepEqual(
      errors({ model: 'gpt-5', phases: { ...phases, test: { engine: 'codex', model: 'gpt-5', check: 'x' } } }).map((e) => e[1]),
      ['tasks[0].phases.test.engine'],
    );
    assert.deepEqual(
      errors({ phases: { ...phases, implement: { engine: 'claude' } } }).map((e) => e[1]),
      ['tasks[0].phases.test.engine'],
      'the implementer is phases.implement when given',
    );
    assert.deepEqual(
      errors({ model: 'gpt-5', phases: { ...phases, test: { engine: 'codex', model: 'o3', check: 'x' } } }),
      [],
      'another model of the same engine is another writer',
    );
    const findings = await lintManifestText(manifest({ phases: { ...phases, test: { engine: 'codex', check: 'node --test test/' } } }), '/m.swarm.json', {
      engines: builtinEngines(),
      useGit: false,
    });
    const f = findings.find((x) => x.rule === 'phases');
    assert.equal(f?.severity, 'error');
    assert.equal(f?.taskKey, 'util');
    assert.equal(f?.range?.start.line, 15);
  });

  it('a file outside the task dir, a second workflow, a taken implement key, an unknown engine; test.check is required', () => {
    assert.deepEqual(
      errors({ phases: { ...phases, files: ['../x.mjs'] } }).map((e) => e[1]),
      ['tasks[0].phases.files[0]'],
    );
    assert.deepEqual(
      errors({ repeat: 2, phases }).map((e) => e.slice(0, 2)),
      [['phases', 'tasks[0].phases']],
    );
    assert.deepEqual(
      errors({ critique: { critics: ['gemini'] }, phases }).map((e) => e.slice(0, 2)),
      [['critique', 'tasks[0].critique']],
    );
    const taken = JSON.stringify({
      tasks: [
        { key: 'util', engine: 'codex', spec: 's', check: 'c', phases },
        { key: 'util--impl-2', engine: 'codex', spec: 's', check: 'c' },
      ],
    });
    assert.match(
      parseManifest(taken, '/m.swarm.json', { engines })
        .problems.map((p) => p.message)
        .join('\n'),
      /the implement task "util--impl-2" of "util" would take the key of tasks\[1\]/,
    );
    assert.deepEqual(
      errors({ phases: { ...phases, test: { engine: 'nope', check: 'x' } } }).map((e) => e.slice(0, 2)),
      [['unknown-engine', 'tasks[0].phases.test.engine']],
    );
    assert.deepEqual(
      errors({ phases: { files: ['a'], test: { engine: 'claude' } } }).map((e) => e.slice(0, 2)),
      [['schema', 'tasks[0].phases.test']],
    );
  });
});

describe('phases: in a generated tasks file', () => {
  it("a phases task counts its implement tasks and test phase against max_tasks, and its engines must be the run's", async () => {
    const { validateGenerated } = await import('../../extension/core/run/workflows/generate/file');
    const planner = parseManifest(
      JSON.stringify({ tasks: [{ key: 'plan', engine: 'codex', spec: 's', generate: { file: 'tasks.json', max_tasks: 3 } }] }),
      '/m.swarm.json',
      { engines },
    ).manifest!.tasks[0]!;
    const text = JSON.stringify(
      [
        {
          key: 'u',
          engine: 'codex',
          spec: 'Write {file}',
          check: 'node --check {file}',
          task_type: 't',
          verified: 'v',
          phases: { files: ['a.mjs', 'b.mjs', 'c.mjs'], test: { engine: 'gemini', check: 'node --test' } },
        },
      ],
      null,
      2,
    );
    const r = await validateGenerated(text, '/w/tasks.json', {
      planner,
      existingKeys: new Set(['plan']),
      allowedEngines: new Set(['codex', 'claude']),
      lint: { engines: builtinEngines(), allowFullAccess: false, sections: WORKFLOW_SECTIONS },
      worktrees: false,
    });
    const errors = r.findings.filter((f) => f.severity === 'error').map((f) => f.message);
    assert.ok(
      errors.some((m) => /more tasks than "max_tasks": 3 .*with its 4 implement and test tasks/.test(m)),
      errors.join('\n'),
    );
    assert.ok(
      errors.some((m) => /phases\.test\.engine: engine "gemini" is not one this run started with/.test(m)),
      errors.join('\n'),
    );
  });
});
