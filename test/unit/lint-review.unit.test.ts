import assert from 'node:assert/strict';
import { builtinEngines } from '../../engines/index';
import { assertRange, col, findingsOf, FILE, manifest, task } from './lint-helpers';
import { parseManifest } from '../../extension/core/run/manifest';

describe('manifest: review', () => {
  const engines = new Set(builtinEngines().keys());

  it("loads the task's review, else the run's; false turns it off; require defaults to all; entries as names or {engine, model}", () => {
    const text = manifest(
      [
        task('own', { review: { engines: ['claude', { engine: 'codex', model: 'gpt-5' }], require: 'majority' } }),
        task('inherits'),
        task('off', { review: false }),
      ],
      { run_name: 't', review: { engines: ['gemini'] } },
    );
    const { manifest: m, problems } = parseManifest(text, FILE, { engines });
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    assert.deepEqual(
      m?.tasks.map((t) => t.review),
      [
        {
          engines: [
            { engine: 'claude', model: null },
            { engine: 'codex', model: 'gpt-5' },
          ],
          require: 'majority',
        },
        { engines: [{ engine: 'gemini', model: null }], require: 'all' },
        null,
      ],
    );
  });

  it('schema errors: no engines, an empty list, an unknown require, an unknown field, true', () => {
    for (const review of [{}, { engines: [] }, { engines: ['claude'], require: 'most' }, { engines: ['claude'], quorum: 2 }, true]) {
      const { manifest: m, problems } = parseManifest(manifest([task('a', { review })]), FILE, { engines });
      assert.equal(m, null, JSON.stringify(review));
      assert.ok(
        problems.some((p) => p.severity === 'error' && p.path.startsWith('tasks[0].review')),
        `${JSON.stringify(review)}: ${JSON.stringify(problems)}`,
      );
    }
  });

  it('an unknown reviewer engine is an error at its entry, in a task and at the run level', () => {
    const t = task('a', { review: { engines: ['claude', { engine: 'nosuch' }] } });
    const text = manifest([t], { run_name: 't', review: { engines: ['nope'] } });
    const { problems } = parseManifest(text, FILE, { engines });
    const unknown = problems.filter((p) => p.code === 'unknown-engine');
    assert.deepEqual(
      unknown.map((p) => p.path),
      ['review.engines[0]', 'tasks[0].review.engines[1]'],
    );
    assert.match(unknown[1]?.message ?? '', /unknown reviewer engine "nosuch"; known engines: claude, codex/);
    assert.deepEqual(unknown[1]?.range?.start, { line: 4, column: col(t, '"nosuch"') });
  });

  it("the script engine cannot review (it would run the prompt, the worker's files in it, as bash): an error at the entry", () => {
    const t = task('a', { engine: 'script', review: { engines: ['claude', { engine: 'script' }] } });
    const { manifest: m, problems } = parseManifest(manifest([t], { run_name: 't', review: { engines: ['script'] } }), FILE, { engines });
    assert.equal(m, null);
    const refused = problems.filter((p) => /script engine cannot review/.test(p.message));
    assert.deepEqual(
      refused.map((p) => p.path),
      ['review.engines[0]', 'tasks[0].review.engines[1]'],
    );
    assert.deepEqual(refused[1]?.range?.start, { line: 4, column: col(t, '"script"}') });
  });

  it("lint self-review: the task's own engine and model as a reviewer is a warning at the entry; another model or engine is not", async () => {
    const t = task('a', {
      engine: 'codex',
      model: 'gpt-5',
      review: { engines: ['claude', { engine: 'codex', model: 'gpt-5' }, { engine: 'codex', model: 'o3' }] },
    });
    const text = manifest([t]);
    const found = await findingsOf('self-review', text);
    assert.equal(found.length, 1);
    assertRange(text, found[0], 4, col(t, '{"engine":"codex","model":"gpt-5"}'), '{"engine":"codex","model":"gpt-5"}');
    assert.match(found[0]?.message ?? '', /the task's own engine and model \(codex\/gpt-5\)/);
    // Both on the engine's default model: the same model.
    assert.equal((await findingsOf('self-review', manifest([task('b', { engine: 'claude', review: { engines: ['claude'] } })]))).length, 1);
    // From the run level, except where the task turns review off.
    const run = manifest([task('c', { engine: 'claude' }), task('d', { engine: 'claude', review: false })], { run_name: 't', review: { engines: ['claude'] } });
    assert.deepEqual(
      (await findingsOf('self-review', run)).map((f) => f.taskKey),
      ['c'],
    );
  });
});
