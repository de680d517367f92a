import assert from 'node:assert/strict';
import {
  agreementOf,
  behaviourWord,
  decideConsensus,
  pickOf,
  settledEarly,
  type Behaviour,
  type ConsensusMember,
} from '../../extension/core/run/workflows/best-of-n/consensus';
import { agreedReason, enoughReason, groupGate } from '../../extension/core/run/workflows/best-of-n/gate';
import { FILE, assertRange, col, ctx, findingsOf, manifest, task } from './lint-helpers';
import { parseManifest } from '../../extension/core/run/manifest';

const engines = new Set(ctx.engines.keys());

const member = (n: number, over: Partial<ConsensusMember> = {}): ConsensusMember => ({
  key: `fix--c${n}`,
  candidate: n,
  engine: 'codex',
  model: null,
  costMicroUsd: null,
  passedAt: 1000 + n,
  ...over,
});
const says = (out: string, exitCode: number | null = 0, timedOut = false): Behaviour => ({ exitCode, timedOut, digest: `d:${out}`, preview: out });
const table = (rows: Record<string, Behaviour[]>) => new Map(Object.entries(rows));

describe('consensus: the decision', () => {
  it('the largest group of alike behaviour wins, over the first to pass; the splitting inputs and the groups are recorded', () => {
    const members = [member(1), member(2), member(3), member(4)];
    const d = decideConsensus(
      members,
      ['1', '-3', '0'],
      3,
      table({
        'fix--c1': [says('2'), says('0'), says('0')],
        'fix--c2': [says('2'), says('-6'), says('0')],
        'fix--c3': [says('2'), says('-6'), says('0')],
        'fix--c4': [says('2'), says('-6'), says('0')],
      }),
      null,
      false,
    );
    assert.equal(d.kind, 'won');
    assert.equal(d.kind === 'won' && d.winner, 'fix--c2');
    assert.deepEqual(
      d.column.groups.map((g) => [g.size, g.members.map((m) => m.key)]),
      [
        [3, ['fix--c2', 'fix--c3', 'fix--c4']],
        [1, ['fix--c1']],
      ],
    );
    assert.deepEqual(d.column.splitting, [{ input: 1, text: '-3' }]);
    assert.equal(d.column.decided, 'largest');
    assert.equal(d.column.tie, null);
    assert.match(
      d.column.why,
      /the largest of 2 groups \(3 of 4: candidate 2, candidate 3, candidate 4\) behaved alike; 1 of 3 input\(s\) split them; the first to pass of it: candidate 2/,
    );
  });

  it('in the winning group the cheapest member wins when every cost is known; an unknown cost falls back to the first to pass', () => {
    assert.equal(
      pickOf([member(1, { costMicroUsd: 50 }), member(2, { costMicroUsd: 20 }), member(3, { costMicroUsd: 20, passedAt: 0 })]).member.key,
      'fix--c3',
    );
    assert.equal(pickOf([member(1, { costMicroUsd: 50 }), member(2, { costMicroUsd: 20 })]).by, 'cheapest');
    assert.deepEqual(
      [pickOf([member(1), member(2, { costMicroUsd: 1 })]).member.key, pickOf([member(1), member(2, { costMicroUsd: 1 })]).by],
      ['fix--c1', 'first to pass'],
    );
  });

  it('exit code and timeouts are behaviour: the same output with another exit code, or a timeout, is another group', () => {
    assert.notEqual(behaviourWord(says('x', 0)), behaviourWord(says('x', 1)));
    assert.notEqual(behaviourWord(says('x', null, true)), behaviourWord(says('x', null, false)));
    const d = decideConsensus(
      [member(1), member(2), member(3)],
      ['a'],
      1,
      table({ 'fix--c1': [says('x', 0)], 'fix--c2': [says('x', 1)], 'fix--c3': [says('x', 0)] }),
      null,
      false,
    );
    assert.equal(d.kind === 'won' && d.winner, 'fix--c1');
    assert.deepEqual(
      d.column.groups.map((g) => g.size),
      [2, 1],
    );
  });

  it('a tie between groups goes to the rank reviewers when there are some (one pick per tied group), else to the group with the cheapest member; the tie is said', () => {
    const members = [member(1, { costMicroUsd: 30 }), member(2, { costMicroUsd: 10 }), member(3, { costMicroUsd: 40 }), member(4, { costMicroUsd: 20 })];
    const rows = table({ 'fix--c1': [says('odd')], 'fix--c3': [says('odd')], 'fix--c2': [says('even')], 'fix--c4': [says('even')] });
    const ranked = decideConsensus(members, ['a'], 1, rows, null, true);
    assert.equal(ranked.kind, 'rank');
    assert.deepEqual(ranked.kind === 'rank' && ranked.tied.map((m) => m.key), ['fix--c1', 'fix--c2']);
    assert.equal(ranked.column.decided, 'tie-ranked');
    const cheapest = decideConsensus(members, ['a'], 1, rows, null, false);
    assert.equal(cheapest.kind === 'won' && cheapest.winner, 'fix--c2');
    assert.equal(cheapest.column.decided, 'tie-cheapest');
    assert.equal(
      cheapest.column.tie,
      '2 groups tied at 2 each ({candidate 1, candidate 3} vs {candidate 2, candidate 4}); 1 of 1 input(s) split them; on single inputs the other candidates answered as {candidate 1, candidate 3} 0 time(s), {candidate 2, candidate 4} 0 time(s)',
    );
  });

  it('groups tied on whole behaviour: the one the other candidates agree with on the most single inputs wins, before rank or cost', () => {
    // 1 is right; 2 is wrong on negatives, 3 on zero: three groups of one, but 2 and 3 each share one answer with 1.
    const members = [member(1, { costMicroUsd: 50, passedAt: 9 }), member(2, { costMicroUsd: 10, passedAt: 1 }), member(3, { costMicroUsd: 20, passedAt: 2 })];
    const rows = table({
      'fix--c1': [says('-4'), says('0'), says('6')],
      'fix--c2': [says('4'), says('0'), says('6')],
      'fix--c3': [says('-4'), says('1'), says('6')],
    });
    assert.equal(agreementOf([member(1)], members, rows), 4);
    assert.equal(agreementOf([member(2)], members, rows), 3);
    for (const hasRank of [false, true]) {
      const d = decideConsensus(members, ['-2', '0', '3'], 3, rows, null, hasRank);
      assert.equal(d.kind === 'won' && d.winner, 'fix--c1');
      assert.equal(d.column.decided, 'tie-agreement');
      assert.match(
        d.column.why,
        /on single inputs the other candidates answered as \{candidate 1\} 4 time\(s\), \{candidate 2\} 3 time\(s\), \{candidate 3\} 3 time\(s\): \{candidate 1\} agrees with the others most; the cheapest of it: candidate 1$/,
      );
    }
    // Two groups of two alike on every input but one: the per-input vote is even, and the tie goes on to cost.
    const even = table({ 'fix--c1': [says('a')], 'fix--c2': [says('b')], 'fix--c3': [says('a')], 'fix--c4': [says('b')] });
    const four = [...members, member(4, { costMicroUsd: 5 })];
    assert.equal(decideConsensus(four, ['x'], 1, even, null, false).column.decided, 'tie-cheapest');
  });

  it('cannot decide (no inputs, the probe never exits 0, the inputs command failed, a candidate without behaviour): said, and the first to pass wins', () => {
    const members = [member(2, { passedAt: 5 }), member(1, { passedAt: 9 })];
    const never = decideConsensus(
      members,
      ['a', 'b'],
      2,
      table({ 'fix--c1': [says('1', 3), says('1', 3)], 'fix--c2': [says('2', 3), says('2', null, true)] }),
      null,
      false,
    );
    assert.equal(never.kind === 'won' && never.winner, 'fix--c2');
    assert.equal(never.column.decided, 'undecided');
    assert.match(
      never.column.why,
      /^consensus could not decide: the probe never exited 0 on any input of any candidate \(2 input\(s\)\); falling back to the first to pass \(candidate 2\)$/,
    );
    assert.match(decideConsensus(members, [], 0, new Map(), null, false).column.why, /there were no inputs/);
    assert.match(
      decideConsensus(members, [], 0, new Map(), 'the inputs command exited 4', true).column.why,
      /^consensus could not decide: the inputs command exited 4;/,
    );
    assert.match(decideConsensus(members, ['a'], 1, table({ 'fix--c2': [says('x')] }), null, false).column.why, /candidate 1 has no behaviour on every input/);
  });
});

describe('best-of-N: stop_after in the group gate', () => {
  const c = (n: number, status: string) => ({ key: `fix--c${n}`, candidate: n, status });
  it('once K passed while others are not final: the others are to be stopped; not before, not for first-pass, and decided once all are final', () => {
    assert.deepEqual(groupGate('all', [c(1, 'PASS'), c(2, 'running'), c(3, 'queued')], 2), { kind: 'wait' });
    assert.deepEqual(groupGate('all', [c(1, 'PASS'), c(2, 'PASS'), c(3, 'queued'), c(4, 'FAIL')], 2), {
      kind: 'enough',
      passed: [c(1, 'PASS'), c(2, 'PASS')],
      stop: [c(3, 'queued')],
    });
    assert.equal(groupGate('consensus', [c(1, 'PASS'), c(2, 'PASS'), c(3, 'CANCELLED')], 2).kind, 'consensus');
    assert.equal(groupGate('consensus', [c(1, 'PASS'), c(2, 'running')]).kind, 'wait');
    assert.equal(groupGate('first-pass', [c(1, 'PASS'), c(2, 'running')], 1).kind, 'won');
    assert.equal(enoughReason(2, [c(1, 'PASS'), c(3, 'PASS')]), 'cancelled: stop_after 2 reached (candidate 1, candidate 3 passed)');
  });
});

describe('lint: repeat (consensus, stop_after)', () => {
  it('consensus without distinguish, distinguish without consensus, stop_after above N, with first-pass or without candidates: errors at the value; the loader refuses each', async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ repeat: 2, select: 'consensus' }, '"consensus"', /"select": "consensus" needs a "distinguish" section/],
      [
        { repeat: 2, select: 'all', distinguish: { inputs: 'echo a', probe: 'true' } },
        '{"inputs":"echo a","probe":"true"}',
        /"distinguish" is read only with "select": "consensus"/,
      ],
      [{ repeat: 2, select: 'all', stop_after: 3 }, '3', /"stop_after" is 3 but the task has 2 candidate\(s\)/],
      [{ repeat: 2, stop_after: 1 }, '1', /"first-pass" already stops the other candidates/],
      [{ stop_after: 1 }, '1', /this task has neither "repeat" nor "candidates"/],
    ];
    for (const [extra, value, message] of cases) {
      const t = task('fix', extra);
      const text = manifest([t]);
      const found = await findingsOf('repeat', text);
      assert.equal(found.length, 1, JSON.stringify(extra));
      assert.equal(found[0]?.severity, 'error');
      assertRange(text, found[0], 4, col(t, value, `"${Object.keys(extra).at(-1) as string}":`), value);
      assert.match(found[0]?.message ?? '', message);
      assert.equal(parseManifest(text, FILE, { engines }).manifest, null);
    }
  });

  it('consensus with distinguish (and rank as a tie-breaker) compiles onto the group only; max_inputs out of range is a schema error', async () => {
    const text = manifest([
      task('fix', {
        repeat: 2,
        select: 'consensus',
        stop_after: 2,
        distinguish: { inputs: 'echo a', probe: 'cat x' },
        rank: { rubric: 'short', engines: ['claude'] },
      }),
    ]);
    assert.deepEqual(await findingsOf('repeat', text), []);
    const m = parseManifest(text, FILE, { engines }).manifest;
    assert.ok(m);
    const [group, c1] = m.tasks;
    assert.deepEqual(
      [group?.select, group?.stopAfter, group?.distinguish, group?.rank?.rubric],
      ['consensus', 2, { inputs: 'echo a', probe: 'cat x', maxInputs: 20, timeoutMs: 30_000 }, 'short'],
    );
    assert.deepEqual([c1?.select, c1?.stopAfter, c1?.distinguish, c1?.rank], [undefined, undefined, undefined, undefined]);
    const bad = await findingsOf(
      'invalid-manifest',
      manifest([task('fix', { repeat: 2, select: 'consensus', distinguish: { inputs: 'echo a', probe: 'x', max_inputs: 201 } })]),
    );
    assert.match(bad[0]?.message ?? '', /tasks\[0\]\.distinguish\.max_inputs: must be <= 200/);
  });
});

describe('consensus: early agreement (stop_after)', () => {
  const rows = (r: Record<string, string[]>) => new Map(Object.entries(r).map(([k, outs]) => [k, outs.map((o) => says(o))]));

  it('settled once the largest group has more members than the next largest could reach with every open candidate', () => {
    // 3 alike, none else, 2 open: 3 > 0 + 2.
    assert.deepEqual(settledEarly(rows({ a: ['1', '2'], b: ['1', '2'], c: ['1', '2'] }), 2), { lead: ['a', 'b', 'c'], next: 0, open: 2 });
    // 3 alike, 1 other, 2 open: 3 > 1 + 2 is false (the other group could tie): not settled.
    assert.equal(settledEarly(rows({ a: ['1'], b: ['1'], c: ['1'], d: ['9'] }), 2), null);
    // With 1 open it is: 3 > 1 + 1.
    assert.deepEqual(settledEarly(rows({ a: ['1'], b: ['1'], c: ['1'], d: ['9'] }), 1), { lead: ['a', 'b', 'c'], next: 1, open: 1 });
    // 2 alike and 2 open: a group of the open ones alone could tie.
    assert.equal(settledEarly(rows({ a: ['1'], b: ['1'] }), 2), null);
    // Every candidate final: any strict majority is settled; a tie never is.
    assert.deepEqual(settledEarly(rows({ a: ['1'], b: ['2'], c: ['1'] }), 0), { lead: ['a', 'c'], next: 1, open: 0 });
    assert.equal(settledEarly(rows({ a: ['1'], b: ['2'] }), 0), null);
  });

  it('never settled on what tells nothing: one candidate, no input, behaviours over different inputs, a probe that never exits 0', () => {
    assert.equal(settledEarly(rows({ a: ['1'] }), 0), null);
    assert.equal(settledEarly(rows({ a: [], b: [], c: [] }), 0), null);
    assert.equal(settledEarly(rows({ a: ['1', '2'], b: ['1'], c: ['1', '2'] }), 0), null);
    const failing = new Map(['a', 'b', 'c'].map((k) => [k, [says('x', 3)]]));
    assert.equal(settledEarly(failing, 0), null);
  });

  it('the reason names the agreeing candidates, the inputs and what the others could reach', () => {
    assert.equal(
      agreedReason([1, 2, 4], 5, 1, 1),
      'consensus reached: candidate 1, candidate 2, candidate 4 behave alike on 5 input(s); no other group can outnumber them (the next largest has 1, with 1 candidate(s) not yet compared)',
    );
  });
});
