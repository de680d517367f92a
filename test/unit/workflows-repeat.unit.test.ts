import assert from 'node:assert/strict';
import { parseManifest } from '../../extension/core/manifest/load';
import { groupGate, beatenReason } from '../../extension/core/run/workflows/group';
import { FILE, assertRange, col, ctx, findingsOf, manifest, task } from './lint-helpers';

const engines = new Set(ctx.engines.keys());

describe('best-of-N: compiled into ordinary tasks', () => {
  it('repeat: 3 becomes the group entry (after its candidates) and three candidates on the task\'s engine', () => {
    const text = manifest([task('fix', { repeat: 3, engine: 'codex', model: 'gpt-5-mini', engine_args: ['--x'], after: ['a'] }), task('a')]);
    const { manifest: m, problems } = parseManifest(text, FILE, { engines });
    assert.deepEqual(problems.filter((p) => p.severity === 'error'), []);
    assert.deepEqual(m?.tasks.map((t) => [t.key, t.group ?? null, t.candidate ?? null, t.select ?? null, t.after, t.engine, t.model]), [
      ['fix', 'fix', null, 'first-pass', ['fix--c1', 'fix--c2', 'fix--c3'], 'codex', 'gpt-5-mini'],
      ['fix--c1', 'fix', 1, null, ['a'], 'codex', 'gpt-5-mini'],
      ['fix--c2', 'fix', 2, null, ['a'], 'codex', 'gpt-5-mini'],
      ['fix--c3', 'fix', 3, null, ['a'], 'codex', 'gpt-5-mini'],
      ['a', null, null, null, [], 'codex', null],
    ]);
    // Same spec and check everywhere: the group's check is what `verdict merge` re-checks the winner with.
    assert.ok(m?.tasks.slice(0, 4).every((t) => t.check === 'npm test' && t.engineArgs.join() === '--x'));
  });

  it('candidates: one per entry, a missing model is the engine default (null), engine_args only on the task\'s own engine', () => {
    const text = manifest([task('fix', { engine: 'codex', engine_args: ['--x'], candidates: [{ engine: 'codex' }, { engine: 'claude', model: 'opus' }], select: 'all' })]);
    const { manifest: m } = parseManifest(text, FILE, { engines });
    assert.deepEqual(m?.tasks.map((t) => [t.key, t.engine, t.model, t.engineArgs, t.select ?? null]), [
      ['fix', 'codex', null, ['--x'], 'all'],
      ['fix--c1', 'codex', null, ['--x'], null],
      ['fix--c2', 'claude', 'opus', [], null],
    ]);
  });
});

describe('lint: repeat', () => {
  it('"select": "ranked" is an error (not supported yet) at the value; the loader refuses it', async () => {
    const t = task('fix', { repeat: 2, select: 'ranked' });
    const text = manifest([t]);
    const found = await findingsOf('repeat', text);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'error');
    assertRange(text, found[0], 4, col(t, '"ranked"'), '"ranked"');
    assert.match(found[0]?.message ?? '', /"ranked" is not supported yet/);
    assert.equal(parseManifest(text, FILE, { engines }).manifest, null);
  });

  it('a candidate key taken by another task, select without candidates, repeat and candidates disagreeing', async () => {
    const fix = task('fix', { repeat: 2 });
    const text = manifest([fix, task('fix--c2'), task('solo', { select: 'all' }), task('both', { repeat: 3, candidates: [{ engine: 'codex' }] })]);
    const found = await findingsOf('repeat', text);
    assert.deepEqual(found.map((f) => [f.taskKey, f.range?.start.line]), [['fix', 4], ['solo', 6], ['both', 7]]);
    assert.match(found[0]?.message ?? '', /candidate 2 of "fix" would be the task "fix--c2", but tasks\[1\] already has that key/);
    assert.match(found[1]?.message ?? '', /"select" chooses among best-of-N candidates, but this task has neither/);
    assert.match(found[2]?.message ?? '', /"repeat" is 3 but "candidates" lists 1 engine/);
    assertRange(text, found[0], 4, col(fix, '2', '"repeat":'), '2');
  });

  it('an unknown engine among the candidates is an unknown-engine error at that entry', async () => {
    const t = task('fix', { candidates: [{ engine: 'codex' }, { engine: 'nope' }] });
    const text = manifest([t]);
    const found = await findingsOf('unknown-engine', text);
    assert.equal(found.length, 1);
    assertRange(text, found[0], 4, col(t, '"nope"'), '"nope"');
    assert.match(found[0]?.message ?? '', /unknown engine "nope" \(candidate 2 would run on it\)/);
  });

  it('repeat out of range is a schema error', async () => {
    const found = await findingsOf('invalid-manifest', manifest([task('fix', { repeat: 0 })]));
    assert.match(found[0]?.message ?? '', /tasks\[0\]\.repeat: must be >= 1/);
  });
});

describe('best-of-N: the group gate', () => {
  const c = (n: number, status: string) => ({ key: `fix--c${n}`, candidate: n, status });
  it('first-pass: waits, then wins as soon as one passes (the lowest-numbered of several), lost once all ended otherwise', () => {
    assert.deepEqual(groupGate('first-pass', [c(1, 'running'), c(2, 'queued')]), { kind: 'wait' });
    assert.deepEqual(groupGate('first-pass', [c(1, 'running'), c(2, 'PASS'), c(3, 'FAIL')]), { kind: 'won', winner: c(2, 'PASS') });
    assert.deepEqual(groupGate('first-pass', [c(1, 'PASS'), c(2, 'PASS')]), { kind: 'won', winner: c(1, 'PASS') });
    assert.deepEqual(groupGate('first-pass', [c(1, 'FAIL'), c(2, 'TIMEOUT')]), { kind: 'lost', reason: 'no candidate passed (fix--c1 FAIL, fix--c2 TIMEOUT)' });
    assert.equal(beatenReason(c(2, 'PASS')), 'cancelled: candidate 2 (fix--c2) passed first');
  });
  it('all: nothing is decided while one runs, even after a pass', () => {
    assert.deepEqual(groupGate('all', [c(1, 'PASS'), c(2, 'retry_queued')]), { kind: 'wait' });
    assert.deepEqual(groupGate('all', [c(1, 'FAIL'), c(2, 'PASS'), c(3, 'PASS')]), { kind: 'won', winner: c(2, 'PASS') });
    assert.equal(groupGate('all', [c(1, 'FAIL'), c(2, 'CANCELLED')]).kind, 'lost');
  });
});
