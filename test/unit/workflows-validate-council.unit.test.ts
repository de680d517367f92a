import assert from 'node:assert/strict';
import { compileCouncil, sameModelAs, DISAGREEMENTS_HEADING } from '../../extension/core/run/workflows/council/compile';
import { compileValidate, validatorPrompt } from '../../extension/core/run/workflows/validate/compile';
import { councilProblems } from '../../extension/core/run/workflows/council/rule';
import { validateProblems } from '../../extension/core/run/workflows/validate/rule';
import { placeInputs } from '../../extension/core/run/inputs';
import type { TaskSpec } from '../../extension/core/manifest/types';
import { parseManifest } from '../../extension/core/run/manifest';

/** A loaded task with the loader's defaults. */
function loaded(task: Record<string, unknown>): TaskSpec[] {
  const { manifest, problems } = parseManifest(JSON.stringify({ tasks: [task] }), '/m.json');
  assert.deepEqual(
    problems.filter((p) => p.severity === 'error'),
    [],
  );
  return manifest?.tasks ?? [];
}

describe('workflows: validated and council compile into ordinary tasks', () => {
  it('validate: N workers on their engines, then the validator under the task key: after them, inputs of all, only its report writable', () => {
    const tasks = loaded({
      key: 'sort',
      engine: 'script',
      spec: 'S',
      check: 'C',
      after: [],
      engine_args: [],
      validate: { engines: [{ engine: 'script', model: 'a' }, { engine: 'codex' }], engine: 'claude', check: 'test -s r.md', report: 'r.md' },
    });
    assert.deepEqual(
      tasks.map((t) => [t.key, t.engine, t.model, t.spec, t.check]),
      [
        ['sort--w1', 'script', 'a', 'S', 'C'],
        ['sort--w2', 'codex', null, 'S', 'C'],
        ['sort', 'claude', null, validatorPrompt({ spec: 'S', check: 'C' }, 2, 'r.md'), 'test -s r.md'],
      ],
    );
    const v = tasks[2] as TaskSpec;
    assert.deepEqual(v.after, ['sort--w1', 'sort--w2']);
    assert.deepEqual(v.inputs, { from: [{ key: 'sort--w1' }, { key: 'sort--w2' }], anonymous: true, scope: 'sort' });
    assert.deepEqual([v.allowPaths, v.expectFiles], [['r.md'], ['r.md']]);
    // The default prompt names the task and the folder, never a worker's key or engine.
    assert.match(v.spec, /VERDICT_INPUTS/);
    assert.doesNotMatch(v.spec, /sort--w|codex|script/);
    // `workers` with the task's own engine; the validator's engine defaults to the task's.
    const byCount = compileValidate(
      { ...(tasks[0] as TaskSpec), key: 't', engine: 'script', model: 'm' },
      { workers: 3, check: 'x', spec: 'V', anonymous: false },
    );
    assert.deepEqual(
      byCount.map((t) => [t.key, t.engine, t.model]),
      [
        ['t--w1', 'script', 'm'],
        ['t--w2', 'script', 'm'],
        ['t--w3', 'script', 'm'],
        ['t', 'script', 'm'],
      ],
    );
    assert.equal(byCount[3]?.inputs?.anonymous, false);
  });

  it('council: answers, reviews that exclude every answer of their own model, the chair reading answers and reviews by member letter', () => {
    const tasks = loaded({
      key: 'q',
      engine: 'script',
      spec: 'Q?',
      check: 'test -s answer.md',
      council: {
        members: [{ engine: 'codex' }, { engine: 'claude' }, { engine: 'codex' }],
        chair: { engine: 'claude', model: 'opus', check: `grep -q '${DISAGREEMENTS_HEADING}' synthesis.md` },
      },
    });
    assert.deepEqual(
      tasks.map((t) => [t.key, t.engine, t.model]),
      [
        ['q--a1', 'codex', null],
        ['q--a2', 'claude', null],
        ['q--a3', 'codex', null],
        ['q--r1', 'codex', null],
        ['q--r2', 'claude', null],
        ['q--r3', 'codex', null],
        ['q', 'claude', 'opus'],
      ],
    );
    // A model engine is told where to write its answer.
    assert.match(tasks[0]?.spec ?? '', /^Q\?\n\nWrite your answer to answer\.md\.$/);
    const r1 = tasks[3] as TaskSpec;
    assert.deepEqual(r1.after, ['q--a1', 'q--a2', 'q--a3']);
    assert.deepEqual(r1.inputs?.exclude, ['q--a1', 'q--a3']);
    assert.deepEqual(tasks[4]?.inputs?.exclude, ['q--a2']);
    // Whatever the letters, placement never shows a reviewer an answer of its own model.
    const names = { 'q--a1': 'C', 'q--a2': 'A', 'q--a3': 'B' };
    assert.deepEqual(
      placeInputs(r1.inputs!, r1.key, names).placed.map((p) => [p.key, p.rel]),
      [['q--a2', 'answers/A']],
    );
    assert.deepEqual(
      placeInputs(tasks[4]!.inputs!, 'q--r2', names).placed.map((p) => p.rel),
      ['answers/C', 'answers/B'],
    );
    const chair = tasks[6] as TaskSpec;
    assert.deepEqual(chair.after, ['q--a1', 'q--a2', 'q--a3', 'q--r1', 'q--r2', 'q--r3']);
    assert.deepEqual(
      placeInputs(chair.inputs!, 'q', names).placed.map((p) => p.rel),
      ['answers/C', 'answers/A', 'answers/B', 'reviews/C', 'reviews/A', 'reviews/B'],
    );
    assert.deepEqual([chair.allowPaths, chair.expectFiles], [['synthesis.md'], ['synthesis.md']]);
    assert.match(chair.spec, new RegExp(DISAGREEMENTS_HEADING));
    assert.doesNotMatch(chair.spec + r1.spec, /codex|claude|q--/);
    // Script members run the question as written (it is their program).
    const scripted = compileCouncil(
      { ...(tasks[0] as TaskSpec), key: 's', engine: 'script', spec: 'echo hi > answer.md' },
      {
        members: [
          { engine: 'script', model: 'x' },
          { engine: 'script', model: 'y' },
        ],
        chair: { check: 'c' },
      },
    );
    assert.equal(scripted[0]?.spec, 'echo hi > answer.md');
  });

  it('sameModelAs: same engine and model (a missing model is the engine default)', () => {
    const m = [
      { engine: 'codex', model: null },
      { engine: 'codex', model: 'gpt-5' },
      { engine: 'codex', model: null },
    ];
    assert.deepEqual(sameModelAs(m, 1), [1, 3]);
    assert.deepEqual(sameModelAs(m, 2), [2]);
  });

  it('rules: validate and council refuse what cannot compile, at the value', () => {
    assert.deepEqual(
      validateProblems([{ key: 't', validate: { workers: 3, engines: [{ engine: 'a' }], check: 'c', report: '/abs' } }, { key: 't--w1' }]).map((p) =>
        p.path.join('.'),
      ),
      ['tasks.0.validate.workers', 'tasks.0.validate.report', 'tasks.0.validate'],
    );
    assert.deepEqual(
      validateProblems([{ key: 't', generate: {}, validate: { check: 'c' } }]).map((p) => p.message.slice(0, 48)),
      ['a validated task cannot also have "generate": ea'],
    );
    assert.deepEqual(
      validateProblems([{ key: 't', validate: { check: 'c' } }], new Set(['t--w2'])).map((p) => p.message),
      ['the worker "t--w2" of "t" would take a key the run already has; rename "t"'],
    );
    const allOne = councilProblems([
      {
        key: 'q',
        council: {
          members: [
            { engine: 'x', model: 'm' },
            { engine: 'x', model: 'm' },
          ],
          chair: { check: 'c' },
        },
      },
    ]);
    assert.deepEqual(
      allOne.map((p) => p.path.join('.')),
      ['tasks.0.council.members.0'],
    );
    assert.deepEqual(
      councilProblems([
        { key: 'q', council: { members: [{ engine: 'x' }, { engine: 'y' }], review: { file: '../r.md' }, chair: { check: 'c' } } },
        { key: 'q--r2' },
      ]).map((p) => p.path.join('.')),
      ['tasks.0.council.review.file', 'tasks.0.council.members'],
    );
    assert.deepEqual(
      councilProblems([{ key: 'q', validate: {}, council: { members: [{ engine: 'x' }, { engine: 'y' }], chair: { check: 'c' } } }]).map((p) =>
        p.path.join('.'),
      ),
      ['tasks.0.council'],
    );
  });

  it('the loader: unknown engines of members, chair, workers and validator are unknown-engine errors at the entry', () => {
    const { problems } = parseManifest(
      JSON.stringify({
        tasks: [
          { key: 'v', engine: 'script', spec: 's', check: 'c', validate: { engine: 'nope1', engines: [{ engine: 'nope2' }], check: 'c' } },
          {
            key: 'q',
            engine: 'script',
            spec: 's',
            check: 'c',
            council: { members: [{ engine: 'script' }, { engine: 'nope3' }], chair: { engine: 'nope4', check: 'c' } },
          },
        ],
      }),
      '/m.json',
      { engines: new Set(['script']) },
    );
    assert.deepEqual(
      problems
        .filter((p) => p.code === 'unknown-engine')
        .map((p) => p.path)
        .sort(),
      ['tasks[0].validate.engine', 'tasks[0].validate.engines[0].engine', 'tasks[1].council.chair.engine', 'tasks[1].council.members[1].engine'],
    );
  });
});
