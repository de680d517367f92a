import assert from 'node:assert/strict';
import { FILE, SPEC, assertRange, col, ctx, findingsOf, manifest, task } from './lint-helpers';
import { parseManifest } from '../../extension/core/run/manifest';

const SPEC_PREFIX = SPEC;

const engines = new Set(ctx.engines.keys());

describe('lint: task-graph (after) and fallback engines', () => {
  it('an unknown key in after is an error at that entry, naming the keys that exist; the loader refuses it', async () => {
    const b = task('b', { after: ['a', 'nope'] });
    const text = manifest([task('a'), b]);
    const found = await findingsOf('task-graph', text);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'error');
    assert.equal(found[0]?.taskKey, 'b');
    assertRange(text, found[0], 5, col(b, '"nope"'), '"nope"');
    assert.match(found[0]?.message ?? '', /tasks\[1\]\.after\[1\]: no task has the key "nope"; keys in this manifest: a$/);
    const { manifest: loaded, problems } = parseManifest(text, FILE, { engines });
    assert.equal(loaded, null);
    assert.ok(problems.some((p) => p.code === 'task-graph' && p.range?.start.line === 5));
  });

  it('a cycle a → b → c → a is one error on the entry that closes it, naming the loop', async () => {
    const a = task('a', { after: ['c'] });
    const b = task('b', { after: ['a'] });
    const c = task('c', { after: ['b'] });
    const text = manifest([a, b, c]);
    const found = await findingsOf('task-graph', text);
    assert.equal(found.length, 1);
    assert.match(found[0]?.message ?? '', /cycle in after: (a → c → b → a|b → a → c → b|c → b → a → c)/);
    const line = 4 + ['a', 'b', 'c'].indexOf(found[0]?.taskKey ?? '');
    const t = [a, b, c][line - 4] as Record<string, unknown>;
    const dep = (t.after as string[])[0] as string;
    assertRange(text, found[0], line, col(t, `"${dep}"`, '"after"'), `"${dep}"`);
    assert.equal(parseManifest(text, FILE, { engines }).manifest, null);
  });

  it('a task after itself is an error', async () => {
    const a = task('a', { after: ['a'] });
    const text = manifest([a]);
    const found = await findingsOf('task-graph', text);
    assert.equal(found.length, 1);
    assertRange(text, found[0], 4, col(a, '"a"', '"after"'), '"a"');
    assert.match(found[0]?.message ?? '', /waits for itself/);
  });

  it('a diamond (d after b and c, both after a) is fine and loads in order', async () => {
    const text = manifest([task('a'), task('b', { after: ['a'] }), task('c', { after: ['a'] }), task('d', { after: ['b', 'c'] })]);
    assert.deepEqual(await findingsOf('task-graph', text), []);
    const { manifest: loaded } = parseManifest(text, FILE, { engines });
    assert.deepEqual(
      loaded?.tasks.map((t) => t.after),
      [[], ['a'], ['a'], ['b', 'c']],
    );
  });

  it('an unknown engine in fallback is an unknown-engine error at its position (string or {engine})', async () => {
    const t = task('a', { engine: 'codex', fallback: ['opencode', 'gpt-magic', { engine: 'nova', model: 'x' }] });
    const text = manifest([t]);
    const found = await findingsOf('unknown-engine', text);
    assert.equal(found.length, 2);
    assertRange(text, found[0], 4, col(t, '"gpt-magic"'), '"gpt-magic"');
    assert.match(found[0]?.message ?? '', /tasks\[0\]\.fallback\[1\]: unknown engine "gpt-magic" in fallback \(attempt 3 would run on it\)/);
    assertRange(text, found[1], 4, col(t, '"nova"'), '"nova"');
  });

  it('loads fallback entries as engine + model (null: the engine default)', () => {
    const text = manifest([task('a', { engine: 'codex', fallback: ['opencode', { engine: 'claude', model: 'opus' }, { engine: 'script' }] })]);
    const { manifest: loaded, problems } = parseManifest(text, FILE, { engines });
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    assert.deepEqual(loaded?.tasks[0]?.fallback, [
      { engine: 'opencode', model: null },
      { engine: 'claude', model: 'opus' },
      { engine: 'script', model: null },
    ]);
  });

  it('a malformed fallback entry is a schema error', async () => {
    const text = manifest([task('a', { fallback: [{ model: 'x' }] })]);
    assert.ok((await findingsOf('invalid-manifest', text)).length >= 1);
  });
});

describe('lint: rules that know the task graph', () => {
  it('write-collision (worktree mode) stays quiet for tasks ordered by after, directly or through another', async () => {
    const spec = `${SPEC_PREFIX} Edit src/app.ts and keep its exports.`;
    const run = { run_name: 't', worktrees: true };
    const unordered = manifest([task('a', { spec }), task('b', { spec })], run);
    assert.ok((await findingsOf('write-collision', unordered)).some((f) => f.message.includes('src/app.ts')));
    const chained = manifest([task('a', { spec }), task('m', { after: ['a'] }), task('b', { spec, after: ['m'] })], run);
    assert.deepEqual(await findingsOf('write-collision', chained), []);
  });
});
