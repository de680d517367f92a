import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { preflight, PreflightError } from '../../extension/core/run/preflight';
import { workflowReaderEngines } from '../../extension/core/run/workflows';
import { builtinEngines } from '../../engines';
import { groupGate, beatenReason } from '../../extension/core/run/workflows/best-of-n/gate';
import { FILE, assertRange, col, ctx, findingsOf, manifest, task } from './lint-helpers';
import { parseManifest } from '../../extension/core/run/manifest';

const engines = new Set(ctx.engines.keys());

describe('best-of-N: compiled into ordinary tasks', () => {
  it("repeat: 3 becomes the group entry (after its candidates) and three candidates on the task's engine", () => {
    const text = manifest([task('fix', { repeat: 3, engine: 'codex', model: 'gpt-5-mini', engine_args: ['--x'], after: ['a'] }), task('a')]);
    const { manifest: m, problems } = parseManifest(text, FILE, { engines });
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    assert.deepEqual(
      m?.tasks.map((t) => [t.key, t.group ?? null, t.candidate ?? null, t.select ?? null, t.after, t.engine, t.model]),
      [
        ['fix', 'fix', null, 'first-pass', ['fix--c1', 'fix--c2', 'fix--c3'], 'codex', 'gpt-5-mini'],
        ['fix--c1', 'fix', 1, null, ['a'], 'codex', 'gpt-5-mini'],
        ['fix--c2', 'fix', 2, null, ['a'], 'codex', 'gpt-5-mini'],
        ['fix--c3', 'fix', 3, null, ['a'], 'codex', 'gpt-5-mini'],
        ['a', null, null, null, [], 'codex', null],
      ],
    );
    // Same spec and check everywhere: the group's check is what `verdict merge` re-checks the winner with.
    assert.ok(m?.tasks.slice(0, 4).every((t) => t.check === 'npm test' && t.engineArgs.join() === '--x'));
  });

  it("candidates: one per entry, a missing model is the engine default (null), engine_args only on the task's own engine", () => {
    const text = manifest([
      task('fix', { engine: 'codex', engine_args: ['--x'], candidates: [{ engine: 'codex' }, { engine: 'claude', model: 'opus' }], select: 'all' }),
    ]);
    const { manifest: m } = parseManifest(text, FILE, { engines });
    assert.deepEqual(
      m?.tasks.map((t) => [t.key, t.engine, t.model, t.engineArgs, t.select ?? null]),
      [
        ['fix', 'codex', null, ['--x'], 'all'],
        ['fix--c1', 'codex', null, ['--x'], null],
        ['fix--c2', 'claude', 'opus', [], null],
      ],
    );
  });
});

describe('lint: repeat', () => {
  it('"select": "ranked" without a "rank" section is an error at the value; "rank" without "ranked" too; the loader refuses both', async () => {
    const t = task('fix', { repeat: 2, select: 'ranked' });
    const text = manifest([t]);
    const found = await findingsOf('repeat', text);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.severity, 'error');
    assertRange(text, found[0], 4, col(t, '"ranked"'), '"ranked"');
    assert.match(found[0]?.message ?? '', /"select": "ranked" needs a "rank" section/);
    assert.equal(parseManifest(text, FILE, { engines }).manifest, null);
    const stray = task('fix', { repeat: 2, select: 'all', rank: { rubric: 'short', engines: ['claude'] } });
    const strayText = manifest([stray]);
    const strayFound = await findingsOf('repeat', strayText);
    assert.deepEqual(
      strayFound.map((f) => [f.severity, f.range?.start.line, f.range?.start.column]),
      [['error', 4, col(stray, '{"rubric"')]],
    );
    assert.match(strayFound[0]?.message ?? '', /"rank" is read only with "select": "ranked"/);
    assert.equal(parseManifest(strayText, FILE, { engines }).manifest, null);
  });

  it('ranked: a rank without its rubric or reviewers, a blank rubric, and the script engine as a ranker are errors at their paths', async () => {
    const noRubric = task('fix', { repeat: 2, select: 'ranked', rank: { engines: ['claude'] } });
    const blank = task('blank', { repeat: 2, select: 'ranked', rank: { rubric: '  ', engines: ['claude'] } });
    const noEngines = task('bare', { repeat: 2, select: 'ranked', rank: { rubric: 'shortest wins' } });
    const script = task('scr', { repeat: 2, select: 'ranked', rank: { rubric: 'shortest wins', engines: ['claude', { engine: 'script' }] } });
    const unknown = task('unk', { repeat: 2, select: 'ranked', rank: { rubric: 'shortest wins', engines: ['nope'] } });
    const text = manifest([noRubric, blank, noEngines, script, unknown]);
    const { manifest: m, problems } = parseManifest(text, FILE, { engines });
    assert.equal(m, null);
    const errors = problems.filter((p) => p.severity === 'error').map((p) => `${p.path}: ${p.message}`);
    assert.deepEqual(errors.length, 5, errors.join('\n'));
    assert.match(errors[0] ?? '', /^tasks\[0\]\.rank: missing required field "rubric"/);
    assert.match(errors[1] ?? '', /^tasks\[1\]\.rank\.rubric: /);
    assert.match(errors[2] ?? '', /^tasks\[2\]\.rank: missing required field "engines"/);
    assert.match(errors[3] ?? '', /^tasks\[3\]\.rank\.engines\[1\]: the script engine cannot rank: it runs its prompt as a bash script/);
    assert.match(errors[4] ?? '', /^tasks\[4\]\.rank\.engines\[0\]: unknown ranking reviewer engine "nope"/);
  });

  it("ranked on a pool run: its rankers run on the orchestrator's machine, so their binaries must be here (the candidates' need not)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'verdict-ranked-pool-'));
    const policy = { sandbox: 'off' as const, allowFullAccess: false, configSource: 'test', enginesElsewhere: true };
    const ranked = parseManifest(
      JSON.stringify({
        workdir: 'w',
        tasks: [{ key: 'fix', engine: 'script', spec: 'true', check: 'true', repeat: 2, select: 'ranked', rank: { rubric: 'r', engines: ['claude'] } }],
      }),
      path.join(dir, 'm.json'),
    ).manifest;
    assert.ok(ranked);
    // No binary on PATH: the ranker (claude) is named; the candidates' engine (codex, on the workers) is not.
    const codexRanked = parseManifest(
      JSON.stringify({
        workdir: 'w',
        tasks: [{ key: 'fix', engine: 'codex', spec: 'x', check: 'true', repeat: 2, select: 'ranked', rank: { rubric: 'r', engines: ['claude'] } }],
      }),
      path.join(dir, 'm.json'),
    ).manifest;
    await assert.rejects(
      preflight(codexRanked!, builtinEngines(), { PATH: '' }, path.join(dir, 'home'), policy, workflowReaderEngines),
      (e: Error) =>
        e instanceof PreflightError &&
        /^engine "claude" needs the `claude` command, which is not on PATH \(ranking reviewers, inputs engines and critics run on this machine, even on a pool run\)/.test(
          e.message,
        ) &&
        !/codex/.test(e.message),
    );
    // select all: nothing runs here, no binary needed.
    const all = parseManifest(
      JSON.stringify({ workdir: 'w', tasks: [{ key: 'fix', engine: 'codex', spec: 'x', check: 'true', repeat: 2, select: 'all' }] }),
      path.join(dir, 'm.json'),
    ).manifest;
    await preflight(all as NonNullable<typeof all>, builtinEngines(), { PATH: '' }, path.join(dir, 'home'), policy, workflowReaderEngines);
  });

  it('ranked compiles: the group carries select ranked and its rank; candidates do not', () => {
    const text = manifest([
      task('fix', {
        candidates: [{ engine: 'codex' }, { engine: 'claude' }],
        select: 'ranked',
        rank: { rubric: 'the smallest diff wins', engines: ['claude', { engine: 'codex', model: 'gpt-5' }] },
      }),
    ]);
    const { manifest: m, problems } = parseManifest(text, FILE, { engines });
    assert.deepEqual(
      problems.filter((p) => p.severity === 'error'),
      [],
    );
    assert.deepEqual(
      m?.tasks.map((t) => [t.key, t.select ?? null, t.rank ?? null]),
      [
        [
          'fix',
          'ranked',
          {
            rubric: 'the smallest diff wins',
            engines: [
              { engine: 'claude', model: null },
              { engine: 'codex', model: 'gpt-5' },
            ],
          },
        ],
        ['fix--c1', null, null],
        ['fix--c2', null, null],
      ],
    );
  });

  it('a candidate key taken by another task, select without candidates, repeat and candidates disagreeing', async () => {
    const fix = task('fix', { repeat: 2 });
    const text = manifest([fix, task('fix--c2'), task('solo', { select: 'all' }), task('both', { repeat: 3, candidates: [{ engine: 'codex' }] })]);
    const found = await findingsOf('repeat', text);
    assert.deepEqual(
      found.map((f) => [f.taskKey, f.range?.start.line]),
      [
        ['fix', 4],
        ['solo', 6],
        ['both', 7],
      ],
    );
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
  it('ranked: nothing is decided while one runs; then one pass wins alone, two or more are ranked, none is lost', () => {
    assert.deepEqual(groupGate('ranked', [c(1, 'PASS'), c(2, 'running'), c(3, 'PASS')]), { kind: 'wait' });
    assert.deepEqual(groupGate('ranked', [c(1, 'FAIL'), c(2, 'PASS'), c(3, 'CANCELLED')]), { kind: 'won', winner: c(2, 'PASS') });
    assert.deepEqual(groupGate('ranked', [c(3, 'PASS'), c(1, 'PASS'), c(2, 'FAIL')]), { kind: 'rank', passed: [c(1, 'PASS'), c(3, 'PASS')] });
    assert.equal(groupGate('ranked', [c(1, 'FAIL'), c(2, 'ERROR')]).kind, 'lost');
  });
  it('all: nothing is decided while one runs, even after a pass', () => {
    assert.deepEqual(groupGate('all', [c(1, 'PASS'), c(2, 'retry_queued')]), { kind: 'wait' });
    assert.deepEqual(groupGate('all', [c(1, 'FAIL'), c(2, 'PASS'), c(3, 'PASS')]), { kind: 'won', winner: c(2, 'PASS') });
    assert.equal(groupGate('all', [c(1, 'FAIL'), c(2, 'CANCELLED')]).kind, 'lost');
  });
});
